//! Why the responder refused a Receive or could not convey a reply: the reasons its events
//! carry ([`crate::responder`] decides them, [`crate::trace`] renders them), apart from both so
//! neither module imports the other's internals.

use std::fmt;

use wire::ddp::ReadChunkError;
use wire::svcrdma::Rule;
use wire::DecodeError;

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
pub enum ReplyFailure {
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
