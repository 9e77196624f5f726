//! The requester (client) side of an RPC-over-RDMA v1 connection.
//!
//! It marshals calls into a transport header plus inline message, registering memory for Read,
//! Write and Reply chunks through its [`Registrar`] (the handles and addresses it returns go into
//! the header as it is encoded); it matches replies to transmissions, invalidates the
//! registrations, taking what the peer wrote into them, and tracks the credit grant. Unlike
//! xprtrdma it *lets* its user send the same XID again on a live connection: each transmission
//! gets its own chunks and its own credit.

mod calls;
mod replies;

use std::collections::VecDeque;

use wire::rpcrdma::{
    total_length, Body, ChunkLists, ErrorBody, Header, ReadSegment, Segment, RPCRDMA_VERSION,
};
use wire::{DecodeError, Xdr};

use crate::endpoint::{
    CompletionError, Endpoint, Event, MemoryTable, RemoteMemory, WorkRequest, WrId,
};
use crate::memory::{ChunkBuffer, RegisterError, Registrar, Registration};
use crate::trace::{RequesterEvent, RpcSummary};
use crate::{negotiated, ConnectionConfig};

/// Identifies one transmission of a call (a retransmit is a new transmission with the same XID).
pub type TransmissionId = u64;

/// A call as the upper layer hands it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingCall {
    pub xid: u32,
    /// The RPC call message; when `read_chunk` is set, the DDP-eligible data is already removed
    /// (RFC 8166 §3.4.1, the reduced XDR stream).
    pub message: Vec<u8>,
    /// DDP data the responder pulls with RDMA Read, and its XDR position in the message.
    pub read_chunk: Option<(u32, Vec<u8>)>,
    /// Offer a Write chunk of this many bytes (READ data lands there).
    pub write_chunk_capacity: Option<u32>,
    /// Offer a Reply chunk of this many bytes (a reply too large to be inline lands there).
    pub reply_chunk_capacity: Option<u32>,
}

impl OutgoingCall {
    /// A call whose message travels whole, with no chunks offered.
    pub fn inline(xid: u32, message: Vec<u8>) -> OutgoingCall {
        OutgoingCall {
            xid,
            message,
            read_chunk: None,
            write_chunk_capacity: None,
            reply_chunk_capacity: None,
        }
    }

    /// A call whose DDP-eligible argument `data` moves in a Read chunk: `reduced` is the call
    /// message without it (`wire::nfs_client::nfs3_call` of arguments with `DdpData::Moved`), and the
    /// chunk's position is [`wire::ddp::argument_position`] of it.
    pub fn moving_argument(xid: u32, reduced: Vec<u8>, data: Vec<u8>) -> OutgoingCall {
        let position = wire::ddp::argument_position(reduced.len());
        OutgoingCall {
            read_chunk: Some((position, data)),
            ..OutgoingCall::inline(xid, reduced)
        }
    }
}

/// How a reply travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ReplyPath {
    Inline,
    ReplyChunk,
}

/// A reply matched to a transmission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedReply {
    pub xid: u32,
    pub transmission: TransmissionId,
    /// The (reduced) RPC reply message.
    pub message: Vec<u8>,
    /// Bytes the responder wrote into the Write chunk, if any.
    pub write_chunk_data: Option<Vec<u8>>,
    pub path: ReplyPath,
}

/// What the requester reports to its upper layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequesterOutput {
    Reply(ReceivedReply),
    /// RDMA_ERROR for a transmission.
    TransportError {
        xid: u32,
        transmission: TransmissionId,
        error: ErrorBody,
    },
    /// A reply whose XID matches no outstanding transmission (it is counted, then dropped).
    UnmatchedReply {
        xid: u32,
    },
    /// A Receive whose header failed to decode.
    BadHeader(DecodeError),
    /// The connection is gone; these transmissions will never be answered on it.
    Disconnected {
        abandoned: Vec<(u32, TransmissionId)>,
    },
    Connected,
}

/// Why [`Requester::call`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallError {
    NotConnected,
    /// RFC 8166 §3.3.1: the requester may not have more calls outstanding than the grant.
    OverCredit {
        outstanding: usize,
        granted: u32,
    },
    /// The call does not fit inline and cannot also use a Position-Zero Read chunk.
    TooLarge {
        len: usize,
    },
    /// A chunk buffer could not be registered.
    Registration(RegisterError),
}

#[derive(Debug, Clone)]
struct Transmission {
    id: TransmissionId,
    xid: u32,
    read_handles: Vec<u32>,
    write_chunk: Option<u32>,
    reply_chunk: Option<u32>,
}

impl Transmission {
    fn owns(&self, handle: u32) -> bool {
        self.write_chunk == Some(handle) || self.reply_chunk == Some(handle)
    }
}

/// Requester connection state machine, registering chunk memory with `M` (the simulator's
/// [`MemoryTable`] unless a driver brings its own).
#[derive(Debug)]
pub struct Requester<M = MemoryTable> {
    /// What this side supports; `config` is what was agreed for the current connection.
    local: ConnectionConfig,
    config: ConnectionConfig,
    connected: bool,
    /// RFC 8166 §3.3.3: a new connection starts with a grant of one.
    credits_granted: u32,
    outstanding: Vec<Transmission>,
    next_transmission: TransmissionId,
    next_wr: WrId,
    receives_posted: usize,
    /// When false, Receives are not posted on connect until [`Requester::post_receives`].
    auto_post_receives: bool,
    memory: M,
    work: VecDeque<WorkRequest>,
    outputs: VecDeque<RequesterOutput>,
    trace: Vec<RequesterEvent>,
    max_receive_bytes_seen: usize,
}

impl Requester {
    /// A requester whose chunk memory is a [`MemoryTable`] (the simulator's), handles from 0x1000.
    pub fn new(config: ConnectionConfig) -> Self {
        Requester::with_memory(config, MemoryTable::new(0x1000))
    }
}

impl<M: Registrar> Requester<M> {
    /// A requester registering its chunk buffers with `memory`.
    pub fn with_memory(config: ConnectionConfig, memory: M) -> Self {
        Requester {
            local: config,
            config,
            connected: false,
            credits_granted: 1,
            outstanding: Vec::new(),
            next_transmission: 1,
            next_wr: 1,
            receives_posted: 0,
            auto_post_receives: true,
            memory,
            work: VecDeque::new(),
            outputs: VecDeque::new(),
            trace: Vec::new(),
            max_receive_bytes_seen: 0,
        }
    }

    /// Do not post Receives when the connection comes up (reproduces the late-Receive-posting
    /// race of the passive-first discussion); call [`Requester::post_receives`] later.
    pub fn defer_receive_posting(&mut self) {
        self.auto_post_receives = false;
    }

    /// Post Receives up to the number of credits requested.
    pub fn post_receives(&mut self) {
        while self.receives_posted < self.config.credits as usize {
            let wr_id = self.wr();
            self.work.push_back(WorkRequest::PostRecv {
                wr_id,
                capacity: self.config.inline_recv,
            });
            self.receives_posted += 1;
        }
        self.auto_post_receives = true;
    }

    pub fn is_connected(&self) -> bool {
        self.connected
    }

    pub fn credits_granted(&self) -> u32 {
        self.credits_granted
    }

    /// Transmissions sent and not yet answered.
    pub fn outstanding(&self) -> usize {
        self.outstanding.len()
    }

    /// Largest Receive payload seen (bounded by the Receive buffer size, an invariant fuzzing checks).
    pub fn max_receive_bytes_seen(&self) -> usize {
        self.max_receive_bytes_seen
    }

    pub fn poll_output(&mut self) -> Option<RequesterOutput> {
        self.outputs.pop_front()
    }

    /// The trace since the last take, rendered one line per event.
    pub fn take_trace(&mut self) -> Vec<String> {
        self.trace.drain(..).map(|e| e.to_string()).collect()
    }

    /// The chunk memory (a driver attaches its device to it, tests inspect it).
    pub fn memory_mut(&mut self) -> &mut M {
        &mut self.memory
    }

    fn wr(&mut self) -> WrId {
        let id = self.next_wr;
        self.next_wr += 1;
        id
    }

    /// Feed one completion or CM event.
    pub fn handle_event(&mut self, event: Event) {
        match event {
            Event::Connected { peer_private_data } => {
                self.config = negotiated(&self.local, peer_private_data.as_deref());
                self.trace.push(RequesterEvent::Connected {
                    inline_send: self.config.inline_send,
                    inline_recv: self.config.inline_recv,
                });
                self.connected = true;
                // RFC 8166 §3.3.3: credits are per connection; a new one starts at one.
                self.credits_granted = 1;
                if self.auto_post_receives {
                    self.post_receives();
                }
                self.outputs.push_back(RequesterOutput::Connected);
            }
            Event::RecvCompleted { payload, .. } => self.on_receive(payload),
            Event::SendCompleted { .. }
            | Event::ReadCompleted { .. }
            | Event::WriteCompleted { .. } => {}
            Event::WorkFailed { error, .. } => {
                if error != CompletionError::Flushed {
                    self.trace.push(RequesterEvent::WorkFailed { error });
                }
            }
            Event::ConnectionLost => self.on_connection_lost(),
        }
    }

    /// Next work request to post, if any.
    pub fn poll_work(&mut self) -> Option<WorkRequest> {
        self.work.pop_front()
    }

    /// The CM private data this side sends when connecting (RFC 8797).
    pub fn private_data(&self) -> Option<Vec<u8>> {
        Some(self.local.private_data().encode().to_vec())
    }
}

/// The simulator's view of the requester as a transport endpoint.
impl Endpoint for Requester<MemoryTable> {
    fn handle_event(&mut self, event: Event) {
        Requester::handle_event(self, event);
    }

    fn poll_work(&mut self) -> Option<WorkRequest> {
        Requester::poll_work(self)
    }

    fn private_data(&self) -> Option<Vec<u8>> {
        Requester::private_data(self)
    }
}

/// The simulator serves the peer's RDMA Read/Write from the requester's table.
impl RemoteMemory for Requester<MemoryTable> {
    fn memory(&mut self) -> &mut MemoryTable {
        &mut self.memory
    }
}

/// The segment a registration names.
fn segment(target: Registration) -> Segment {
    Segment {
        handle: target.handle,
        length: target.length,
        offset: target.address,
    }
}
