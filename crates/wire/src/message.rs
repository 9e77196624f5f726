//! One-shot decode of a whole RDMA Send payload: transport header, inline RPC message, and the
//! NFSv3 / NFSv4.1 COMPOUND / MOUNT v3 / NFSACL v3 arguments or results when the program is
//! known; and the one decoder of an RPC message wherever it comes from
//! ([`decode_rpc_message`]: an RDMA_MSG's inline stream, a call rebuilt with its Read chunk data,
//! a Position-Zero Read chunk or Reply chunk).
//!
//! Replies do not carry their procedure, so the caller passes a [`CallProc`] hint (the trace
//! crate pairs calls and replies by xid). Where DDP-eligible items travelled is a [`Placement`]:
//! as the chunk lists say (decoded as reduced, RFC 8166 §3.4.1, RFC 8267 §4), reinserted, or
//! moved with the chunk data not at hand.

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
use crate::rpcrdma::{total_length, Body, ChunkLists, Header, ReadSegment};
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

    /// The procedure number, when the error is that the program has no such procedure (NFSv3,
    /// RFC 1813 §3; MOUNT v3, RFC 1813 Appendix I; NFSACL v3; NFSv4, RFC 8881 §16).
    pub fn unknown_procedure(&self) -> Option<u32> {
        match self.error {
            DecodeError::BadDiscriminant { field, value, .. }
                if self.layer == Layer::Nfs && PROCEDURE_FIELDS.contains(&field) =>
            {
                Some(value)
            }
            _ => None,
        }
    }

    /// The bytes left after the call's arguments or the reply's results, when that is the
    /// error (RFC 4506 §3: they are the rest of the message).
    pub fn trailing_bytes(&self) -> Option<usize> {
        match self.error {
            DecodeError::TrailingBytes { field, count }
                if self.layer == Layer::Nfs && (field == ARGUMENTS || field == RESULTS) =>
            {
                Some(count)
            }
            _ => None,
        }
    }
}

/// The fields of the procedure-number errors: the program's procedure type, as
/// [`Nfs3Proc::decode_u32`] and its kin name it, and [`nfs4_compound`]'s.
const PROCEDURE_FIELDS: [&str; 4] = ["Nfs3Proc", "Mount3Proc", "NfsaclProc", NFS4_PROCEDURE];
/// The field of an NFSv4 procedure number error.
const NFS4_PROCEDURE: &str = "NFSv4 procedure";
/// What a call's trailing bytes follow.
const ARGUMENTS: &str = "call arguments";
/// What a reply's trailing bytes follow.
const RESULTS: &str = "reply results";

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

/// Decode a whole Send payload: the transport header, then, for RDMA_MSG, the inline RPC message
/// ([`decode_inline_message`]). For a reply, `call_proc` names the procedure it answers so the
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
    let Body::Msg(chunks) = &out.rpcrdma.body else {
        return Ok(out);
    };
    match decode_inline_message(out.rpcrdma.xid, &bytes[header_len..], call_proc, chunks) {
        Ok(decoded) => {
            out.rpc = Some(decoded.rpc);
            out.upper = decoded.upper;
            out.nfs = decoded.nfs;
            Ok(out)
        }
        Err(mut e) => {
            e.rpcrdma = Some(Box::new(out.rpcrdma));
            Err(e)
        }
    }
}

/// The RPC message of an RDMA_MSG whose transport header has XID `transport_xid` and chunk
/// lists `chunks`: [`decode_rpc_message`] of the inline stream, each DDP-eligible item reduced
/// as the chunk lists say ([`Placement::Chunks`]), and the XIDs checked against each other
/// ([`check_xid`]) once the RPC header has decoded. Errors carry no transport header
/// ([`decode_message_with`] adds it).
pub fn decode_inline_message(
    transport_xid: u32,
    inline: &[u8],
    call_proc: Option<CallProc>,
    chunks: &ChunkLists,
) -> Result<DecodedRpc, MessageError> {
    let decoded = decode_rpc_message(inline, call_proc, Placement::Chunks(chunks));
    let rpc = match &decoded {
        Ok(d) => Some(&d.rpc),
        Err(e) => e.rpc.as_deref(),
    };
    // RFC 8166 §4.1.1: the transport header's XID MUST be the same as the XID in the RPC message.
    // A receiver MAY key on the transport XID alone (svcrdma does, so it never notices a
    // mismatch); a decoder for interop testing reports it, before anything found after the RPC
    // header.
    if let Some(rpc) = rpc {
        if let Err(error) = check_xid(transport_xid, rpc.xid()) {
            return Err(MessageError {
                layer: Layer::Rpc,
                error,
                rpcrdma: None,
                rpc: Some(Box::new(rpc.clone())),
            });
        }
    }
    decoded
}

/// How the DDP-eligible items of an RPC message travelled (RFC 8166 §3.4, RFC 8267 §4/§6): what
/// the decoder of that message finds in their place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement<'a> {
    /// As the transport header's chunk lists say: the inline stream of an RDMA_MSG, where a
    /// DDP-eligible item that took a chunk keeps only its length word (RFC 8166 §3.4.1). A call's
    /// items take the Read chunks other than Position Zero in position order; a reply's take
    /// the Write chunks in order, moved when the chunk came back with bytes (§3.4.6).
    Chunks(&'a ChunkLists),
    /// Nothing reduced: a call rebuilt with its Read chunk data reinserted (§3.4.5), or a
    /// Position-Zero Read chunk or Reply chunk that carries the whole message (§3.5.3) beside no
    /// Write chunk.
    Reinserted,
    /// The chunk data not at hand. A call's every DDP-eligible argument is reduced to its
    /// length word (its Read chunks were not captured); a reply's results take the Write chunks
    /// that carried `writes` bytes each, in Write list order, as with [`Placement::Chunks`].
    Moved { writes: &'a [u64] },
}

impl Placement<'_> {
    /// A call's reduction: which DDP-eligible arguments are reduced, and the Read chunks they
    /// take.
    fn call_reduction(self) -> Reduction {
        match self {
            Placement::Chunks(lists) => Reduction::for_call_lists(lists),
            Placement::Reinserted => Reduction::inline(),
            Placement::Moved { .. } => Reduction::every_item_moved(),
        }
    }

    /// The bytes each Write chunk of a reply carried, in Write list order.
    fn write_lengths(self) -> Vec<u64> {
        match self {
            Placement::Chunks(lists) => lists.writes.iter().map(|c| total_length(c)).collect(),
            Placement::Reinserted => Vec::new(),
            Placement::Moved { writes } => writes.to_vec(),
        }
    }

    /// The bytes the first Write chunk carried: the one an NFSv3 reply's single DDP-eligible
    /// result may take.
    fn first_write_length(self) -> Option<u64> {
        match self {
            Placement::Chunks(lists) => lists.writes.first().map(|c| total_length(c)),
            Placement::Reinserted => None,
            Placement::Moved { writes } => writes.first().copied(),
        }
    }
}

/// A DDP-eligible item the decoder found reduced to its length word, and the chunk it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedItem {
    /// The item as the specification names it (`"WRITE3args.data"`, `"READ4resok.data"`).
    pub item: &'static str,
    /// The item's length from its inline length word.
    pub length: u32,
    /// Where its bytes begin in the unreduced message (RFC 8166 §3.4.4): for a call, the
    /// position the Read chunk carrying it must have.
    pub position: usize,
    /// The Read chunk's position (calls) or the Write chunk's index (replies) it took; `None`
    /// with [`Placement::Moved`] for a call (chunks unknown).
    pub chunk: Option<usize>,
    /// The bytes of that chunk.
    pub chunk_length: Option<u64>,
}

/// An RPC message decoded from its first byte ([`decode_rpc_message`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedRpc {
    /// The RPC header.
    pub rpc: RpcMessage,
    /// Typed upper-layer arguments or results, when the program and procedure are known.
    pub upper: Option<Upper>,
    /// Serialisable summary of `upper`.
    pub nfs: Option<NfsSummary>,
    /// The DDP-eligible items found reduced to their length words, in stream order.
    pub moved: Vec<MovedItem>,
}

impl DecodedRpc {
    /// For a call decoded with [`Placement::Chunks`] of lists whose Read list is `reads`:
    /// whether its Read chunks carry
    /// its DDP-eligible arguments and nothing else, each chunk exactly on one moved argument (at
    /// the argument's XDR position, RFC 8166 §3.4.5 / RFC 8267 §4/§6, and as long as its length
    /// word says, without round-up), none at Position Zero. Then this decode is the decode of the
    /// message with the chunk data reinserted ([`Placement::Reinserted`]), the moved bytes aside:
    /// the reinserted message is the inline stream with each such argument's bytes (and their
    /// zero round-up, §3.4.5.2) put back, which the decoder reads as opaque; reading the
    /// reduced stream meets the same fields at the same places, and every check on the rest is
    /// the same or stricter (a count checked against the bytes left sees fewer bytes).
    pub fn reads_are_moved_arguments(&self, reads: &[ReadSegment]) -> bool {
        matches!(self.rpc, RpcMessage::Call(_))
            && !self.moved.is_empty()
            && reads.iter().all(|read| read.position != 0)
            // Violations: a Read chunk no argument took, or one at another position.
            && self.nfs.as_ref().is_some_and(|s| s.violations.is_empty())
            && self.moved.iter().all(|m| {
                m.chunk == Some(m.position) && m.chunk_length == Some(u64::from(m.length))
            })
    }

    /// For a reply: the first moved result whose Write chunk does not hold exactly its bytes
    /// (RFC 8166 §3.4.6: the Responder returns each segment's length as what it wrote, and
    /// MUST NOT write XDR round-up into a Write chunk), with the bytes the chunk carried.
    pub fn write_chunk_mismatch(&self) -> Option<(&MovedItem, u64)> {
        if !matches!(self.rpc, RpcMessage::Reply(_)) {
            return None;
        }
        self.moved.iter().find_map(|m| {
            let carried = m.chunk_length.unwrap_or(0);
            (!write_chunk_holds(m.length, carried)).then_some((m, carried))
        })
    }
}

/// Decode a call from its inline stream (the RPC message of an RDMA_MSG) when its Read chunks
/// (`lists`) carry exactly its DDP-eligible arguments ([`DecodedRpc::reads_are_moved_arguments`]):
/// the decode of the message with the chunk data reinserted, without the chunk data. `None`
/// when that cannot be told from the inline stream (an error, a chunk not taken by an argument,
/// another position or length, a program without DDP-eligible arguments).
pub fn decode_call_moved(inline: &[u8], lists: &ChunkLists) -> Option<DecodedRpc> {
    decode_rpc_message(inline, None, Placement::Chunks(lists))
        .ok()
        .filter(|d| d.reads_are_moved_arguments(&lists.reads))
}

/// Decode an RPC message from its first byte: its header (RFC 5531 §9), then the NFSv3 / NFSv4
/// COMPOUND / MOUNT v3 / NFSACL v3 arguments or results when the program is known, the
/// DDP-eligible items as `placement` says they travelled. `bytes` is the inline stream of an
/// RDMA_MSG, a call rebuilt with its Read chunk data reinserted, or the Position-Zero Read chunk
/// or Reply chunk of an RDMA_NOMSG. For a reply, `call_proc` names the procedure it answers;
/// without it a SUCCESS reply stops at the RPC header. The XID is not checked (there may be no
/// transport header here: [`check_xid`]). Errors after the RPC header carry it.
pub fn decode_rpc_message(
    bytes: &[u8],
    call_proc: Option<CallProc>,
    placement: Placement<'_>,
) -> Result<DecodedRpc, MessageError> {
    let mut r = Reader::new(bytes);
    let rpc = <RpcMessage as crate::xdr::Xdr>::decode(&mut r).map_err(|error| MessageError {
        layer: Layer::Rpc,
        error,
        rpcrdma: None,
        rpc: None,
    })?;
    let mut moved = Vec::new();
    let result = match &rpc {
        RpcMessage::Call(call) => decode_call(
            CallProc::new(call.prog, call.vers, call.proc_),
            placement,
            &mut r,
            &mut moved,
        ),
        RpcMessage::Reply(reply) if reply.is_success() => match call_proc {
            Some(cp) => decode_reply(cp, placement, &mut r, &mut moved),
            None => Ok(None),
        },
        // A rejected or non-SUCCESS reply carries nothing after its header (RFC 5531 §9).
        RpcMessage::Reply(_) => match r.finish("rpc reply") {
            Ok(()) => Ok(None),
            Err(error) => {
                return Err(MessageError {
                    layer: Layer::Rpc,
                    error,
                    rpcrdma: None,
                    rpc: Some(Box::new(rpc)),
                })
            }
        },
    };
    match result {
        Ok(decoded) => {
            let (upper, nfs) = decoded.unzip();
            Ok(DecodedRpc {
                rpc,
                upper,
                nfs,
                moved,
            })
        }
        Err(error) => Err(MessageError {
            layer: Layer::Nfs,
            error,
            rpcrdma: None,
            rpc: Some(Box::new(rpc)),
        }),
    }
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

/// The items `reduction` recorded as moved, as [`MovedItem`]s.
fn moved_items(reduction: &Reduction) -> impl Iterator<Item = MovedItem> + '_ {
    reduction
        .items()
        .iter()
        .filter(|i| i.moved)
        .map(|i| MovedItem {
            item: i.item,
            length: i.length,
            position: i.position,
            chunk: i.chunk,
            chunk_length: reduction.chunk_length(i),
        })
}

/// Decode call arguments; `r` is positioned just after the RPC call header. The DDP-eligible
/// arguments found reduced go to `moved`.
fn decode_call(
    cp: CallProc,
    placement: Placement<'_>,
    r: &mut Reader<'_>,
    moved: &mut Vec<MovedItem>,
) -> UpperResult {
    let decoded = match (cp.prog, cp.vers) {
        (NFS_PROGRAM, NFS_V3) => {
            let proc_ = Nfs3Proc::decode_u32(cp.proc_)?;
            // Read chunks other than the Position-Zero chunk carry moved argument data: the
            // call's DDP-eligible argument, if it has one, takes the first of them.
            let mut reduction = placement.call_reduction();
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
            let taken = reduction.taken_chunks().next();
            // The moved item is the last item of WRITE3args and SYMLINK3args, so its content
            // would start exactly where the reduced stream ends.
            let end = r.consumed();
            if let (Some(item), Some(data)) = (item, args.ddp_data().filter(|d| d.is_moved())) {
                moved.push(MovedItem {
                    item,
                    length: data.len(),
                    position: end,
                    chunk: taken.map(|(position, _)| position),
                    chunk_length: taken.map(|(_, length)| length),
                });
            }
            if let (Some((position, chunk_length)), Some(item)) = (taken, item) {
                let position = position as u32;
                if let Err(e) = check_argument_position(position, end) {
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
                r.finish(ARGUMENTS)?;
                return Ok(None);
            }
            // RFC 8267 §6: each DDP-eligible argument (WRITE data, CREATE link text), in stream
            // order, takes the next Read chunk; only its length word stays inline.
            let mut reduction = placement.call_reduction();
            let args = Compound4Args::decode_with(r, &mut reduction)?;
            let mut s = summary("NFS", NFS_V4, "COMPOUND", true);
            for item in reduction.items().iter().filter(|i| i.moved) {
                // Every item moved, the chunks unknown: no chunk to check.
                let Some(chunk) = item.chunk else { continue };
                let position = chunk as u32;
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
            moved.extend(moved_items(&reduction));
            (Upper::Nfs4Call(Box::new(args)), s)
        }
        (MOUNT_PROGRAM, MOUNT_V3) => {
            let proc_ = Mount3Proc::decode_u32(cp.proc_)?;
            let args = Mount3Call::decode(proc_, r)?;
            let mut s = summary("MOUNT", MOUNT_V3, proc_.name(), true);
            s.violations = auxiliary_chunk_violations(placement, true);
            (Upper::Mount3Call(args), s)
        }
        (NFSACL_PROGRAM, NFSACL_V3) => {
            let proc_ = NfsaclProc::decode_u32(cp.proc_)?;
            let args = NfsaclCall::decode(proc_, r)?;
            let mut s = summary("NFSACL", NFSACL_V3, proc_.name(), true);
            s.violations = auxiliary_chunk_violations(placement, true);
            (Upper::NfsaclCall(args), s)
        }
        _ => return Ok(None),
    };
    // RFC 4506 §3: the arguments are the rest of the message; nothing may follow them.
    r.finish(ARGUMENTS)?;
    Ok(Some(decoded))
}

/// Decode reply results; `r` is positioned just after a SUCCESS reply header. The DDP-eligible
/// results found reduced go to `moved`.
fn decode_reply(
    cp: CallProc,
    placement: Placement<'_>,
    r: &mut Reader<'_>,
    moved: &mut Vec<MovedItem>,
) -> UpperResult {
    let decoded = match (cp.prog, cp.vers) {
        (NFS_PROGRAM, NFS_V3) => {
            let proc_ = Nfs3Proc::decode_u32(cp.proc_)?;
            // The Responder returns the Write list with each segment's length set to what it
            // wrote (RFC 8166 §3.4.6); a first Write chunk with bytes in it carries the reply's
            // DDP-eligible item. A zero-length chunk means the item (if any) stayed inline. An
            // NFSv3 reply has at most one such item, so only the first Write chunk counts.
            // Most replies carry no Write list: their stream is unreduced.
            let mut reduction = match placement.first_write_length() {
                Some(length) => Reduction::for_reply(vec![length]),
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
            if let (Some(item), Some((chunk, chunk_length)), Some(length)) = (
                item,
                reduction.taken_chunks().next(),
                res.ddp_data().filter(|d| d.is_moved()).map(DdpData::len),
            ) {
                moved.push(MovedItem {
                    item,
                    length,
                    position: r.consumed(),
                    chunk: Some(chunk),
                    chunk_length: Some(chunk_length),
                });
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
                r.finish(RESULTS)?;
                return Ok(None);
            }
            // RFC 8267 §6 with RFC 8166 §3.4.6: each DDP-eligible result (READ data, READLINK
            // link text), in stream order, takes the next Write chunk, moved when it holds bytes.
            let mut reduction = Reduction::for_reply(placement.write_lengths());
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
            moved.extend(moved_items(&reduction));
            (Upper::Nfs4Reply(Box::new(res)), s)
        }
        (MOUNT_PROGRAM, MOUNT_V3) => {
            let proc_ = Mount3Proc::decode_u32(cp.proc_)?;
            let res = Mount3Reply::decode(proc_, r)?;
            let mut s = summary("MOUNT", MOUNT_V3, proc_.name(), false);
            s.violations = auxiliary_chunk_violations(placement, false);
            if let Mount3Reply::Mnt(m) = &res {
                s.status = Some(m.status().name());
            }
            (Upper::Mount3Reply(res), s)
        }
        (NFSACL_PROGRAM, NFSACL_V3) => {
            let proc_ = NfsaclProc::decode_u32(cp.proc_)?;
            let res = NfsaclReply::decode(proc_, r)?;
            let mut s = summary("NFSACL", NFSACL_V3, proc_.name(), false);
            s.violations = auxiliary_chunk_violations(placement, false);
            s.status = match &res {
                NfsaclReply::Null => None,
                NfsaclReply::Getacl(g) => Some(g.status().name()),
                NfsaclReply::Setacl(g) => Some(g.status().name()),
            };
            (Upper::NfsaclReply(res), s)
        }
        _ => return Ok(None),
    };
    r.finish(RESULTS)?;
    Ok(Some(decoded))
}

/// NFSv4's procedure: `true` for COMPOUND, `false` for NULL (no arguments, no results), else
/// a typed error.
fn nfs4_compound(proc_: u32) -> crate::error::Result<bool> {
    match proc_ {
        0 => Ok(false),
        NFSPROC4_COMPOUND => Ok(true),
        value => Err(DecodeError::BadDiscriminant {
            field: NFS4_PROCEDURE,
            value,
            rule: RULE_NFS4_PROCEDURE,
        }),
    }
}

/// RFC 8267 §5: MOUNT and NFSACL have no DDP-eligible data item, so no Read chunk (other than
/// Position Zero) in a call and no Write chunk carrying bytes in a reply: every such chunk is one
/// no item takes ([`Reduction::unused_chunks`] of a message without items).
fn auxiliary_chunk_violations(placement: Placement<'_>, call: bool) -> Vec<Violation> {
    if call {
        placement
            .call_reduction()
            .unused_chunks()
            .map(|(position, _)| Violation {
                rule: RULE_AUXILIARY_NOT_DDP_ELIGIBLE,
                field: "read_list.position",
                value: position as u64,
            })
            .collect()
    } else {
        write_chunks_not_taken(
            &Reduction::for_reply(placement.write_lengths()),
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
