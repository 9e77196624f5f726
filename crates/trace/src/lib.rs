//! RoCE captures to RPC-over-RDMA / ONC RPC / NFS traces: pcap and pcapng in, one event per
//! RPC-over-RDMA message and per RDMA data movement out, rendered raw or normalised for snapshots.
//!
//! Layers, bottom up: [`capture`] (pcap/pcapng frames), [`link`] (Ethernet/VLAN/IP/UDP or RoCEv1
//! GRH), [`ib`] (BTH and RC extended headers), [`icrc`], [`cm`] (connection management MADs),
//! [`reassembly`] (per-QP PSN ordering, multi-packet operations, anomalies).
//!
//! Architecture Invariant: every byte of a capture is untrusted. Nothing here panics on any input,
//! and every buffer is bounded by an explicit limit, not by a length read from the capture.
#![forbid(unsafe_code)]

pub mod capture;
pub mod cm;
pub mod ib;
pub mod icrc;
pub mod link;
pub mod model;
pub mod nfs4;
pub mod reassembly;
pub mod render;
pub mod session;
pub mod upper;

pub use model::{Event, EventBody, Message, Role, Trace};
pub use session::{trace_capture, Options};
