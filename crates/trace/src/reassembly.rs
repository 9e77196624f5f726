//! Per-QP reassembly of Reliable Connected traffic (IBTA Vol 1 §9.7): multi-packet SENDs, RDMA
//! WRITEs and RDMA READ responses are put back together by PSN, and duplicates, gaps, NAKs and
//! orphans are reported as [`TransportEvent`]s instead of failing the trace.
//!
//! A *flow* is one direction of one QP pair, keyed by source and destination address and the
//! destination QP number (the BTH names only the destination QP). Requests (SEND, WRITE, READ
//! request) travel on the requester's flow; READ responses and ACKs come back on the reverse flow
//! and are matched to the outstanding READ by PSN.
//!
//! Packets are taken in the order the responder executes them, which is PSN order (IBTA Vol 1
//! §9.7.5.1): a request ahead of the expected PSN is *held* (bounded) rather than executed, since
//! a responder that lost the packets before it drops it and the requester goes back to the
//! missing PSN; when the missing PSN arrives the held packets follow it in order, so a message
//! whose RC packets were lost and retransmitted is delivered exactly once, at the same place in
//! the exchange as without the loss. Held packets are released with a final gap when the
//! responder acknowledges the missing PSN (the capture lost it, the responder did not), when the
//! hold is full, or at the end of the capture. READ responses are taken in sequence only: an
//! ahead response is ignored, the requester re-reads from the missing PSN.
//!
//! Architecture Invariant: every buffer here is bounded by [`Limits`]; a length declared in a RETH
//! caps an allocation and sizes one only within a trace-wide budget (a READ whose data is copied
//! out reserves its declared length at its first response while
//! [`Limits::max_reserved_read_bytes`] allows, the reservation given back when the READ completes
//! or is dropped; READ and WRITE data fed with its place in the capture stays there as ranges,
//! [`RdmaData`], one per run of packets, each holding at least one byte); the number of flows, of
//! outstanding READs and of held packets is bounded, the oldest being dropped (and reported)
//! first.

mod flows;
mod operations;
mod sequence;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::net::IpAddr;
use std::ops::Range;
use std::time::Duration;

use crate::cm::CmMessage;
use crate::ib::{self, AckSyndrome, IbPacket, Opcode, Reth};

/// Most gap ranges remembered per flow (older ones are forgotten first, and counted as lost).
const MAX_MISSING_RANGES: usize = 64;
/// Most request packets held per flow while waiting for a missing PSN.
const MAX_HELD_PACKETS: usize = 256;
/// What a held packet costs against [`Limits::max_held_bytes`] beyond its payload (its
/// bookkeeping), so that empty packets are bounded too.
const HELD_OVERHEAD: usize = 64;

/// Bounds on what reassembly keeps in memory.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest reassembled SEND (RPC-over-RDMA inline messages are at most 64 KiB in practice).
    pub max_send_bytes: usize,
    /// Largest RDMA WRITE or READ kept (bytes beyond are counted, not stored).
    pub max_rdma_bytes: usize,
    /// Most outstanding RDMA READ requests per flow.
    pub max_outstanding_reads: usize,
    /// Bytes reserved up front for the response data of outstanding RDMA READs, over all flows.
    /// A READ's first response reserves its declared length (capped by `max_rdma_bytes`) when
    /// that fits; otherwise its data grows packet by packet. Only a hint: a capture that
    /// declares huge READs and never sends their data reserves at most this much.
    pub max_reserved_read_bytes: usize,
    /// Most flows tracked at once.
    pub max_flows: usize,
    /// Bytes of request packets held ahead of a PSN gap, over all flows (payload plus a fixed
    /// overhead per packet).
    pub max_held_bytes: usize,
    /// Bounds of iWARP decoding (TCP streams, MPA, DDP messages), [`crate::iwarp`].
    pub iwarp: IwarpLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_send_bytes: 1 << 20,
            max_rdma_bytes: 16 << 20,
            max_outstanding_reads: 1024,
            max_reserved_read_bytes: 64 << 20,
            max_flows: 4096,
            max_held_bytes: 8 << 20,
            iwarp: IwarpLimits::default(),
        }
    }
}

/// Bounds on what iWARP decoding keeps.
#[derive(Debug, Clone)]
pub struct IwarpLimits {
    pub tcp: crate::tcp::TcpLimits,
    /// Largest ULPDU_Length accepted (RFC 5044 §4.1's field allows 65535).
    pub max_ulpdu: usize,
    /// Largest Send message kept (bytes beyond are counted, not stored).
    pub max_send_bytes: usize,
    /// Largest RDMA Write or Read kept.
    pub max_rdma_bytes: usize,
    /// Bytes of messages under way, over all connections.
    pub max_partial_bytes: usize,
    /// Outstanding Read Requests per direction.
    pub max_outstanding_reads: usize,
}

impl Default for IwarpLimits {
    fn default() -> Self {
        IwarpLimits {
            tcp: crate::tcp::TcpLimits::default(),
            max_ulpdu: crate::mpa::MAX_ULPDU,
            max_send_bytes: 1 << 20,
            max_rdma_bytes: 16 << 20,
            max_partial_bytes: 64 << 20,
            max_outstanding_reads: 1024,
        }
    }
}

/// One direction of one QP pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct FlowKey {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub dest_qp: u32,
}

/// Where and when something happened in the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct At {
    /// Frame that completed it (1-based).
    pub frame: u32,
    /// Frame that started it (differs for multi-packet operations).
    pub first_frame: u32,
    /// Capture time of the completing frame.
    #[serde(skip)]
    pub time: Duration,
}

/// What the InfiniBand transport delivered, in the order the responders executed it.
#[derive(Debug, Clone)]
pub enum Delivery {
    /// A complete SEND message.
    Send {
        at: At,
        flow: FlowKey,
        payload: Vec<u8>,
        immediate: Option<u32>,
        invalidate_rkey: Option<u32>,
    },
    /// A complete RDMA WRITE into the peer's memory (`rkey`, `va`).
    Write {
        at: At,
        flow: FlowKey,
        reth: Reth,
        data: RdmaData,
        immediate: Option<u32>,
    },
    /// A complete RDMA READ: the requester (on `flow`) pulled `data` from the peer at `reth`.
    Read {
        at: At,
        flow: FlowKey,
        reth: Reth,
        data: RdmaData,
    },
    /// A Communication Management MAD.
    Cm {
        at: At,
        src: IpAddr,
        dst: IpAddr,
        message: CmMessage,
    },
    /// Something about the transport worth reporting.
    Event {
        at: At,
        flow: Option<FlowKey>,
        event: TransportEvent,
    },
    /// An iWARP connection opening (its MPA Request and Reply, RFC 5044 §7.1) or closing (TCP
    /// FIN or RST): what CM messages are to RoCE ([`crate::iwarp`]). `client` and `server` are
    /// the flows of each side's messages (their `dest_qp` a number standing for the TCP
    /// connection, above the 24 bits of an IB QP number); `from_client`: the client sent it.
    Connection {
        at: At,
        client: FlowKey,
        server: FlowKey,
        from_client: bool,
        /// `MPA_REQ`, `MPA_REP`, `MPA_REJ`, `TCP_FIN`, `TCP_RST`.
        name: &'static str,
        detail: String,
        /// The server's TCP port.
        port: u16,
        /// Whether the MPA private data or the port says RPC-over-RDMA (set on `MPA_REQ`).
        rpcrdma: bool,
    },
}

impl Delivery {
    /// Where this delivery happened.
    pub fn at(&self) -> At {
        match self {
            Delivery::Send { at, .. }
            | Delivery::Write { at, .. }
            | Delivery::Read { at, .. }
            | Delivery::Cm { at, .. }
            | Delivery::Event { at, .. }
            | Delivery::Connection { at, .. } => *at,
        }
    }
}

/// Transport-level anomalies and notices.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TransportEvent {
    /// A request PSN already seen: a retransmission (or a duplicate in the capture).
    Duplicate { psn: u32, opcode: &'static str },
    /// A request (or READ response) ahead of the expected PSN: held until the missing PSNs
    /// arrive (a READ response: ignored, the requester reads again from the missing PSN).
    OutOfSequence {
        expected: u32,
        psn: u32,
        opcode: &'static str,
    },
    /// PSNs skipped for good: packets lost or not captured (held packets released past them).
    Gap { expected: u32, got: u32 },
    /// A NAK or RNR NAK from the responder.
    Nak { psn: u32, syndrome: AckSyndrome },
    /// A request filling a PSN earlier skipped by a gap: processed out of order.
    LateFill { psn: u32, opcode: &'static str },
    /// A multi-packet operation that never completed (or was interrupted).
    Incomplete { what: &'static str, psn: u32 },
    /// A READ response (or middle/last packet) with no matching outstanding READ request.
    UnmatchedResponse { psn: u32, opcode: &'static str },
    /// A middle/last packet with no first packet.
    Orphan { psn: u32, opcode: &'static str },
    /// More data than the declared or allowed length; the excess was dropped.
    Overlong { what: &'static str, declared: u64 },
    /// The ICRC did not match: the receiver would have dropped this packet, so do we.
    BadIcrc { psn: u32 },
    /// The packet could not be decoded.
    Undecodable { error: String },
    /// Tracking state was dropped to stay within limits (for flows: reported at the 1st, 2nd,
    /// 4th, ... eviction).
    LimitReached { what: &'static str },
    /// At the end of the capture: gap ranges of a flow that no packet ever filled.
    Unfilled { ranges: u32, psns: u64 },
    /// A fault the rig's relay injected on this frame (its pcapng comment): dropped, held,
    /// delayed, duplicated or reordered by a rule the case set. Behaviour the case asked for, so
    /// shown at every level.
    RigFault { text: String },
    /// iWARP: a TCP segment whose bytes were delivered already (a TCP retransmission).
    TcpRetransmission { seq: u32, len: u32 },
    /// iWARP: a TCP segment ahead of the expected sequence, held until the bytes before it come.
    TcpOutOfOrder { expected: u32, seq: u32 },
    /// iWARP: a TCP segment too far from the expected sequence (or before the SYN), dropped.
    TcpOutOfWindow { expected: u32, seq: u32 },
    /// iWARP: TCP bytes from `expected` never captured (or not held, the hold being full): the
    /// stream is not decoded past them (MPA without markers cannot find its next FPDU).
    TcpLost { expected: u32, got: u32 },
    /// iWARP: an FPDU whose MPA CRC32c did not match (RFC 5044 §4.4): dropped, as the receiver
    /// would.
    BadMpaCrc { ulpdu_len: u32 },
    /// iWARP: an RDMAP Terminate (RFC 5040 §4.8): the sender ends the stream with this error.
    Terminate {
        layer: u8,
        error_type: u8,
        error_code: u8,
    },
}

/// A multi-packet SEND (`D` = the bytes) or RDMA WRITE (`D` = [`RdmaData`]) under way.
#[derive(Debug)]
struct Partial<D> {
    first_frame: u32,
    /// Next PSN expected for this operation.
    next_psn: u32,
    reth: Option<Reth>,
    data: D,
    truncated: bool,
}

/// Where a [`Partial`]'s packets go.
trait Append {
    fn len(&self) -> usize;
    /// Append `bytes`, found at `capture_at` in the capture when known.
    fn append(&mut self, bytes: &[u8], capture_at: Option<usize>);
}

impl Append for Vec<u8> {
    fn len(&self) -> usize {
        Vec::len(self)
    }

    fn append(&mut self, bytes: &[u8], _: Option<usize>) {
        self.extend_from_slice(bytes);
    }
}

impl Append for RdmaData {
    fn len(&self) -> usize {
        RdmaData::len(self)
    }

    fn append(&mut self, bytes: &[u8], capture_at: Option<usize>) {
        self.push(bytes, capture_at);
    }
}

/// The data of an RDMA READ or WRITE, in order: ranges of the capture its packets' payloads
/// occupy (not copied: on a large-I/O capture nearly every byte is READ response or WRITE
/// payload, and copying it into a buffer per operation was a fifth of `rig trace show`'s time,
/// most of it first-touch page faults), or bytes copied out for packets fed without their place
/// in the capture (and for packets held ahead of a PSN gap, which were copied to be held).
/// The capture ranges are resolved against the capture bytes by [`RdmaData::copy_to`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RdmaData {
    /// The pieces, each with the data offset where it ends (ascending, for a binary search).
    pieces: Vec<(usize, Piece)>,
    len: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// Bytes of the capture.
    Captured(Range<usize>),
    Copied(Vec<u8>),
}

impl Piece {
    fn len(&self) -> usize {
        match self {
            Piece::Captured(r) => r.len(),
            Piece::Copied(v) => v.len(),
        }
    }
}

impl From<Vec<u8>> for RdmaData {
    fn from(bytes: Vec<u8>) -> Self {
        let len = bytes.len();
        RdmaData {
            pieces: vec![(len, Piece::Copied(bytes))],
            len,
        }
    }
}

impl RdmaData {
    /// Bytes of data.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append `bytes`, found at `capture_at` in the capture when given (kept as that range,
    /// merged with the previous piece when they touch), else copied.
    pub(crate) fn push(&mut self, bytes: &[u8], capture_at: Option<usize>) {
        let n = bytes.len();
        if n == 0 {
            return;
        }
        let end = self.len + n;
        match (capture_at, self.pieces.last_mut()) {
            (Some(start), Some((last_end, Piece::Captured(r)))) if r.end == start => {
                r.end += n;
                *last_end = end;
            }
            (Some(start), _) => self.pieces.push((end, Piece::Captured(start..start + n))),
            (None, Some((last_end, Piece::Copied(v)))) => {
                v.extend_from_slice(bytes);
                *last_end = end;
            }
            (None, _) => self.pieces.push((end, Piece::Copied(bytes.to_vec()))),
        }
        self.len = end;
    }

    /// Room for `bytes` copied bytes, taken before the first copied piece is written.
    fn reserve_copied(&mut self, bytes: usize) {
        if self.pieces.is_empty() {
            self.pieces
                .push((0, Piece::Copied(Vec::with_capacity(bytes))));
        }
    }

    /// Give back what a reservation left unused.
    fn shrink_to_fit(&mut self) {
        for (_, piece) in &mut self.pieces {
            if let Piece::Copied(v) = piece {
                v.shrink_to_fit();
            }
        }
        self.pieces.shrink_to_fit();
    }

    /// Copy bytes `[from, from + out.len())` of the data into `out`, capture ranges read from
    /// `capture` (the bytes the packets were fed from); false when they are not all there.
    /// Finds the first piece by binary search, so copying a part of a READ of many packets
    /// costs the pieces it touches, not the pieces before it.
    pub fn copy_to<C: CaptureBytes + ?Sized>(
        &self,
        capture: &C,
        from: usize,
        out: &mut [u8],
    ) -> bool {
        let mut i = self.pieces.partition_point(|(end, _)| *end <= from);
        if let Some(span) = self.captured_span(i, from, out.len()) {
            capture.will_read(span);
        }
        let (mut pos, mut written) = (from, 0);
        while written < out.len() {
            let Some((end, piece)) = self.pieces.get(i) else {
                return false;
            };
            let within = pos - (end - piece.len());
            let n = (end - pos).min(out.len() - written);
            let dst = &mut out[written..written + n];
            let copied = match piece {
                Piece::Captured(r) => capture.read_at(r.start + within, dst),
                Piece::Copied(v) => match v.get(within..within + n) {
                    Some(src) => {
                        dst.copy_from_slice(src);
                        true
                    }
                    None => false,
                },
            };
            if !copied {
                return false;
            }
            (written, pos, i) = (written + n, pos + n, i + 1);
        }
        true
    }

    /// The range of the capture that bytes `[from, from + len)` of the data, starting in piece
    /// `first`, are read from, when those bytes all lie in captured pieces (`None` otherwise).
    fn captured_span(&self, first: usize, from: usize, len: usize) -> Option<Range<usize>> {
        let last_byte = from.checked_add(len)?.checked_sub(1)?;
        let last = self.pieces.partition_point(|(end, _)| *end <= last_byte);
        let start = match self.pieces.get(first)? {
            (end, Piece::Captured(r)) => r.start + (from - (end - r.len())),
            _ => return None,
        };
        let end = match self.pieces.get(last)? {
            (end, Piece::Captured(r)) => r.end - (end - 1 - last_byte),
            _ => return None,
        };
        (start < end).then_some(start..end)
    }

    /// All the data as bytes (see [`RdmaData::copy_to`]).
    pub fn to_vec<C: CaptureBytes + ?Sized>(&self, capture: &C) -> Option<Vec<u8>> {
        let mut out = vec![0; self.len];
        self.copy_to(capture, 0, &mut out).then_some(out)
    }
}

/// The bytes of a capture, read by offset: where [`RdmaData`] kept as capture ranges is read
/// back. The capture in memory (`[u8]`), or a file the caller reads (the library opens none).
pub trait CaptureBytes {
    /// Fill `out` with the bytes at `offset`; false when they are not all there (or reading
    /// failed).
    fn read_at(&self, offset: usize, out: &mut [u8]) -> bool;

    /// A hint: the next reads fall within `span` of the capture (the pieces of one RDMA READ or
    /// WRITE, a few header bytes apart), so a reader that reads ahead need read no further.
    fn will_read(&self, span: Range<usize>) {
        let _ = span;
    }
}

impl CaptureBytes for [u8] {
    fn read_at(&self, offset: usize, out: &mut [u8]) -> bool {
        match offset
            .checked_add(out.len())
            .and_then(|end| self.get(offset..end))
        {
            Some(src) => {
                out.copy_from_slice(src);
                true
            }
            None => false,
        }
    }
}

impl CaptureBytes for Vec<u8> {
    fn read_at(&self, offset: usize, out: &mut [u8]) -> bool {
        self.as_slice().read_at(offset, out)
    }
}

impl<T: CaptureBytes + ?Sized> CaptureBytes for &T {
    fn read_at(&self, offset: usize, out: &mut [u8]) -> bool {
        (**self).read_at(offset, out)
    }

    fn will_read(&self, span: Range<usize>) {
        (**self).will_read(span)
    }
}

#[derive(Debug)]
struct OutstandingRead {
    frame: u32,
    psn: u32,
    /// First PSN after this READ's responses, when the path MTU is known.
    end_psn: Option<u32>,
    reth: Reth,
    /// Next response PSN expected; responses at other PSNs are duplicates or out of sequence.
    next_psn: u32,
    first_response_frame: Option<u32>,
    data: RdmaData,
    /// Bytes of `data`'s capacity charged to [`Reassembler::reserved_read_bytes`].
    reserved: usize,
    truncated: bool,
}

/// A request packet ahead of the PSN sequence, kept until it is the responder's turn.
#[derive(Debug)]
struct Held {
    at: At,
    opcode: Opcode,
    psn: u32,
    reth: Option<Reth>,
    immediate: Option<u32>,
    invalidate_rkey: Option<u32>,
    payload: Vec<u8>,
}

impl Held {
    /// What it counts against [`Limits::max_held_bytes`].
    fn cost(&self) -> usize {
        self.payload.len() + HELD_OVERHEAD
    }

    fn new(at: At, p: &IbPacket) -> Self {
        Held {
            at,
            opcode: p.opcode,
            psn: p.psn,
            reth: p.reth,
            immediate: p.immediate,
            invalidate_rkey: p.invalidate_rkey,
            payload: p.payload.to_vec(),
        }
    }

    /// The packet again, as far as reassembly reads it.
    fn packet(&self, dest_qp: u32) -> IbPacket<'_> {
        IbPacket {
            opcode: self.opcode,
            solicited: false,
            pad_count: 0,
            pkey: 0,
            dest_qp,
            ack_request: false,
            psn: self.psn,
            reth: self.reth,
            aeth: None,
            immediate: self.immediate,
            invalidate_rkey: self.invalidate_rkey,
            deth: None,
            payload: &self.payload,
            icrc: [0; 4],
            header_len: 0,
        }
    }
}

#[derive(Debug, Default)]
struct FlowState {
    /// PSN ranges `[start, end)` skipped by gaps, oldest first (bounded).
    missing: VecDeque<(u32, u32)>,
    /// PSNs of gap ranges forgotten to stay bounded (never filled as far as we know).
    forgotten: (u32, u64),
    /// PSN of the next new request; `None` until the first request or after an unsized READ.
    expected_psn: Option<u32>,
    send: Option<Partial<Vec<u8>>>,
    write: Option<Partial<RdmaData>>,
    reads: VecDeque<OutstandingRead>,
    /// Requests ahead of `expected_psn`, in arrival order (bounded).
    held: Vec<Held>,
    last_frame: u32,
}

/// What to do with a request packet after the PSN check.
enum Sequence {
    /// Not executed (a duplicate, or held for later).
    Skip,
    /// Execute it; `resume` is the expected PSN to restore afterwards (a late fill).
    Execute { resume: Option<u32> },
}

/// Reassembles RC traffic packet by packet. Sans-IO: feed packets, drain deliveries.
#[derive(Debug, Default)]
pub struct Reassembler {
    limits: Limits,
    flows: HashMap<FlowKey, FlowState>,
    /// The flows by last activity, oldest first: eviction takes the first without a scan.
    lru: BTreeSet<(u32, FlowKey)>,
    /// The flows by (source, destination) address: READ responses and ACKs look for the flows
    /// going the other way among these, not among every flow.
    by_peers: HashMap<(IpAddr, IpAddr), BTreeSet<FlowKey>>,
    /// Path MTU per (unordered) address pair, from CM or from observed full-size packets.
    path_mtu: HashMap<(IpAddr, IpAddr), u32>,
    /// Cost of the packets held over all flows (bounded by `limits.max_held_bytes`).
    held_bytes: usize,
    /// Packets held over all flows (ACKs look for a waiting flow only when there is one).
    held_packets: usize,
    /// Flows evicted so far to stay within `limits.max_flows`.
    evicted_flows: u64,
    /// Bytes reserved for outstanding RDMA READs' data (bounded by
    /// `limits.max_reserved_read_bytes`).
    read_reservations: ReadReservations,
    out: Vec<Delivery>,
}

/// The bytes reserved for the data of outstanding RDMA READs: charged when a READ reserves its
/// declared length, given back when it completes or is dropped.
#[derive(Debug, Default, Clone)]
struct ReadReservations {
    now: usize,
    peak: usize,
}

impl ReadReservations {
    /// Charge `bytes` if they fit within `budget` with what is reserved already.
    fn try_take(&mut self, bytes: usize, budget: usize) -> bool {
        if self.now.saturating_add(bytes) > budget {
            return false;
        }
        self.now += bytes;
        self.peak = self.peak.max(self.now);
        true
    }

    /// Give back a finished or dropped READ's reservation.
    fn give_back(&mut self, read: &OutstandingRead) {
        self.now = self.now.saturating_sub(read.reserved);
    }
}

fn pair(a: IpAddr, b: IpAddr) -> (IpAddr, IpAddr) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

impl Reassembler {
    /// A reassembler with the given limits.
    pub fn new(limits: Limits) -> Self {
        Reassembler {
            limits,
            ..Default::default()
        }
    }

    /// Bytes reserved now for the data of outstanding RDMA READs.
    pub fn reserved_read_bytes(&self) -> usize {
        self.read_reservations.now
    }

    /// The most bytes reserved at once for the data of outstanding RDMA READs (never above
    /// [`Limits::max_reserved_read_bytes`]).
    pub fn peak_reserved_read_bytes(&self) -> usize {
        self.read_reservations.peak
    }

    /// Add deliveries made elsewhere (iWARP's, [`crate::iwarp`]) after those so far, so that
    /// one delivery stream keeps capture order across transports.
    pub fn push_deliveries(&mut self, deliveries: impl IntoIterator<Item = Delivery>) {
        self.out.extend(deliveries);
    }

    /// Take everything delivered so far.
    pub fn drain(&mut self) -> Vec<Delivery> {
        let mut out = std::mem::take(&mut self.out);
        // The vector doubled as it grew: give the slack back (a large block shrinks in place).
        out.shrink_to_fit();
        out
    }

    /// End of the capture: release held packets (their gaps are final), then report operations
    /// still incomplete and gaps never filled.
    pub fn finish(&mut self, frame: u32, time: Duration) {
        let mut keys: Vec<FlowKey> = self.flows.keys().copied().collect();
        keys.sort_unstable();
        for key in &keys {
            self.release_all(*key);
        }
        let at = At {
            frame,
            first_frame: frame,
            time,
        };
        for key in keys {
            let Some(state) = self.flows.get_mut(&key) else {
                continue;
            };
            let mut events = Vec::new();
            if let Some(p) = state.send.take() {
                events.push(TransportEvent::Incomplete {
                    what: "send",
                    psn: p.next_psn,
                });
            }
            if let Some(p) = state.write.take() {
                events.push(TransportEvent::Incomplete {
                    what: "rdma_write",
                    psn: p.next_psn,
                });
            }
            for r in state.reads.drain(..) {
                self.read_reservations.give_back(&r);
                events.push(TransportEvent::Incomplete {
                    what: "rdma_read",
                    psn: r.psn,
                });
            }
            let (mut ranges, mut psns) = state.forgotten;
            for &(start, end) in &state.missing {
                ranges = ranges.saturating_add(1);
                psns = psns.saturating_add(ib::psn_distance(end, start).max(0) as u64);
            }
            state.missing.clear();
            state.forgotten = (0, 0);
            if ranges > 0 {
                events.push(TransportEvent::Unfilled { ranges, psns });
            }
            for e in events {
                self.event(at, Some(key), e);
            }
        }
    }

    /// Record a path MTU learnt from the CM exchange.
    pub fn set_path_mtu(&mut self, a: IpAddr, b: IpAddr, mtu: u32) {
        self.path_mtu.insert(pair(a, b), mtu);
    }

    /// Report a frame-level problem found before reassembly (undecodable, bad ICRC).
    pub fn note(&mut self, frame: u32, time: Duration, event: TransportEvent) {
        let at = At {
            frame,
            first_frame: frame,
            time,
        };
        self.event(at, None, event);
    }

    fn event(&mut self, at: At, flow: Option<FlowKey>, event: TransportEvent) {
        self.out.push(Delivery::Event { at, flow, event });
    }

    /// Feed one decoded packet.
    pub fn packet(&mut self, frame: u32, time: Duration, src: IpAddr, dst: IpAddr, p: &IbPacket) {
        self.packet_from(frame, time, src, dst, p, None);
    }

    /// [`Reassembler::packet`] for a packet whose payload is at `payload_at` in the capture
    /// bytes: RDMA READ and WRITE data is then kept as ranges of those bytes, not copied.
    pub fn captured_packet(
        &mut self,
        frame: u32,
        time: Duration,
        src: IpAddr,
        dst: IpAddr,
        p: &IbPacket,
        payload_at: usize,
    ) {
        self.packet_from(frame, time, src, dst, p, Some(payload_at));
    }

    fn packet_from(
        &mut self,
        frame: u32,
        time: Duration,
        src: IpAddr,
        dst: IpAddr,
        p: &IbPacket,
        payload_at: Option<usize>,
    ) {
        let at = At {
            frame,
            first_frame: frame,
            time,
        };
        if matches!(p.opcode, Opcode::UdSendOnly | Opcode::UdSendOnlyImm) {
            // CM MADs go to QP1 (the GSI); other UD traffic is not part of RPC-over-RDMA.
            if p.dest_qp == 1 {
                match crate::cm::decode_mad(p.payload) {
                    Ok(Some(message)) => {
                        if let CmMessage::Request {
                            path_mtu: Some(mtu),
                            ..
                        } = &message
                        {
                            self.set_path_mtu(src, dst, *mtu);
                        }
                        self.out.push(Delivery::Cm {
                            at,
                            src,
                            dst,
                            message,
                        });
                    }
                    Ok(None) => {}
                    Err(e) => self.event(
                        at,
                        None,
                        TransportEvent::Undecodable {
                            error: e.to_string(),
                        },
                    ),
                }
            }
            return;
        }
        self.learn_mtu(src, dst, p);
        let key = FlowKey {
            src,
            dst,
            dest_qp: p.dest_qp,
        };
        if p.opcode.is_request() {
            self.request(at, key, p, payload_at);
        } else {
            self.response(at, key, p, payload_at);
        }
    }

    /// First and middle packets carry exactly one path MTU of payload (IBTA Vol 1 §9.7.6.2).
    fn learn_mtu(&mut self, src: IpAddr, dst: IpAddr, p: &IbPacket) {
        let full = matches!(
            p.opcode,
            Opcode::SendFirst
                | Opcode::SendMiddle
                | Opcode::WriteFirst
                | Opcode::WriteMiddle
                | Opcode::ReadResponseFirst
                | Opcode::ReadResponseMiddle
        );
        if full && p.payload.len().is_power_of_two() && (256..=4096).contains(&p.payload.len()) {
            self.path_mtu
                .entry(pair(src, dst))
                .or_insert(p.payload.len() as u32);
        }
    }
}

/// The event for a request PSN the responder has already executed.
fn duplicate(p: &IbPacket) -> TransportEvent {
    TransportEvent::Duplicate {
        psn: p.psn,
        opcode: p.opcode.name(),
    }
}

/// What executing one request packet found: transport events, and the messages it completed.
#[derive(Default)]
struct Executed {
    events: Vec<TransportEvent>,
    deliveries: Vec<Delivery>,
}

/// The message packet `p` belongs to on `slot`. With `start` (`Some(reth)`) the packet begins a
/// new one, and an unfinished one there is reported incomplete as `what`; without it the packet
/// continues the one in `slot`, and when there is none it is an orphan: reported, `None`.
fn message_of<'a, D: Default>(
    slot: &'a mut Option<Partial<D>>,
    start: Option<Option<Reth>>,
    what: &'static str,
    at: At,
    p: &IbPacket,
    events: &mut Vec<TransportEvent>,
) -> Option<&'a mut Partial<D>> {
    if let Some(reth) = start {
        if let Some(old) = slot.take() {
            events.push(TransportEvent::Incomplete {
                what,
                psn: old.next_psn,
            });
        }
        *slot = Some(Partial {
            first_frame: at.frame,
            next_psn: p.psn,
            reth,
            data: D::default(),
            truncated: false,
        });
    }
    if slot.is_none() {
        events.push(TransportEvent::Orphan {
            psn: p.psn,
            opcode: p.opcode.name(),
        });
    }
    slot.as_mut()
}

/// A SEND packet on `state`: a FIRST or ONLY starts the message (an unfinished one is reported
/// incomplete), a LAST or ONLY delivers it. `false` for a packet of no started message (an
/// orphan, reported).
fn send_packet(
    state: &mut FlowState,
    at: At,
    key: FlowKey,
    p: &IbPacket,
    limits: &Limits,
    out: &mut Executed,
) -> bool {
    use Opcode::*;
    let starts = matches!(
        p.opcode,
        SendFirst | SendOnly | SendOnlyImm | SendOnlyInvalidate
    );
    let ends = !matches!(p.opcode, SendFirst | SendMiddle);
    let start = starts.then_some(None);
    let Some(partial) = message_of(&mut state.send, start, "send", at, p, &mut out.events) else {
        return false;
    };
    append_bounded(partial, p.payload, limits.max_send_bytes, None);
    partial.next_psn = ib::psn_add(p.psn, 1);
    if ends {
        if let Some(done) = state.send.take() {
            if done.truncated {
                out.events.push(TransportEvent::Overlong {
                    what: "send",
                    declared: limits.max_send_bytes as u64,
                });
            }
            out.deliveries.push(Delivery::Send {
                at: At {
                    first_frame: done.first_frame,
                    ..at
                },
                flow: key,
                payload: done.data,
                immediate: p.immediate,
                invalidate_rkey: p.invalidate_rkey,
            });
        }
    }
    true
}

/// An RDMA WRITE packet on `state`: one with a RETH starts the message, a LAST or ONLY
/// delivers it, its data bounded by the RETH's length. `false` for a packet of no started
/// message (an orphan, reported).
fn write_packet(
    state: &mut FlowState,
    at: At,
    key: FlowKey,
    p: &IbPacket,
    limits: &Limits,
    payload_at: Option<usize>,
    out: &mut Executed,
) -> bool {
    use Opcode::*;
    let start = p.reth.map(Some);
    let Some(partial) = message_of(
        &mut state.write,
        start,
        "rdma_write",
        at,
        p,
        &mut out.events,
    ) else {
        return false;
    };
    let cap = partial
        .reth
        .map(|r| r.dma_length as usize)
        .unwrap_or(0)
        .min(limits.max_rdma_bytes);
    append_bounded(partial, p.payload, cap, payload_at);
    partial.next_psn = ib::psn_add(p.psn, 1);
    if matches!(
        p.opcode,
        WriteLast | WriteLastImm | WriteOnly | WriteOnlyImm
    ) {
        if let Some(done) = state.write.take() {
            let reth = done.reth.unwrap_or(Reth {
                va: 0,
                rkey: 0,
                dma_length: 0,
            });
            if done.truncated {
                out.events.push(TransportEvent::Overlong {
                    what: "rdma_write",
                    declared: u64::from(reth.dma_length),
                });
            }
            out.deliveries.push(Delivery::Write {
                at: At {
                    first_frame: done.first_frame,
                    ..at
                },
                flow: key,
                reth,
                data: done.data,
                immediate: p.immediate,
            });
        }
    }
    true
}

/// An RDMA READ request on `state`: outstanding until its responses, which take the PSNs after
/// it (one per `mtu` bytes); the oldest outstanding read is given up beyond the limit.
fn read_request(
    state: &mut FlowState,
    reservations: &mut ReadReservations,
    at: At,
    p: &IbPacket,
    mtu: Option<u32>,
    limits: &Limits,
    out: &mut Executed,
) {
    if let Some(reth) = p.reth {
        // A READ request consumes one PSN per response packet (IBTA Vol 1 §9.7.6.1).
        let end_psn = mtu.map(|mtu| {
            let packets = u64::from(reth.dma_length).div_ceil(u64::from(mtu)).max(1);
            ib::psn_add(p.psn, (packets & 0xff_ffff) as u32)
        });
        state.expected_psn = end_psn;
        if state.reads.len() >= limits.max_outstanding_reads {
            if let Some(old) = state.reads.pop_front() {
                reservations.give_back(&old);
                out.events.push(TransportEvent::Incomplete {
                    what: "rdma_read",
                    psn: old.psn,
                });
            }
        }
        state.reads.push_back(OutstandingRead {
            frame: at.frame,
            psn: p.psn,
            end_psn,
            reth,
            next_psn: p.psn,
            first_response_frame: None,
            data: RdmaData::default(),
            reserved: 0,
            truncated: false,
        });
    }
}

/// Append at most `cap - data.len()` bytes (found at `payload_at` in the capture when known);
/// mark truncation instead of growing past the cap.
fn append_bounded<D: Append>(
    partial: &mut Partial<D>,
    payload: &[u8],
    cap: usize,
    payload_at: Option<usize>,
) {
    let room = cap.saturating_sub(partial.data.len());
    if payload.len() > room {
        partial.truncated = true;
    }
    partial
        .data
        .append(&payload[..payload.len().min(room)], payload_at);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::tests::{packet, reth};
    use std::net::Ipv4Addr;

    const C: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
    const S: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));

    fn feed(r: &mut Reassembler, frame: u32, src: IpAddr, dst: IpAddr, bytes: &[u8]) {
        let p = ib::decode(bytes).unwrap();
        r.packet(frame, Duration::ZERO, src, dst, &p);
    }

    /// A reassembler (path MTU 256) that has seen frame 1: the server's RDMA READ request for
    /// 300 bytes at rkey 7, PSN 50; its responses come from the client.
    fn awaiting_a_300_byte_read() -> Reassembler {
        let mut r = Reassembler::default();
        r.set_path_mtu(C, S, 256);
        feed(
            &mut r,
            1,
            S,
            C,
            &packet(0x0c, 9, 50, &reth(0x2000, 7, 300), &[]),
        );
        r
    }

    /// Feed `packets`, laid back to back as `capture` holds them, with their place in it (the
    /// path that keeps RDMA data as ranges of the capture); frames are numbered from `first_frame`.
    fn feed_in_place(
        r: &mut Reassembler,
        first_frame: u32,
        src: IpAddr,
        dst: IpAddr,
        packets: [&[u8]; 2],
    ) {
        let mut base = 0;
        for (frame, bytes) in (first_frame..).zip(packets) {
            let p = ib::decode(bytes).unwrap();
            let at = base + (p.payload.as_ptr() as usize - bytes.as_ptr() as usize);
            r.captured_packet(frame, Duration::ZERO, src, dst, &p, at);
            base += bytes.len();
        }
    }

    #[test]
    fn multi_packet_send_is_reassembled_and_duplicate_reported() {
        let mut r = Reassembler::default();
        feed(&mut r, 1, C, S, &packet(0x00, 5, 100, &[], &[1; 256]));
        feed(&mut r, 2, C, S, &packet(0x01, 5, 101, &[], &[2; 256]));
        feed(&mut r, 3, C, S, &packet(0x02, 5, 102, &[], &[3; 10]));
        feed(&mut r, 4, C, S, &packet(0x02, 5, 102, &[], &[3; 10]));
        let out = r.drain();
        assert_eq!(out.len(), 2, "{out:?}");
        let Delivery::Send { at, payload, .. } = &out[0] else {
            panic!("{out:?}")
        };
        assert_eq!((at.first_frame, at.frame), (1, 3));
        assert_eq!(payload.len(), 522);
        assert_eq!(&payload[256..258], &[2, 2]);
        assert!(matches!(
            &out[1],
            Delivery::Event {
                event: TransportEvent::Duplicate { psn: 102, .. },
                ..
            }
        ));
    }

    #[test]
    fn gap_holds_what_follows_and_the_end_of_the_capture_makes_it_final() {
        let mut r = Reassembler::default();
        feed(&mut r, 1, C, S, &packet(0x00, 5, 10, &[], &[1; 256]));
        feed(&mut r, 2, C, S, &packet(0x04, 5, 12, &[], &[9; 8]));
        assert_eq!(seen(&r.drain()), ["out_of_sequence"]);
        r.finish(2, Duration::ZERO);
        assert_eq!(
            seen(&r.drain()),
            ["gap", "incomplete send", "send 8", "unfilled 1/1"]
        );
    }

    #[test]
    fn rdma_read_response_matched_by_psn_on_reverse_flow() {
        // server (S) reads 300 bytes from the client at rkey 7: two response packets
        let mut r = awaiting_a_300_byte_read();
        feed(
            &mut r,
            2,
            C,
            S,
            &packet(0x0d, 3, 50, &[0, 0, 0, 1], &[4; 256]),
        );
        feed(
            &mut r,
            3,
            C,
            S,
            &packet(0x0f, 3, 51, &[0, 0, 0, 2], &[5; 44]),
        );
        // next request PSN after the read is 52: no gap reported
        feed(&mut r, 4, S, C, &packet(0x04, 9, 52, &[], &[0; 4]));
        let out = r.drain();
        let Delivery::Read { at, reth, data, .. } = &out[0] else {
            panic!("{out:?}")
        };
        assert_eq!((at.first_frame, at.frame), (1, 3));
        assert_eq!(reth.rkey, 7);
        assert_eq!(data.len(), 300);
        assert_eq!(data.to_vec::<[u8]>(&[]).unwrap()[299], 5);
        assert!(matches!(out[1], Delivery::Send { .. }), "{out:?}");
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn read_data_fed_with_its_place_in_the_capture_stays_there() {
        // A "capture" holding the two response packets back to back.
        let first = packet(0x0d, 3, 50, &[0, 0, 0, 1], &[4; 256]);
        let last = packet(0x0f, 3, 51, &[0, 0, 0, 2], &[5; 44]);
        let capture = [first.clone(), last.clone()].concat();
        let mut r = awaiting_a_300_byte_read();
        feed_in_place(&mut r, 2, C, S, [&first, &last]);
        assert_eq!(
            r.reserved_read_bytes(),
            0,
            "nothing copied, nothing reserved"
        );
        let out = r.drain();
        let Delivery::Read { data, .. } = &out[0] else {
            panic!("{out:?}")
        };
        let mut want = vec![4; 256];
        want.extend([5; 44]);
        assert_eq!(data.to_vec(&capture).unwrap(), want);
        // A part across both packets, found without the bytes before it.
        let mut part = [0; 4];
        assert!(data.copy_to(&capture, 254, &mut part));
        assert_eq!(part, [4, 4, 5, 5]);
        // Past the data, or against other bytes than the capture: not there, no panic.
        assert!(!data.copy_to(&capture, 298, &mut part));
        assert_eq!(data.to_vec(&capture[..10]), None);
    }

    #[test]
    fn write_data_fed_with_its_place_in_the_capture_stays_there() {
        let first = packet(0x06, 9, 1, &reth(0x10, 8, 300), &[1; 256]);
        let last = packet(0x08, 9, 2, &[], &[2; 44]);
        let capture = [first.clone(), last.clone()].concat();
        let mut r = Reassembler::default();
        feed_in_place(&mut r, 1, S, C, [&first, &last]);
        let out = r.drain();
        let Delivery::Write { data, .. } = &out[0] else {
            panic!("{out:?}")
        };
        let mut want = vec![1; 256];
        want.extend([2; 44]);
        assert_eq!(data.to_vec(&capture).unwrap(), want);
    }

    #[test]
    fn rdma_write_is_capped_by_its_declared_length() {
        let mut r = Reassembler::default();
        feed(
            &mut r,
            1,
            S,
            C,
            &packet(0x06, 9, 1, &reth(0x10, 8, 260), &[1; 256]),
        );
        feed(&mut r, 2, S, C, &packet(0x08, 9, 2, &[], &[2; 256]));
        let out = r.drain();
        assert!(matches!(
            &out[0],
            Delivery::Event {
                event: TransportEvent::Overlong { .. },
                ..
            }
        ));
        let Delivery::Write { data, reth, .. } = &out[1] else {
            panic!("{out:?}")
        };
        assert_eq!(data.len(), 260);
        assert_eq!(reth.va, 0x10);
    }

    /// `count` RDMA READs of 1 MiB each (S pulls from C, MTU 4096), each answered by its first
    /// response packet only: the rest of the data never comes.
    fn unanswered_reads(r: &mut Reassembler, count: u32) {
        const MIB: u32 = 1 << 20;
        r.set_path_mtu(C, S, 4096);
        for i in 0..count {
            let psn = i * (MIB / 4096);
            feed(
                r,
                2 * i + 1,
                S,
                C,
                &packet(0x0c, 9, psn, &reth(0x2000, 7, MIB), &[]),
            );
            feed(
                r,
                2 * i + 2,
                C,
                S,
                &packet(0x0d, 3, psn, &[0, 0, 0, 1], &[4; 4096]),
            );
        }
    }

    #[test]
    fn read_reservations_stay_within_their_budget() {
        const BUDGET: usize = 4 << 20;
        let limits = Limits {
            max_reserved_read_bytes: BUDGET,
            ..Limits::default()
        };
        // 100 READs declaring 100 MiB: four reserve their 1 MiB, the others grow as data comes.
        let mut r = Reassembler::new(limits.clone());
        unanswered_reads(&mut r, 100);
        assert_eq!(r.reserved_read_bytes(), BUDGET);
        assert_eq!(r.peak_reserved_read_bytes(), BUDGET);
        r.finish(201, Duration::ZERO);
        assert_eq!(
            r.reserved_read_bytes(),
            0,
            "dropped READs give their reservation back"
        );
        let incomplete = seen(&r.drain())
            .iter()
            .filter(|s| *s == "incomplete rdma_read")
            .count();
        assert_eq!(incomplete, 100);

        // Two outstanding at most: each READ pushed out gives its reservation back, so the
        // newest two hold 2 MiB, not the budget.
        let mut r = Reassembler::new(Limits {
            max_outstanding_reads: 2,
            ..limits
        });
        unanswered_reads(&mut r, 100);
        assert_eq!(r.reserved_read_bytes(), 2 << 20);
        assert_eq!(r.peak_reserved_read_bytes(), 2 << 20);
    }

    #[test]
    fn a_completed_read_gives_its_reservation_back() {
        let mut r = awaiting_a_300_byte_read();
        feed(
            &mut r,
            2,
            C,
            S,
            &packet(0x0d, 3, 50, &[0, 0, 0, 1], &[4; 256]),
        );
        assert_eq!(r.reserved_read_bytes(), 300);
        feed(
            &mut r,
            3,
            C,
            S,
            &packet(0x0f, 3, 51, &[0, 0, 0, 1], &[5; 44]),
        );
        assert_eq!(r.reserved_read_bytes(), 0);
        assert_eq!(r.peak_reserved_read_bytes(), 300);
        assert_eq!(seen(&r.drain()), ["read 300"]);
    }

    #[test]
    fn nak_and_unmatched_response_are_reported() {
        let mut r = Reassembler::default();
        feed(&mut r, 1, C, S, &packet(0x11, 3, 5, &[0x60, 0, 0, 0], &[]));
        feed(&mut r, 2, C, S, &packet(0x10, 3, 6, &[0, 0, 0, 0], &[1; 4]));
        let out = r.drain();
        assert!(matches!(
            &out[0],
            Delivery::Event {
                event: TransportEvent::Nak {
                    syndrome: AckSyndrome::Nak { code: 0 },
                    ..
                },
                ..
            }
        ));
        assert!(matches!(
            &out[1],
            Delivery::Event {
                event: TransportEvent::UnmatchedResponse { psn: 6, .. },
                ..
            }
        ));
    }

    #[test]
    fn go_back_n_retransmission_executes_each_message_once_in_psn_order() {
        let mut r = Reassembler::default();
        feed(&mut r, 1, C, S, &packet(0x04, 5, 10, &[], &[10; 4]));
        // PSN 11 lost on the wire; the responder NAKs 12, the requester goes back to 11.
        feed(&mut r, 2, C, S, &packet(0x04, 5, 12, &[], &[12; 4]));
        feed(&mut r, 3, S, C, &packet(0x11, 3, 11, &[0x60, 0, 0, 1], &[]));
        feed(&mut r, 4, C, S, &packet(0x04, 5, 11, &[], &[11; 4]));
        feed(&mut r, 5, C, S, &packet(0x04, 5, 12, &[], &[12; 4]));
        feed(&mut r, 6, C, S, &packet(0x04, 5, 13, &[], &[13; 4]));
        r.finish(6, Duration::ZERO);
        assert_eq!(
            seen(&r.drain()),
            [
                "send 4",
                "out_of_sequence",
                "nak",
                "send 4",
                "send 4",
                "duplicate",
                "send 4"
            ]
        );
        // ... and in PSN order: the held 12 follows the late 11.
        let mut r = Reassembler::default();
        for (frame, psn) in [(1, 10), (2, 12), (3, 11), (4, 12), (5, 13)] {
            feed(
                &mut r,
                frame,
                C,
                S,
                &packet(0x04, 5, psn, &[], &[psn as u8; 4]),
            );
        }
        r.finish(5, Duration::ZERO);
        let order: Vec<(u8, u32)> = r
            .drain()
            .iter()
            .filter_map(|d| match d {
                Delivery::Send { payload, at, .. } => Some((payload[0], at.frame)),
                _ => None,
            })
            .collect();
        assert_eq!(order, [(10, 1), (11, 3), (12, 2), (13, 5)]);
    }

    #[test]
    fn multi_packet_send_survives_a_lost_middle_packet() {
        let mut r = Reassembler::default();
        feed(&mut r, 1, C, S, &packet(0x00, 5, 20, &[], &[1; 256]));
        // 21 (SEND_MIDDLE) lost on the wire: 22 arrives first, then 21 and 22 again.
        feed(&mut r, 2, C, S, &packet(0x02, 5, 22, &[], &[3; 10]));
        feed(&mut r, 3, C, S, &packet(0x01, 5, 21, &[], &[2; 256]));
        feed(&mut r, 4, C, S, &packet(0x02, 5, 22, &[], &[3; 10]));
        r.finish(4, Duration::ZERO);
        let out = r.drain();
        assert_eq!(
            seen(&out),
            ["out_of_sequence", "send 522", "duplicate"],
            "{out:?}"
        );
        let Delivery::Send { payload, at, .. } = &out[1] else {
            panic!("{out:?}")
        };
        assert_eq!((at.first_frame, at.frame), (1, 2));
        assert_eq!((payload[0], payload[256], payload[512]), (1, 2, 3));
    }

    #[test]
    fn rnr_retry_of_a_send_is_one_message() {
        let mut r = Reassembler::default();
        feed(&mut r, 1, C, S, &packet(0x04, 5, 30, &[], &[1; 8]));
        feed(&mut r, 2, S, C, &packet(0x11, 3, 30, &[0x20, 0, 0, 0], &[]));
        feed(&mut r, 3, C, S, &packet(0x04, 5, 30, &[], &[1; 8]));
        feed(&mut r, 4, S, C, &packet(0x11, 3, 30, &[0x1f, 0, 0, 1], &[]));
        r.finish(4, Duration::ZERO);
        assert_eq!(seen(&r.drain()), ["send 8", "nak", "duplicate"]);
    }

    #[test]
    fn an_ack_past_a_gap_means_the_capture_lost_it() {
        let mut r = Reassembler::default();
        feed(&mut r, 1, C, S, &packet(0x04, 5, 40, &[], &[40; 4]));
        // 41 reached the responder but not the capture: 42 is held until the ACK of 42 shows
        // that nothing will be retransmitted.
        feed(&mut r, 2, C, S, &packet(0x04, 5, 42, &[], &[42; 4]));
        feed(&mut r, 3, S, C, &packet(0x11, 3, 42, &[0x1f, 0, 0, 2], &[]));
        feed(&mut r, 4, C, S, &packet(0x04, 5, 43, &[], &[43; 4]));
        assert_eq!(
            seen(&r.drain()),
            ["send 4", "out_of_sequence", "gap", "send 4", "send 4"]
        );
        r.finish(4, Duration::ZERO);
        assert_eq!(seen(&r.drain()), ["unfilled 1/1"]);
    }

    #[test]
    fn holding_is_bounded() {
        let mut r = Reassembler::new(Limits {
            max_held_bytes: 4 * (16 + HELD_OVERHEAD),
            ..Limits::default()
        });
        feed(&mut r, 1, C, S, &packet(0x04, 5, 1, &[], &[0; 4]));
        // PSN 2 never comes; 3.. arrive with 16 bytes each: four fit.
        for psn in 3..=8u32 {
            feed(
                &mut r,
                psn,
                C,
                S,
                &packet(0x04, 5, psn, &[], &[psn as u8; 16]),
            );
        }
        let out = seen(&r.drain());
        assert_eq!(out.iter().filter(|s| *s == "out_of_sequence").count(), 4);
        assert!(out.contains(&"limit".to_string()), "{out:?}");
        assert_eq!(out.iter().filter(|s| *s == "send 16").count(), 6, "{out:?}");
        assert_eq!((r.held_bytes, r.held_packets), (0, 0));
        for psn in 10..=(MAX_HELD_PACKETS as u32 + 20) {
            feed(&mut r, psn, C, S, &packet(0x04, 5, psn, &[], &[]));
        }
        let state = r.flows.values().next().unwrap();
        assert!(state.held.len() <= MAX_HELD_PACKETS);
    }

    #[test]
    fn lost_read_response_is_read_again_from_the_missing_psn() {
        let mut r = Reassembler::default();
        r.set_path_mtu(C, S, 256);
        // S reads 600 bytes (3 responses: 60, 61, 62); 61 is lost on the wire.
        feed(
            &mut r,
            1,
            S,
            C,
            &packet(0x0c, 9, 60, &reth(0x1000, 7, 600), &[]),
        );
        feed(
            &mut r,
            2,
            C,
            S,
            &packet(0x0d, 3, 60, &[0, 0, 0, 1], &[1; 256]),
        );
        feed(
            &mut r,
            3,
            C,
            S,
            &packet(0x0f, 3, 62, &[0, 0, 0, 3], &[3; 88]),
        );
        // The requester re-reads from 61 (remaining 344 bytes at va + 256).
        feed(
            &mut r,
            4,
            S,
            C,
            &packet(0x0c, 9, 61, &reth(0x1100, 7, 344), &[]),
        );
        feed(
            &mut r,
            5,
            C,
            S,
            &packet(0x0d, 3, 61, &[0, 0, 0, 2], &[2; 256]),
        );
        feed(
            &mut r,
            6,
            C,
            S,
            &packet(0x0f, 3, 62, &[0, 0, 0, 3], &[3; 88]),
        );
        r.finish(6, Duration::ZERO);
        let out = r.drain();
        assert_eq!(
            seen(&out),
            ["out_of_sequence", "duplicate", "read 600"],
            "{out:?}"
        );
        let Delivery::Read { data, .. } = &out[2] else {
            panic!("{out:?}")
        };
        let data = data.to_vec::<[u8]>(&[]).unwrap();
        assert_eq!((data[0], data[256], data[512]), (1, 2, 3));
    }

    /// Short names of deliveries: `send N`/`read N` (bytes), transport event kinds.
    fn seen(out: &[Delivery]) -> Vec<String> {
        out.iter()
            .map(|d| match d {
                Delivery::Send { payload, .. } => format!("send {}", payload.len()),
                Delivery::Read { data, .. } => format!("read {}", data.len()),
                Delivery::Write { data, .. } => format!("write {}", data.len()),
                Delivery::Event {
                    event: TransportEvent::Incomplete { what, .. },
                    ..
                } => format!("incomplete {what}"),
                Delivery::Event {
                    event: TransportEvent::Unfilled { ranges, psns },
                    ..
                } => format!("unfilled {ranges}/{psns}"),
                Delivery::Event {
                    event: TransportEvent::LimitReached { .. },
                    ..
                } => "limit".into(),
                Delivery::Event { event, .. } => transport_name(event),
                Delivery::Cm { .. } => "cm".into(),
                Delivery::Connection { name, .. } => name.to_string(),
            })
            .collect()
    }

    fn transport_name(e: &TransportEvent) -> String {
        let v = serde_json::to_value(e).unwrap();
        v["kind"].as_str().unwrap().to_string()
    }
}
