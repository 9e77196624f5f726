//! One RPC message as the trace shows it: the typed decode of [`wire::message`] turned into the
//! model's [`RpcSummary`] and [`NfsSummary`] (program, procedure, status and a few stable details
//! such as `count=5 FILE_SYNC`), with the decode's error or note in the trace's words.
//!
//! Nothing here reads bytes: the RPC header and the NFSv3 / NFSv4.1 COMPOUND / MOUNT / NFSACL
//! arguments and results, and their rules, are wire's.

use wire::message::{CallProc, DecodedRpc, MessageError, Upper};
use wire::nfs3::{Nfs3Call, Nfs3Reply, NfsRes};
use wire::nfs4::NFSPROC4_COMPOUND;
use wire::nfsacl::NfsaclReply;
use wire::rpc::{RejectedReply, ReplyBody, RpcMessage, MOUNT_PROGRAM, NFSACL_PROGRAM, NFS_PROGRAM};

use crate::model::{NfsSummary, RpcSummary};

/// What the trace shows of one decoded RPC message.
#[derive(Debug, Default)]
pub struct Decoded {
    pub rpc: Option<RpcSummary>,
    pub nfs: Option<NfsSummary>,
    pub error: Option<String>,
    /// Not an error in the message, but a reason it could not be decoded further.
    pub note: Option<String>,
}

/// How the message's moved arguments are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// As decoded: a DDP-eligible item reduced to its length word is shown as moved.
    AsDecoded,
    /// As the message with its Read chunk data reinserted reads: the decode of a call whose Read
    /// chunks carry exactly its moved arguments
    /// ([`wire::message::DecodedRpc::reads_are_moved_arguments`]).
    Reinserted,
}

/// The trace's view of [`wire::message::decode_rpc_message`]'s result. For a Reply, `call` is
/// the procedure of the Call it answers, when that Call was captured.
pub fn summarise(
    result: &Result<DecodedRpc, MessageError>,
    call: Option<CallProc>,
    view: View,
) -> Decoded {
    let mut out = Decoded::default();
    let rpc = match result {
        Ok(decoded) => &decoded.rpc,
        Err(e) => match e.rpc.as_deref() {
            Some(rpc) => rpc,
            // The RPC header itself did not decode: "rpc: ...".
            None => {
                out.error = Some(e.to_string());
                return out;
            }
        },
    };
    match rpc {
        RpcMessage::Call(c) => {
            out.rpc = Some(RpcSummary::of_call(c));
            let key = CallProc::new(c.prog, c.vers, c.proc_);
            match result {
                Ok(decoded) => out.nfs = nfs_summary(key, decoded, view),
                Err(e) => {
                    out.nfs = name_only(key);
                    out.error = Some(error_text(key, "call", e));
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
                // Bytes after a rejected or failed reply's header (RFC 5531 §9).
                out.error = result.as_ref().err().map(shared_text);
                return out;
            }
            let Some(key) = call else {
                // The capture started after the Call: nothing wrong with the Reply itself.
                out.note = Some("Call not captured: results not decoded".into());
                return out;
            };
            match result {
                Ok(decoded) => match decoded.write_chunk_mismatch() {
                    None => out.nfs = nfs_summary(key, decoded, view),
                    Some((item, carried)) => {
                        out.nfs = name_only(key);
                        // The reduced stream keeps the moved item's length; the Write chunk must
                        // hold it.
                        let said = if key.vers == 3 {
                            "the reply"
                        } else {
                            item.item
                        };
                        out.error = Some(format!(
                            "Write chunk carried {carried} bytes but {said} says {} (RFC 8166 §3.4.6)",
                            item.length
                        ));
                    }
                },
                Err(e) => {
                    out.nfs = name_only(key);
                    out.error = Some(error_text(key, "reply", e));
                }
            }
        }
    }
    out
}

/// The program and version as the trace names them, for the programs wire decodes.
fn family(key: CallProc) -> Option<&'static str> {
    match (key.prog, key.vers) {
        (NFS_PROGRAM, 3) => Some("NFS3"),
        (NFS_PROGRAM, 4) => Some("NFS4"),
        (NFSACL_PROGRAM, 3) => Some("NFSACL"),
        (MOUNT_PROGRAM, 3) => Some("MOUNT3"),
        _ => None,
    }
}

/// The prefix of an upper-layer error: the program in lower case.
fn error_prefix(key: CallProc) -> Option<&'static str> {
    match (key.prog, key.vers) {
        (NFS_PROGRAM, 3) => Some("nfs3"),
        (NFS_PROGRAM, 4) if key.proc_ == NFSPROC4_COMPOUND => Some("nfs4"),
        (NFSACL_PROGRAM, 3) => Some("nfsacl"),
        (MOUNT_PROGRAM, 3) => Some("mount3"),
        _ => None,
    }
}

fn proc_name(key: CallProc) -> String {
    match wire::message::procedure_name(key.prog, key.vers, key.proc_) {
        Some(n) => n.to_string(),
        None => format!("PROC{}", key.proc_),
    }
}

fn name_only(key: CallProc) -> Option<NfsSummary> {
    family(key).map(|program| NfsSummary {
        program,
        proc_: proc_name(key),
        status: None,
        detail: None,
    })
}

/// A decode error in the trace's words: `nfs3: unknown procedure 99`, `nfs3 call: 4 trailing
/// bytes`, `nfs4 reply: <error>`. The rules only the shared Send decoder used to check (NFSv4's
/// procedure numbers and NULL, bytes after a failed reply) keep its words.
fn error_text(key: CallProc, direction: &str, e: &MessageError) -> String {
    let Some(prefix) = error_prefix(key) else {
        return shared_text(e);
    };
    if let Some(proc_) = e.unknown_procedure() {
        return format!("{prefix}: unknown procedure {proc_}");
    }
    if let Some(count) = e.trailing_bytes() {
        return format!("{prefix} {direction}: {count} trailing bytes");
    }
    match e.layer {
        wire::message::Layer::Nfs => format!("{prefix} {direction}: {}", e.error),
        _ => shared_text(e),
    }
}

/// An error as the shared decoder ([`wire::message`]) words it.
pub fn shared_text(e: &MessageError) -> String {
    format!("wire::message: {e}")
}

/// The summary of a decoded message of a known program.
fn nfs_summary(key: CallProc, decoded: &DecodedRpc, view: View) -> Option<NfsSummary> {
    let program = family(key)?;
    let (status, detail) = match &decoded.upper {
        Some(Upper::Nfs3Call(call)) => (None, nfs3_call_detail(call)),
        Some(Upper::Nfs4Call(args)) => (
            None,
            Some(match view {
                View::AsDecoded => args.summary(),
                View::Reinserted => args.summary_reinserted(),
            }),
        ),
        Some(Upper::Nfs3Reply(reply)) => (
            Some(reply.status().name().to_string()),
            nfs3_reply_detail(reply),
        ),
        Some(Upper::Nfs4Reply(res)) => (Some(res.status.name().into_owned()), Some(res.summary())),
        Some(Upper::NfsaclReply(reply)) => match reply {
            NfsaclReply::Getacl(res) => (Some(res.status().name().to_string()), None),
            NfsaclReply::Setacl(res) => (Some(res.status().name().to_string()), None),
            // NULL, and any other (Linux-specific) procedure: no status summarised.
            NfsaclReply::Null => (None, None),
        },
        Some(Upper::NfsaclCall(_) | Upper::Mount3Call(_) | Upper::Mount3Reply(_)) | None => {
            (None, None)
        }
    };
    Some(NfsSummary {
        program,
        proc_: proc_name(key),
        status,
        detail,
    })
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
        Nfs3Reply::Read(NfsRes::Ok(ok)) => Some(format!(
            "count={} eof={} data={}",
            ok.count,
            ok.eof,
            if ok.data.is_moved() {
                "chunk"
            } else {
                "inline"
            }
        )),
        Nfs3Reply::Write(NfsRes::Ok(ok)) => {
            Some(format!("count={} {}", ok.count, ok.committed.name()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::message::{decode_rpc_message, Placement};
    use wire::rpcrdma::{ChunkLists, ReadSegment, Segment};
    use wire::Xdr;

    /// An NFSv3 WRITE of 5 bytes, its data moved to a Read chunk: the reduced call ends with
    /// the length word. The inline stream and its chunk lists.
    fn moved_write() -> (Vec<u8>, ChunkLists) {
        let mut inline = wire::rpc::CallHeader::new(9, NFS_PROGRAM, 3, 7).to_bytes();
        let mut args = wire::Writer::new();
        args.opaque_var(&[1; 8]).u64(4096).u32(5).u32(2).u32(5);
        inline.extend(args.as_bytes());
        let lists = ChunkLists {
            reads: vec![ReadSegment {
                position: inline.len() as u32,
                target: Segment {
                    handle: 1,
                    length: 5,
                    offset: 0,
                },
            }],
            ..Default::default()
        };
        (inline, lists)
    }

    fn text(d: &Decoded) -> String {
        format!("{:?} {:?} {:?} {:?}", d.rpc, d.nfs, d.error, d.note)
    }

    #[test]
    fn a_call_shown_without_its_chunk_data_reads_as_the_rebuilt_call() {
        let (inline, lists) = moved_write();
        let sent = decode_rpc_message(&inline, None, Placement::Chunks(&lists));
        assert!(sent
            .as_ref()
            .unwrap()
            .reads_are_moved_arguments(&lists.reads));
        let moved = summarise(&sent, None, View::Reinserted);
        let at = inline.len() as u32;
        let rebuilt = crate::reinsert::reinsert_read_chunks(&inline, &[(at, b"hello".to_vec())]);
        let rebuilt = decode_rpc_message(&rebuilt.unwrap(), None, Placement::Reinserted);
        assert_eq!(
            text(&moved),
            text(&summarise(&rebuilt, None, View::AsDecoded))
        );
        assert_eq!(
            moved.nfs.and_then(|n| n.detail).as_deref(),
            Some("count=5 FILE_SYNC")
        );
    }

    #[test]
    fn errors_are_in_the_traces_words() {
        let (mut inline, _) = moved_write();
        // The inline stream decoded as unreduced: the 5 data bytes are missing.
        let short = decode_rpc_message(&inline, None, Placement::Reinserted);
        let e = summarise(&short, None, View::AsDecoded).error.unwrap();
        assert!(
            e.starts_with("nfs3 call: truncated at WriteArgs.data: need 5 bytes"),
            "{e}"
        );
        inline.extend_from_slice(&[0; 4]);
        let long = decode_rpc_message(&inline, None, Placement::Moved { writes: &[] });
        let shown = summarise(&long, None, View::AsDecoded);
        assert_eq!(shown.error.as_deref(), Some("nfs3 call: 4 trailing bytes"));
        assert_eq!(
            shown.nfs.map(|n| (n.proc_, n.detail)),
            Some(("WRITE".into(), None))
        );
        let mut unknown = wire::rpc::CallHeader::new(9, NFS_PROGRAM, 3, 99).to_bytes();
        let shown = summarise(
            &decode_rpc_message(&unknown, None, Placement::Reinserted),
            None,
            View::AsDecoded,
        );
        assert_eq!(shown.error.as_deref(), Some("nfs3: unknown procedure 99"));
        assert_eq!(shown.nfs.unwrap().proc_, "PROC99");
        // NFSv4's procedure numbers were the shared decoder's rule: its words.
        unknown = wire::rpc::CallHeader::new(9, NFS_PROGRAM, 4, 5).to_bytes();
        let shown = summarise(
            &decode_rpc_message(&unknown, None, Placement::Reinserted),
            None,
            View::AsDecoded,
        );
        let e = shown.error.unwrap();
        assert!(e.starts_with("wire::message: nfs: NFSv4 procedure"), "{e}");
        // A broken RPC header.
        let shown = summarise(
            &decode_rpc_message(&unknown[..6], None, Placement::Reinserted),
            None,
            View::AsDecoded,
        );
        assert!(shown.error.unwrap().starts_with("rpc: truncated"));
        assert!(shown.rpc.is_none());
    }

    #[test]
    fn a_reply_needs_its_call_and_a_write_chunk_that_holds_its_data() {
        let mut w = wire::Writer::new();
        wire::rpc::ReplyHeader::success(4).encode(&mut w);
        // READ3resok without attributes, count 3, eof, data moved: only the length word.
        w.u32(0).u32(0).u32(3).u32(1).u32(3);
        let reply = w.into_bytes();
        let call = Some(CallProc::new(NFS_PROGRAM, 3, 6));
        let ok = decode_rpc_message(&reply, call, Placement::Moved { writes: &[3] });
        let shown = summarise(&ok, call, View::AsDecoded);
        assert_eq!(shown.error, None);
        let nfs = shown.nfs.unwrap();
        assert_eq!(nfs.status.as_deref(), Some("NFS3_OK"));
        assert_eq!(nfs.detail.as_deref(), Some("count=3 eof=true data=chunk"));
        let padded = decode_rpc_message(&reply, call, Placement::Moved { writes: &[4] });
        let shown = summarise(&padded, call, View::AsDecoded);
        assert_eq!(
            shown.error.as_deref(),
            Some("Write chunk carried 4 bytes but the reply says 3 (RFC 8166 §3.4.6)")
        );
        assert_eq!(shown.nfs.unwrap().detail, None);
        let unpaired = decode_rpc_message(&reply, None, Placement::Moved { writes: &[3] });
        let shown = summarise(&unpaired, None, View::AsDecoded);
        assert_eq!(
            (shown.error, shown.note.as_deref()),
            (None, Some("Call not captured: results not decoded"))
        );
        assert_eq!(shown.rpc.unwrap().status.as_deref(), Some("SUCCESS"));
    }
}
