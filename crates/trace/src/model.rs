//! The trace model: connections and events (one per RPC-over-RDMA message, per RDMA data movement,
//! per CM message and per transport anomaly), with roles instead of addresses.

use std::net::IpAddr;
use std::time::Duration;

use serde::Serialize;

use crate::reassembly::TransportEvent;

/// Which end of a connection did something. The client is the RPC requester: it sends Calls and
/// (RFC 8166 §3.4.1) it is the side whose memory the server reads from and writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Client,
    Server,
}

impl Role {
    /// One-letter tag used in trace lines.
    pub fn tag(self) -> &'static str {
        match self {
            Role::Client => "C",
            Role::Server => "S",
        }
    }

    /// The other end.
    pub fn peer(self) -> Role {
        match self {
            Role::Client => Role::Server,
            Role::Server => Role::Client,
        }
    }
}

/// One RC connection (a pair of QPs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Connection {
    pub id: usize,
    pub client: Option<IpAddr>,
    pub server: Option<IpAddr>,
    pub client_qp: Option<u32>,
    pub server_qp: Option<u32>,
    /// Port from the CM service ID (20049 for NFS/RDMA).
    pub port: Option<u16>,
    /// Whether this connection carries RPC-over-RDMA (by port, RFC 8797 private data, or the
    /// first Send decoding as a version 1 header).
    pub rpcrdma: bool,
    /// Whether the QP pairing came from the CM exchange (else from traffic).
    pub from_cm: bool,
}

/// One decoded RPC-over-RDMA message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Message {
    pub xid: Option<u32>,
    pub vers: Option<u32>,
    pub credits: Option<u32>,
    /// "RDMA_MSG" etc.; `None` when the header did not decode far enough.
    pub proc_: Option<&'static str>,
    pub header: Option<wire::rpcrdma::Header>,
    /// Bytes of the Send payload after the transport header.
    pub inline_len: usize,
    pub rpc: Option<RpcSummary>,
    pub nfs: Option<NfsSummary>,
    /// Bytes of chunk data attached (read from or written to the client's memory) for this
    /// message: Read chunks for a Call, Write and Reply chunks for a Reply.
    pub chunk_bytes: u64,
    /// Why the message did not decode in full.
    pub error: Option<String>,
    /// Decoded, but not in full: chunk data missing from the capture (reduced stream used).
    pub note: Option<String>,
    /// For a Call: the frame of the earlier Call with the same xid on this connection (a
    /// retransmission). For a Reply: the frame of the earlier Reply to the same xid.
    pub repeat_of: Option<u32>,
    /// For a Reply: the frame of the matching Call and the time since it.
    pub call_frame: Option<u32>,
    #[serde(skip)]
    pub latency: Option<Duration>,
    /// The Send payload as captured (transport header + inline part), for extraction.
    #[serde(skip)]
    pub payload: Vec<u8>,
}

impl Message {
    /// A file-name-friendly kind: direction, transport procedure, upper-layer procedure, e.g.
    /// `call-msg-nfs3-write`, `reply-nomsg-nfsacl-getacl`, `reply-error`.
    pub fn kind(&self, dir: Option<Role>) -> String {
        let mut parts = vec![match dir {
            Some(Role::Client) => "call",
            Some(Role::Server) => "reply",
            None => "unknown",
        }
        .to_string()];
        if let Some(p) = self.proc_ {
            parts.push(p.trim_start_matches("RDMA_").to_ascii_lowercase());
        }
        match (&self.nfs, &self.rpc) {
            (Some(nfs), _) => {
                parts.push(format!("{}-{}", nfs.program, nfs.proc_).to_ascii_lowercase())
            }
            (None, Some(rpc)) => {
                if let (Some(prog), Some(proc_)) = (rpc.prog, rpc.proc_) {
                    parts.push(format!("prog{prog}-proc{proc_}"));
                }
            }
            _ => {}
        }
        parts.join("-")
    }
}

/// The RPC layer of a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RpcSummary {
    /// "call" or "reply".
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub xid: u32,
    pub prog: Option<u32>,
    pub vers: Option<u32>,
    #[serde(rename = "proc")]
    pub proc_: Option<u32>,
    /// For a reply: "SUCCESS", "PROG_UNAVAIL", "AUTH_ERROR(..)", ...
    pub status: Option<String>,
}

impl RpcSummary {
    /// The summary of a Call: its program, version and procedure, no status.
    pub fn of_call(c: &wire::rpc::CallHeader) -> Self {
        RpcSummary {
            kind: "call",
            xid: c.xid,
            prog: Some(c.prog),
            vers: Some(c.vers),
            proc_: Some(c.proc_),
            status: None,
        }
    }
}

/// The upper-layer (NFS, NFSACL, MOUNT) view of a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NfsSummary {
    /// Program and version: "NFS3", "NFS4", "NFSACL", "MOUNT3".
    pub program: &'static str,
    /// Procedure name, e.g. "READ", "GETACL", "COMPOUND".
    #[serde(rename = "proc")]
    pub proc_: String,
    /// For replies: the status name ("NFS3_OK", "NFS3ERR_NOENT").
    pub status: Option<String>,
    /// A few stable details (sizes, names) for readable traces.
    pub detail: Option<String>,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventBody {
    Message(Box<Message>),
    /// A Send on a connection that does not carry RPC-over-RDMA.
    Send {
        length: usize,
    },
    /// RDMA WRITE by `dir` into the peer's memory.
    RdmaWrite {
        handle: u32,
        offset: u64,
        length: usize,
    },
    /// RDMA READ by `dir` from the peer's memory.
    RdmaRead {
        handle: u32,
        offset: u64,
        length: usize,
    },
    Cm {
        name: String,
        detail: String,
    },
    Transport(TransportEvent),
}

/// One trace event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    /// Frame completing the event (1-based).
    pub frame: u32,
    /// Frame starting it (multi-packet operations, RDMA READ request).
    pub first_frame: u32,
    /// Time since the first frame of the capture.
    #[serde(skip)]
    pub time: Duration,
    pub conn: Option<usize>,
    /// Who did it (sent the message, issued the RDMA operation).
    pub dir: Option<Role>,
    pub body: EventBody,
}

/// A whole trace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Trace {
    pub frames: u32,
    pub connections: Vec<Connection>,
    pub events: Vec<Event>,
    /// Set when the capture ended in a malformed record (events before it are kept).
    pub capture_error: Option<String>,
}

impl Trace {
    /// The RPC-over-RDMA messages, in capture order.
    pub fn messages(&self) -> impl Iterator<Item = (&Event, &Message)> {
        self.events.iter().filter_map(|e| match &e.body {
            EventBody::Message(m) => Some((e, m.as_ref())),
            _ => None,
        })
    }
}
