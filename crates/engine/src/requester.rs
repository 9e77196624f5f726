//! The requester (client) side of an RPC-over-RDMA v1 connection.
//!
//! It marshals calls into a transport header plus inline message, registering memory for Read,
//! Write and Reply chunks through its [`Registrar`] (the handles and addresses it returns go into
//! the header as it is encoded); it matches replies to transmissions, invalidates the
//! registrations, taking what the peer wrote into them, and tracks the credit grant. Unlike
//! xprtrdma it *lets* its user send the same XID again on a live connection: each transmission
//! gets its own chunks and its own credit.

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

    /// Send one transmission of `call`. With `honour_credits` false the credit check is skipped
    /// (the over-credit scenario); a real requester never does that.
    pub fn call(
        &mut self,
        call: OutgoingCall,
        honour_credits: bool,
    ) -> Result<TransmissionId, CallError> {
        if !self.connected {
            return Err(CallError::NotConnected);
        }
        // RFC 8166 §3.3.1: a requester MUST NOT have more requests in flight than the credits
        // the responder granted.
        if honour_credits && self.outstanding.len() >= self.credits_granted as usize {
            return Err(CallError::OverCredit {
                outstanding: self.outstanding.len(),
                granted: self.credits_granted,
            });
        }
        let mut chunks = ChunkLists::default();
        let mut transmission = Transmission {
            id: self.next_transmission,
            xid: call.xid,
            read_handles: Vec::new(),
            write_chunk: None,
            reply_chunk: None,
        };
        if let Some((position, data)) = call.read_chunk {
            let target = self.register(&transmission, ChunkBuffer::Read(data))?;
            transmission.read_handles.push(target.handle);
            chunks.reads.push(ReadSegment {
                position,
                target: segment(target),
            });
        }
        if let Some(capacity) = call.write_chunk_capacity {
            let target = self.register(&transmission, ChunkBuffer::Write(capacity))?;
            transmission.write_chunk = Some(target.handle);
            chunks.writes.push(vec![segment(target)]);
        }
        if let Some(capacity) = call.reply_chunk_capacity {
            let target = self.register(&transmission, ChunkBuffer::Write(capacity))?;
            transmission.reply_chunk = Some(target.handle);
            chunks.reply = Some(vec![segment(target)]);
        }
        let mut inline = call.message;
        // RFC 8166 §3.3.2: a Send may not exceed the peer's inline threshold; a longer call
        // travels as RDMA_NOMSG with the whole message in a Position-Zero Read chunk (§3.5.3).
        let body = if let Err(len) = self.config.fits_inline(&chunks, inline.len()) {
            if !chunks.reads.is_empty() {
                self.release(&transmission);
                return Err(CallError::TooLarge { len });
            }
            let target = self.register(
                &transmission,
                ChunkBuffer::Read(std::mem::take(&mut inline)),
            )?;
            transmission.read_handles.push(target.handle);
            chunks.reads.push(ReadSegment {
                position: 0,
                target: segment(target),
            });
            Body::Nomsg(chunks)
        } else {
            Body::Msg(chunks)
        };
        let header = Header {
            xid: call.xid,
            vers: RPCRDMA_VERSION,
            credits: self.config.credits,
            body,
        };
        let mut payload = header.to_bytes();
        payload.extend_from_slice(&inline);
        self.trace.push(RequesterEvent::Sent {
            header,
            rpc: RpcSummary::of(&inline),
        });
        self.next_transmission += 1;
        let id = transmission.id;
        self.outstanding.push(transmission);
        let wr_id = self.wr();
        self.work
            .push_back(WorkRequest::PostSend { wr_id, payload });
        Ok(id)
    }

    /// Post a Send carrying arbitrary bytes, valid or not (fuzzing and negative tests). It is not
    /// a transmission: no credit is taken and no reply is expected.
    pub fn send_raw(&mut self, payload: Vec<u8>) {
        if !self.connected {
            return;
        }
        self.trace
            .push(RequesterEvent::SentRaw { len: payload.len() });
        let wr_id = self.wr();
        self.work
            .push_back(WorkRequest::PostSend { wr_id, payload });
    }

    /// Bytes currently registered for chunks.
    pub fn registered_bytes(&self) -> usize {
        self.memory.registered_bytes()
    }

    /// Register one chunk buffer of `transmission`; on failure what it registered so far is
    /// released, so a refused call holds no memory.
    fn register(
        &mut self,
        transmission: &Transmission,
        buffer: ChunkBuffer,
    ) -> Result<Registration, CallError> {
        self.memory.register(buffer).map_err(|error| {
            self.release(transmission);
            CallError::Registration(error)
        })
    }

    fn release(&mut self, transmission: &Transmission) {
        for handle in &transmission.read_handles {
            self.memory.invalidate(*handle);
        }
        for handle in transmission
            .write_chunk
            .iter()
            .chain(&transmission.reply_chunk)
        {
            self.memory.invalidate(*handle);
        }
    }

    fn on_receive(&mut self, payload: Vec<u8>) {
        self.receives_posted = self.receives_posted.saturating_sub(1);
        self.max_receive_bytes_seen = self.max_receive_bytes_seen.max(payload.len());
        if self.connected && self.auto_post_receives {
            self.post_receives();
        }
        let (header, consumed) = match Header::decode_prefix(&payload) {
            Ok(h) => h,
            Err(e) => {
                self.trace
                    .push(RequesterEvent::BadHeader { rule: e.rule() });
                self.outputs.push_back(RequesterOutput::BadHeader(e));
                return;
            }
        };
        let inline = &payload[consumed..];
        // RFC 8166 §3.3.1: every reply carries the responder's current grant. A grant of zero
        // would stall the requester forever, so treat it as one.
        self.credits_granted = header.credits.max(1);
        // Match the transmission: by a chunk handle it owns when the reply names one, else the
        // oldest outstanding transmission with that XID.
        let by_handle = header.chunks().and_then(|c| {
            c.reply
                .iter()
                .chain(c.writes.iter())
                .flatten()
                .find_map(|seg| {
                    self.outstanding
                        .iter()
                        .position(|t| t.xid == header.xid && t.owns(seg.handle))
                })
        });
        let index = by_handle.or_else(|| self.outstanding.iter().position(|t| t.xid == header.xid));
        let Some(index) = index else {
            self.trace.push(RequesterEvent::Unmatched {
                header: header.clone(),
            });
            self.outputs
                .push_back(RequesterOutput::UnmatchedReply { xid: header.xid });
            return;
        };
        let transmission = self.outstanding.remove(index);
        match &header.body {
            Body::Error(error) => {
                self.trace.push(RequesterEvent::TransportError {
                    header: header.clone(),
                });
                self.release(&transmission);
                self.outputs.push_back(RequesterOutput::TransportError {
                    xid: header.xid,
                    transmission: transmission.id,
                    error: error.clone(),
                });
            }
            Body::Msg(chunks) | Body::Nomsg(chunks) => {
                let written = |handle: Option<u32>, list: Option<&Vec<Segment>>| {
                    (handle, list.map_or(0, |segs| total_length(segs)))
                };
                let (write_handle, write_len) =
                    written(transmission.write_chunk, chunks.writes.first());
                let (reply_handle, reply_len) =
                    written(transmission.reply_chunk, chunks.reply.as_ref());
                let mut write_data = None;
                if let Some(handle) = write_handle {
                    let mut bytes = self.memory.invalidate(handle).unwrap_or_default();
                    if !chunks.writes.is_empty() {
                        // The responder reports how much it wrote; never trust it past our buffer.
                        bytes.truncate(write_len as usize);
                        write_data = Some(bytes);
                    }
                }
                let (message, path) = if matches!(header.body, Body::Nomsg(_)) {
                    let mut bytes = reply_handle
                        .and_then(|h| self.memory.invalidate(h))
                        .unwrap_or_default();
                    bytes.truncate(reply_len as usize);
                    (bytes, ReplyPath::ReplyChunk)
                } else {
                    if let Some(h) = reply_handle {
                        self.memory.invalidate(h);
                    }
                    (inline.to_vec(), ReplyPath::Inline)
                };
                for handle in &transmission.read_handles {
                    self.memory.invalidate(*handle);
                }
                self.trace.push(RequesterEvent::Reply {
                    header: header.clone(),
                    rpc: RpcSummary::of(&message),
                });
                self.outputs
                    .push_back(RequesterOutput::Reply(ReceivedReply {
                        xid: header.xid,
                        transmission: transmission.id,
                        message,
                        write_chunk_data: write_data,
                        path,
                    }));
            }
            Body::Msgp { .. } | Body::Done => {
                // Not a reply a responder sends; the transmission stays unanswered.
                self.trace.push(RequesterEvent::Ignored {
                    header: header.clone(),
                });
                self.outstanding.insert(index, transmission);
            }
        }
    }

    fn on_connection_lost(&mut self) {
        if !self.connected {
            return;
        }
        self.connected = false;
        self.receives_posted = 0;
        let abandoned: Vec<Transmission> = std::mem::take(&mut self.outstanding);
        for t in &abandoned {
            self.release(t);
        }
        self.trace.push(RequesterEvent::Disconnected);
        self.outputs.push_back(RequesterOutput::Disconnected {
            abandoned: abandoned.iter().map(|t| (t.xid, t.id)).collect(),
        });
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
