//! Over-the-wire fuzzing of RPC-over-RDMA version 1 (RFC 8166) responders (issue #7, host side).
//!
//! Code map:
//! - [`rng`]: splitmix64 and the seeded byte stream every case is drawn from.
//! - [`case`]: one fuzz case (bytes, regions it registers, handle/offset relocations, expected
//!   outcome per svcrdma profile) and its JSON file format.
//! - [`generate`]: `arbitrary`-driven structural mutations of valid NFSv3 calls, each family
//!   aimed at one svcrdma rule; a case is a pure function of `(seed, index)`.
//! - [`target`]: the [`target::Target`] trait a transport implements (connect with private
//!   data, register, post a Send, wait for the next event, disconnect) and target specs.
//!   A live target over rdma_cm is a driver's (rig's `rdma_target`): a caller of
//!   [`executor::open_runner`] hands in how to open one, so this crate links no FFI.
//! - [`sim_target`]: the simulated transport against our reference server or a bare responder.
//! - [`executor`]: sends cases, classifies outcomes, probes liveness, reconnects, logs every
//!   case before it is sent; [`executor::ModelRunner`] predicts instead of sending.
//! - [`differential`]: one case stream against two runners, divergences deduplicated by
//!   (rule, outcome pair) and checked against the known-divergences file.
//! - [`rules`]: the svcrdma rule catalogue (one negative case and one positive control per
//!   rule), the answer classes, and kernel profiles as TOML (`rig svcrdma-rules`).
//! - [`signature`]: kernel-event signatures: ftrace lines normalised, attributed to cases by
//!   trace marks (the relay's core), distinct signatures counted over time.
//! - [`mutate`]: structure-aware mutation of corpus cases (header read back, edited, emitted
//!   again through the raw builder).
//! - [`guided`]: the guided case stream: families plus mutants of a corpus of cases that
//!   showed a new signature.
//! - [`minimise`]: delta debugging (ddmin) over a case sequence, generic over "still fails?".
//! - [`kernel_watch`]: the console lines a guest run stops on: the shared `kernel_log` table
//!   read as the wire-fuzz watch (the guest script's `grep -E` pattern is checked against it).
//!
//! Architecture Invariant: case generation and classification read no clock and do no I/O;
//! only [`executor::Executor`]'s log and a real target's driver (outside this crate) touch the
//! outside world.
#![forbid(unsafe_code)]

pub mod case;
pub mod differential;
pub mod executor;
pub mod generate;
pub mod guided;
pub mod kernel_watch;
pub mod minimise;
pub mod mutate;
pub mod rng;
pub mod rules;
pub mod signature;
pub mod sim_target;
pub mod target;

pub use case::{Case, Observed};
pub use executor::{CaseResult, CaseRunner, Executor, ModelRunner};
pub use generate::generate;
pub use target::{Target, TargetError, TargetEvent, TargetSpec};
