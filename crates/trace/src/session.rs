//! From transport deliveries to a [`Trace`]: connections (paired from the CM exchange, else from
//! traffic), roles, RPC-over-RDMA messages with their chunk data attached by handle and offset,
//! and Call/Reply pairing by xid.
//!
//! The capture is processed in two passes: reassembly first (every Send, RDMA WRITE and RDMA READ
//! in capture order), then messages. A Call's Read chunks are pulled by RDMA READs *after* the
//! Call, and a Reply's Write/Reply chunks are filled by RDMA WRITEs *before* it, so the second
//! pass looks both ways through an index of data movements by (connection, handle).

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::convert::Infallible;
use std::net::IpAddr;
use std::ops::ControlFlow;
use std::time::Duration;

use wire::rpc::MsgType;
use wire::rpcrdma::{Body, Header, Proc, Segment};
use wire::skeleton::FixedWords;

use crate::capture::{
    for_each_frame, for_each_frame_read, CaptureError, Frame, LinkType, Scanned, Window,
};
use crate::cm::{service_port, CmMessage};
use crate::ib;
use crate::link;
use crate::model::{Connection, Event, EventBody, Message, Role, Trace};
use crate::reassembly::{
    At, CaptureBytes, Delivery, FlowKey, Limits, RdmaData, Reassembler, TransportEvent,
};
use crate::reinsert;
use crate::summarise::{self, View};

mod chunk_data;
mod connections;
mod messages;
mod streams;

pub use crate::link::NFS_RDMA_PORT;
/// Most Calls remembered per connection (for Reply pairing and retransmission detection).
pub const MAX_PENDING_CALLS: usize = 65536;

/// Options for building a trace.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub limits: Limits,
    /// Verify each packet's ICRC and drop (and report) packets whose ICRC is wrong.
    pub check_icrc: bool,
    /// Free each message's captured Send payload once it is decoded (`Message::payload` stays
    /// empty): `rig trace show`/`diff` never read it, and on a capture of a million tiny
    /// messages it was a fifth of the peak memory. Extraction keeps it.
    pub drop_payloads: bool,
}

/// Build a trace from pcap or pcapng bytes.
pub fn trace_capture(bytes: &[u8], options: &Options) -> Result<Trace, CaptureError> {
    collected(|sink| stream_capture(bytes, options, sink))
}

/// [`trace_capture`] handing each event to `on_event` as it is built instead of keeping it
/// (events come in trace order; `on_event` returning `Break` stops the build). Returns the rest
/// of the trace: frames, connections and capture error, with `events` empty. Memory then stays
/// with the capture's live state, not with every event of a long capture.
pub fn stream_capture(
    bytes: &[u8],
    options: &Options,
    on_event: &mut dyn FnMut(Event) -> ControlFlow<()>,
) -> Result<Trace, CaptureError> {
    let reassembled = reassemble(options, |each| {
        for_each_frame(bytes, |frame| each(&frame, Window { bytes, offset: 0 }))
    })?;
    Ok(reassembled.build(options.drop_payloads, &bytes, on_event))
}

/// A whole trace from a streaming build: its events collected in order.
fn collected<E>(
    build: impl FnOnce(&mut dyn FnMut(Event) -> ControlFlow<()>) -> Result<Trace, E>,
) -> Result<Trace, E> {
    let mut events = Vec::new();
    let mut trace = build(&mut |event| {
        events.push(event);
        ControlFlow::Continue(())
    })?;
    trace.events = events;
    Ok(trace)
}

/// [`trace_capture`] for a capture streamed from `reader` through a reused window
/// ([`crate::capture::for_each_frame_read`]), so it is never held whole: RDMA READ and WRITE data
/// is kept as offsets in the capture and read back from `capture`, which must give the bytes
/// `reader` gave at the same offsets (a file read with `pread`, say). The same trace as
/// [`trace_capture`] on those bytes, or [`CaptureError::Read`] when either fails.
pub fn trace_capture_read(
    reader: &mut dyn std::io::Read,
    capture: &dyn CaptureBytes,
    options: &Options,
) -> Result<Trace, CaptureError> {
    collected(|sink| stream_capture_read(reader, capture, options, sink))
}

/// [`trace_capture_read`] handing each event to `on_event` as [`stream_capture`] does.
pub fn stream_capture_read(
    reader: &mut dyn std::io::Read,
    capture: &dyn CaptureBytes,
    options: &Options,
    on_event: &mut dyn FnMut(Event) -> ControlFlow<()>,
) -> Result<Trace, CaptureError> {
    let reassembled = reassemble(options, |each| {
        for_each_frame_read(reader, |frame, window| each(&frame, window))
    })?;
    Ok(reassembled.build(options.drop_payloads, capture, on_event))
}

/// What reassembly left of a capture: the deliveries, and what the trace says of the file.
struct Reassembled {
    deliveries: Vec<Delivery>,
    frames: u32,
    capture_error: Option<String>,
}

impl Reassembled {
    /// The trace, its events handed to `on_event`; `capture` is the bytes reassembly was fed
    /// from.
    fn build(
        self,
        drop_payloads: bool,
        capture: &dyn CaptureBytes,
        on_event: &mut dyn FnMut(Event) -> ControlFlow<()>,
    ) -> Trace {
        let mut trace = build_deliveries(self.deliveries, drop_payloads, capture, on_event);
        trace.frames = self.frames;
        trace.capture_error = self.capture_error;
        trace
    }
}

/// Read the frames (`scan` hands each to the function it is given, with the window of the
/// capture its data borrows) and reassemble each as it is read.
fn reassemble(
    options: &Options,
    scan: impl FnOnce(&mut dyn FnMut(&Frame<'_>, Window<'_>)) -> Result<Scanned, CaptureError>,
) -> Result<Reassembled, CaptureError> {
    let mut reassembler = Reassembler::new(options.limits.clone());
    let mut iwarp = crate::iwarp::Decoder::new(options.limits.iwarp.clone());
    let mut origin = None;
    let mut last = (0u32, Duration::ZERO);
    // The link type of the first frame, while every frame so far has one we do not decode.
    let mut undecodable_link = None;
    let scanned = scan(&mut |frame, window| {
        let origin = *origin.get_or_insert(frame.time);
        undecodable_link = match (frame.link, frame.number) {
            (LinkType::Other(linktype), 1) => Some(linktype),
            (LinkType::Other(_), _) => undecodable_link,
            _ => None,
        };
        let time = frame.time.saturating_sub(origin);
        last = (frame.number, time);
        reassemble_frame(
            &mut reassembler,
            &mut iwarp,
            window,
            frame,
            time,
            options.check_icrc,
        );
    })?;
    if let Some(linktype) = undecodable_link {
        return Err(CaptureError::UnsupportedLink { linktype });
    }
    iwarp.finish(last.0, last.1);
    reassembler.push_deliveries(iwarp.drain());
    reassembler.finish(last.0, last.1);
    Ok(Reassembled {
        deliveries: reassembler.drain(),
        frames: scanned.frames as u32,
        capture_error: scanned.stopped.map(|e| e.to_string()),
    })
}

/// Feed one frame (taken `time` after the first; its data in `window`) to the reassembler.
fn reassemble_frame(
    reassembler: &mut Reassembler,
    iwarp: &mut crate::iwarp::Decoder,
    window: Window<'_>,
    frame: &Frame<'_>,
    time: Duration,
    check_icrc: bool,
) {
    if let Some(text) = &frame.comment {
        reassembler.note(
            frame.number,
            time,
            TransportEvent::RigFault { text: text.clone() },
        );
    }
    // A frame the relay dropped is in its capture for the record only: the peer never saw it.
    if frame.dropped_by_rig {
        return;
    }
    let Some(roce) = link::roce_packet(frame.link, &frame.data) else {
        // Not RoCE: iWARP over TCP, or nothing this crate decodes.
        if let Some(segment) = crate::tcp::tcp_segment(frame.link, &frame.data) {
            match capture_offset(window.bytes, segment.payload)
                .and_then(|at| at.checked_add(window.offset))
            {
                Some(at) => iwarp.captured_segment(frame.number, time, &segment, at),
                None => iwarp.segment(frame.number, time, &segment),
            }
            reassembler.push_deliveries(iwarp.drain());
        }
        return;
    };
    match ib::decode(roce.transport) {
        Ok(packet) => {
            if check_icrc && crate::icrc::check(roce.icrc_prefix, roce.transport) == Some(false) {
                reassembler.note(
                    frame.number,
                    time,
                    TransportEvent::BadIcrc { psn: packet.psn },
                );
                return;
            }
            match capture_offset(window.bytes, packet.payload)
                .and_then(|at| at.checked_add(window.offset))
            {
                Some(at) => {
                    reassembler.captured_packet(frame.number, time, roce.src, roce.dst, &packet, at)
                }
                None => reassembler.packet(frame.number, time, roce.src, roce.dst, &packet),
            }
        }
        Err(e) => reassembler.note(
            frame.number,
            time,
            TransportEvent::Undecodable {
                error: e.to_string(),
            },
        ),
    }
}

/// Where `part` starts in `capture`, if it lies inside it. Compares addresses only (no unsafe):
/// a frame read from the capture borrows its bytes, so its payload lies inside them; a frame the
/// parser had to copy lies in another allocation and is fed as bytes.
fn capture_offset(capture: &[u8], part: &[u8]) -> Option<usize> {
    let start = (part.as_ptr() as usize).checked_sub(capture.as_ptr() as usize)?;
    (start.checked_add(part.len())? <= capture.len()).then_some(start)
}

#[derive(Debug, Default)]
struct ConnState {
    info: Connection,
    /// Flow of each role's requests (client→server carries Calls).
    flows: [Option<FlowKey>; 2],
    /// Xids of this connection's Calls in [`Builder::calls`], oldest first (bounded by
    /// [`MAX_PENDING_CALLS`], oldest dropped first).
    call_order: VecDeque<u32>,
    /// Whether the first Send has been seen (classification happens there when no CM says).
    classified: bool,
}

#[derive(Debug, Clone)]
struct CallRecord {
    key: Option<wire::message::CallProc>,
    /// First transmission.
    frame: u32,
    /// Latest transmission (retransmissions update it).
    last_frame: u32,
    time: Duration,
    /// Frame of the first Reply.
    answered: Option<u32>,
}

fn slot(role: Role) -> usize {
    match role {
        Role::Client => 0,
        Role::Server => 1,
    }
}

/// Data movements indexed by connection and handle, for attaching chunk data: (delivery index,
/// slot in [`Builder::moved`]) pairs, ascending.
#[derive(Debug, Default)]
struct DataIndex {
    /// (conn, rkey) → the RDMA READs.
    reads: HashMap<(usize, u32), Vec<(usize, usize)>>,
    /// (conn, rkey) → the RDMA WRITEs.
    writes: HashMap<(usize, u32), Vec<(usize, usize)>>,
}

/// An RDMA READ or WRITE's target and data, moved out of its delivery in pass 1: chunk data is
/// looked up here, so pass 2 can free each delivery once its event is built.
#[derive(Debug)]
struct Moved {
    reth: crate::ib::Reth,
    data: RdmaData,
}

/// Chunk data gathered over the whole trace may reach this many bytes per byte of RDMA data in
/// the capture, on top of [`GATHER_BYTES_FLOOR`]: a Call whose Read chunks all name the same
/// RDMA READ (or many Calls naming one) cannot make the rebuild copy without end.
pub const GATHER_BYTES_PER_DATA_BYTE: u64 = 4;
/// See [`GATHER_BYTES_PER_DATA_BYTE`].
pub const GATHER_BYTES_FLOOR: u64 = 64 << 20;
/// Data movements compared with chunk segments over the whole trace: this many per delivery, on
/// top of [`GATHER_VISITS_FLOOR`]. Keeps attaching chunk data linear in the capture.
pub const GATHER_VISITS_PER_DELIVERY: u64 = 64;
/// See [`GATHER_VISITS_PER_DELIVERY`].
pub const GATHER_VISITS_FLOOR: u64 = 1 << 20;
/// Most data movements on one handle compared with one segment: the RDMA READs right after a
/// Call (oldest first) or the RDMA WRITEs right before a Reply (newest first).
pub const MAX_SEGMENT_CANDIDATES: usize = 1024;

/// What attaching chunk data may still spend, over the whole trace.
#[derive(Debug)]
struct GatherBudget {
    bytes: Cell<u64>,
    visits: Cell<u64>,
}

impl GatherBudget {
    fn for_deliveries(deliveries: &[Delivery]) -> Self {
        let data: u64 = deliveries
            .iter()
            .map(|d| match d {
                Delivery::Write { data, .. } | Delivery::Read { data, .. } => data.len() as u64,
                _ => 0,
            })
            .sum();
        GatherBudget {
            bytes: Cell::new(
                data.saturating_mul(GATHER_BYTES_PER_DATA_BYTE)
                    .saturating_add(GATHER_BYTES_FLOOR),
            ),
            visits: Cell::new(
                (deliveries.len() as u64)
                    .saturating_mul(GATHER_VISITS_PER_DELIVERY)
                    .saturating_add(GATHER_VISITS_FLOOR),
            ),
        }
    }

    /// Take `n` bytes of chunk data to gather, or say which budget is spent.
    fn bytes(&self, n: u64) -> Result<(), String> {
        let left = self.bytes.get();
        if n > left {
            return Err(format!(
                "chunk data of {n} bytes not attached: the trace's gather budget is spent \
                 ({GATHER_BYTES_PER_DATA_BYTE} x the RDMA data captured + {GATHER_BYTES_FLOOR} bytes, \
                 session::GATHER_BYTES_PER_DATA_BYTE)"
            ));
        }
        self.bytes.set(left - n);
        Ok(())
    }

    /// Take one comparison of a data movement with a segment.
    fn visit(&self) -> Result<(), String> {
        let left = self.visits.get();
        if left == 0 {
            return Err(format!(
                "chunk data not attached: the trace's budget of comparisons is spent \
                 ({GATHER_VISITS_PER_DELIVERY} per data movement + {GATHER_VISITS_FLOOR}, \
                 session::GATHER_VISITS_PER_DELIVERY)"
            ));
        }
        self.visits.set(left - 1);
        Ok(())
    }
}

/// Byte ranges of one segment filled so far: merged, disjoint, keyed by start.
#[derive(Debug, Default)]
struct Filled {
    ranges: BTreeMap<usize, usize>,
    total: usize,
}

impl Filled {
    /// Mark `[start, end)` filled; `gap` is called with each part of it not filled before.
    fn fill(&mut self, start: usize, end: usize, mut gap: impl FnMut(usize, usize)) {
        if start >= end {
            return;
        }
        // Ranges touching [start, end]: the last one starting before `start`, then those
        // starting inside it (each is merged away once, so filling is O(log n) amortised).
        let mut touching: Vec<(usize, usize)> = Vec::new();
        if let Some((&a, &b)) = self.ranges.range(..start).next_back() {
            if b >= start {
                touching.push((a, b));
            }
        }
        touching.extend(self.ranges.range(start..=end).map(|(&a, &b)| (a, b)));
        let mut cursor = start;
        let (mut lo, mut hi) = (start, end);
        for &(a, b) in &touching {
            if a > cursor {
                gap(cursor, a.min(end));
                self.total += a.min(end) - cursor;
            }
            cursor = cursor.max(b);
            lo = lo.min(a);
            hi = hi.max(b);
            self.ranges.remove(&a);
        }
        if cursor < end {
            gap(cursor, end);
            self.total += end - cursor;
        }
        self.ranges.insert(lo, hi);
    }
}

struct Builder<'c> {
    /// The capture bytes reassembly was fed from: where RDMA READ and WRITE data is read.
    capture: &'c dyn CaptureBytes,
    /// The data of every RDMA READ and WRITE, in delivery order.
    moved: Vec<Moved>,
    /// Pass 2's next slot in `moved` (deliveries are visited in the order they were moved).
    next_moved: usize,
    conns: Vec<ConnState>,
    /// Calls by (connection, xid), to pair Replies and spot repeats: one map for the trace, not
    /// one per connection (a capture of many one-Call connections stays small).
    calls: HashMap<(usize, u32), CallRecord>,
    flow_conn: HashMap<FlowKey, (usize, Role)>,
    /// CM REQs waiting for their REP: (client addr, comm id) → (qpn, port, rpcrdma hint).
    cm_requests: HashMap<(IpAddr, u32), (u32, Option<u16>, bool)>,
    /// (sender address, sender's local communication ID) → connection, for CM events.
    comm_ids: HashMap<(IpAddr, u32), usize>,
    index: DataIndex,
    /// Traffic-paired connections with one direction known, by (that flow's source, its
    /// destination, its role), ascending ids: where a new flow looks for its other half.
    half_open: HashMap<(IpAddr, IpAddr, Role), Vec<usize>>,
    budget: GatherBudget,
    /// [`Options::drop_payloads`].
    drop_payloads: bool,
    events: Vec<Event>,
}

/// Build the trace from reassembled deliveries.
pub fn build(deliveries: &[Delivery]) -> Trace {
    build_owned(deliveries.to_vec())
}

/// [`build`] taking the deliveries: each Send's payload moves into its message, not copied.
pub fn build_owned(deliveries: Vec<Delivery>) -> Trace {
    let none: &[u8] = &[];
    match collected(|sink| Ok::<_, Infallible>(build_deliveries(deliveries, false, &none, sink))) {
        Ok(trace) => trace,
        Err(never) => match never {},
    }
}

/// [`build_owned`], freeing each Send's payload once its message is decoded when `drop_payloads`.
/// `capture` is the bytes the deliveries' RDMA READ and WRITE data ranges refer to.
fn build_deliveries(
    mut deliveries: Vec<Delivery>,
    drop_payloads: bool,
    capture: &dyn CaptureBytes,
    on_event: &mut dyn FnMut(Event) -> ControlFlow<()>,
) -> Trace {
    let budget = GatherBudget::for_deliveries(&deliveries);
    let count = deliveries.len();
    let mut b = Builder {
        capture,
        moved: Vec::new(),
        next_moved: 0,
        conns: Vec::new(),
        calls: HashMap::new(),
        flow_conn: HashMap::new(),
        cm_requests: HashMap::new(),
        comm_ids: HashMap::new(),
        index: DataIndex::default(),
        half_open: HashMap::new(),
        budget,
        drop_payloads,
        // The events of the delivery being built, handed on at once.
        events: Vec::new(),
    };
    // Connection and role of each delivery, fixed in pass 1 when the flow was current: QP
    // numbers are reused by later connections, so a flow's final mapping is not enough.
    let mut assigned: Vec<(Option<usize>, Option<Role>)> = Vec::with_capacity(count);
    // Pass 1: connections (CM first, then traffic) and the data index.
    for (i, d) in deliveries.iter_mut().enumerate() {
        let assigned_here = match d {
            Delivery::Cm {
                src, dst, message, ..
            } => {
                b.cm(*src, *dst, message);
                (None, None)
            }
            Delivery::Send { flow, payload, .. } => {
                let (conn, role) = b.connection_for(*flow, guess_send_role(payload));
                (Some(conn), role)
            }
            Delivery::Write {
                flow, reth, data, ..
            }
            | Delivery::Read {
                flow, reth, data, ..
            } => {
                // Only the server moves data in RPC-over-RDMA (RFC 8166 §3.4.1).
                let (conn, role) = b.connection_for(*flow, Some(Role::Server));
                let slot = b.moved.len();
                b.moved.push(Moved {
                    reth: *reth,
                    data: std::mem::take(data),
                });
                let rkey = reth.rkey;
                let index = match d {
                    Delivery::Read { .. } => &mut b.index.reads,
                    _ => &mut b.index.writes,
                };
                index.entry((conn, rkey)).or_default().push((i, slot));
                (Some(conn), role)
            }
            Delivery::Event { flow, .. } => match flow.and_then(|f| b.flow_conn.get(&f)) {
                Some((c, r)) => (Some(*c), Some(*r)),
                None => (None, None),
            },
            Delivery::Connection {
                client,
                server,
                from_client,
                name,
                port,
                rpcrdma,
                ..
            } => {
                let from = if *from_client {
                    Role::Client
                } else {
                    Role::Server
                };
                b.transport_connection(*client, *server, from, name, *port, *rpcrdma)
            }
        };
        assigned.push(assigned_here);
    }
    // Pass 2: events, consuming the deliveries front to back. Their memory goes back as it is
    // consumed (each time half of it is free), so the deliveries and the events they become are
    // not both held whole: on a million tiny messages that was a fifth of the peak.
    let mut deliveries = VecDeque::from(deliveries);
    let mut assigned = VecDeque::from(assigned);
    for i in 0..count {
        let (Some(d), Some((conn, dir))) = (deliveries.pop_front(), assigned.pop_front()) else {
            break;
        };
        b.event(i, d, conn, dir);
        // Stopped: what is left of the delivery's events is dropped with the drain.
        if b.events.drain(..).any(|event| on_event(event).is_break()) {
            break;
        }
        if deliveries.len() < deliveries.capacity() / 2 {
            deliveries.shrink_to_fit();
            assigned.shrink_to_fit();
        }
    }
    Trace {
        frames: 0,
        connections: b.conns.into_iter().map(|c| c.info).collect(),
        events: Vec::new(),
        capture_error: None,
    }
}

/// Guess who sent a Send from its content when no CM exchange says: an RPC-over-RDMA Call has
/// msg_type CALL after the header; anything else from an unknown sender is left undecided.
fn guess_send_role(payload: &[u8]) -> Option<Role> {
    let (header, used) = Header::decode_prefix(payload).ok()?;
    if header.vers != wire::rpcrdma::RPCRDMA_VERSION {
        return None;
    }
    match header.body {
        Body::Msg(_) | Body::Msgp { .. } => match MsgType::peek(payload.get(used..)?)? {
            MsgType::Call => Some(Role::Client),
            MsgType::Reply => Some(Role::Server),
        },
        Body::Nomsg(c) => {
            if !c.reads.is_empty() {
                Some(Role::Client)
            } else {
                None
            }
        }
        Body::Done => Some(Role::Client),
        Body::Error(_) => Some(Role::Server),
    }
}

impl Builder<'_> {
    fn push(&mut self, at: At, conn: Option<usize>, dir: Option<Role>, body: EventBody) {
        self.events.push(Event {
            frame: at.frame,
            first_frame: at.first_frame,
            time: at.time,
            conn,
            dir,
            body,
        });
    }

    fn event(&mut self, index: usize, d: Delivery, conn: Option<usize>, dir: Option<Role>) {
        let (at, body) = match d {
            Delivery::Cm {
                at, src, message, ..
            } => {
                let (conn, dir) = self.cm_role(src, &message);
                let body = EventBody::Cm {
                    name: message.name(),
                    detail: cm_detail(&message),
                };
                self.push(at, conn, dir, body);
                return;
            }
            Delivery::Event { at, event, .. } => (at, EventBody::Transport(event)),
            Delivery::Connection {
                at, name, detail, ..
            } => (
                at,
                EventBody::Cm {
                    name: name.to_string(),
                    detail,
                },
            ),
            Delivery::Write { at, reth, .. } => (
                at,
                EventBody::RdmaWrite {
                    handle: reth.rkey,
                    offset: reth.va,
                    length: self.take_moved_len(),
                },
            ),
            Delivery::Read { at, reth, .. } => (
                at,
                EventBody::RdmaRead {
                    handle: reth.rkey,
                    offset: reth.va,
                    length: self.take_moved_len(),
                },
            ),
            // A Send's payload moves into its message.
            Delivery::Send { at, payload, .. } => {
                let Some(conn) = conn else {
                    return;
                };
                if !self.conns[conn].classified {
                    self.conns[conn].classified = true;
                    self.conns[conn].info.rpcrdma = looks_like_rpcrdma(&payload);
                }
                if !self.conns[conn].info.rpcrdma {
                    let body = EventBody::Send {
                        length: payload.len(),
                    };
                    self.push(at, Some(conn), dir, body);
                    return;
                }
                let message = self.message(index, at, conn, dir, payload);
                self.push(at, Some(conn), dir, EventBody::Message(Box::new(message)));
                return;
            }
        };
        self.push(at, conn, dir, body);
    }

    /// The length of the data of the RDMA READ or WRITE pass 2 is at (moved in pass 1, in the
    /// same order).
    fn take_moved_len(&mut self) -> usize {
        let len = self.moved.get(self.next_moved).map_or(0, |m| m.data.len());
        self.next_moved += 1;
        len
    }

    /// Decode one RPC-over-RDMA message, attaching chunk data and pairing with its Call.
    fn message(
        &mut self,
        index: usize,
        at: At,
        conn: usize,
        dir: Option<Role>,
        payload: Vec<u8>,
    ) -> Message {
        let m = self.decode_message(index, at, conn, dir, &payload, Message::default());
        if self.drop_payloads {
            return m;
        }
        Message { payload, ..m }
    }
}

/// Whether [`Builder::gather`] copies the chunk data or only checks that it was captured.
#[derive(Debug, Clone, Copy)]
enum Collect {
    Bytes,
    Coverage,
}

/// What [`Builder::gather`] found: the bytes (empty for [`Collect::Coverage`]) and their length.
#[derive(Debug)]
struct Gathered {
    bytes: Vec<u8>,
    len: u64,
}

#[derive(Debug, Clone, Copy)]
enum Look {
    After,
    Before,
}

/// The decode of an RDMA_MSG's inline RPC message, reduced as its chunk lists say.
type SendDecode = Result<wire::message::DecodedRpc, wire::message::MessageError>;

/// An RPC message ready for [`wire::message::decode_rpc_message`].
#[derive(Debug)]
struct RpcStream {
    /// The message's bytes; empty when `send` says the Send's own decode is this stream's.
    bytes: Vec<u8>,
    /// Whether a call's DDP-eligible items are reduced to their length words (chunk data not
    /// captured): the RDMA_MSG's inline stream, decoded with the Send (its items take the Read
    /// chunks as the chunk lists say), or every item reduced
    /// ([`wire::message::Placement::Moved`]) where there is no Send decode (RDMA_MSGP).
    reduced: bool,
    /// Bytes carried by each Write chunk, in Write list order (each checked against the length
    /// of the reduced item that took it).
    writes: Vec<u64>,
    chunk_bytes: u64,
    /// Why the stream is not complete (chunk data not captured).
    note: Option<String>,
    /// The stream is the RDMA_MSG's inline stream reduced as its chunk lists say: the Send's
    /// decode ([`wire::message::Placement::Chunks`]) is this stream's, shown as the [`View`]
    /// says ([`View::Reinserted`]: [`Builder::call_stream_moved`]).
    send: Option<View>,
}

impl RpcStream {
    /// The inline stream with its DDP-eligible items reduced to their length words: what is
    /// decoded when chunk data was not captured (`note` says why).
    fn reduced(inline: &[u8], chunk_bytes: u64, note: String) -> Self {
        RpcStream {
            bytes: inline.to_vec(),
            reduced: true,
            writes: Vec::new(),
            chunk_bytes,
            note: Some(note),
            send: None,
        }
    }

    fn inline(bytes: &[u8]) -> Self {
        RpcStream {
            bytes: bytes.to_vec(),
            reduced: false,
            writes: Vec::new(),
            chunk_bytes: 0,
            note: None,
            send: None,
        }
    }

    /// The Send's inline stream, decoded with the Send ([`RpcStream::send`]).
    fn send(view: View, writes: Vec<u64>, chunk_bytes: u64) -> Self {
        RpcStream {
            bytes: Vec::new(),
            reduced: false,
            writes,
            chunk_bytes,
            note: None,
            send: Some(view),
        }
    }
}

/// Whether a connection whose CM exchange was not captured carries RPC-over-RDMA: its first Send
/// must decode as a version 1 transport header (RFC 8166 §4.1: `rdma_vers` is 1).
fn looks_like_rpcrdma(payload: &[u8]) -> bool {
    matches!(Header::decode_prefix(payload), Ok((h, _)) if h.vers == wire::rpcrdma::RPCRDMA_VERSION)
}

fn cm_detail(message: &CmMessage) -> String {
    match message {
        CmMessage::Request {
            service_id,
            path_mtu,
            private_data,
            ..
        } => {
            let mut s = match service_port(*service_id) {
                Some(port) => format!("port={port}"),
                None => format!("service={service_id:#x}"),
            };
            if let Some(mtu) = path_mtu {
                s.push_str(&format!(" mtu={mtu}"));
            }
            s.push_str(&private_data_detail(private_data));
            s
        }
        CmMessage::Reply { private_data, .. } => {
            private_data_detail(private_data).trim_start().to_string()
        }
        CmMessage::Reject { reason, .. } => format!("reason={reason}"),
        _ => String::new(),
    }
}

fn private_data_detail(bytes: &[u8]) -> String {
    match wire::private_data::PrivateData::decode(bytes) {
        Ok(p) => format!(
            " rfc8797(send={} recv={} inv={})",
            p.send_size(),
            p.recv_size(),
            p.send_with_invalidate()
        ),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::tests::{packet, reth};
    use crate::render::{text, Style};
    use std::net::Ipv4Addr;
    use wire::rpcrdma::ChunkLists;
    use wire::{Writer, Xdr};

    struct Run {
        client: IpAddr,
        server: IpAddr,
        client_qp: u32,
        server_qp: u32,
        psn: u32,
        xid: u32,
        rkey: u32,
        va: u64,
    }

    /// A READ of 5 bytes: Call with a Write chunk, RDMA WRITE of the data, Reply (no CM).
    fn read_exchange(run: &Run) -> Trace {
        let seg = Segment {
            handle: run.rkey,
            length: 4096,
            offset: run.va,
        };
        let call_header = Header {
            xid: run.xid,
            vers: 1,
            credits: 32,
            body: Body::Msg(ChunkLists {
                writes: vec![vec![seg]],
                ..Default::default()
            }),
        };
        let mut call = call_header.to_bytes();
        call.extend(wire::rpc::CallHeader::new(run.xid, 100003, 3, 6).to_bytes());
        let mut args = Writer::new();
        args.opaque_var(&[7; 8]).u64(0).u32(4096);
        call.extend(args.as_bytes());
        let reply_header = Header {
            credits: 16,
            body: Body::Msg(ChunkLists {
                writes: vec![vec![Segment { length: 5, ..seg }]],
                ..Default::default()
            }),
            ..call_header
        };
        let mut reply = reply_header.to_bytes();
        reply.extend(wire::rpc::ReplyHeader::success(run.xid).to_bytes());
        let mut res = Writer::new();
        res.u32(0).bool(false).u32(5).bool(true).u32(5); // NFS3_OK, no attrs, count, eof, len
        reply.extend(res.as_bytes());

        let mut r = Reassembler::default();
        let mut feed = |frame: u32, src: IpAddr, dst: IpAddr, bytes: Vec<u8>| {
            let p = ib::decode(&bytes).unwrap();
            r.packet(frame, Duration::from_millis(frame.into()), src, dst, &p);
        };
        let (c, s) = (run.client, run.server);
        feed(1, c, s, packet(0x04, run.server_qp, run.psn, &[], &call));
        feed(
            2,
            s,
            c,
            packet(0x11, run.client_qp, run.psn, &[0, 0, 0, 1], &[]),
        );
        feed(
            3,
            s,
            c,
            packet(
                0x0a,
                run.client_qp,
                run.psn + 7,
                &reth(run.va, run.rkey, 5),
                b"hello",
            ),
        );
        feed(
            4,
            s,
            c,
            packet(0x04, run.client_qp, run.psn + 8, &[], &reply),
        );
        build(&r.drain())
    }

    #[test]
    fn same_workload_normalises_identically_across_runs() {
        let a = read_exchange(&Run {
            client: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            server: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            client_qp: 0x11,
            server_qp: 0x12,
            psn: 100,
            xid: 0x1234_5678,
            rkey: 0x1086,
            va: 0x7f00_0000,
        });
        let b = read_exchange(&Run {
            client: IpAddr::V4(Ipv4Addr::new(192, 168, 1, 9)),
            server: IpAddr::V4(Ipv4Addr::new(192, 168, 1, 7)),
            client_qp: 0x99,
            server_qp: 0x3,
            psn: 0xabcde,
            xid: 0xdead_beef,
            rkey: 0x42,
            va: 0x5500_1000,
        });
        let norm = text(&a, Style::Normalised);
        assert_eq!(
            norm,
            "c1 C RDMA_MSG x1 cr=32 write=[[h1:4096]] NFS3 READ call count=4096\n\
             c1 S RDMA_WRITE h1+0 len=5\n\
             c1 S RDMA_MSG x1 cr=16 write=[[h1:5]] NFS3 READ reply count=5 eof=true data=chunk NFS3_OK chunk_bytes=5\n"
        );
        assert_eq!(text(&b, Style::Normalised), norm);
        assert_ne!(text(&b, Style::Raw), text(&a, Style::Raw));
        // Roles come from traffic (no CM here): the Call's sender is the client.
        assert_eq!(a.connections.len(), 1);
        assert_eq!(
            a.connections[0].client,
            Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)))
        );
        let (_, reply) = a.messages().nth(1).unwrap();
        assert_eq!(reply.call_frame, Some(1));
        assert_eq!(reply.latency, Some(Duration::from_millis(3)));
    }

    #[test]
    fn retransmitted_call_and_duplicate_reply_are_flagged() {
        let (c, s) = (
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
        );
        let header = |credits| Header {
            xid: 77,
            vers: 1,
            credits,
            body: Body::Msg(ChunkLists::default()),
        };
        let mut call = header(8).to_bytes();
        call.extend(wire::rpc::CallHeader::new(77, 100003, 3, 0).to_bytes());
        let mut reply = header(8).to_bytes();
        reply.extend(wire::rpc::ReplyHeader::success(77).to_bytes());
        let mut r = Reassembler::default();
        let mut feed = |frame: u32, src: IpAddr, dst: IpAddr, qp: u32, psn: u32, bytes: &[u8]| {
            let wire_bytes = packet(0x04, qp, psn, &[], bytes);
            let p = ib::decode(&wire_bytes).unwrap();
            r.packet(frame, Duration::ZERO, src, dst, &p);
        };
        // Call, Reply, the same Call again with a new PSN (live-connection retransmission), and
        // the server answering it again (a DRC replay).
        feed(1, c, s, 5, 10, &call);
        feed(2, s, c, 6, 20, &reply);
        feed(3, c, s, 5, 11, &call);
        feed(4, s, c, 6, 21, &reply);
        let t = build(&r.drain());
        let repeats: Vec<_> = t.messages().map(|(_, m)| m.repeat_of).collect();
        assert_eq!(repeats, [None, None, Some(1), Some(2)]);
        assert_eq!(
            text(&t, Style::Normalised),
            "c1 C RDMA_MSG x1 cr=8 NFS3 NULL call\n\
             c1 S RDMA_MSG x1 cr=8 NFS3 NULL reply NFS3_OK\n\
             c1 C RDMA_MSG x1 cr=8 NFS3 NULL call RETRANSMIT\n\
             c1 S RDMA_MSG x1 cr=8 NFS3 NULL reply NFS3_OK DUP_REPLY\n"
        );
    }
}
