//! What the requester and the responder observe, as typed events ([`RequesterEvent`],
//! [`ResponderEvent`]). An endpoint records them as they happen; they become one line of text each
//! (`Display`) only when a test, the CLI or a fuzz log takes the trace, so a call costs no
//! formatting unless someone reads it.
//!
//! Volatile values are printed as `xid=0x…` and `h=0x…` so that a later pass can replace them
//! with stable symbols (see `client::trace::normalise`).

use std::fmt;

use wire::rpc::{program_name, AcceptStat, CallHeader, ReplyBody, RpcMessage};
use wire::rpcrdma::{Body, ChunkLists, ErrorBody, Header, Segment};

use crate::endpoint::CompletionError;
use crate::refusal::{RejectReason, ReplyFailure};

/// A transport header as one trace field: `RDMA_MSG xid=0x… cr=N chunks…`.
pub struct HeaderLine<'a>(pub &'a Header);

impl fmt::Display for HeaderLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = self.0;
        write!(
            f,
            "{} xid={:#x} cr={}",
            header.proc().name(),
            header.xid,
            header.credits
        )?;
        match &header.body {
            Body::Msg(c) | Body::Nomsg(c) | Body::Msgp { chunks: c, .. } => write_chunks(f, c),
            Body::Done => Ok(()),
            Body::Error(ErrorBody::Vers { low, high }) => write!(f, " ERR_VERS {low}-{high}"),
            Body::Error(ErrorBody::Chunk) => f.write_str(" ERR_CHUNK"),
        }
    }
}

fn write_chunks(f: &mut fmt::Formatter<'_>, chunks: &ChunkLists) -> fmt::Result {
    for read in &chunks.reads {
        write!(
            f,
            " read@{}:h={:#x}/{}",
            read.position, read.target.handle, read.target.length
        )?;
    }
    for chunk in &chunks.writes {
        write_segments(f, " write", chunk)?;
    }
    if let Some(reply) = &chunks.reply {
        write_segments(f, " reply", reply)?;
    }
    Ok(())
}

/// ` write[h=0x…/N,h=0x…/N]`
fn write_segments(f: &mut fmt::Formatter<'_>, name: &str, segments: &[Segment]) -> fmt::Result {
    write!(f, "{name}[")?;
    for (i, s) in segments.iter().enumerate() {
        let comma = if i == 0 { "" } else { "," };
        write!(f, "{comma}h={:#x}/{}", s.handle, s.length)?;
    }
    f.write_str("]")
}

/// What a message's RPC header says, kept for the trace: `| call NFS v3 GETATTR (NB)`,
/// `| reply SUCCESS (NB)`, `| reply DENIED`, `| rpc ?` for bytes that are no RPC header, and
/// nothing for no bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RpcSummary {
    /// No bytes at all (the message travelled in a chunk).
    Empty,
    /// The bytes do not start with an RPC header.
    Undecodable,
    Call {
        prog: u32,
        vers: u32,
        proc_: u32,
        len: usize,
    },
    Reply {
        stat: AcceptStat,
        len: usize,
    },
    Denied,
}

impl RpcSummary {
    /// Decode the RPC header at the start of `message` (when the caller has not already).
    pub fn of(message: &[u8]) -> RpcSummary {
        RpcSummary::of_decoded(message, RpcMessage::decode_prefix(message).map(|(m, _)| m))
    }

    /// The summary of `message`, whose RPC header decoded as `decoded`.
    pub fn of_decoded<E>(message: &[u8], decoded: Result<RpcMessage, E>) -> RpcSummary {
        match decoded {
            Ok(RpcMessage::Call(call)) => RpcSummary::of_call(&call, message.len()),
            Ok(RpcMessage::Reply(reply)) => match reply.body {
                ReplyBody::Accepted { stat, .. } => RpcSummary::Reply {
                    stat,
                    len: message.len(),
                },
                ReplyBody::Denied(_) => RpcSummary::Denied,
            },
            Err(_) if message.is_empty() => RpcSummary::Empty,
            Err(_) => RpcSummary::Undecodable,
        }
    }

    /// A `len`-byte call message starting with `call`.
    pub fn of_call(call: &CallHeader, len: usize) -> RpcSummary {
        RpcSummary::Call {
            prog: call.prog,
            vers: call.vers,
            proc_: call.proc_,
            len,
        }
    }

    /// The same header at the start of a message now `len` bytes long (Read chunks spliced in
    /// after it).
    pub fn with_len(self, len: usize) -> RpcSummary {
        match self {
            RpcSummary::Call {
                prog, vers, proc_, ..
            } => RpcSummary::Call {
                prog,
                vers,
                proc_,
                len,
            },
            RpcSummary::Reply { stat, .. } => RpcSummary::Reply { stat, len },
            other => other,
        }
    }
}

impl fmt::Display for RpcSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RpcSummary::Empty => Ok(()),
            RpcSummary::Undecodable => f.write_str("| rpc ?"),
            RpcSummary::Call {
                prog,
                vers,
                proc_,
                len,
            } => {
                let procedure = wire::message::procedure_name(prog, vers, proc_);
                write!(f, "| call {} v{vers} ", program_name(prog).unwrap_or("?"))?;
                match procedure {
                    Some(name) => f.write_str(name)?,
                    None => write!(f, "proc {proc_}")?,
                }
                write!(f, " ({len}B)")
            }
            RpcSummary::Reply { stat, len } => write!(f, "| reply {} ({len}B)", stat.name()),
            RpcSummary::Denied => f.write_str("| reply DENIED"),
        }
    }
}

/// What the responder observed (trace lines `srv …`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResponderEvent {
    /// A connection came up with these inline thresholds.
    Connected {
        inline_send: usize,
        inline_recv: usize,
    },
    /// A Receive the strict header codec refused (the rule it broke); a `Rejected` follows.
    StrictDecode {
        rule: &'static str,
    },
    /// A Receive's header and what follows it inline.
    Received {
        header: Header,
        rpc: RpcSummary,
    },
    /// A Receive answered with RDMA_ERROR or dropped.
    Rejected {
        xid: Option<u32>,
        reason: RejectReason,
    },
    /// A call's Read chunks pulled and spliced in.
    Pulled {
        xid: u32,
        rpc: RpcSummary,
    },
    /// A Send posted: a reply with its position, or RDMA_ERROR (no RPC, no position).
    Sent {
        header: Header,
        reply: Option<(RpcSummary, u64)>,
    },
    /// A reply that could not be conveyed (answered with ERR_CHUNK instead).
    ReplyFailed {
        xid: u32,
        reason: ReplyFailure,
    },
    /// A reply for a connection that is gone.
    ReplyLost {
        xid: u32,
    },
    /// The upper layer dropped a call (no reply).
    CallDropped {
        xid: u32,
    },
    /// A Send completion published this position.
    Acked {
        position: u64,
    },
    WorkFailed {
        error: CompletionError,
    },
    Disconnected,
}

impl fmt::Display for ResponderEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResponderEvent::Connected {
                inline_send,
                inline_recv,
            } => write!(
                f,
                "srv connected inline send={inline_send} recv={inline_recv}"
            ),
            ResponderEvent::StrictDecode { rule } => write!(f, "srv strict decode: {rule}"),
            ResponderEvent::Received { header, rpc } => {
                write!(f, "srv recv {} {rpc}", HeaderLine(header))
            }
            ResponderEvent::Rejected { xid, reason } => match xid {
                Some(xid) => write!(f, "srv reject xid={xid:#x} {reason}"),
                None => write!(f, "srv reject xid=? {reason}"),
            },
            ResponderEvent::Pulled { xid, rpc } => write!(f, "srv pulled xid={xid:#x} {rpc}"),
            ResponderEvent::Sent { header, reply } => {
                write!(f, "srv send {}", HeaderLine(header))?;
                match reply {
                    Some((rpc, position)) => write!(f, " {rpc} pos={position}"),
                    None => Ok(()),
                }
            }
            ResponderEvent::ReplyFailed { xid, reason } => {
                write!(f, "srv reply xid={xid:#x} failed: {reason}")
            }
            ResponderEvent::ReplyLost { xid } => {
                write!(f, "srv reply xid={xid:#x} lost: connection gone")
            }
            ResponderEvent::CallDropped { xid } => write!(f, "srv drop xid={xid:#x} (no reply)"),
            ResponderEvent::Acked { position } => write!(f, "srv acked pos={position}"),
            ResponderEvent::WorkFailed { error } => write!(f, "srv work failed {error:?}"),
            ResponderEvent::Disconnected => f.write_str("srv disconnected"),
        }
    }
}

/// What the requester observed (trace lines `cli …`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequesterEvent {
    Connected {
        inline_send: usize,
        inline_recv: usize,
    },
    /// A call's Send: its header and what travels inline.
    Sent {
        header: Header,
        rpc: RpcSummary,
    },
    /// A Send of arbitrary bytes ([`crate::Requester::send_raw`]).
    SentRaw {
        len: usize,
    },
    /// A Receive whose header failed to decode (the rule it broke).
    BadHeader {
        rule: &'static str,
    },
    /// A reply matching no outstanding transmission.
    Unmatched {
        header: Header,
    },
    /// RDMA_ERROR for a transmission.
    TransportError {
        header: Header,
    },
    /// A reply and its RPC message (inline or from the Reply chunk).
    Reply {
        header: Header,
        rpc: RpcSummary,
    },
    /// RDMA_MSGP or RDMA_DONE: not a reply.
    Ignored {
        header: Header,
    },
    WorkFailed {
        error: CompletionError,
    },
    Disconnected,
}

impl fmt::Display for RequesterEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequesterEvent::Connected {
                inline_send,
                inline_recv,
            } => write!(
                f,
                "cli connected inline send={inline_send} recv={inline_recv}"
            ),
            RequesterEvent::Sent { header, rpc } => {
                write!(f, "cli send {} {rpc}", HeaderLine(header))
            }
            RequesterEvent::SentRaw { len } => write!(f, "cli send raw {len}B"),
            RequesterEvent::BadHeader { rule } => write!(f, "cli recv bad-header {rule}"),
            RequesterEvent::Unmatched { header } => {
                write!(f, "cli recv {} unmatched", HeaderLine(header))
            }
            RequesterEvent::TransportError { header } => {
                write!(f, "cli recv {}", HeaderLine(header))
            }
            RequesterEvent::Reply { header, rpc } => {
                write!(f, "cli recv {} {rpc}", HeaderLine(header))
            }
            RequesterEvent::Ignored { header } => {
                write!(f, "cli recv {} ignored", HeaderLine(header))
            }
            RequesterEvent::WorkFailed { error } => write!(f, "cli work failed {error:?}"),
            RequesterEvent::Disconnected => f.write_str("cli disconnected"),
        }
    }
}
