//! How the responder refuses: a Receive rejected with RDMA_ERROR (ERR_VERS, ERR_CHUNK) or dropped,
//! as the model or the codec decided (RFC 8166 §4.5), and a reply that could not be conveyed.

use super::*;

impl Responder {
    pub(super) fn reject(
        &mut self,
        xid: Option<u32>,
        reason: RejectReason,
        error: Option<ErrorBody>,
    ) {
        self.reject_receive(self.recv_seq, xid, reason, error);
    }

    pub(super) fn reject_receive(
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
    pub(super) fn post_error(&mut self, xid: u32, error: ErrorBody) {
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
    pub(super) fn reply_failed(&mut self, xid: u32, reason: ReplyFailure) {
        self.trace.push(ResponderEvent::ReplyFailed { xid, reason });
        self.post_error(xid, ErrorBody::Chunk);
    }

    /// Answer a refused Receive on the wire as `outcome` says: the one place an [`Outcome`]
    /// becomes an RDMA_ERROR, a silent drop or a closed connection.
    pub(super) fn refuse(&mut self, xid: Option<u32>, reason: RejectReason, outcome: Outcome) {
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
}
