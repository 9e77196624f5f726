//! A Receive's way in: judged by the svcrdma model, then the strict codec, then the chunk checks;
//! its Read chunks pulled by RDMA Read and spliced back; the whole call delivered to the upper layer.

use super::*;

impl Responder {
    pub(super) fn on_receive(&mut self, payload: Vec<u8>) {
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
    pub(super) fn judge_receive(&mut self, mut payload: Vec<u8>) {
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
    pub(super) fn passes_model(&mut self, payload: &[u8], xid: Option<u32>) -> bool {
        let verdict = classify_with(payload, &self.model);
        if verdict.outcome == Outcome::Accept {
            return true;
        }
        self.refuse(xid, RejectReason::Svcrdma(verdict.rule), verdict.outcome);
        false
    }

    /// Then the strict codec: what the kernel accepts but RFC 8166 forbids is still refused,
    /// mapped to a wire outcome the way svcrdma would answer it.
    pub(super) fn decode_strictly(
        &mut self,
        payload: &[u8],
        xid: Option<u32>,
    ) -> Option<(Header, usize)> {
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

    /// What a decoded header carries: a call (RDMA_MSG, RDMA_NOMSG) whose chunks pass every
    /// check before anything is pulled, with where each Read chunk goes; or why it is refused
    /// and with what it is answered.
    pub(super) fn admit<'h>(
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
    pub(super) fn pull_reads(
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

    pub(super) fn deliver(
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

    pub(super) fn on_read_completed(&mut self, wr_id: WrId, data: Vec<u8>) {
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
}
