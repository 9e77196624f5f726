//! What the server observed, as typed events: its responder's ([`ResponderEvent`]) and its own
//! (RPC refusals, DRC decisions, executions). [`crate::records::Records`] keeps them in a ring;
//! they become text (`Display`, one `srv …` line each) only when the trace is taken.

use std::fmt;

use engine::ResponderEvent;
use wire::nfs_client::Status;
use wire::rpc::AcceptStat;

/// One line of the server's trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerEvent {
    /// What the engine's responder observed.
    Responder(ResponderEvent),
    /// A delivered message that is not an RPC call: dropped, as svc does.
    Undecodable { xid: u32 },
    /// An RPC call answered with an error accept status (RFC 5531 §9).
    Refused { xid: u32, stat: AcceptStat },
    /// The DRC policy's decision on an NFS call.
    Decision {
        policy: &'static str,
        xid: u32,
        procedure: &'static str,
        decision: &'static str,
    },
    /// A procedure executed, with the status it returned.
    Executed {
        xid: u32,
        procedure: &'static str,
        status: Status,
    },
    /// A duplicate parked on an in-progress entry answered with that entry's reply.
    ParkedAnswered { policy: &'static str, xid: u32 },
    /// Entries an acknowledgement released.
    Evicted {
        policy: &'static str,
        entries: usize,
    },
}

impl fmt::Display for ServerEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerEvent::Responder(event) => event.fmt(f),
            ServerEvent::Undecodable { xid } => {
                write!(f, "srv rpc xid={xid:#x} undecodable: dropped")
            }
            ServerEvent::Refused { xid, stat } => write!(f, "srv rpc xid={xid:#x} {}", stat.name()),
            ServerEvent::Decision {
                policy,
                xid,
                procedure,
                decision,
            } => write!(f, "srv drc {policy} xid={xid:#x} {procedure} {decision}"),
            ServerEvent::Executed {
                xid,
                procedure,
                status,
            } => write!(f, "srv exec xid={xid:#x} {procedure} -> {}", status.name()),
            ServerEvent::ParkedAnswered { policy, xid } => {
                write!(f, "srv drc {policy} xid={xid:#x} answer parked duplicate")
            }
            ServerEvent::Evicted { policy, entries } => {
                write!(f, "srv drc {policy} evicted {entries} (acked)")
            }
        }
    }
}
