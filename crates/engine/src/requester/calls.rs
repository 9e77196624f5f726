//! A call's way out: inline or by a Position-Zero Read chunk (RFC 8166 §3.3.2), its chunk memory
//! registered with the least access each chunk needs, and released when the transmission ends.

use super::*;

impl<M: Registrar> Requester<M> {
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
    pub(super) fn register(
        &mut self,
        transmission: &Transmission,
        buffer: ChunkBuffer,
    ) -> Result<Registration, CallError> {
        self.memory.register(buffer).map_err(|error| {
            self.release(transmission);
            CallError::Registration(error)
        })
    }

    pub(super) fn release(&mut self, transmission: &Transmission) {
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
}
