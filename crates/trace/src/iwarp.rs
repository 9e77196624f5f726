//! iWARP (RDMA over TCP, as Linux siw speaks it) to the deliveries RoCE reassembly makes: TCP
//! streams ([`crate::tcp`]) framed by MPA ([`crate::mpa`]), DDP segments and RDMAP messages
//! ([`crate::ddp`]) put back together, and handed on as the same [`Delivery`] values: a Send's
//! payload, an RDMA Write (STag and TO as the RETH's rkey and va), an RDMA Read (the Read
//! Request's source STag/TO, the data of its Read Responses), the MPA exchange and the TCP
//! teardown as [`Delivery::Connection`], and the anomalies as [`TransportEvent`]s.
//!
//! A TCP connection whose client stream does not start with an MPA Request frame is not iWARP
//! and is ignored. One seen without its SYN is reported (on the NFS/RDMA port) and not decoded:
//! without markers an FPDU boundary cannot be found safely in the middle of a stream.
//!
//! Architecture Invariant: bounded in total. The stream bytes kept per direction are at most one
//! frame ([`IwarpLimits::max_ulpdu`] bounds an FPDU, 532 bytes a start frame); messages under
//! way are bounded each ([`IwarpLimits::max_send_bytes`], [`IwarpLimits::max_rdma_bytes`]) and
//! together ([`IwarpLimits::max_partial_bytes`]); outstanding Read Requests per direction by
//! [`IwarpLimits::max_outstanding_reads`]; TCP holds and connections by [`crate::tcp::TcpLimits`].

use std::collections::VecDeque;
use std::time::Duration;

use crate::ddp::{self, Placement, RdmapOpcode, ReadRequest};
use crate::ib::Reth;
use crate::model::Role;
use crate::mpa::{self, MpaError, StartKind};
// Defined beside the other decoding limits (`reassembly::Limits::iwarp`), so that the
// reassembly module does not depend on this one.
pub use crate::reassembly::IwarpLimits;
use crate::reassembly::{At, Delivery, FlowKey, RdmaData, TransportEvent};
use crate::tcp::{Conn, StreamEvent, Streams, TcpSegment};

/// The `dest_qp` of iWARP flows lies above IB's 24-bit QP numbers, so it never names a RoCE QP.
pub const QP_BASE: u32 = 0x0100_0000;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the MPA Request (client) or Reply (server).
    #[default]
    Start,
    /// FPDUs.
    Fpdus,
    /// Not decoded any further (not iWARP, or an error that loses the framing).
    Dead,
}

/// A message under way.
#[derive(Debug)]
struct Partial {
    first_frame: u32,
    /// Untagged: the MSN; tagged: the STag.
    id: u32,
    opcode: RdmapOpcode,
    /// Untagged: the ULP field (Invalidate STag); tagged: the first TO.
    start: u64,
    /// An untagged message's bytes.
    data: Vec<u8>,
    /// A tagged message's data: ranges of the capture where its FPDUs lie whole in the frame
    /// fed with its place ([`Decoder::captured_segment`]), else copied.
    rdma: RdmaData,
    /// What it counts against [`IwarpLimits::max_partial_bytes`].
    charged: usize,
    /// Bytes carried, stored or not.
    len: u64,
    truncated: bool,
}

/// One direction of an iWARP connection.
#[derive(Debug, Default)]
struct Side {
    phase: Phase,
    /// Stream bytes not yet framed (less than one frame).
    buf: Vec<u8>,
    buf_frame: u32,
    untagged: Option<Partial>,
    write: Option<Partial>,
    response: Option<Partial>,
    /// Read Requests this side sent, oldest first, with their frame.
    reads: VecDeque<(ReadRequest, u32)>,
    /// RFC 6581 peer-to-peer: the initiator's first, zero-length message is the RTR.
    skip_rtr: bool,
}

/// One TCP connection's iWARP state.
#[derive(Debug, Default)]
pub struct IwarpConn {
    serial: u32,
    /// The MPA Request was seen: this is iWARP.
    iwarp: bool,
    /// CRCs in use (the Reply's C bit), once the Reply is seen.
    crc: Option<bool>,
    sides: [Side; 2],
}

/// Decodes the iWARP connections of a capture. Sans-IO: feed TCP segments, drain deliveries.
#[derive(Debug)]
pub struct Decoder {
    limits: IwarpLimits,
    streams: Streams<IwarpConn>,
    serials: u32,
    partial_bytes: usize,
    out: Vec<Delivery>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(IwarpLimits::default())
    }
}

/// What handling one stream event needs besides the connection.
struct Ctx<'a> {
    limits: &'a IwarpLimits,
    partial_bytes: &'a mut usize,
    out: &'a mut Vec<Delivery>,
    at: At,
    serials: &'a mut u32,
    /// The segment's payload and its offset in the capture, when known.
    captured: Option<(&'a [u8], usize)>,
}

impl Decoder {
    pub fn new(limits: IwarpLimits) -> Self {
        Decoder {
            streams: Streams::new(limits.tcp.clone()),
            limits,
            serials: 0,
            partial_bytes: 0,
            out: Vec::new(),
        }
    }

    /// Bytes of messages under way now, over all connections.
    pub fn partial_bytes(&self) -> usize {
        self.partial_bytes
    }

    /// TCP connections tracked now.
    pub fn connections(&self) -> usize {
        self.streams.connections()
    }

    /// Take everything delivered so far.
    pub fn drain(&mut self) -> Vec<Delivery> {
        std::mem::take(&mut self.out)
    }

    /// Feed one TCP segment of frame `frame`.
    pub fn segment(&mut self, frame: u32, time: Duration, seg: &TcpSegment<'_>) {
        self.segment_from(frame, time, seg, None);
    }

    /// [`Decoder::segment`] for a segment whose payload is at `payload_at` in the capture bytes:
    /// RDMA Write and Read data in FPDUs lying whole in it is kept as ranges of those bytes (as
    /// the RoCE path keeps its packets'), not copied.
    pub fn captured_segment(
        &mut self,
        frame: u32,
        time: Duration,
        seg: &TcpSegment<'_>,
        payload_at: usize,
    ) {
        self.segment_from(frame, time, seg, Some(payload_at));
    }

    fn segment_from(
        &mut self,
        frame: u32,
        time: Duration,
        seg: &TcpSegment<'_>,
        payload_at: Option<usize>,
    ) {
        let at = At {
            frame,
            first_frame: frame,
            time,
        };
        let mut ctx = Ctx {
            limits: &self.limits,
            partial_bytes: &mut self.partial_bytes,
            out: &mut self.out,
            at,
            serials: &mut self.serials,
            captured: payload_at.map(|at| (seg.payload, at)),
        };
        self.streams.segment(seg, &mut |conn, d, event| {
            if event == StreamEvent::Midstream {
                ctx.midstream(seg);
            } else {
                ctx.stream(conn, d, event);
            }
        });
        for mut conn in std::mem::take(&mut self.streams.evicted) {
            if conn.user.iwarp {
                ctx.event(
                    &conn,
                    0,
                    TransportEvent::LimitReached {
                        what: "tcp connections (oldest evicted)",
                    },
                );
            }
            ctx.finish(&mut conn);
        }
    }

    /// End of the capture: holes are final, messages under way incomplete.
    pub fn finish(&mut self, frame: u32, time: Duration) {
        let at = At {
            frame,
            first_frame: frame,
            time,
        };
        let mut ctx = Ctx {
            limits: &self.limits,
            partial_bytes: &mut self.partial_bytes,
            out: &mut self.out,
            at,
            serials: &mut self.serials,
            captured: None,
        };
        let conns = self
            .streams
            .finish(&mut |conn, d, event| ctx.stream(conn, d, event));
        for mut conn in conns {
            ctx.finish(&mut conn);
        }
    }
}

fn role(d: usize) -> Role {
    if d == 0 {
        Role::Client
    } else {
        Role::Server
    }
}

/// The flow of side `d`'s messages.
fn flow(conn: &Conn<IwarpConn>, d: usize) -> Option<FlowKey> {
    let (c, s) = (conn.client?, conn.server?);
    let qp =
        |side: u32| QP_BASE | (conn.user.serial.wrapping_mul(2).wrapping_add(side) & 0x00ff_ffff);
    Some(if d == 0 {
        FlowKey {
            src: c.addr,
            dst: s.addr,
            dest_qp: qp(1),
        }
    } else {
        FlowKey {
            src: s.addr,
            dst: c.addr,
            dest_qp: qp(0),
        }
    })
}

fn partial_cost(p: &Option<Partial>) -> usize {
    p.as_ref().map_or(0, |p| p.charged)
}

/// What a piece of a tagged message costs beyond any bytes it copies (its bookkeeping), so that
/// messages of many tiny FPDUs are bounded too.
const PIECE_COST: usize = 32;

impl Ctx<'_> {
    fn event(&mut self, conn: &Conn<IwarpConn>, d: usize, event: TransportEvent) {
        self.out.push(Delivery::Event {
            at: self.at,
            flow: flow(conn, d),
            event,
        });
    }

    fn undecodable(&mut self, conn: &mut Conn<IwarpConn>, d: usize, error: String, kill: bool) {
        self.event(conn, d, TransportEvent::Undecodable { error });
        if kill {
            self.kill(conn, d);
        }
    }

    /// Stop decoding side `d` (its messages under way are dropped).
    fn kill(&mut self, conn: &mut Conn<IwarpConn>, d: usize) {
        let side = &mut conn.user.sides[d];
        side.phase = Phase::Dead;
        side.buf = Vec::new();
        let freed =
            partial_cost(&side.untagged) + partial_cost(&side.write) + partial_cost(&side.response);
        (side.untagged, side.write, side.response) = (None, None, None);
        *self.partial_bytes = self.partial_bytes.saturating_sub(freed);
    }

    fn connection(
        &mut self,
        conn: &Conn<IwarpConn>,
        d: usize,
        name: &'static str,
        detail: String,
        rpcrdma: bool,
    ) {
        let (Some(client), Some(server)) = (flow(conn, 0), flow(conn, 1)) else {
            return;
        };
        self.out.push(Delivery::Connection {
            at: self.at,
            client,
            server,
            from_client: role(d) == Role::Client,
            name,
            detail,
            port: conn.server.map_or(0, |s| s.port),
            rpcrdma,
        });
    }

    fn stream(&mut self, conn: &mut Conn<IwarpConn>, d: usize, event: StreamEvent<'_>) {
        match event {
            StreamEvent::Data(bytes) => self.data(conn, d, bytes),
            StreamEvent::Fin | StreamEvent::Rst => {
                if conn.user.iwarp {
                    let name = if event == StreamEvent::Fin {
                        "TCP_FIN"
                    } else {
                        "TCP_RST"
                    };
                    self.connection(conn, d, name, String::new(), false);
                }
            }
            StreamEvent::Retransmission { seq, len } => {
                if conn.user.iwarp {
                    self.event(conn, d, TransportEvent::TcpRetransmission { seq, len });
                }
            }
            StreamEvent::OutOfOrder { expected, seq } => {
                if conn.user.iwarp {
                    self.event(conn, d, TransportEvent::TcpOutOfOrder { expected, seq });
                }
            }
            StreamEvent::OutOfWindow { expected, seq } => {
                if conn.user.iwarp {
                    self.event(conn, d, TransportEvent::TcpOutOfWindow { expected, seq });
                }
            }
            StreamEvent::Lost { expected, got } => {
                if conn.user.iwarp && conn.user.sides[d].phase != Phase::Dead {
                    self.event(conn, d, TransportEvent::TcpLost { expected, got });
                    self.kill(conn, d);
                }
            }
            // Reported by `Decoder::segment`, which has the ports.
            StreamEvent::Midstream => {}
        }
    }

    /// A connection first seen without its SYN: reported when on the NFS/RDMA port (other TCP
    /// traffic is not assumed to be iWARP), never decoded.
    fn midstream(&mut self, seg: &TcpSegment<'_>) {
        let port = crate::link::NFS_RDMA_PORT;
        if seg.src.port != port && seg.dst.port != port {
            return;
        }
        self.out.push(Delivery::Event {
            at: self.at,
            flow: None,
            event: TransportEvent::Undecodable {
                error: format!(
                    "TCP connection on port {port} without its SYN (the capture started \
                     mid-connection): not decoded, an FPDU cannot be found safely without MPA \
                     markers (RFC 5044 §4.3)"
                ),
            },
        });
    }

    fn data(&mut self, conn: &mut Conn<IwarpConn>, d: usize, bytes: &[u8]) {
        let side = &mut conn.user.sides[d];
        if side.phase == Phase::Dead {
            return;
        }
        let mut buf = std::mem::take(&mut side.buf);
        *self.partial_bytes = self.partial_bytes.saturating_sub(buf.len());
        let from_buf = !buf.is_empty();
        let head_frame = if from_buf {
            side.buf_frame
        } else {
            self.at.frame
        };
        let input: &[u8] = if from_buf {
            buf.extend_from_slice(bytes);
            &buf
        } else {
            bytes
        };
        let used = self.frames(conn, d, input, head_frame);
        let side = &mut conn.user.sides[d];
        if side.phase == Phase::Dead {
            return;
        }
        let rest = input.get(used..).unwrap_or_default();
        if !rest.is_empty() {
            side.buf_frame = if from_buf && used < buf.len() - bytes.len() {
                side.buf_frame
            } else {
                self.at.frame
            };
            self.keep(conn, d, rest.to_vec());
        }
    }

    /// Keep the bytes of side `d`'s next frame (less than a frame) until the rest comes: within
    /// the total for bytes under way, else the side is not decoded further.
    fn keep(&mut self, conn: &mut Conn<IwarpConn>, d: usize, rest: Vec<u8>) {
        if self.partial_bytes.saturating_add(rest.len()) > self.limits.max_partial_bytes {
            self.event(
                conn,
                d,
                TransportEvent::LimitReached {
                    what: "iwarp bytes under way",
                },
            );
            self.kill(conn, d);
            return;
        }
        *self.partial_bytes += rest.len();
        conn.user.sides[d].buf = rest;
    }

    /// Parse the frames at the head of `input`; returns the bytes used.
    fn frames(
        &mut self,
        conn: &mut Conn<IwarpConn>,
        d: usize,
        input: &[u8],
        head_frame: u32,
    ) -> usize {
        let mut used = 0;
        let mut first_frame = head_frame;
        loop {
            let rest = &input[used..];
            if rest.is_empty() {
                return used;
            }
            match conn.user.sides[d].phase {
                Phase::Dead => return used,
                Phase::Start => {
                    let kind = if d == 0 {
                        StartKind::Request
                    } else {
                        StartKind::Reply
                    };
                    if d == 1 && !conn.user.iwarp {
                        // The client's Request is not there yet (its segment held, or the
                        // server spoke first): wait for it, a start frame at most.
                        if conn.user.sides[0].phase == Phase::Dead
                            || rest.len() > mpa::START_HEADER_LEN + mpa::MAX_PRIVATE_DATA
                        {
                            self.kill(conn, 1);
                        }
                        return used;
                    }
                    match mpa::parse_start(kind, rest) {
                        Ok(None) => return used,
                        Ok(Some((frame, n))) => {
                            used += n;
                            self.start_frame(conn, d, &frame);
                        }
                        Err(e) => {
                            if conn.user.iwarp {
                                self.undecodable(conn, d, e.to_string(), true);
                            } else {
                                // Not iWARP: ignored, both ways.
                                self.kill(conn, 0);
                                self.kill(conn, 1);
                            }
                            return used;
                        }
                    }
                }
                Phase::Fpdus => {
                    // The client's FPDUs wait for the Reply's C bit (RFC 5044 §7.1.2: the
                    // initiator sends none before the Reply).
                    let Some(crc) = conn.user.crc else {
                        if rest.len() > self.limits.max_ulpdu + 8 {
                            self.undecodable(
                                conn,
                                d,
                                "MPA: FPDUs before the MPA Reply (RFC 5044 §7.1.2)".into(),
                                true,
                            );
                        }
                        return used;
                    };
                    match mpa::parse_fpdu(rest, crc, self.limits.max_ulpdu) {
                        Ok(None) => return used,
                        Ok(Some(f)) => {
                            used += f.len;
                            let at = At {
                                first_frame: first_frame.min(self.at.frame),
                                ..self.at
                            };
                            first_frame = self.at.frame;
                            if f.crc_ok == Some(false) {
                                self.event(
                                    conn,
                                    d,
                                    TransportEvent::BadMpaCrc {
                                        ulpdu_len: f.ulpdu.len() as u32,
                                    },
                                );
                                continue;
                            }
                            match ddp::parse(f.ulpdu) {
                                Ok(seg) => self.segment(conn, d, seg, at),
                                Err(e) => self.undecodable(conn, d, e.to_string(), false),
                            }
                        }
                        Err(e) => {
                            self.undecodable(conn, d, e.to_string(), true);
                            return used;
                        }
                    }
                }
            }
        }
    }
}

/// MPA start frames (the connection's parameters: RFC 5044, RFC 6581), and the bytes of
/// messages under way: charged against the total over every connection, released, given up.
impl Ctx<'_> {
    fn start_frame(&mut self, conn: &mut Conn<IwarpConn>, d: usize, frame: &mpa::StartFrame<'_>) {
        let port = conn.server.map_or(0, |s| s.port);
        let rfc8797 = wire::private_data::PrivateData::decode(frame.private_data).ok();
        let mut detail = String::new();
        if d == 0 {
            detail = format!("port={port}");
        }
        if frame.crc {
            detail.push_str(" crc");
        }
        if let Some(p) = &rfc8797 {
            detail.push_str(&format!(
                " rfc8797(send={} recv={} inv={})",
                p.send_size(),
                p.recv_size(),
                p.send_with_invalidate()
            ));
        }
        let detail = detail.trim_start().to_string();
        let p2p = frame.ird_ord.is_some_and(|f| f.peer_to_peer);
        if d == 0 {
            *self.serials = self.serials.wrapping_add(1);
            conn.user.serial = *self.serials;
            conn.user.iwarp = true;
            conn.user.sides[0].phase = Phase::Fpdus;
            conn.user.sides[0].skip_rtr = p2p;
            let rpcrdma = rfc8797.is_some() || port == crate::link::NFS_RDMA_PORT;
            self.connection(conn, 0, "MPA_REQ", detail, rpcrdma);
            self.resume(conn, 1);
            if frame.markers {
                // The initiator asks to receive markers: the server's stream has them.
                self.undecodable(conn, 1, MpaError::MarkersUnsupported.to_string(), true);
            }
            return;
        }
        if frame.reject {
            self.connection(conn, 1, "MPA_REJ", detail, false);
            self.kill(conn, 0);
            self.kill(conn, 1);
            return;
        }
        self.connection(conn, 1, "MPA_REP", detail, false);
        conn.user.crc = Some(frame.crc);
        conn.user.sides[1].phase = Phase::Fpdus;
        if !p2p {
            conn.user.sides[0].skip_rtr = false;
        }
        if frame.markers {
            self.undecodable(conn, 0, MpaError::MarkersUnsupported.to_string(), true);
        }
        // The client's FPDUs that waited for the Reply.
        self.resume(conn, 0);
    }

    /// Parse what side `d` kept while it waited for the other side's start frame.
    fn resume(&mut self, conn: &mut Conn<IwarpConn>, d: usize) {
        if conn.user.sides[d].phase == Phase::Dead || conn.user.sides[d].buf.is_empty() {
            return;
        }
        let frame = conn.user.sides[d].buf_frame;
        let buf = std::mem::take(&mut conn.user.sides[d].buf);
        *self.partial_bytes = self.partial_bytes.saturating_sub(buf.len());
        let used = self.frames(conn, d, &buf, frame);
        let rest = buf.get(used..).unwrap_or_default();
        if conn.user.sides[d].phase != Phase::Dead && !rest.is_empty() {
            self.keep(conn, d, rest.to_vec());
        }
    }

    /// Where `part` lies in the capture, if inside the segment fed with its place (addresses
    /// compared, as `session` does for RoCE payloads; bytes held or buffered are elsewhere).
    fn capture_at(&self, part: &[u8]) -> Option<usize> {
        let (payload, base) = self.captured?;
        let start = (part.as_ptr() as usize).checked_sub(payload.as_ptr() as usize)?;
        (start.checked_add(part.len())? <= payload.len()).then_some(base.checked_add(start)?)
    }

    /// Take `bytes` into a message under way (`tagged`: into its RDMA data), within its own
    /// bound and the total one.
    fn append(&mut self, p: &mut Partial, bytes: &[u8], max: usize, tagged: bool) -> bool {
        p.len = p.len.saturating_add(bytes.len() as u64);
        let stored = if tagged { p.rdma.len() } else { p.data.len() };
        let room = max.saturating_sub(stored).min(bytes.len());
        if room < bytes.len() {
            p.truncated = true;
        }
        let bytes = &bytes[..room];
        let at = if tagged { self.capture_at(bytes) } else { None };
        let cost = match (tagged, at) {
            _ if bytes.is_empty() => 0,
            (true, Some(_)) => PIECE_COST,
            (true, None) => PIECE_COST + bytes.len(),
            (false, _) => bytes.len(),
        };
        if self.partial_bytes.saturating_add(cost) > self.limits.max_partial_bytes {
            return false;
        }
        if tagged {
            p.rdma.push(bytes, at);
        } else {
            p.data.extend_from_slice(bytes);
        }
        p.charged += cost;
        *self.partial_bytes += cost;
        true
    }

    /// [`Self::append`], or, when the bytes under way over every connection are at their
    /// limit, the message given up (its charge released) with a `LimitReached` event.
    fn append_or_give_up(
        &mut self,
        conn: &Conn<IwarpConn>,
        d: usize,
        p: &mut Partial,
        bytes: &[u8],
        max: usize,
        tagged: bool,
    ) -> bool {
        if self.append(p, bytes, max, tagged) {
            return true;
        }
        self.release(p);
        self.event(
            conn,
            d,
            TransportEvent::LimitReached {
                what: "iwarp message bytes under way",
            },
        );
        false
    }

    fn release(&mut self, p: &Partial) {
        *self.partial_bytes = self.partial_bytes.saturating_sub(p.charged);
    }

    fn incomplete(&mut self, conn: &Conn<IwarpConn>, d: usize, p: Partial, what: &'static str) {
        self.release(&p);
        self.event(conn, d, TransportEvent::Incomplete { what, psn: p.id });
    }
}

/// DDP segments into RDMAP messages: untagged (Send) by MSN and MO, tagged (RDMA Write, Read
/// Response) by STag and TO, each handed on as the [`Delivery`] RoCE's reassembly produces.
impl Ctx<'_> {
    fn segment(&mut self, conn: &mut Conn<IwarpConn>, d: usize, seg: ddp::Segment<'_>, at: At) {
        match seg.placement {
            Placement::Untagged {
                ulp,
                qn: _,
                msn,
                mo,
            } => match seg.opcode {
                RdmapOpcode::ReadRequest => {
                    let rr = match ReadRequest::parse(seg.payload) {
                        Ok(rr) => rr,
                        Err(e) => return self.undecodable(conn, d, e.to_string(), false),
                    };
                    let side = &mut conn.user.sides[d];
                    side.skip_rtr = false;
                    if side.reads.len() >= self.limits.max_outstanding_reads.max(1) {
                        side.reads.pop_front();
                        self.event(
                            conn,
                            d,
                            TransportEvent::LimitReached {
                                what: "outstanding rdma reads",
                            },
                        );
                    }
                    conn.user.sides[d].reads.push_back((rr, at.frame));
                }
                RdmapOpcode::Terminate => match ddp::Terminate::parse(seg.payload) {
                    Ok(t) => self.event(
                        conn,
                        d,
                        TransportEvent::Terminate {
                            layer: t.layer,
                            error_type: t.error_type,
                            error_code: t.error_code,
                        },
                    ),
                    Err(e) => self.undecodable(conn, d, e.to_string(), false),
                },
                _ => self.send_segment(conn, d, seg, ulp, msn, mo, at),
            },
            Placement::Tagged { stag, to } => self.tagged_segment(conn, d, seg, stag, to, at),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn send_segment(
        &mut self,
        conn: &mut Conn<IwarpConn>,
        d: usize,
        seg: ddp::Segment<'_>,
        ulp: u32,
        msn: u32,
        mo: u32,
        at: At,
    ) {
        let mut partial = conn.user.sides[d].untagged.take();
        if let Some(p) = partial.take_if(|p| p.id != msn || p.len != u64::from(mo)) {
            self.incomplete(conn, d, p, "send");
        }
        let mut p = match partial {
            Some(p) => p,
            None if mo != 0 => {
                self.event(
                    conn,
                    d,
                    TransportEvent::Orphan {
                        psn: msn,
                        opcode: seg.opcode.name(),
                    },
                );
                return;
            }
            None => Partial {
                first_frame: at.first_frame,
                id: msn,
                opcode: seg.opcode,
                start: u64::from(ulp),
                data: Vec::new(),
                rdma: RdmaData::default(),
                charged: 0,
                len: 0,
                truncated: false,
            },
        };
        let max = self.limits.max_send_bytes;
        if !self.append_or_give_up(conn, d, &mut p, seg.payload, max, false) {
            return;
        }
        if !seg.last {
            conn.user.sides[d].untagged = Some(p);
            return;
        }
        self.release(&p);
        let side = &mut conn.user.sides[d];
        if std::mem::take(&mut side.skip_rtr) && p.len == 0 {
            // RFC 6581's zero-length ready-to-receive message: not the ULP's.
            return;
        }
        let Some(flow) = flow(conn, d) else { return };
        if p.truncated {
            self.event(
                conn,
                d,
                TransportEvent::Overlong {
                    what: "send",
                    declared: p.len,
                },
            );
        }
        let invalidate = matches!(
            p.opcode,
            RdmapOpcode::SendInvalidate | RdmapOpcode::SendSeInvalidate
        );
        self.out.push(Delivery::Send {
            at: At {
                first_frame: p.first_frame,
                ..at
            },
            flow,
            payload: p.data,
            immediate: None,
            invalidate_rkey: invalidate.then_some(p.start as u32),
        });
    }

    fn tagged_segment(
        &mut self,
        conn: &mut Conn<IwarpConn>,
        d: usize,
        seg: ddp::Segment<'_>,
        stag: u32,
        to: u64,
        at: At,
    ) {
        let write = seg.opcode == RdmapOpcode::Write;
        if std::mem::take(&mut conn.user.sides[d].skip_rtr)
            && write
            && seg.last
            && seg.payload.is_empty()
        {
            // RFC 6581's zero-length RDMA Write as the ready-to-receive message.
            return;
        }
        fn slot(side: &mut Side, write: bool) -> &mut Option<Partial> {
            if write {
                &mut side.write
            } else {
                &mut side.response
            }
        }
        let mut partial = slot(&mut conn.user.sides[d], write).take();
        if let Some(p) = partial.take_if(|p| p.id != stag || p.start.wrapping_add(p.len) != to) {
            let what = if write { "rdma_write" } else { "rdma_read" };
            self.incomplete(conn, d, p, what);
        }
        let mut p = partial.unwrap_or(Partial {
            first_frame: at.first_frame,
            id: stag,
            opcode: seg.opcode,
            start: to,
            data: Vec::new(),
            rdma: RdmaData::default(),
            charged: 0,
            len: 0,
            truncated: false,
        });
        if !write && p.len == 0 {
            // A Read Response answers the oldest Read Request the peer sent (RFC 5040 §5.2.1:
            // responses come in request order), into its sink buffer.
            let matched = conn.user.sides[1 - d]
                .reads
                .front()
                .is_some_and(|(rr, _)| rr.sink_stag == stag && rr.sink_to == to);
            if !matched {
                self.event(
                    conn,
                    d,
                    TransportEvent::UnmatchedResponse {
                        psn: stag,
                        opcode: seg.opcode.name(),
                    },
                );
                return;
            }
        }
        let max = self.limits.max_rdma_bytes;
        if !self.append_or_give_up(conn, d, &mut p, seg.payload, max, true) {
            return;
        }
        if !seg.last {
            *slot(&mut conn.user.sides[d], write) = Some(p);
            return;
        }
        self.release(&p);
        let what = if write { "rdma_write" } else { "rdma_read" };
        if p.truncated {
            self.event(
                conn,
                d,
                TransportEvent::Overlong {
                    what,
                    declared: p.len,
                },
            );
        }
        if write {
            let Some(flow) = flow(conn, d) else { return };
            self.out.push(Delivery::Write {
                at: At {
                    first_frame: p.first_frame,
                    ..at
                },
                flow,
                reth: Reth {
                    va: p.start,
                    rkey: stag,
                    dma_length: p.len.min(u64::from(u32::MAX)) as u32,
                },
                data: p.rdma,
                immediate: None,
            });
            return;
        }
        let Some((rr, request_frame)) = conn.user.sides[1 - d].reads.pop_front() else {
            return;
        };
        let Some(flow) = flow(conn, 1 - d) else {
            return;
        };
        self.out.push(Delivery::Read {
            at: At {
                first_frame: request_frame,
                ..at
            },
            flow,
            reth: Reth {
                va: rr.source_to,
                rkey: rr.source_stag,
                dma_length: rr.size,
            },
            data: p.rdma,
        });
    }

    /// A connection leaving the decoder: what is under way is incomplete.
    fn finish(&mut self, conn: &mut Conn<IwarpConn>) {
        if !conn.user.iwarp {
            for d in 0..2 {
                self.kill(conn, d);
            }
            return;
        }
        for d in 0..2 {
            let side = &mut conn.user.sides[d];
            let cut = std::mem::take(&mut side.buf);
            *self.partial_bytes = self.partial_bytes.saturating_sub(cut.len());
            if side.phase == Phase::Fpdus && !cut.is_empty() {
                // The stream ends inside an FPDU (or the capture does).
                self.event(
                    conn,
                    d,
                    TransportEvent::Incomplete {
                        what: "mpa_fpdu",
                        psn: cut.len() as u32,
                    },
                );
            }
            let side = &mut conn.user.sides[d];
            let parts = [
                (side.untagged.take(), "send"),
                (side.write.take(), "rdma_write"),
                (side.response.take(), "rdma_read"),
            ];
            let reads = std::mem::take(&mut side.reads);
            for (p, what) in parts {
                if let Some(p) = p {
                    self.incomplete(conn, d, p, what);
                }
            }
            for (rr, _) in reads {
                self.event(
                    conn,
                    d,
                    TransportEvent::Incomplete {
                        what: "rdma_read",
                        psn: rr.sink_stag,
                    },
                );
            }
        }
    }
}
