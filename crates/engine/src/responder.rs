//! The responder (server) side of an RPC-over-RDMA v1 connection.
//!
//! It validates incoming transport headers with the rules svcrdma applies (anchors §2), pulls Read
//! chunks with RDMA Read, hands complete RPC calls to its upper layer, and conveys each reply
//! through the chunks of the transmission being answered: DDP data by RDMA Write into the Write
//! chunk, a long reply into the Reply chunk, all before the Send (RC ordering makes the data visible
//! before the reply). Each posted reply gets a *position* (the sequence number of its Send); the
//! Send completion publishes it as the connection's acknowledged position, as the 2026 svcrdma
//! series does.

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

    fn reject(&mut self, xid: Option<u32>, reason: RejectReason, error: Option<ErrorBody>) {
        self.reject_receive(self.recv_seq, xid, reason, error);
    }

    fn reject_receive(
        &mut self,
        recv_seq: u64,
        xid: Option<u32>,
        reason: RejectReason,
        error: Option<ErrorBody>,
    ) {
        self.trace.push(ResponderEvent::Rejected {
            xid,
            reason: reason.clone(),
        });
        if let (Some(error), Some(xid)) = (error, xid) {
            self.post_error(xid, error);
        }
        self.outputs.push_back(ResponderOutput::Rejected {
            connection: self.connection,
            recv_seq,
            xid,
            reason,
        });
    }

    /// Post RDMA_ERROR. It carries no position: it answers no RPC (as in the series).
    fn post_error(&mut self, xid: u32, error: ErrorBody) {
        let header = Header {
            xid,
            vers: RPCRDMA_VERSION,
            credits: self.config.credits,
            body: Body::Error(error),
        };
        let payload = header.to_bytes();
        self.trace.push(ResponderEvent::Sent {
            header,
            reply: None,
        });
        let wr_id = self.wr();
        self.work
            .push_back(WorkRequest::PostSend { wr_id, payload });
    }

    /// The reply to an already delivered call cannot be conveyed (svcrdma rule 10: -E2BIG →
    /// ERR_CHUNK). The call was delivered, so this is not a rejected Receive.
    fn reply_failed(&mut self, xid: u32, reason: ReplyFailure) {
        self.trace.push(ResponderEvent::ReplyFailed { xid, reason });
        self.post_error(xid, ErrorBody::Chunk);
    }

    fn on_receive(&mut self, payload: Vec<u8>) {
        self.recv_seq += 1;
        self.receives_posted = self.receives_posted.saturating_sub(1);
        self.outputs.push_back(ResponderOutput::Received {
            connection: self.connection,
            recv_seq: self.recv_seq,
        });
        self.judge_receive(payload);
        // Repost once the Receive's fate (and the unanswered count) is known.
        self.post_receives();
    }

    /// A Receive passes the svcrdma model, then the strict codec, then the chunk checks, and
    /// only then is its call pulled or delivered. The transport header is decoded once (by the
    /// codec; the model only walks the bytes as the kernel does) and so is the RPC header.
    fn judge_receive(&mut self, mut payload: Vec<u8>) {
        // The XID as far as the bytes give one, for answering a header that does not decode.
        let raw_xid = wire::skeleton::FixedWords::peek(&payload).xid;
        if !self.passes_model(&payload, raw_xid) {
            return;
        }
        let Some((header, consumed)) = self.decode_strictly(&payload, raw_xid) else {
            return;
        };
        // The bytes after the header: the RPC call under RDMA_MSG, nothing otherwise (but the
        // trace says what they were, whatever they were).
        let (rpc_summary, rpc) = match header.body {
            Body::Msg(_) => decode_rpc(&payload[consumed..]),
            _ => (RpcSummary::of(&payload[consumed..]), None),
        };
        let admitted = self.admit(&header, payload.len() - consumed);
        let xid = header.xid;
        let (chunks, plan) = match admitted {
            Ok(admitted) => admitted,
            Err((reason, error)) => {
                self.trace.push(ResponderEvent::Received {
                    header,
                    rpc: rpc_summary,
                });
                self.reject(Some(xid), reason, error);
                return;
            }
        };
        let inline = if matches!(header.body, Body::Msg(_)) {
            payload.drain(..consumed);
            payload
        } else {
            Vec::new()
        };
        let token = self.next_token;
        self.next_token += 1;
        // The Write list and Reply chunk stay with the call until it is answered; the header
        // itself goes to the trace.
        let route = Route {
            xid,
            connection: self.connection,
            writes: chunks.writes.clone(),
            reply: chunks.reply.clone(),
        };
        let segments = self.pull_reads(token, &chunks.reads);
        self.trace.push(ResponderEvent::Received {
            header,
            rpc: rpc_summary,
        });
        if segments.is_empty() {
            self.deliver(token, xid, route, inline, rpc);
            return;
        }
        self.pulls.insert(
            token,
            Pull {
                xid,
                recv_seq: self.recv_seq,
                route,
                inline,
                rpc,
                plan,
                segments,
            },
        );
    }

    /// The svcrdma rule model first (anchors §2): what Linux would answer, and why. Returns
    /// whether the Receive goes on to the strict codec.
    fn passes_model(&mut self, payload: &[u8], xid: Option<u32>) -> bool {
        let verdict = classify_with(payload, &self.model);
        if verdict.outcome == Outcome::Accept {
            return true;
        }
        self.refuse(xid, RejectReason::Svcrdma(verdict.rule), verdict.outcome);
        false
    }

    /// Then the strict codec: what the kernel accepts but RFC 8166 forbids is still refused,
    /// mapped to a wire outcome the way svcrdma would answer it.
    fn decode_strictly(&mut self, payload: &[u8], xid: Option<u32>) -> Option<(Header, usize)> {
        match Header::decode_prefix(payload) {
            Ok(decoded) => Some(decoded),
            Err(e) => {
                self.trace
                    .push(ResponderEvent::StrictDecode { rule: e.rule() });
                let outcome = Outcome::from(&e);
                self.refuse(xid, RejectReason::Malformed(e), outcome);
                None
            }
        }
    }

    /// Answer a refused Receive on the wire as `outcome` says: the one place an [`Outcome`]
    /// becomes an RDMA_ERROR, a silent drop or a closed connection.
    fn refuse(&mut self, xid: Option<u32>, reason: RejectReason, outcome: Outcome) {
        match outcome {
            // RFC 8166 §4.5.1: a version this responder does not speak is answered ERR_VERS
            // with the range it does (svcrdma: low = high = 1).
            Outcome::ErrVers => self.reject(xid, reason, Some(ERR_VERS)),
            // RFC 8166 §4.5.2: a header the responder cannot parse is answered ERR_CHUNK.
            Outcome::ErrChunk => self.reject(xid, reason, Some(ErrorBody::Chunk)),
            Outcome::ErrChunkThenClose => {
                self.reject(xid, reason, Some(ErrorBody::Chunk));
                self.work.push_back(WorkRequest::Disconnect);
            }
            // svcrdma rule 5: RDMA_DONE and RDMA_ERROR are dropped silently (and a refusal
            // is never answered "accept": callers pass an accepted header on, not here).
            Outcome::Drop | Outcome::Accept => self.reject(xid, reason, None),
            Outcome::Disconnect => {
                self.reject(xid, reason, None);
                self.work.push_back(WorkRequest::Disconnect);
            }
        }
    }

    /// What a decoded header carries: a call (RDMA_MSG, RDMA_NOMSG) whose chunks pass every
    /// check before anything is pulled, with where each Read chunk goes; or why it is refused
    /// and with what it is answered.
    fn admit<'h>(
        &self,
        header: &'h Header,
        inline_len: usize,
    ) -> Result<(&'h ChunkLists, ReadPlan), (RejectReason, Option<ErrorBody>)> {
        let (chunks, inline_len) = match &header.body {
            Body::Msg(chunks) => (chunks, inline_len),
            Body::Nomsg(chunks) => (chunks, 0),
            // svcrdma rule 5: RDMA_DONE and RDMA_ERROR are dropped silently.
            Body::Done | Body::Error(_) => return Err((RejectReason::DoneOrError, None)),
            // svcrdma rule 5: RDMA_MSGP (RFC 8166 §4.6.1, no longer supported) is ERR_CHUNK.
            Body::Msgp { .. } => return Err((RejectReason::Msgp, Some(ErrorBody::Chunk))),
        };
        // RFC 8166 §3.4.4/§3.4.5/§3.5.3: the Read chunks, placed before anything is pulled,
        // within the profile's page budget (the one Read chunk limit).
        let budget = self.model.read_budget();
        let plan = ddp::plan(&chunks.reads, header.proc(), inline_len, budget)
            .map_err(|e| (RejectReason::ReadChunks(e), Some(ErrorBody::Chunk)))?;
        chunks
            .check_write_chunks_describe_memory()
            .map_err(|empty| {
                let reason = match empty {
                    EmptyChunk::Reply => RejectReason::EmptyReplyChunk,
                    _ => RejectReason::EmptyWriteChunk,
                };
                (reason, Some(ErrorBody::Chunk))
            })?;
        Ok((chunks, plan))
    }

    /// Post an RDMA Read for every Read segment of call `token`; returns (position, wr_id, no
    /// data yet) per segment, wire order.
    fn pull_reads(
        &mut self,
        token: CallToken,
        reads: &[ReadSegment],
    ) -> Vec<(u32, WrId, Option<Vec<u8>>)> {
        let mut segments = Vec::with_capacity(reads.len());
        for read in reads {
            let wr_id = self.wr();
            self.work.push_back(WorkRequest::RdmaRead {
                wr_id,
                handle: read.target.handle,
                offset: read.target.offset,
                length: read.target.length,
            });
            self.read_wrs.insert(wr_id, token);
            segments.push((read.position, wr_id, None));
        }
        segments
    }

    fn deliver(
        &mut self,
        token: CallToken,
        xid: u32,
        route: Route,
        message: Vec<u8>,
        rpc: Option<RpcCall>,
    ) {
        self.routes.insert(token, route);
        self.outputs.push_back(ResponderOutput::Call(IncomingCall {
            token,
            xid,
            message,
            rpc,
            connection: self.connection,
            recv_seq: self.recv_seq,
        }));
    }

    fn on_read_completed(&mut self, wr_id: WrId, data: Vec<u8>) {
        let Some(token) = self.read_wrs.remove(&wr_id) else {
            return;
        };
        let Some(pull) = self.pulls.get_mut(&token) else {
            return;
        };
        if let Some(seg) = pull.segments.iter_mut().find(|s| s.1 == wr_id) {
            seg.2 = Some(data);
        }
        if pull.segments.iter().any(|s| s.2.is_none()) {
            return;
        }
        let Some(pull) = self.pulls.remove(&token) else {
            return;
        };
        // Segments of one position concatenate into their chunk (wire order); the plan puts each
        // chunk at its place, XDR round-up restored (RFC 8166 §3.4.5.2). The plan asks for each
        // position once, so the pulled bytes move into it.
        let segments = RefCell::new(pull.segments);
        let spliced = pull.plan.splice(&pull.inline, |position| {
            let mut segments = segments.borrow_mut();
            let mut parts = segments
                .iter_mut()
                .filter(|s| s.0 == position)
                .map(|s| s.2.take().unwrap_or_default());
            let first = parts.next().unwrap_or_default();
            parts.fold(first, |mut chunk, part| {
                chunk.extend(part);
                chunk
            })
        });
        let message = match spliced {
            Ok(message) => message,
            Err(e) => {
                // Only pulled data of the wrong length gets here: ERR_CHUNK, nothing reaches the
                // upper layer.
                let reason = RejectReason::ReadChunks(e);
                self.reject_receive(
                    pull.recv_seq,
                    Some(pull.xid),
                    reason,
                    Some(ErrorBody::Chunk),
                );
                return;
            }
        };
        // The RPC header decoded from the inline body still starts the message when every chunk
        // went in after it; otherwise (RDMA_NOMSG, or a chunk inside the header) decode it now.
        let header_kept = pull.rpc.filter(|rpc| {
            pull.plan.call_chunk.is_none()
                && pull
                    .plan
                    .chunks
                    .iter()
                    .all(|(_, offset)| *offset >= rpc.args_offset as u64)
        });
        let (rpc_summary, rpc) = match header_kept {
            Some(rpc) => (RpcSummary::of_call(&rpc.header, message.len()), Some(rpc)),
            None => decode_rpc(&message),
        };
        self.trace.push(ResponderEvent::Pulled {
            xid: pull.xid,
            rpc: rpc_summary,
        });
        let recv_seq = self.recv_seq;
        self.recv_seq = pull.recv_seq;
        self.deliver(token, pull.xid, pull.route, message, rpc);
        self.recv_seq = recv_seq;
    }

    /// The upper layer decided not to answer this call (a DRC drop).
    pub fn drop_call(&mut self, token: CallToken) {
        if let Some(route) = self.routes.remove(&token) {
            self.trace
                .push(ResponderEvent::CallDropped { xid: route.xid });
        }
        self.post_receives();
    }

    /// Post the reply to the call `token`, through that call's own chunks. Returns the reply's
    /// position (the sequence number of its Send), or `None` when it had to be answered with
    /// RDMA_ERROR instead (which carries no position).
    pub fn reply(
        &mut self,
        token: CallToken,
        reply: OutgoingReply,
    ) -> Result<Option<u64>, ReplyError> {
        let route = self.routes.remove(&token).ok_or(ReplyError::UnknownToken)?;
        // The call is answered (or fails below): its slot may take a new Receive.
        self.post_receives();
        if !self.connected || route.connection != self.connection {
            self.trace
                .push(ResponderEvent::ReplyLost { xid: route.xid });
            return Err(ReplyError::ConnectionGone);
        }
        let Route {
            xid,
            mut writes,
            reply: reply_chunk,
            ..
        } = route;
        let mut message = reply.message;
        // The DDP data goes to the first Write chunk; the Write list goes back with the lengths
        // written, unused chunks with zero (RFC 8166 §4.2.2: the responder reports how much it
        // wrote into each chunk).
        let mut used = 0;
        if let (Some(range), Some(first)) = (reply.ddp, writes.first_mut()) {
            let in_bounds = range.start <= range.end && range.end <= message.len();
            if !in_bounds || (range.end - range.start) as u64 > total_length(first) {
                // svcrdma rule 10: reply construction -E2BIG → ERR_CHUNK.
                self.reply_failed(xid, ReplyFailure::WriteChunkTooSmall);
                return Ok(None);
            }
            self.push_into(first, &message[range.clone()]);
            used = 1;
            // Remove the data and its XDR padding from the inline stream (reduced stream).
            let pad_end = (range.start + pad4(range.end - range.start)).min(message.len());
            message.drain(range.start..pad_end);
        }
        for chunk in writes.iter_mut().skip(used) {
            for seg in chunk.iter_mut() {
                seg.length = 0;
            }
        }
        let mut chunks = ChunkLists {
            reads: Vec::new(),
            writes,
            reply: None,
        };
        let body;
        if let Some(mut reply_chunk) = reply_chunk {
            // As svcrdma does: when the requester provided a Reply chunk, the reply goes there
            // (RFC 8166 §3.5.4, RDMA_NOMSG) — the chunk of *this* transmission.
            if message.len() as u64 > total_length(&reply_chunk) {
                self.reply_failed(xid, ReplyFailure::ReplyChunkTooSmall);
                return Ok(None);
            }
            self.push_into(&mut reply_chunk, &message);
            chunks.reply = Some(reply_chunk);
            message.clear();
            body = Body::Nomsg(chunks);
        } else if self.config.fits_inline(&chunks, message.len()).is_ok() {
            body = Body::Msg(chunks);
        } else {
            // RFC 8166 §3.3.2: the reply Send may not exceed the requester's inline threshold.
            self.reply_failed(xid, ReplyFailure::OverInlineThreshold);
            return Ok(None);
        }
        let header = Header {
            xid,
            vers: RPCRDMA_VERSION,
            credits: self.config.credits,
            body,
        };
        self.post_seq += 1;
        let position = self.post_seq;
        let mut payload = Writer::with_capacity(header.encoded_len() + message.len());
        header.encode(&mut payload);
        payload.raw(&message);
        self.trace.push(ResponderEvent::Sent {
            header,
            reply: Some((RpcSummary::of(&message), position)),
        });
        let wr_id = self.wr();
        self.send_positions.insert(wr_id, position);
        self.work.push_back(WorkRequest::PostSend {
            wr_id,
            payload: payload.into_bytes(),
        });
        Ok(Some(position))
    }

    /// RDMA Write `data` across `segments` in order; each segment's length becomes what was
    /// written into it.
    fn push_into(&mut self, segments: &mut [Segment], data: &[u8]) {
        let mut rest = data;
        for seg in segments {
            let n = rest.len().min(seg.length as usize);
            if n > 0 {
                let wr_id = self.wr();
                self.work.push_back(WorkRequest::RdmaWrite {
                    wr_id,
                    handle: seg.handle,
                    offset: seg.offset,
                    data: rest[..n].to_vec(),
                });
            }
            rest = &rest[n..];
            seg.length = n as u32;
        }
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
