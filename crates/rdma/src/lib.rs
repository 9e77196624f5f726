//! Drives the sans-IO RPC-over-RDMA engine ([`engine::Requester`], [`engine::Responder`] inside
//! [`server::Server`]) over real verbs: rdma_cm connections with RFC 8797 private data and explicit
//! RDMA Read depths, an RC QP per connection, bounce buffers from a bounded pool, and the requester's
//! chunk memory registered for real with the least access each chunk needs ([`memory`]): the
//! engine writes those rkeys and addresses into the headers it encodes. This crate posts what the
//! engine asks and feeds back what the hardware reports; it never decodes or rewrites an
//! RPC-over-RDMA header.
//!
//! Architecture Invariant: no clock or I/O in the engine; this crate owns time. Its event loops
//! sleep in poll(2) on the CM channel and completion channel fds with a timeout, never spin.
//!
//! Architecture Invariant: no `unsafe` here; all FFI stays in the verbs crate.
#![forbid(unsafe_code)]

pub mod conn;
pub mod datagram;
pub mod memory;
pub mod pool;
pub mod relay_control;
pub mod requester;
pub mod scenarios;
pub mod send_completion;
pub mod serve;
pub mod serve_control;
pub mod v41;

pub use requester::{ClientError, RdmaClient};
pub use serve::{serve, Controls, ServeOptions, ServeStats};
