//! One-shot decode of a whole RDMA Send payload: transport header, inline RPC message, and the
//! NFSv3 / NFSv4.1 COMPOUND / MOUNT v3 / NFSACL v3 arguments or results when the program is
//! known.
//!
//! Replies do not carry their procedure, so the caller passes a [`CallProc`] hint (the trace
//! crate pairs calls and replies by xid). DDP-eligible items that travelled in chunks are
//! recognised from the chunk lists and decoded as reduced (RFC 8166 §3.4.1, RFC 8267 §4).

use std::fmt;

use serde::Serialize;

use crate::ddp::{check_argument_position, Reduction};
use crate::error::DecodeError;
use crate::mount3::{Mount3Call, Mount3Proc, Mount3Reply, MOUNT_V3};
use crate::nfs3::{
    ddp_eligible_argument, ddp_eligible_result, Ddp, DdpData, Nfs3Call, Nfs3Proc, Nfs3Reply, NFS_V3,
};
use crate::nfs4::{Compound4Args, Compound4Res, NFSPROC4_COMPOUND, NFS_V4};
use crate::nfsacl::{NfsaclCall, NfsaclProc, NfsaclReply, NFSACL_V3};
use crate::rpc::{RpcMessage, MOUNT_PROGRAM, NFSACL_PROGRAM, NFS_PROGRAM};
use crate::rpcrdma::{total_length, ChunkLists, Header, Proc};
use crate::xdr::{pad4, Reader};

/// RFC 8166 §4.1.1: the transport header's XID must be the RPC message's XID.
pub const RULE_XID_MATCH: &str = "RFC 8166 §4.1.1 (rdma_xid MUST equal the RPC message XID)";
/// RFC 8267 §4 with RFC 8166 §3.4.5: a Read chunk at a non-zero position carries exactly the
/// DDP-eligible argument, at that argument's XDR position in the unreduced stream
/// ([`crate::ddp::check_argument_position`]).
pub const RULE_READ_CHUNK_POSITION: &str = crate::ddp::RULE_ARGUMENT_POSITION;
/// RFC 8267 §4: only DDP-eligible items may be moved; an NFSv3 call has at most one.
pub const RULE_NOT_DDP_ELIGIBLE: &str =
    "RFC 8267 §4 (only a DDP-eligible argument may be conveyed in a Read chunk)";

/// RFC 8267 §4: a Write chunk may carry only a DDP-eligible result (READ data, READLINK path).
pub const RULE_WRITE_NOT_DDP_ELIGIBLE: &str =
    "RFC 8267 §4 (only a DDP-eligible result may be returned in a Write chunk)";

/// RFC 8881 §16: NFSv4 has two procedures, NULL (0) and COMPOUND (1).
pub const RULE_NFS4_PROCEDURE: &str = "RFC 8881 §16 (NFSv4 procedures: NULL 0, COMPOUND 1)";

/// RFC 8267 §5: the NFS auxiliary protocols (MOUNT, NLM, NSM, NFSACL) have no DDP-eligible items.
pub const RULE_AUXILIARY_NOT_DDP_ELIGIBLE: &str =
    "RFC 8267 §5 (no MOUNT or NFSACL data item is DDP-eligible)";

/// RFC 8166 §4.1.1: the transport header's XID (`transport_xid`) is the RPC message's.
pub fn check_xid(transport_xid: u32, rpc_xid: u32) -> Result<(), DecodeError> {
    if rpc_xid != transport_xid {
        return Err(DecodeError::BadValue {
            field: "rpc_msg.xid",
            value: rpc_xid.into(),
            rule: RULE_XID_MATCH,
        });
    }
    Ok(())
}

/// The name of procedure `proc_` of program `prog`, version `vers`, for every program this crate
/// decodes: NFSv3 (RFC 1813 §3), NFSv4 (RFC 8881 §16: NULL and COMPOUND), MOUNT v3 (RFC 1813
/// Appendix I) and NFSACL v3. The one table every renderer (trace, `rig decode`, the engine's
/// trace) names procedures by; `None` for anything else.
pub fn procedure_name(prog: u32, vers: u32, proc_: u32) -> Option<&'static str> {
    match (prog, vers) {
        (NFS_PROGRAM, 3) => Nfs3Proc::from_u32(proc_).map(Nfs3Proc::name),
        (NFS_PROGRAM, NFS_V4) => match proc_ {
            0 => Some("NULL"),
            NFSPROC4_COMPOUND => Some("COMPOUND"),
            _ => None,
        },
        (MOUNT_PROGRAM, MOUNT_V3) => Mount3Proc::from_u32(proc_).map(Mount3Proc::name),
        (NFSACL_PROGRAM, NFSACL_V3) => NfsaclProc::from_u32(proc_).map(NfsaclProc::name),
        _ => None,
    }
}

/// Which layer of the message a decode error belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// The RPC-over-RDMA transport header (RFC 8166).
    Rpcrdma,
    /// The ONC RPC header (RFC 5531).
    Rpc,
    /// The upper-layer protocol: NFSv3, MOUNT, NFSACL.
    Nfs,
}

impl Layer {
    pub fn name(self) -> &'static str {
        match self {
            Layer::Rpcrdma => "rpcrdma",
            Layer::Rpc => "rpc",
            Layer::Nfs => "nfs",
        }
    }
}

/// A decode failure: the layer, the typed error (which names the rule), and whatever outer
/// layers decoded before the failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageError {
    pub layer: Layer,
    pub error: DecodeError,
    /// The transport header, if it decoded (boxed: errors stay small to pass around).
    pub rpcrdma: Option<Box<Header>>,
    /// The RPC header, if it decoded.
    pub rpc: Option<Box<RpcMessage>>,
}

impl MessageError {
    /// The RFC rule the input broke.
    pub fn rule(&self) -> &'static str {
        self.error.rule()
    }
}

impl fmt::Display for MessageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.layer.name(), self.error)
    }
}

impl std::error::Error for MessageError {}

/// The procedure of the call a reply answers: replies do not carry it on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct CallProc {
    pub prog: u32,
    pub vers: u32,
    pub proc_: u32,
}

impl CallProc {
    pub fn new(prog: u32, vers: u32, proc_: u32) -> Self {
        CallProc { prog, vers, proc_ }
    }
}

/// Decoded upper-layer arguments or results (serialised untagged: just the arguments/results).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Upper {
    Nfs3Call(Nfs3Call),
    Nfs3Reply(Nfs3Reply),
    Mount3Call(Mount3Call),
    Mount3Reply(Mount3Reply),
    NfsaclCall(NfsaclCall),
    NfsaclReply(NfsaclReply),
    /// NFSv4 COMPOUND arguments (RFC 8881 §16.2).
    Nfs4Call(Box<Compound4Args>),
    /// NFSv4 COMPOUND results.
    Nfs4Reply(Box<Compound4Res>),
}

impl Upper {
    /// Append the arguments' or results' encoding (reduced if a DDP item was moved).
    pub fn encode(&self, w: &mut crate::xdr::Writer) {
        match self {
            Upper::Nfs3Call(c) => c.encode(w),
            Upper::Nfs3Reply(r) => r.encode(w),
            Upper::Mount3Call(c) => c.encode(w),
            Upper::Mount3Reply(r) => r.encode(w),
            Upper::NfsaclCall(c) => c.encode(w),
            Upper::NfsaclReply(r) => r.encode(w),
            Upper::Nfs4Call(c) => c.encode(w),
            Upper::Nfs4Reply(r) => r.encode(w),
        }
    }
}

/// Where a DDP-eligible item travelled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DdpSummary {
    /// The RFC 1813 name of the item, e.g. `"WRITE3args.data"`.
    pub item: &'static str,
    /// The item's length from its inline length word.
    pub length: u32,
    /// `"read"` (call data pulled by the server) or `"write"` (reply data pushed by it).
    pub chunk: &'static str,
    /// For a Read chunk, its XDR position.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<u32>,
    /// Sum of the chunk's segment lengths.
    pub chunk_length: u64,
    /// Whether `chunk_length` is the item's length, with or without XDR round-up.
    pub chunk_length_matches: bool,
}

/// A serialisable one-level summary of the upper layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NfsSummary {
    /// `"NFS"`, `"MOUNT"` or `"NFSACL"`.
    pub program: &'static str,
    pub vers: u32,
    /// The procedure name, e.g. `"WRITE"`.
    pub proc: &'static str,
    /// `"call"` or `"reply"`.
    #[serde(rename = "type")]
    pub direction: &'static str,
    /// The reply status name (`"NFS3_OK"`, `"MNT3ERR_NOENT"` ...), for replies with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<&'static str>,
    /// Present when a DDP-eligible item went through a chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ddp: Option<DdpSummary>,
    /// Upper-layer binding rules the chunks broke without making the message undecodable.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<Violation>,
}

/// A rule broken by otherwise decodable bytes (e.g. a Read chunk that carries no DDP-eligible
/// item). Decoding continues; the consumer decides whether this is fatal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub rule: &'static str,
    pub field: &'static str,
    pub value: u64,
}

/// Every layer of one Send payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedMessage {
    pub rpcrdma: Header,
    /// Bytes of transport header (the inline RPC message starts here).
    pub header_len: usize,
    /// The inline RPC header, for RDMA_MSG.
    pub rpc: Option<RpcMessage>,
    /// Typed upper-layer arguments or results, when the program and procedure are known.
    pub upper: Option<Upper>,
    /// Serialisable summary of `upper`.
    pub nfs: Option<NfsSummary>,
}

impl DecodedMessage {
    /// Re-encode the layers that were decoded: transport header, then the RPC header and the
    /// upper layer when present. For a message whose every layer decoded this reproduces the
    /// Send payload byte for byte (tested over the Linux captures).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = crate::xdr::Writer::new();
        crate::xdr::Xdr::encode(&self.rpcrdma, &mut w);
        if let Some(rpc) = &self.rpc {
            crate::xdr::Xdr::encode(rpc, &mut w);
        }
        if let Some(upper) = &self.upper {
            upper.encode(&mut w);
        }
        w.into_bytes()
    }
}

/// [`decode_message_with`] without a call hint: replies decode down to the RPC header only.
pub fn decode_message(bytes: &[u8]) -> Result<DecodedMessage, MessageError> {
    decode_message_with(bytes, None)
}

/// Decode a whole Send payload. For a reply, `call_proc` names the procedure it answers so the
/// results can be decoded; without it a reply stops at the RPC header.
pub fn decode_message_with(
    bytes: &[u8],
    call_proc: Option<CallProc>,
) -> Result<DecodedMessage, MessageError> {
    let (rpcrdma, header_len) = Header::decode_prefix(bytes).map_err(|error| MessageError {
        layer: Layer::Rpcrdma,
        error,
        rpcrdma: None,
        rpc: None,
    })?;
    let mut out = DecodedMessage {
        rpcrdma,
        header_len,
        rpc: None,
        upper: None,
        nfs: None,
    };
    // Only RDMA_MSG carries the RPC message inline. RDMA_NOMSG moves it to the Position-Zero
    // Read chunk or the Reply chunk (RFC 8166 §3.5.3); RDMA_MSGP is obsolete (§4.6.1); DONE and
    // ERROR carry no RPC message.
    if out.rpcrdma.proc() != Proc::Msg {
        return Ok(out);
    }
    let inline = &bytes[header_len..];
    let mut r = Reader::new(inline);
    let fail = |layer, error, out: &DecodedMessage, rpc: Option<RpcMessage>| MessageError {
        layer,
        error,
        rpcrdma: Some(Box::new(out.rpcrdma.clone())),
        rpc: rpc.map(Box::new),
    };
    let rpc = match <RpcMessage as crate::xdr::Xdr>::decode(&mut r) {
        Ok(rpc) => rpc,
        Err(error) => return Err(fail(Layer::Rpc, error, &out, None)),
    };
    // RFC 8166 §4.1.1: the transport header's XID MUST be the same as the XID in the RPC message.
    // A receiver MAY key on the transport XID alone (svcrdma does, so it never notices a
    // mismatch); a decoder for interop testing reports it.
    if let Err(error) = check_xid(out.rpcrdma.xid, rpc.xid()) {
        return Err(fail(Layer::Rpc, error, &out, Some(rpc)));
    }
    let no_chunks = ChunkLists::default();
    let chunks = out.rpcrdma.chunks().unwrap_or(&no_chunks);
    let result = match &rpc {
        RpcMessage::Call(call) => decode_call(
            CallProc::new(call.prog, call.vers, call.proc_),
            chunks,
            &mut r,
        ),
        RpcMessage::Reply(reply) if reply.is_success() => match call_proc {
            Some(cp) => decode_reply(cp, chunks, &mut r),
            None => Ok(None),
        },
        // A rejected or non-SUCCESS reply carries nothing after its header (RFC 5531 §9).
        RpcMessage::Reply(_) => {
            if let Err(error) = r.finish("rpc reply") {
                return Err(fail(Layer::Rpc, error, &out, Some(rpc)));
            }
            Ok(None)
        }
    };
    match result {
        Ok(Some((upper, summary))) => {
            out.upper = Some(upper);
            out.nfs = Some(summary);
        }
        Ok(None) => {}
        Err(error) => return Err(fail(Layer::Nfs, error, &out, Some(rpc))),
    }
    out.rpc = Some(rpc);
    Ok(out)
}

type UpperResult = crate::error::Result<Option<(Upper, NfsSummary)>>;

fn summary(program: &'static str, vers: u32, proc_: &'static str, call: bool) -> NfsSummary {
    NfsSummary {
        program,
        vers,
        proc: proc_,
        direction: if call { "call" } else { "reply" },
        status: None,
        ddp: None,
        violations: Vec::new(),
    }
}

/// Decode call arguments; `r` is positioned just after the RPC call header.
fn decode_call(cp: CallProc, chunks: &ChunkLists, r: &mut Reader<'_>) -> UpperResult {
    let decoded = match (cp.prog, cp.vers) {
        (NFS_PROGRAM, NFS_V3) => {
            let proc_ = Nfs3Proc::decode_u32(cp.proc_)?;
            // Read chunks other than the Position-Zero chunk carry moved argument data: the
            // call's DDP-eligible argument, if it has one, takes the first of them.
            let mut reduction = Reduction::for_call_lists(chunks);
            let item = ddp_eligible_argument(proc_);
            let ddp = match item {
                Some(_) => reduction.next_ddp(),
                None => Ddp::Inline,
            };
            // RFC 8267 §4: only a DDP-eligible argument may be moved, and an NFSv3 call has at
            // most one. Extra or ineligible Read chunks do not stop decoding (the inline stream
            // is still well formed); they are reported as violations.
            let mut violations: Vec<Violation> = reduction
                .unused_chunks()
                .map(|(position, _)| Violation {
                    rule: RULE_NOT_DDP_ELIGIBLE,
                    field: "read_list.position",
                    value: position as u64,
                })
                .collect();
            // The RPC header was consumed from the same reader, so `consumed()` is an offset in
            // the RPC message, the coordinate system of Read chunk positions.
            let args = Nfs3Call::decode_reduced(proc_, r, ddp)?;
            let mut s = summary("NFS", NFS_V3, proc_.name(), true);
            if let (Some((position, chunk_length)), Some(item)) =
                (reduction.taken_chunks().next(), item)
            {
                let position = position as u32;
                // The moved item is the last item of WRITE3args and SYMLINK3args, so its content
                // would start exactly where the reduced stream ends.
                if let Err(e) = check_argument_position(position, r.consumed()) {
                    violations.push(Violation {
                        rule: e.rule(),
                        field: "read_list.position",
                        value: position.into(),
                    });
                }
                let moved_length = args.ddp_data().map_or(0, DdpData::len);
                s.ddp = Some(DdpSummary {
                    item,
                    length: moved_length,
                    chunk: "read",
                    position: Some(position),
                    chunk_length,
                    chunk_length_matches: chunk_length_matches(moved_length, chunk_length),
                });
            }
            s.violations = violations;
            (Upper::Nfs3Call(args), s)
        }
        (NFS_PROGRAM, NFS_V4) => {
            if !nfs4_compound(cp.proc_)? {
                r.finish("call arguments")?;
                return Ok(None);
            }
            // RFC 8267 §6: each DDP-eligible argument (WRITE data, CREATE link text), in stream
            // order, takes the next Read chunk; only its length word stays inline.
            let mut reduction = Reduction::for_call_lists(chunks);
            let args = Compound4Args::decode_with(r, &mut reduction)?;
            let mut s = summary("NFS", NFS_V4, "COMPOUND", true);
            for item in reduction.items().iter().filter(|i| i.moved) {
                let position = item.chunk.unwrap_or(0) as u32;
                // The Read chunk's position must be the item's XDR position in the unreduced
                // stream (after every earlier moved item's bytes, RFC 8166 §3.4.4).
                if let Err(e) = check_argument_position(position, item.position) {
                    s.violations.push(Violation {
                        rule: e.rule(),
                        field: "read_list.position",
                        value: position.into(),
                    });
                }
                let chunk_length = reduction.chunk_length(item).unwrap_or(0);
                s.ddp.get_or_insert(DdpSummary {
                    item: item.item,
                    length: item.length,
                    chunk: "read",
                    position: Some(position),
                    chunk_length,
                    chunk_length_matches: chunk_length_matches(item.length, chunk_length),
                });
            }
            s.violations
                .extend(reduction.unused_chunks().map(|(position, _)| Violation {
                    rule: RULE_NOT_DDP_ELIGIBLE,
                    field: "read_list.position",
                    value: position as u64,
                }));
            (Upper::Nfs4Call(Box::new(args)), s)
        }
        (MOUNT_PROGRAM, MOUNT_V3) => {
            let proc_ = Mount3Proc::decode_u32(cp.proc_)?;
            let args = Mount3Call::decode(proc_, r)?;
            let mut s = summary("MOUNT", MOUNT_V3, proc_.name(), true);
            s.violations = auxiliary_chunk_violations(chunks, true);
            (Upper::Mount3Call(args), s)
        }
        (NFSACL_PROGRAM, NFSACL_V3) => {
            let proc_ = NfsaclProc::decode_u32(cp.proc_)?;
            let args = NfsaclCall::decode(proc_, r)?;
            let mut s = summary("NFSACL", NFSACL_V3, proc_.name(), true);
            s.violations = auxiliary_chunk_violations(chunks, true);
            (Upper::NfsaclCall(args), s)
        }
        _ => return Ok(None),
    };
    // RFC 4506 §3: the arguments are the rest of the inline message; nothing may follow them.
    r.finish("call arguments")?;
    Ok(Some(decoded))
}

/// Decode reply results; `r` is positioned just after a SUCCESS reply header.
fn decode_reply(cp: CallProc, chunks: &ChunkLists, r: &mut Reader<'_>) -> UpperResult {
    let decoded = match (cp.prog, cp.vers) {
        (NFS_PROGRAM, NFS_V3) => {
            let proc_ = Nfs3Proc::decode_u32(cp.proc_)?;
            // The Responder returns the Write list with each segment's length set to what it
            // wrote (RFC 8166 §3.4.6); a first Write chunk with bytes in it carries the reply's
            // DDP-eligible item. A zero-length chunk means the item (if any) stayed inline. An
            // NFSv3 reply has at most one such item, so only the first Write chunk counts.
            // Most replies carry no Write list: their stream is unreduced.
            let mut reduction = match chunks.writes.first() {
                Some(chunk) => Reduction::for_reply(vec![total_length(chunk)]),
                None => Reduction::inline(),
            };
            let item = ddp_eligible_result(proc_);
            let ddp = match item {
                Some(_) => reduction.next_ddp(),
                None => Ddp::Inline,
            };
            let res = Nfs3Reply::decode_reduced(proc_, r, ddp)?;
            let mut s = summary("NFS", NFS_V3, proc_.name(), false);
            s.violations = write_chunks_not_taken(&reduction, RULE_WRITE_NOT_DDP_ELIGIBLE);
            s.status = Some(res.status().name());
            if let (Some(item), Some((_, chunk_length)), Some(length)) = (
                item,
                reduction.taken_chunks().next(),
                res.ddp_data().filter(|d| d.is_moved()).map(DdpData::len),
            ) {
                s.ddp = Some(DdpSummary {
                    item,
                    length,
                    chunk: "write",
                    position: None,
                    chunk_length,
                    chunk_length_matches: write_chunk_holds(length, chunk_length),
                });
            }
            (Upper::Nfs3Reply(res), s)
        }
        (NFS_PROGRAM, NFS_V4) => {
            if !nfs4_compound(cp.proc_)? {
                r.finish("reply results")?;
                return Ok(None);
            }
            // RFC 8267 §6 with RFC 8166 §3.4.6: each DDP-eligible result (READ data, READLINK
            // link text), in stream order, takes the next Write chunk, moved when it holds bytes.
            let lengths: Vec<u64> = chunks.writes.iter().map(|c| total_length(c)).collect();
            let mut reduction = Reduction::for_reply(lengths);
            let res = Compound4Res::decode_with(r, &mut reduction)?;
            let mut s = summary("NFS", NFS_V4, "COMPOUND", false);
            s.status = Some(res.status.known_name().unwrap_or("NFS4ERR(undefined)"));
            if let Some(item) = reduction.items().iter().find(|i| i.moved) {
                let chunk_length = reduction.chunk_length(item).unwrap_or(0);
                s.ddp = Some(DdpSummary {
                    item: item.item,
                    length: item.length,
                    chunk: "write",
                    position: None,
                    chunk_length,
                    chunk_length_matches: write_chunk_holds(item.length, chunk_length),
                });
            }
            s.violations = write_chunks_not_taken(&reduction, RULE_WRITE_NOT_DDP_ELIGIBLE);
            (Upper::Nfs4Reply(Box::new(res)), s)
        }
        (MOUNT_PROGRAM, MOUNT_V3) => {
            let proc_ = Mount3Proc::decode_u32(cp.proc_)?;
            let res = Mount3Reply::decode(proc_, r)?;
            let mut s = summary("MOUNT", MOUNT_V3, proc_.name(), false);
            s.violations = auxiliary_chunk_violations(chunks, false);
            if let Mount3Reply::Mnt(m) = &res {
                s.status = Some(m.status().name());
            }
            (Upper::Mount3Reply(res), s)
        }
        (NFSACL_PROGRAM, NFSACL_V3) => {
            let proc_ = NfsaclProc::decode_u32(cp.proc_)?;
            let res = NfsaclReply::decode(proc_, r)?;
            let mut s = summary("NFSACL", NFSACL_V3, proc_.name(), false);
            s.violations = auxiliary_chunk_violations(chunks, false);
            s.status = match &res {
                NfsaclReply::Null => None,
                NfsaclReply::Getacl(g) => Some(g.status().name()),
                NfsaclReply::Setacl(g) => Some(g.status().name()),
            };
            (Upper::NfsaclReply(res), s)
        }
        _ => return Ok(None),
    };
    r.finish("reply results")?;
    Ok(Some(decoded))
}

/// NFSv4's procedure: `true` for COMPOUND, `false` for NULL (no arguments, no results), else
/// a typed error.
fn nfs4_compound(proc_: u32) -> crate::error::Result<bool> {
    match proc_ {
        0 => Ok(false),
        NFSPROC4_COMPOUND => Ok(true),
        value => Err(DecodeError::BadDiscriminant {
            field: "NFSv4 procedure",
            value,
            rule: RULE_NFS4_PROCEDURE,
        }),
    }
}

/// RFC 8267 §5: MOUNT and NFSACL have no DDP-eligible data item, so no Read chunk (other than
/// Position Zero) in a call and no Write chunk carrying bytes in a reply: every such chunk is one
/// no item takes ([`Reduction::unused_chunks`] of a message without items).
fn auxiliary_chunk_violations(chunks: &ChunkLists, call: bool) -> Vec<Violation> {
    if call {
        Reduction::for_call_lists(chunks)
            .unused_chunks()
            .map(|(position, _)| Violation {
                rule: RULE_AUXILIARY_NOT_DDP_ELIGIBLE,
                field: "read_list.position",
                value: position as u64,
            })
            .collect()
    } else {
        let lengths: Vec<u64> = chunks.writes.iter().map(|c| total_length(c)).collect();
        write_chunks_not_taken(
            &Reduction::for_reply(lengths),
            RULE_AUXILIARY_NOT_DDP_ELIGIBLE,
        )
    }
}

/// The Write chunks of a reply that carry bytes although no DDP-eligible result took them.
fn write_chunks_not_taken(reduction: &Reduction, rule: &'static str) -> Vec<Violation> {
    reduction
        .unused_chunks()
        .filter(|(_, len)| *len > 0)
        .map(|(_, len)| Violation {
            rule,
            field: "write_list",
            value: len,
        })
        .collect()
}

/// Whether a Read chunk of `chunk_length` bytes is a plausible carrier of a moved argument of
/// `length` bytes: exactly the item, or the item with its XDR round-up (RFC 8166 §3.4.5.2 lets
/// Requesters include it).
pub fn chunk_length_matches(length: u32, chunk_length: u64) -> bool {
    chunk_length == u64::from(length) || chunk_length == pad4(length as usize) as u64
}

/// Whether a returned Write chunk of `chunk_length` bytes holds a moved result of `length`
/// bytes: exactly the item. RFC 8166 §3.4.6: a Responder MUST NOT write XDR roundup padding
/// into a Write chunk, and returns each segment's length as what it wrote.
pub fn write_chunk_holds(length: u32, chunk_length: u64) -> bool {
    chunk_length == u64::from(length)
}
