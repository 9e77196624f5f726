//! The responder (server) side of an RPC-over-RDMA v1 connection.
//!
//! It validates incoming transport headers with the rules svcrdma applies (anchors §2), pulls Read
//! chunks with RDMA Read, hands complete RPC calls to its upper layer, and conveys each reply
//! through the chunks of the transmission being answered: DDP data by RDMA Write into the Write
//! chunk, a long reply into the Reply chunk, all before the Send (RC ordering makes the data visible
//! before the reply). Each posted reply gets a *position* (the sequence number of its Send); the
//! Send completion publishes it as the connection's acknowledged position, as the 2026 svcrdma
//! series does.

mod receive;
mod rejections;
mod replies;

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;

use wire::ddp::{self, ReadPlan};
use wire::rpc::{CallHeader, RpcMessage};
use wire::rpcrdma::{
    total_length, Body, ChunkLists, EmptyChunk, ErrorBody, Header, ReadSegment, Segment,
    RPCRDMA_VERSION,
};
use wire::svcrdma::{classify_with, KernelModel, Outcome, Profile};
use wire::xdr::{pad4, Writer};
use wire::Xdr;

use crate::endpoint::{
    CompletionError, Endpoint, Event, MemoryTable, RemoteMemory, WorkRequest, WrId,
};
pub use crate::refusal::{RejectReason, ReplyFailure};
use crate::trace::{ResponderEvent, RpcSummary};
use crate::{negotiated, ConnectionConfig};

/// Identifies one received call until it is answered or dropped.
pub type CallToken = u64;

/// A complete RPC call, Read chunks already pulled and spliced in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomingCall {
    pub token: CallToken,
    pub xid: u32,
    pub message: Vec<u8>,
    /// The RPC call header `message` starts with, decoded once here for the upper layer; `None`
    /// when the message does not start with one.
    pub rpc: Option<RpcCall>,
    /// Connection instance it arrived on (increments on every connect).
    pub connection: u64,
    /// Sequence number of its Receive on this connection.
    pub recv_seq: u64,
}

/// An RPC call header at the start of a message, and where the procedure's arguments begin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcCall {
    pub header: CallHeader,
    /// Bytes the header takes: the arguments start here.
    pub args_offset: usize,
}

/// Decode the RPC header at the start of `message`: what the trace says of it, and the call
/// header the upper layer gets.
fn decode_rpc(message: &[u8]) -> (RpcSummary, Option<RpcCall>) {
    match RpcMessage::decode_prefix(message) {
        Ok((RpcMessage::Call(header), args_offset)) => (
            RpcSummary::of_call(&header, message.len()),
            Some(RpcCall {
                header,
                args_offset,
            }),
        ),
        other => (RpcSummary::of_decoded(message, other.map(|(m, _)| m)), None),
    }
}

/// A reply as the upper layer hands it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingReply {
    /// The complete RPC reply message.
    pub message: Vec<u8>,
    /// The DDP-eligible bytes in `message` (READ data, unpadded), moved to the Write chunk when
    /// the call offered one (RFC 8267 / RFC 8166 §3.4.6).
    pub ddp: Option<Range<usize>>,
}

/// What the responder reports to its upper layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResponderOutput {
    /// A Receive was polled (before any Read chunk pull); every one is later followed by a
    /// `Call` or a `Rejected` with the same `recv_seq`, unless the connection is lost first.
    Received {
        connection: u64,
        recv_seq: u64,
    },
    Call(IncomingCall),
    /// A Send completion published this position as acknowledged.
    Acked {
        connection: u64,
        position: u64,
    },
    /// A Receive was answered with RDMA_ERROR or dropped before reaching the upper layer.
    Rejected {
        connection: u64,
        recv_seq: u64,
        xid: Option<u32>,
        reason: RejectReason,
    },
    Connected {
        connection: u64,
    },
    Disconnected {
        connection: u64,
    },
}

/// Why a reply could not be posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyError {
    /// The connection the call arrived on is gone (the reply is never sent).
    ConnectionGone,
    UnknownToken,
}

#[derive(Debug, Clone)]
struct Route {
    xid: u32,
    connection: u64,
    writes: Vec<Vec<Segment>>,
    reply: Option<Vec<Segment>>,
}

#[derive(Debug)]
struct Pull {
    xid: u32,
    recv_seq: u64,
    route: Route,
    inline: Vec<u8>,
    /// The RPC call header decoded from `inline` (RDMA_MSG), kept when the chunks go after it.
    rpc: Option<RpcCall>,
    /// Where each pulled chunk goes ([`wire::ddp::plan`], checked before pulling).
    plan: ReadPlan,
    /// (position, wr_id, pulled bytes) per Read segment, wire order.
    segments: Vec<(u32, WrId, Option<Vec<u8>>)>,
}

/// Responder connection state machine.
#[derive(Debug)]
pub struct Responder {
    /// What this side supports; `config` is what was agreed for the current connection.
    local: ConnectionConfig,
    config: ConnectionConfig,
    /// The kernel whose svcrdma this responder answers as (checks, answers, page budget).
    model: KernelModel,
    connection: u64,
    connected: bool,
    recv_seq: u64,
    post_seq: u64,
    acked: u64,
    next_wr: WrId,
    next_token: CallToken,
    receives_posted: usize,
    routes: BTreeMap<CallToken, Route>,
    pulls: BTreeMap<CallToken, Pull>,
    read_wrs: BTreeMap<WrId, CallToken>,
    send_positions: BTreeMap<WrId, u64>,
    memory: MemoryTable,
    work: VecDeque<WorkRequest>,
    outputs: VecDeque<ResponderOutput>,
    trace: Vec<ResponderEvent>,
}

impl Responder {
    pub fn new(config: ConnectionConfig) -> Self {
        Responder {
            local: config,
            config,
            model: Profile::Linux2026.model(),
            connection: 0,
            connected: false,
            recv_seq: 0,
            post_seq: 0,
            acked: 0,
            next_wr: 1,
            next_token: 1,
            receives_posted: 0,
            routes: BTreeMap::new(),
            pulls: BTreeMap::new(),
            read_wrs: BTreeMap::new(),
            send_positions: BTreeMap::new(),
            memory: MemoryTable::new(0x8000),
            work: VecDeque::new(),
            outputs: VecDeque::new(),
            trace: Vec::new(),
        }
    }

    pub fn connection(&self) -> u64 {
        self.connection
    }

    pub fn is_connected(&self) -> bool {
        self.connected
    }

    /// The credit grant advertised in every reply.
    pub fn credits(&self) -> u32 {
        self.config.credits
    }

    /// Calls received (or being pulled) and not yet answered or dropped (at most twice the grant).
    pub fn unanswered(&self) -> usize {
        self.routes.len() + self.pulls.len()
    }

    /// Positions assigned so far (the last reply's position).
    pub fn positions_posted(&self) -> u64 {
        self.post_seq
    }

    /// The highest position a Send completion has published on this connection.
    pub fn acked_position(&self) -> u64 {
        self.acked
    }

    /// Calls of the current connection not yet answered or dropped.
    fn unanswered_here(&self) -> usize {
        let routed = self
            .routes
            .values()
            .filter(|r| r.connection == self.connection)
            .count();
        routed + self.pulls.len()
    }

    /// Receives currently posted.
    pub fn receives_posted(&self) -> usize {
        self.receives_posted
    }

    pub fn poll_output(&mut self) -> Option<ResponderOutput> {
        self.outputs.pop_front()
    }

    /// The trace since the last take, rendered one line per event.
    pub fn take_trace(&mut self) -> Vec<String> {
        self.trace.drain(..).map(|e| e.to_string()).collect()
    }

    /// The typed events since the last take (the buffer keeps its capacity).
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, ResponderEvent> {
        self.trace.drain(..)
    }

    fn wr(&mut self) -> WrId {
        let id = self.next_wr;
        self.next_wr += 1;
        id
    }

    fn post_receives(&mut self) {
        // RFC 8166 §3.3.1: the responder keeps as many Receives posted as it grants. Like svcrdma
        // it reposts as soon as a Receive is consumed, but it stops once calls received and not
        // yet answered reach twice the grant: a requester that ignores its credits then meets
        // receiver-not-ready instead of growing the server's memory.
        let limit = 2 * self.config.credits as usize;
        while self.receives_posted < self.config.credits as usize
            && self.receives_posted + self.unanswered_here() < limit
            && self.connected
        {
            let wr_id = self.wr();
            self.work.push_back(WorkRequest::PostRecv {
                wr_id,
                capacity: self.config.inline_recv,
            });
            self.receives_posted += 1;
        }
    }

    /// Judge incoming headers as this kernel profile's svcrdma does (default: mainline 2026).
    pub fn set_profile(&mut self, profile: Profile) {
        self.set_model(profile.model());
    }

    /// Judge incoming headers as `model` does: a modelled profile, or a measured one whose
    /// answer to each rule ([`KernelModel::answer`]) is what the kernel was seen to do.
    pub fn set_model(&mut self, model: KernelModel) {
        self.model = model;
    }

    fn on_connection_lost(&mut self) {
        if !self.connected {
            return;
        }
        self.connected = false;
        self.receives_posted = 0;
        self.pulls.clear();
        self.read_wrs.clear();
        self.send_positions.clear();
        self.trace.push(ResponderEvent::Disconnected);
        self.outputs.push_back(ResponderOutput::Disconnected {
            connection: self.connection,
        });
    }
}

/// RFC 8166 §4.5.1: ERR_VERS names the versions this responder speaks (svcrdma: low = high = 1).
const ERR_VERS: ErrorBody = ErrorBody::Vers {
    low: RPCRDMA_VERSION,
    high: RPCRDMA_VERSION,
};

impl Endpoint for Responder {
    fn handle_event(&mut self, event: Event) {
        match event {
            Event::Connected { peer_private_data } => {
                self.config = negotiated(&self.local, peer_private_data.as_deref());
                self.trace.push(ResponderEvent::Connected {
                    inline_send: self.config.inline_send,
                    inline_recv: self.config.inline_recv,
                });
                self.connection += 1;
                self.connected = true;
                self.recv_seq = 0;
                self.post_receives();
                self.outputs.push_back(ResponderOutput::Connected {
                    connection: self.connection,
                });
            }
            Event::RecvCompleted { payload, .. } => self.on_receive(payload),
            Event::SendCompleted { wr_id } => {
                if let Some(position) = self.send_positions.remove(&wr_id) {
                    // Completions arrive in posting order, so this only ever rises.
                    self.acked = self.acked.max(position);
                    self.trace.push(ResponderEvent::Acked { position });
                    self.outputs.push_back(ResponderOutput::Acked {
                        connection: self.connection,
                        position,
                    });
                }
            }
            Event::ReadCompleted { wr_id, data } => self.on_read_completed(wr_id, data),
            Event::WriteCompleted { .. } => {}
            Event::WorkFailed { wr_id, error } => {
                // A flushed Send never raises the acked position.
                self.send_positions.remove(&wr_id);
                if error != CompletionError::Flushed {
                    self.trace.push(ResponderEvent::WorkFailed { error });
                }
            }
            Event::ConnectionLost => self.on_connection_lost(),
        }
    }

    fn poll_work(&mut self) -> Option<WorkRequest> {
        self.work.pop_front()
    }

    fn private_data(&self) -> Option<Vec<u8>> {
        Some(self.local.private_data().encode().to_vec())
    }
}

/// The responder's registered memory: what a peer's RDMA Read/Write reaches.
impl RemoteMemory for Responder {
    fn memory(&mut self) -> &mut MemoryTable {
        &mut self.memory
    }
}
