//! RoCE and soft-iWARP captures to RPC-over-RDMA / ONC RPC / NFS traces: pcap and pcapng in, one
//! event per RPC-over-RDMA message, per RDMA data movement, per CM message (iWARP: MPA exchange,
//! TCP FIN/RST) and per transport anomaly out, rendered raw or normalised (for insta snapshots
//! and `rig trace diff`), or as JSON lines.
//!
//! Code map, bottom up:
//! - [`capture`]: pcap/pcapng frames (borrowed, numbered as Wireshark does).
//! - [`link`]: Ethernet/VLAN/IP/UDP 4791 (RoCEv2) or ethertype 0x8915 + GRH (RoCEv1).
//! - [`ib`]: BTH and RC extended headers (RETH, AETH, ImmDt, IETH, DETH); [`icrc`] checks the ICRC.
//! - [`cm`]: connection management MADs on QP1 (REQ/REP/RTU/DREQ/DREP/REJ).
//! - iWARP (soft-iWARP, RDMA over TCP), beside `link`/`ib`: [`tcp`] TCP segments and per-connection
//!   stream reassembly (retransmissions counted, holes held, bounded); [`mpa`] MPA Request/Reply
//!   frames and FPDUs (RFC 5044, RFC 6581 IRD/ORD), checked by [`crc32c`]; [`ddp`] DDP and
//!   RDMAP headers (RFC 5041, RFC 5040); [`iwarp`] DDP messages put back together and handed on
//!   as the same [`reassembly::Delivery`] values the RoCE path makes (MPA exchange and TCP
//!   teardown as `Delivery::Connection`).
//! - [`reassembly`]: per-QP PSN ordering (each PSN executed once, in order, as the responder
//!   does: packets ahead of a gap are held until the retransmission fills it); multi-packet
//!   SEND, RDMA WRITE, RDMA READ responses; duplicates, gaps, NAKs reported as events.
//! - [`session`]: connections (from CM, else from traffic), roles, RPC-over-RDMA headers, chunk
//!   data attached by handle and offset, Call/Reply pairing by xid, retransmissions.
//! - [`reinsert`]: rebuild a Call's full RPC message from its inline stream and captured Read
//!   chunk data. The RPC, NFSv3, NFSACL, MOUNT and NFSv4.1 COMPOUND decode is `wire::message`'s
//!   (`decode_rpc_message`; an RDMA_MSG's inline stream is decoded once); [`summarise`] turns its
//!   typed result into the model's summaries and the trace's words.
//! - [`synth`]: synthetic RoCEv2 captures for tests, benchmarks and hostile-input checks;
//!   [`synth::siw`] the same over soft-iWARP (TCP, MPA, DDP, RDMAP).
//! - [`model`] the trace types; [`level`] the one normalisation level (the exchange gates, RC
//!   transport events are counted) and the capture's completeness; [`render`] text/JSON lines
//!   and the normalised diff.
//!
//! A trace is built whole ([`trace_capture`]) or streamed ([`stream_capture`],
//! [`stream_capture_read`]): each event goes to the caller as it is built and none is kept, and
//! [`render::EventWriter`] writes its line at once and the summary at the end, from
//! [`level::StatusOfEvents`] (what [`capture_status`] computes for a whole trace, gathered event
//! by event). `rig trace show` streams, so its memory follows the capture's live state (the
//! deliveries of pass 1, connections, renaming tables), not the number of messages.
//!
//! Architecture Invariant: every byte of a capture is untrusted. Nothing here panics on any input,
//! and every buffer is bounded by an explicit limit, not by a length read from the capture.
//! Architecture Invariant: sans-IO — the library reads no files and no clock; callers pass bytes
//! (the one exception: a caller that gives `render::diff_until` a deadline has it checked).
//! Architecture Invariant: limits hold in total, not per item: chunk data gathered, comparisons
//! of segments with data movements and flows tracked are budgeted over the whole capture
//! (`session::GATHER_*`, `reassembly::Limits`, iWARP's `reassembly::Limits::iwarp`: TCP holds,
//! connections, MPA bytes and DDP messages under way), and every lookup is indexed, so time and
//! memory stay linear in the capture (`tests/hostile.rs`, `tests/iwarp.rs`).
#![forbid(unsafe_code)]

pub mod capture;
pub mod cm;
pub mod crc32c;
pub mod ddp;
pub mod ib;
pub mod icrc;
pub mod iwarp;
pub mod level;
pub mod link;
pub mod model;
pub mod mpa;
pub mod reassembly;
pub mod reinsert;
pub mod render;
pub mod session;
pub mod summarise;
pub mod synth;
pub mod tcp;

pub use level::{capture_status, CaptureStatus, Incompleteness, Level, TransportCounts};
pub use model::{Event, EventBody, Message, Role, Trace};
pub use reassembly::CaptureBytes;
pub use session::{
    stream_capture, stream_capture_read, trace_capture, trace_capture_read, Options,
};
