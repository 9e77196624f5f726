//! Upper layers of one message: rebuild the full RPC message from the inline stream and the chunk
//! data moved by RDMA, then decode ONC RPC (RFC 5531) and NFSv3 / NFSACL / MOUNT / NFSv4.1
//! COMPOUND (`wire::nfs4`).
//!
//! RFC 8166 §3.4.5: a Read chunk's position is its offset in the XDR stream *before* reduction;
//! the Responder reinserts the chunk (rounded up to 4 bytes, §3.4.5.2) there. A Write chunk's
//! data item is removed from the reply's inline stream except for its length word (§3.4.6, RFC
//! 8267 §3), so the NFS decoder reads it in "reduced" mode and the chunk bytes are checked
//! against that length. A Position-Zero Read chunk (Call) or the Reply chunk (Reply) carries the
//! whole RPC message when the transport header is RDMA_NOMSG (§3.5.3).

use wire::ddp::Reduction;
use wire::nfs3::{Ddp, Nfs3Call, Nfs3Proc, Nfs3Reply};
use wire::nfs4::{Compound4Args, Compound4Res, NFSPROC4_COMPOUND};
use wire::nfsacl::{NfsaclCall, NfsaclProc, NfsaclReply};
use wire::rpc::{RejectedReply, ReplyBody, RpcMessage};
use wire::rpcrdma::ReadChunk;
use wire::Reader;

use crate::model::{NfsSummary, RpcSummary};

/// Largest message we rebuild from chunks (the rest is reported, not allocated).
pub const MAX_REBUILT_MESSAGE: usize = 16 << 20;

/// Insert Read chunk data into the inline stream at their positions (RFC 8166 §3.4.5). `chunks`
/// are `(position, data)` sorted by position, none at position zero. Placed and padded by
/// [`wire::ddp::splice`], within [`MAX_REBUILT_MESSAGE`].
pub fn reinsert_read_chunks(inline: &[u8], chunks: &[(u32, Vec<u8>)]) -> Result<Vec<u8>, String> {
    rebuilt_len(inline.len(), chunks.iter().map(|(_, data)| data.len()))?;
    wire::ddp::splice(inline, chunks).map_err(position_error)
}

/// The length of the message rebuilt from an inline stream of `inline_len` bytes and chunks of
/// `lengths` bytes (each with its XDR round-up), or why it is not rebuilt.
fn rebuilt_len(inline_len: usize, lengths: impl Iterator<Item = usize>) -> Result<usize, String> {
    let total = lengths
        .map(wire::xdr::pad4)
        .sum::<usize>()
        .saturating_add(inline_len);
    if total > MAX_REBUILT_MESSAGE {
        return Err(format!("rebuilt message of {total} bytes exceeds limit"));
    }
    Ok(total)
}

/// The trace's words for a Read chunk [`wire::ddp::place`] could not place.
fn position_error(e: wire::ddp::PositionError) -> String {
    match e {
        wire::ddp::PositionError::Overlap { position, .. } => {
            format!("Read chunk position {position} overlaps an earlier chunk")
        }
        wire::ddp::PositionError::PastStream { position, .. } => {
            format!("Read chunk position {position} is beyond the inline stream (RFC 8166 §3.4.5)")
        }
        other => other.to_string(),
    }
}

/// Where [`reinsert_read_chunks`] puts each piece of the rebuilt message, from the lengths alone:
/// the chunk data can then be copied straight to its place. The layout is
/// [`wire::ddp::Layout`]'s, the one [`wire::ddp::splice`] fills (its `total` and `chunk_at`
/// read through).
#[derive(Debug)]
pub struct Reinsertion(wire::ddp::Layout);

impl std::ops::Deref for Reinsertion {
    type Target = wire::ddp::Layout;

    fn deref(&self) -> &wire::ddp::Layout {
        &self.0
    }
}

impl Reinsertion {
    /// The layout for Read chunks of `(position, length)` into an inline stream of
    /// `inline_len` bytes, or why they cannot be reinserted: [`wire::ddp::Layout::place`],
    /// within [`MAX_REBUILT_MESSAGE`].
    pub fn plan(inline_len: usize, chunks: &[(u32, usize)]) -> Result<Self, String> {
        rebuilt_len(inline_len, chunks.iter().map(|&(_, len)| len))?;
        let extents: Vec<wire::ddp::Extent> = chunks
            .iter()
            .map(|&(position, len)| wire::ddp::Extent {
                position,
                length: len as u64,
            })
            .collect();
        wire::ddp::Layout::place(inline_len, &extents)
            .map(Reinsertion)
            .map_err(position_error)
    }

    /// Where each chunk goes in the inline stream: the offset, in the inline stream, of the
    /// byte its data is inserted before (in chunk order).
    pub fn inline_at(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.base_at()
    }

    /// The rebuilt message with the inline stream in place and zeros where the chunks go.
    pub fn with_inline(&self, inline: &[u8]) -> Vec<u8> {
        self.0.with_base(inline)
    }
}

/// What upper-layer decoding of one RPC message found.
#[derive(Debug, Default)]
pub struct Decoded {
    pub rpc: Option<RpcSummary>,
    pub nfs: Option<NfsSummary>,
    pub error: Option<String>,
    /// Not an error in the message, but a reason it could not be decoded further.
    pub note: Option<String>,
}

/// The procedure of a Call, remembered to decode its Reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallKey {
    pub prog: u32,
    pub vers: u32,
    pub proc_: u32,
}

/// Decode an RPC message. For a Reply, `call` is the matching Call's program/version/procedure;
/// `writes` the bytes each Write chunk carried, in Write list order (empty: no Write chunk).
pub fn decode_rpc(bytes: &[u8], call: Option<CallKey>, reduced: bool, writes: &[u64]) -> Decoded {
    let mut out = Decoded::default();
    let (msg, used) = match RpcMessage::decode_prefix(bytes) {
        Ok(ok) => ok,
        Err(e) => {
            out.error = Some(format!("rpc: {e}"));
            return out;
        }
    };
    let body = &bytes[used..];
    match msg {
        RpcMessage::Call(c) => {
            out.rpc = Some(RpcSummary::of_call(&c));
            let key = CallKey {
                prog: c.prog,
                vers: c.vers,
                proc_: c.proc_,
            };
            match decode_call_args(key, body, reduced) {
                Ok(nfs) => out.nfs = nfs,
                Err(e) => {
                    out.nfs = name_only(key);
                    out.error = Some(e);
                }
            }
        }
        RpcMessage::Reply(r) => {
            let status = match &r.body {
                ReplyBody::Accepted { stat, .. } => stat.name().to_string(),
                ReplyBody::Denied(RejectedReply::RpcMismatch { .. }) => "RPC_MISMATCH".into(),
                ReplyBody::Denied(RejectedReply::AuthError(s)) => {
                    format!("AUTH_ERROR({})", wire::rpc::auth_stat_name(*s))
                }
            };
            out.rpc = Some(RpcSummary {
                kind: "reply",
                xid: r.xid,
                prog: call.map(|c| c.prog),
                vers: call.map(|c| c.vers),
                proc_: call.map(|c| c.proc_),
                status: Some(status),
            });
            if !r.is_success() {
                return out;
            }
            let Some(key) = call else {
                // The capture started after the Call: nothing wrong with the Reply itself.
                out.note = Some("Call not captured: results not decoded".into());
                return out;
            };
            match decode_reply_results(key, body, reduced, writes) {
                Ok(nfs) => out.nfs = nfs,
                Err(e) => {
                    out.nfs = name_only(key);
                    out.error = Some(e);
                }
            }
        }
    }
    out
}

/// Decode a Call from its inline stream alone, when its Read chunks (`chunks`, none at position
/// zero, `inline_at` where each is reinserted in `inline`: [`Reinsertion::inline_at`]) carry
/// DDP-eligible arguments and nothing else: the [`Decoded`] that [`decode_rpc`] gives for the
/// rebuilt message, without the chunk data ever being read. `None` when that cannot be told from
/// the inline stream: the caller then rebuilds the message and decodes it.
///
/// Why it is the same: each chunk sits exactly on the bytes of a DDP-eligible argument (the
/// chunk is inserted right after the argument's length word, RFC 8166 §3.4.5 / RFC 8267 §4/§6,
/// and is as long as that word says), so the rebuilt message is the inline stream with each such
/// argument's bytes (and their zero round-up, §3.4.5.2) put back, and the decoder reads an
/// argument's bytes as opaque without looking at them. Reading the inline stream with those
/// arguments moved meets the same fields at the same places; every check on the rest is the
/// same or stricter (a count checked against the bytes left sees fewer bytes), so a message this
/// accepts the rebuilt decode accepts too. Anything else (an error, a chunk not taken by an
/// argument, another offset or length, a program without DDP-eligible arguments) is `None`.
pub fn decode_call_moved(
    inline: &[u8],
    chunks: &[ReadChunk],
    inline_at: &[usize],
) -> Option<Decoded> {
    let (RpcMessage::Call(c), used) = RpcMessage::decode_prefix(inline).ok()? else {
        return None;
    };
    if chunks.is_empty() || chunks.len() != inline_at.len() {
        return None;
    }
    let body = &inline[used..];
    // Each chunk's place in the body, where the argument decoder's offsets are counted.
    let at: Vec<usize> = inline_at
        .iter()
        .map(|&a| a.checked_sub(used))
        .collect::<Option<_>>()?;
    let key = CallKey {
        prog: c.prog,
        vers: c.vers,
        proc_: c.proc_,
    };
    let program = family(key)?;
    let mut r = Reader::new(body);
    let detail = match (key.prog, key.vers) {
        (wire::rpc::NFS_PROGRAM, 3) => {
            let proc_ = Nfs3Proc::from_u32(key.proc_)?;
            if !matches!(proc_, Nfs3Proc::Write | Nfs3Proc::Symlink) {
                return None;
            }
            let call = Nfs3Call::decode_reduced(proc_, &mut r, Ddp::Moved).ok()?;
            let data = match &call {
                Nfs3Call::Write(a) => &a.data,
                Nfs3Call::Symlink(a) => &a.symlink_data,
                _ => return None,
            };
            // The argument is the last of the call: its bytes go where the reduced call ends.
            let length = u64::from(data.len());
            if r.remaining() != 0
                || !data.is_moved()
                || at != [body.len()]
                || chunks[0].length() != length
            {
                return None;
            }
            nfs3_call_detail(&call)
        }
        (wire::rpc::NFS_PROGRAM, 4) if key.proc_ == NFSPROC4_COMPOUND => {
            let mut reduction = Reduction::for_call(chunks);
            let args = Compound4Args::decode_with(&mut r, &mut reduction).ok()?;
            if r.remaining() != 0 || reduction.unused_chunks().next().is_some() {
                return None;
            }
            let mut moved = reduction.items().iter().filter(|i| i.moved);
            for (chunk, &at) in chunks.iter().zip(&at) {
                let item = moved.next()?;
                if item.chunk != Some(chunk.position as usize)
                    || item.offset != at
                    || u64::from(item.length) != chunk.length()
                {
                    return None;
                }
            }
            if moved.next().is_some() {
                return None;
            }
            Some(args.summary_reinserted())
        }
        _ => return None,
    };
    Some(Decoded {
        rpc: Some(RpcSummary::of_call(&c)),
        nfs: Some(NfsSummary {
            program,
            proc_: proc_name(key),
            status: None,
            detail,
        }),
        error: None,
        note: None,
    })
}

fn family(key: CallKey) -> Option<&'static str> {
    match (key.prog, key.vers) {
        (wire::rpc::NFS_PROGRAM, 3) => Some("NFS3"),
        (wire::rpc::NFS_PROGRAM, 4) => Some("NFS4"),
        (wire::rpc::NFSACL_PROGRAM, 3) => Some("NFSACL"),
        (wire::rpc::MOUNT_PROGRAM, 3) => Some("MOUNT3"),
        _ => None,
    }
}

fn proc_name(key: CallKey) -> String {
    match wire::message::procedure_name(key.prog, key.vers, key.proc_) {
        Some(n) => n.to_string(),
        None => format!("PROC{}", key.proc_),
    }
}

fn name_only(key: CallKey) -> Option<NfsSummary> {
    family(key).map(|program| NfsSummary {
        program,
        proc_: proc_name(key),
        status: None,
        detail: None,
    })
}

fn finish(r: &Reader<'_>, what: &str) -> Result<(), String> {
    match r.remaining() {
        0 => Ok(()),
        n => Err(format!("{what}: {n} trailing bytes")),
    }
}

/// The procedure `key` names, as `known` maps the numbers of `program` (named in the error).
fn procedure<P>(key: CallKey, program: &str, known: fn(u32) -> Option<P>) -> Result<P, String> {
    known(key.proc_).ok_or_else(|| format!("{program}: unknown procedure {}", key.proc_))
}

fn decode_call_args(
    key: CallKey,
    body: &[u8],
    reduced: bool,
) -> Result<Option<NfsSummary>, String> {
    let Some(fam) = family(key) else {
        return Ok(None);
    };
    let mut r = Reader::new(body);
    let mut detail = None;
    match (key.prog, key.vers) {
        (wire::rpc::NFS_PROGRAM, 3) => {
            let proc_ = procedure(key, "nfs3", Nfs3Proc::from_u32)?;
            let ddp = if reduced { Ddp::Moved } else { Ddp::Inline };
            let call = Nfs3Call::decode_reduced(proc_, &mut r, ddp)
                .map_err(|e| format!("nfs3 call: {e}"))?;
            detail = nfs3_call_detail(&call);
            finish(&r, "nfs3 call")?;
        }
        (wire::rpc::NFSACL_PROGRAM, 3) => {
            let proc_ = procedure(key, "nfsacl", NfsaclProc::from_u32)?;
            NfsaclCall::decode(proc_, &mut r).map_err(|e| format!("nfsacl call: {e}"))?;
            finish(&r, "nfsacl call")?;
        }
        (wire::rpc::MOUNT_PROGRAM, 3) => {
            let proc_ = procedure(key, "mount3", wire::mount3::Mount3Proc::from_u32)?;
            wire::mount3::Mount3Call::decode(proc_, &mut r)
                .map_err(|e| format!("mount3 call: {e}"))?;
            finish(&r, "mount3 call")?;
        }
        (wire::rpc::NFS_PROGRAM, 4) if key.proc_ == NFSPROC4_COMPOUND => {
            // The rebuilt call has its Read chunks reinserted; `reduced` only when their data
            // was not captured (then every DDP-eligible argument is its length word alone).
            let mut reduction = if reduced {
                Reduction::every_item_moved()
            } else {
                Reduction::inline()
            };
            let args = Compound4Args::decode_with(&mut r, &mut reduction)
                .map_err(|e| format!("nfs4 call: {e}"))?;
            detail = Some(args.summary());
            finish(&r, "nfs4 call")?;
        }
        _ => {}
    }
    Ok(Some(NfsSummary {
        program: fam,
        proc_: proc_name(key),
        status: None,
        detail,
    }))
}

fn decode_reply_results(
    key: CallKey,
    body: &[u8],
    reduced: bool,
    writes: &[u64],
) -> Result<Option<NfsSummary>, String> {
    let moved = (!writes.is_empty()).then(|| writes.iter().sum::<u64>());
    let Some(fam) = family(key) else {
        return Ok(None);
    };
    let mut r = Reader::new(body);
    let mut status = None;
    let mut detail = None;
    match (key.prog, key.vers) {
        (wire::rpc::NFS_PROGRAM, 3) => {
            let proc_ = procedure(key, "nfs3", Nfs3Proc::from_u32)?;
            let ddp = if reduced { Ddp::Moved } else { Ddp::Inline };
            let reply = Nfs3Reply::decode_reduced(proc_, &mut r, ddp)
                .map_err(|e| format!("nfs3 reply: {e}"))?;
            status = Some(reply.status().name().to_string());
            detail = nfs3_reply_detail(&reply);
            finish(&r, "nfs3 reply")?;
            // The reduced stream keeps the moved item's length; the Write chunk must hold it.
            if let (Some(inline_len), Some(moved)) = (moved_item_len(&reply), moved) {
                if !wire::message::write_chunk_holds(inline_len, moved) {
                    return Err(format!(
                        "Write chunk carried {moved} bytes but the reply says {inline_len} (RFC 8166 §3.4.6)"
                    ));
                }
            }
        }
        (wire::rpc::NFSACL_PROGRAM, 3) => {
            let proc_ = procedure(key, "nfsacl", NfsaclProc::from_u32)?;
            let reply =
                NfsaclReply::decode(proc_, &mut r).map_err(|e| format!("nfsacl reply: {e}"))?;
            status = match &reply {
                NfsaclReply::Getacl(res) => Some(res.status().name().to_string()),
                NfsaclReply::Setacl(res) => Some(res.status().name().to_string()),
                // NULL, and any other (Linux-specific) procedure: no status summarised.
                _ => None,
            };
            finish(&r, "nfsacl reply")?;
        }
        (wire::rpc::MOUNT_PROGRAM, 3) => {
            let proc_ = procedure(key, "mount3", wire::mount3::Mount3Proc::from_u32)?;
            wire::mount3::Mount3Reply::decode(proc_, &mut r)
                .map_err(|e| format!("mount3 reply: {e}"))?;
            finish(&r, "mount3 reply")?;
        }
        (wire::rpc::NFS_PROGRAM, 4) if key.proc_ == NFSPROC4_COMPOUND => {
            // Each DDP-eligible result takes the next Write chunk (RFC 8166 §3.4.6).
            let mut reduction = Reduction::for_reply(if reduced { writes } else { &[] });
            let res = Compound4Res::decode_with(&mut r, &mut reduction)
                .map_err(|e| format!("nfs4 reply: {e}"))?;
            status = Some(res.status.name().into_owned());
            detail = Some(res.summary());
            finish(&r, "nfs4 reply")?;
            // The reduced stream keeps each moved item's length; its Write chunk must hold it.
            for item in reduction.items().iter().filter(|i| i.moved) {
                let carried = reduction.chunk_length(item).unwrap_or(0);
                if !wire::message::write_chunk_holds(item.length, carried) {
                    return Err(format!(
                        "Write chunk carried {carried} bytes but {} says {} (RFC 8166 §3.4.6)",
                        item.item, item.length
                    ));
                }
            }
        }
        _ => {}
    }
    Ok(Some(NfsSummary {
        program: fam,
        proc_: proc_name(key),
        status,
        detail,
    }))
}

/// The length of the reply's DDP-eligible item when it went through a Write chunk
/// ([`Nfs3Reply::ddp_data`] names the item, RFC 8267 §4).
fn moved_item_len(reply: &Nfs3Reply) -> Option<u32> {
    reply
        .ddp_data()
        .filter(|data| data.is_moved())
        .map(|data| data.len())
}

fn nfs3_call_detail(call: &Nfs3Call) -> Option<String> {
    match call {
        Nfs3Call::Read(a) => Some(format!("count={}", a.count)),
        Nfs3Call::Write(a) => Some(format!("count={} {}", a.count, a.stable.name())),
        Nfs3Call::Lookup(a) => Some(format!("name={}", String::from_utf8_lossy(&a.what.name.0))),
        _ => None,
    }
}

fn nfs3_reply_detail(reply: &Nfs3Reply) -> Option<String> {
    match reply {
        Nfs3Reply::Read(wire::nfs3::NfsRes::Ok(ok)) => Some(format!(
            "count={} eof={} data={}",
            ok.count,
            ok.eof,
            if ok.data.is_moved() {
                "chunk"
            } else {
                "inline"
            }
        )),
        Nfs3Reply::Write(wire::nfs3::NfsRes::Ok(ok)) => {
            Some(format!("count={} {}", ok.count, ok.committed.name()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_chunks_are_reinserted_with_round_up() {
        let inline = b"AAAABBBB";
        let out = reinsert_read_chunks(inline, &[(4, b"xyz".to_vec())]).unwrap();
        assert_eq!(out, b"AAAAxyz\0BBBB");
        let two =
            reinsert_read_chunks(inline, &[(4, b"12".to_vec()), (12, b"3456".to_vec())]).unwrap();
        assert_eq!(two, b"AAAA12\0\0BBBB3456");
    }

    #[test]
    fn the_layout_places_chunks_where_reinsertion_puts_them() {
        let layout = Reinsertion::plan(8, &[(4, 2), (12, 4)]).unwrap();
        assert_eq!((layout.total, layout.chunk_at.clone()), (16, vec![4, 12]));
        let mut out = layout.with_inline(b"AAAABBBB");
        assert_eq!(out, b"AAAA\0\0\0\0BBBB\0\0\0\0");
        out[4..6].copy_from_slice(b"12");
        out[12..16].copy_from_slice(b"3456");
        let rebuilt =
            reinsert_read_chunks(b"AAAABBBB", &[(4, b"12".to_vec()), (12, b"3456".to_vec())]);
        assert_eq!(rebuilt.unwrap(), out);
        assert!(Reinsertion::plan(4, &[(8, 1)]).is_err());
        assert!(Reinsertion::plan(4, &[(0, MAX_REBUILT_MESSAGE)]).is_err());
    }

    #[test]
    fn a_call_decoded_without_its_chunk_data_is_the_rebuilt_calls_decode() {
        use wire::rpcrdma::Segment;
        use wire::Xdr;
        // NFSv3 WRITE of 5 bytes moved to a Read chunk: the reduced call ends with the length.
        let mut inline = wire::rpc::CallHeader::new(9, wire::rpc::NFS_PROGRAM, 3, 7).to_bytes();
        let mut args = wire::Writer::new();
        args.opaque_var(&[1; 8]).u64(4096).u32(5).u32(2).u32(5);
        inline.extend(args.as_bytes());
        let chunk = |position: usize, length: u32| ReadChunk {
            position: position as u32,
            segments: vec![Segment {
                handle: 1,
                length,
                offset: 0,
            }],
        };
        let at = inline.len();
        let moved = decode_call_moved(&inline, &[chunk(at, 5)], &[at]).expect("decoded");
        let rebuilt = reinsert_read_chunks(&inline, &[(at as u32, b"hello".to_vec())]).unwrap();
        let decoded = decode_rpc(&rebuilt, None, false, &[]);
        assert_eq!(format!("{moved:?}"), format!("{decoded:?}"));
        assert_eq!(
            moved.nfs.and_then(|n| n.detail).as_deref(),
            Some("count=5 FILE_SYNC")
        );
        // A chunk not exactly on the data (other length, other place), or not on a
        // DDP-eligible argument at all: left to the rebuild.
        assert!(decode_call_moved(&inline, &[chunk(at, 4)], &[at]).is_none());
        assert!(decode_call_moved(&inline, &[chunk(at - 4, 5)], &[at - 4]).is_none());
        let mut getattr = wire::rpc::CallHeader::new(9, wire::rpc::NFS_PROGRAM, 3, 1).to_bytes();
        getattr.extend(wire::Writer::new().opaque_var(&[1; 8]).as_bytes());
        let end = getattr.len();
        assert!(decode_call_moved(&getattr, &[chunk(end, 4)], &[end]).is_none());
        assert!(decode_call_moved(&inline, &[], &[]).is_none());
    }

    #[test]
    fn bad_positions_are_errors_not_panics() {
        assert!(reinsert_read_chunks(b"AAAA", &[(8, b"x".to_vec())]).is_err());
        assert!(
            reinsert_read_chunks(b"AAAA", &[(4, b"xxxx".to_vec()), (2, b"y".to_vec())]).is_err()
        );
        // A chunk starting inside the previous one's data is an overlap (wire::ddp::place),
        // also where its position, less the chunks before it, still falls in the inline stream.
        let inside = reinsert_read_chunks(b"AAAAAAAA", &[(4, vec![1; 8]), (8, b"y".to_vec())]);
        assert_eq!(
            inside.unwrap_err(),
            "Read chunk position 8 overlaps an earlier chunk"
        );
        assert_eq!(
            reinsert_read_chunks(b"AAAA", &[(8, b"x".to_vec())]).unwrap_err(),
            "Read chunk position 8 is beyond the inline stream (RFC 8166 §3.4.5)"
        );
    }
}
