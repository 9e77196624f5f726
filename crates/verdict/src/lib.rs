//! Whether a retransmitted XID was handled right: the one judgement rule ([`judge`]) and the
//! executions a server counted ([`counted`]: kernel ftrace text, `rig serve --stats` JSON).
//!
//! Architecture Invariant: pure logic over data a driver collected — no FFI, no I/O, no clock —
//! so `rig judge`, interop and their tests build and run without rdma-core
//! (crates/wire/tests/crate_boundaries.rs checks this crate's dependencies).

pub mod counted;
pub mod guest;
pub mod judge;
pub mod nfsd_stats;
pub mod record;
pub mod send_completion;
