//! Drives the sans-IO RPC-over-RDMA engine ([`engine::Requester`], [`engine::Responder`] inside
//! [`server::Server`]) over real verbs: rdma_cm connections with RFC 8797 private data and explicit
//! RDMA Read depths, an RC QP per connection, bounce buffers from a bounded pool, and requester
//! chunk memory registered for real (its rkeys and addresses go into the headers).
//!
//! Architecture Invariant: no clock or I/O in the engine; this crate owns time. Its event loops
//! sleep in poll(2) on the CM channel and completion channel fds with a timeout, never spin.
//!
//! Architecture Invariant: no `unsafe` here; all FFI stays in the verbs crate.
#![forbid(unsafe_code)]

pub mod chunks;
pub mod client;
pub mod conn;
pub mod counted;
pub mod judge;
pub mod mount_tcp;
pub mod pool;
pub mod scenarios;
pub mod serve;
pub mod v41;

pub use client::{ClientError, RdmaClient};
pub use serve::{serve, Controls, ServeOptions, ServeStats};
