//! The responder (server) side of an RPC-over-RDMA v1 connection.
//!
//! It validates incoming transport headers with the rules svcrdma applies (anchors §2), pulls Read
//! chunks with RDMA Read, hands complete RPC calls to its upper layer, and conveys each reply
//! through the chunks of the transmission being answered: DDP data by RDMA Write into the Write
//! chunk, a long reply into the Reply chunk, all before the Send (RC ordering makes the data visible
//! before the reply). Each posted reply gets a *position* (the sequence number of its Send); the
//! Send completion publishes it as the connection's acknowledged position, as the 2026 svcrdma
//! series does.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::ops::Range;

use wire::ddp::{self, ReadChunkError, ReadPlan};
use wire::rpcrdma::{total_length, Body, ChunkLists, ErrorBody, Header, Segment, RPCRDMA_VERSION};
use wire::svcrdma::{classify_with, KernelModel, Outcome, Profile, Rule};
use wire::xdr::pad4;
use wire::DecodeError;
use wire::Xdr;

use crate::trace::{describe_header, describe_rpc};
use crate::verbs::{CompletionError, Endpoint, Event, MemoryTable, WorkRequest, WrId};
use crate::{negotiated, ConnectionConfig};

/// Identifies one received call until it is answered or dropped.
pub type CallToken = u64;

/// A complete RPC call, Read chunks already pulled and spliced in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomingCall {
    pub token: CallToken,
    pub xid: u32,
    pub message: Vec<u8>,
    /// Connection instance it arrived on (increments on every connect).
    pub connection: u64,
    /// Sequence number of its Receive on this connection.
    pub recv_seq: u64,
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

/// Why the responder answered a Receive with RDMA_ERROR or dropped it.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RejectReason {
    /// svcrdma's rule model refused the header: the kernel check that decided.
    Svcrdma(Rule),
    /// The strict codec refused a header the model passed (mapped to a wire outcome by
    /// `svcrdma::Outcome: From<&DecodeError>`).
    Malformed(DecodeError),
    /// RDMA_DONE or RDMA_ERROR from the requester (RFC 8166 §4.6.2, §4.5): dropped.
    DoneOrError,
    /// RDMA_MSGP (RFC 8166 §4.6.1): no longer supported.
    Msgp,
    /// The Read chunks break the position rule or the budget ([`wire::ddp::plan`]).
    ReadChunks(ReadChunkError),
    /// A Write chunk with no segments (RFC 8166 §3.4.6; svcrdma rule 7).
    EmptyWriteChunk,
    /// A Reply chunk with no segments (RFC 8166 §3.4.6; svcrdma rule 7).
    EmptyReplyChunk,
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectReason::Svcrdma(rule) => f.write_str(rule.name()),
            RejectReason::Malformed(e) => write!(f, "malformed header: {e}"),
            RejectReason::DoneOrError => f.write_str("dropped DONE/ERROR"),
            RejectReason::Msgp => f.write_str("MSGP unsupported"),
            RejectReason::ReadChunks(e) => e.fmt(f),
            RejectReason::EmptyWriteChunk => f.write_str("empty write chunk"),
            RejectReason::EmptyReplyChunk => f.write_str("empty reply chunk"),
        }
    }
}

/// Why a call's reply could not be conveyed; it is answered with ERR_CHUNK instead (svcrdma
/// rule 10: reply construction -E2BIG).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReplyFailure {
    /// The DDP data does not fit the call's first Write chunk (or lies outside the message).
    WriteChunkTooSmall,
    /// The reply does not fit the call's Reply chunk.
    ReplyChunkTooSmall,
    /// No Reply chunk, and the reply is over the requester's inline threshold (RFC 8166 §3.3.2).
    OverInlineThreshold,
}

impl fmt::Display for ReplyFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReplyFailure::WriteChunkTooSmall => "write chunk too small",
            ReplyFailure::ReplyChunkTooSmall => "reply chunk too small",
            ReplyFailure::OverInlineThreshold => {
                "reply exceeds inline threshold and no reply chunk"
            }
        })
    }
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
    trace: Vec<String>,
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

    pub fn take_trace(&mut self) -> Vec<String> {
        std::mem::take(&mut self.trace)
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
        self.trace.push(format!(
            "srv reject xid={} {reason}",
            xid.map_or("?".to_string(), |x| format!("{x:#x}"))
        ));
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
        self.trace
            .push(format!("srv send {}", describe_header(&header)));
        let wr_id = self.wr();
        self.work.push_back(WorkRequest::PostSend {
            wr_id,
            payload: header.to_bytes(),
        });
    }

    /// The reply to an already delivered call cannot be conveyed (svcrdma rule 10: -E2BIG →
    /// ERR_CHUNK). The call was delivered, so this is not a rejected Receive.
    fn reply_failed(&mut self, xid: u32, reason: ReplyFailure) {
        self.trace
            .push(format!("srv reply xid={xid:#x} failed: {reason}"));
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

    fn judge_receive(&mut self, payload: Vec<u8>) {
        let xid = (payload.len() >= 4)
            .then(|| u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]));
        // First the svcrdma rule model (anchors §2): what Linux would answer, and why.
        let verdict = classify_with(&payload, &self.model);
        match verdict.outcome {
            Outcome::Accept => {}
            Outcome::ErrVers => {
                // RFC 8166 §4.5.1: a version this responder does not speak is answered ERR_VERS
                // with the range it does (svcrdma: low = high = 1).
                let vers = ErrorBody::Vers {
                    low: RPCRDMA_VERSION,
                    high: RPCRDMA_VERSION,
                };
                self.reject(xid, RejectReason::Svcrdma(verdict.rule), Some(vers));
                return;
            }
            // RFC 8166 §4.5.2: a header the responder cannot parse is answered ERR_CHUNK.
            Outcome::ErrChunk => {
                self.reject(
                    xid,
                    RejectReason::Svcrdma(verdict.rule),
                    Some(ErrorBody::Chunk),
                );
                return;
            }
            Outcome::ErrChunkThenClose => {
                self.reject(
                    xid,
                    RejectReason::Svcrdma(verdict.rule),
                    Some(ErrorBody::Chunk),
                );
                self.work.push_back(WorkRequest::Disconnect);
                return;
            }
            // svcrdma rule 5: RDMA_DONE and RDMA_ERROR are dropped silently.
            Outcome::Drop => {
                self.reject(xid, RejectReason::Svcrdma(verdict.rule), None);
                return;
            }
            Outcome::Disconnect => {
                self.reject(xid, RejectReason::Svcrdma(verdict.rule), None);
                self.work.push_back(WorkRequest::Disconnect);
                return;
            }
        }
        // Then the strict codec: what the kernel accepts but RFC 8166 forbids is still refused,
        // mapped to a wire outcome the way svcrdma would answer it.
        let (header, consumed) = match Header::decode_prefix(&payload) {
            Ok(h) => h,
            Err(e) => {
                let outcome = Outcome::from(&e);
                self.trace.push(format!("srv strict decode: {}", e.rule()));
                let error = match outcome {
                    Outcome::ErrVers => Some(ErrorBody::Vers {
                        low: RPCRDMA_VERSION,
                        high: RPCRDMA_VERSION,
                    }),
                    Outcome::Drop => None,
                    _ => Some(ErrorBody::Chunk),
                };
                self.reject(xid, RejectReason::Malformed(e), error);
                return;
            }
        };
        self.trace.push(format!(
            "srv recv {} {}",
            describe_header(&header),
            describe_rpc(&payload[consumed..])
        ));
        let proc_ = header.proc();
        let (chunks, inline) = match header.body {
            Body::Msg(chunks) => (chunks, payload[consumed..].to_vec()),
            Body::Nomsg(chunks) => (chunks, Vec::new()),
            // svcrdma rule 5: RDMA_DONE and RDMA_ERROR are dropped silently.
            Body::Done | Body::Error(_) => {
                self.reject(Some(header.xid), RejectReason::DoneOrError, None);
                return;
            }
            // svcrdma rule 5: RDMA_MSGP (RFC 8166 §4.6.1, no longer supported) is ERR_CHUNK.
            Body::Msgp { .. } => {
                self.reject(Some(header.xid), RejectReason::Msgp, Some(ErrorBody::Chunk));
                return;
            }
        };
        // RFC 8166 §3.4.4/§3.4.5/§3.5.3: the Read chunks, placed before anything is pulled,
        // within the profile's page budget (the one Read chunk limit).
        let budget = self.model.read_budget();
        let plan = match ddp::plan(&chunks.reads, proc_, inline.len(), budget) {
            Ok(plan) => plan,
            Err(e) => {
                let reason = RejectReason::ReadChunks(e);
                self.reject(Some(header.xid), reason, Some(ErrorBody::Chunk));
                return;
            }
        };
        if let Err(reason) = check_write_chunks(&chunks) {
            self.reject(Some(header.xid), reason, Some(ErrorBody::Chunk));
            return;
        }
        let token = self.next_token;
        self.next_token += 1;
        let route = Route {
            xid: header.xid,
            connection: self.connection,
            writes: chunks.writes.clone(),
            reply: chunks.reply.clone(),
        };
        if chunks.reads.is_empty() {
            self.deliver(token, header.xid, route, inline);
            return;
        }
        let mut segments = Vec::new();
        for read in &chunks.reads {
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
        self.pulls.insert(
            token,
            Pull {
                xid: header.xid,
                recv_seq: self.recv_seq,
                route,
                inline,
                plan,
                segments,
            },
        );
    }

    fn deliver(&mut self, token: CallToken, xid: u32, route: Route, message: Vec<u8>) {
        self.routes.insert(token, route);
        self.outputs.push_back(ResponderOutput::Call(IncomingCall {
            token,
            xid,
            message,
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
        // chunk at its place, XDR round-up restored (RFC 8166 §3.4.5.2).
        let mut by_position: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
        for (position, _, data) in pull.segments {
            by_position
                .entry(position)
                .or_default()
                .extend(data.unwrap_or_default());
        }
        let spliced = pull.plan.splice(&pull.inline, |position| {
            by_position.get(&position).cloned().unwrap_or_default()
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
        self.trace.push(format!(
            "srv pulled xid={:#x} {}",
            pull.xid,
            describe_rpc(&message)
        ));
        let recv_seq = self.recv_seq;
        self.recv_seq = pull.recv_seq;
        self.deliver(token, pull.xid, pull.route, message);
        self.recv_seq = recv_seq;
    }

    /// The upper layer decided not to answer this call (a DRC drop).
    pub fn drop_call(&mut self, token: CallToken) {
        if let Some(route) = self.routes.remove(&token) {
            self.trace
                .push(format!("srv drop xid={:#x} (no reply)", route.xid));
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
            self.trace.push(format!(
                "srv reply xid={:#x} lost: connection gone",
                route.xid
            ));
            return Err(ReplyError::ConnectionGone);
        }
        let mut message = reply.message;
        let mut writes: Vec<Vec<Segment>> = route.writes.clone();
        // Unused Write chunks go back with zero lengths (RFC 8166 §4.2.2: the responder reports
        // how much it wrote into each chunk).
        for chunk in &mut writes {
            for seg in chunk.iter_mut() {
                seg.length = 0;
            }
        }
        if let (Some(range), Some(first)) = (reply.ddp.clone(), route.writes.first()) {
            let in_bounds = range.start <= range.end && range.end <= message.len();
            let capacity = total_length(first);
            if !in_bounds || (range.end - range.start) as u64 > capacity {
                // svcrdma rule 10: reply construction -E2BIG → ERR_CHUNK.
                self.reply_failed(route.xid, ReplyFailure::WriteChunkTooSmall);
                return Ok(None);
            }
            let data: Vec<u8> = message[range.clone()].to_vec();
            writes[0] = self.push_into(first, &data);
            // Remove the data and its XDR padding from the inline stream (reduced stream).
            let pad_end = (range.start + pad4(range.end - range.start)).min(message.len());
            message.drain(range.start..pad_end);
        }
        let mut chunks = ChunkLists {
            reads: Vec::new(),
            writes,
            reply: None,
        };
        let inline_header_len = 16 + chunks.encoded_len();
        let body;
        if let Some(reply_chunk) = &route.reply {
            // As svcrdma does: when the requester provided a Reply chunk, the reply goes there
            // (RFC 8166 §3.5.4, RDMA_NOMSG) — the chunk of *this* transmission.
            let capacity = total_length(reply_chunk);
            if message.len() as u64 > capacity {
                self.reply_failed(route.xid, ReplyFailure::ReplyChunkTooSmall);
                return Ok(None);
            }
            chunks.reply = Some(self.push_into(reply_chunk, &message));
            message.clear();
            body = Body::Nomsg(chunks);
        } else if inline_header_len + message.len() <= self.config.inline_send {
            body = Body::Msg(chunks);
        } else {
            // RFC 8166 §3.3.2: the reply Send may not exceed the requester's inline threshold.
            self.reply_failed(route.xid, ReplyFailure::OverInlineThreshold);
            return Ok(None);
        }
        let header = Header {
            xid: route.xid,
            vers: RPCRDMA_VERSION,
            credits: self.config.credits,
            body,
        };
        self.post_seq += 1;
        let position = self.post_seq;
        self.trace.push(format!(
            "srv send {} {} pos={position}",
            describe_header(&header),
            describe_rpc(&message)
        ));
        let mut payload = header.to_bytes();
        payload.extend_from_slice(&message);
        let wr_id = self.wr();
        self.send_positions.insert(wr_id, position);
        self.work
            .push_back(WorkRequest::PostSend { wr_id, payload });
        Ok(Some(position))
    }

    /// RDMA Write `data` across `segments` in order; returns the segments with the lengths written.
    fn push_into(&mut self, segments: &[Segment], data: &[u8]) -> Vec<Segment> {
        let mut rest = data;
        let mut out = Vec::with_capacity(segments.len());
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
            out.push(Segment {
                length: n as u32,
                ..*seg
            });
        }
        out
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
        self.trace.push("srv disconnected".to_string());
        self.outputs.push_back(ResponderOutput::Disconnected {
            connection: self.connection,
        });
    }
}

/// svcrdma rule 7: a Write or Reply chunk with no segments describes no memory (RFC 8166 §3.4.6).
fn check_write_chunks(chunks: &ChunkLists) -> Result<(), RejectReason> {
    if chunks.writes.iter().any(|c| c.is_empty()) {
        return Err(RejectReason::EmptyWriteChunk);
    }
    if chunks.reply.as_ref().is_some_and(|c| c.is_empty()) {
        return Err(RejectReason::EmptyReplyChunk);
    }
    Ok(())
}

impl Endpoint for Responder {
    fn handle_event(&mut self, event: Event) {
        match event {
            Event::Connected { peer_private_data } => {
                self.config = negotiated(&self.local, peer_private_data.as_deref());
                self.trace.push(format!(
                    "srv connected inline send={} recv={}",
                    self.config.inline_send, self.config.inline_recv
                ));
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
                    self.trace.push(format!("srv acked pos={position}"));
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
                    self.trace.push(format!("srv work failed {error:?}"));
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

    fn memory(&mut self) -> &mut MemoryTable {
        &mut self.memory
    }
}
