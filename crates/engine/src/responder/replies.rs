//! A reply's way out: DDP data by RDMA Write into the Write chunk, a long reply into the Reply chunk,
//! then the Send with its position (RFC 8166 §3.4.6, §3.5).

use super::*;

impl Responder {
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
    pub(super) fn push_into(&mut self, segments: &mut [Segment], data: &[u8]) {
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
}
