//! Sans-IO RPC-over-RDMA version 1 (RFC 8166) connection state machines: a requester and a
//! responder, driven by completion [`verbs::Event`]s and emitting [`verbs::WorkRequest`]s.
//!
//! Architecture Invariant: no I/O, no clock, no threads, no `unsafe`. A driver (the simulator in
//! `rpcrdma-sim`, later a verbs driver) posts what [`verbs::Endpoint::poll_work`] returns and feeds
//! back what the hardware reports; every scenario therefore also runs deterministically.
#![forbid(unsafe_code)]

pub mod verbs;
