//! Sans-IO RPC-over-RDMA version 1 (RFC 8166) connection state machines: a requester and a
//! responder, driven by completion [`endpoint::Event`]s and emitting [`endpoint::WorkRequest`]s.
//! What each observes is recorded as typed events ([`trace`]), rendered to text only when a
//! trace is taken.
//!
//! Architecture Invariant: no I/O, no clock, no threads, no `unsafe`. A driver (the simulator in
//! `rpcrdma-sim`, the verbs driver in `rpcrdma-rdma`) posts the work requests the engine returns
//! and feeds back what the hardware reports; the requester's chunk memory is registered through
//! [`memory::Registrar`], whose handles and addresses the engine writes into the headers it
//! encodes, so no driver touches a header. Every scenario therefore also runs deterministically.
#![forbid(unsafe_code)]

pub mod endpoint;
pub mod memory;
pub mod refusal;
pub mod requester;
pub mod responder;
pub mod trace;

pub use requester::{
    CallError, OutgoingCall, ReceivedReply, ReplyPath, Requester, RequesterOutput,
};
pub use responder::{
    CallToken, IncomingCall, OutgoingReply, RejectReason, ReplyError, ReplyFailure, Responder,
    ResponderOutput, RpcCall,
};
pub use trace::{RequesterEvent, ResponderEvent, RpcSummary};

/// RFC 8166 §3.3.2: the inline threshold both sides assume without RFC 8797 negotiation.
pub const DEFAULT_INLINE_THRESHOLD: usize = 1024;

/// Per-connection parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionConfig {
    /// Largest Send this side may post (the peer's Receive size).
    pub inline_send: usize,
    /// Size of this side's Receive buffers.
    pub inline_recv: usize,
    /// Responder: the grant advertised in every reply and the Receives kept posted.
    /// Requester: the credits requested in every call and the Receives posted.
    pub credits: u32,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            inline_send: DEFAULT_INLINE_THRESHOLD,
            inline_recv: DEFAULT_INLINE_THRESHOLD,
            credits: 8,
        }
    }
}

/// The configuration for a connection whose peer sent `peer_private_data` (undecodable private
/// data counts as none: RFC 8797 §4 makes the extension optional).
pub(crate) fn negotiated(
    local: &ConnectionConfig,
    peer_private_data: Option<&[u8]>,
) -> ConnectionConfig {
    let peer = peer_private_data.and_then(|b| wire::private_data::PrivateData::decode(b).ok());
    local.negotiate(peer.as_ref())
}

impl ConnectionConfig {
    /// RFC 8166 §3.3.2: the length of an RDMA_MSG Send, fixed header and `chunks` then
    /// `message_len` inline bytes, if it fits this side's inline threshold (`inline_send`); a
    /// longer message needs a chunk (a Position-Zero Read chunk for a call, the Reply chunk for
    /// a reply). `Err` carries the length that does not fit.
    pub fn fits_inline(
        &self,
        chunks: &wire::rpcrdma::ChunkLists,
        message_len: usize,
    ) -> Result<usize, usize> {
        let send_len = wire::rpcrdma::FIXED_HEADER_LEN + chunks.encoded_len() + message_len;
        if send_len > self.inline_send {
            return Err(send_len);
        }
        Ok(send_len)
    }

    /// The RFC 8797 private data this side advertises: its Send and Receive sizes.
    pub fn private_data(&self) -> wire::private_data::PrivateData {
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        wire::private_data::PrivateData::new(
            clamp(self.inline_send),
            clamp(self.inline_recv),
            false,
        )
    }

    /// Apply the peer's RFC 8797 private data, if it sent any. Without it both directions use
    /// the RFC 8166 §3.3.2 default of 1024 bytes; with it, this side's Sends are limited by the
    /// peer's Receive size and its Receives need hold no more than the peer will send.
    pub fn negotiate(&self, peer: Option<&wire::private_data::PrivateData>) -> ConnectionConfig {
        match peer {
            None => ConnectionConfig {
                inline_send: DEFAULT_INLINE_THRESHOLD,
                inline_recv: self.inline_recv.max(DEFAULT_INLINE_THRESHOLD),
                credits: self.credits,
            },
            Some(peer) => ConnectionConfig {
                inline_send: self.inline_send.min(peer.recv_size() as usize),
                inline_recv: self
                    .inline_recv
                    .min(peer.send_size() as usize)
                    .max(DEFAULT_INLINE_THRESHOLD),
                credits: self.credits,
            },
        }
    }
}
