//! Per-QP reassembly of Reliable Connected traffic (IBTA Vol 1 §9.7): multi-packet SENDs, RDMA
//! WRITEs and RDMA READ responses are put back together by PSN, and duplicates, gaps, NAKs and
//! orphans are reported as [`TransportEvent`]s instead of failing the trace.
//!
//! A *flow* is one direction of one QP pair, keyed by source and destination address and the
//! destination QP number (the BTH names only the destination QP). Requests (SEND, WRITE, READ
//! request) travel on the requester's flow; READ responses and ACKs come back on the reverse flow
//! and are matched to the outstanding READ by PSN.
//!
//! Architecture Invariant: every buffer here is bounded by [`Limits`]; a length declared in a RETH
//! is never used to size an allocation, only to cap it; the number of flows and outstanding READs
//! is bounded, the oldest being dropped (and reported) first.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::Duration;

use crate::cm::CmMessage;
use crate::ib::{self, AckSyndrome, IbPacket, Opcode, Reth};

/// Most gap ranges remembered per flow (older ones are forgotten first).
const MAX_MISSING_RANGES: usize = 64;

/// Bounds on what reassembly keeps in memory.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest reassembled SEND (RPC-over-RDMA inline messages are at most 64 KiB in practice).
    pub max_send_bytes: usize,
    /// Largest RDMA WRITE or READ kept (bytes beyond are counted, not stored).
    pub max_rdma_bytes: usize,
    /// Most outstanding RDMA READ requests per flow.
    pub max_outstanding_reads: usize,
    /// Most flows tracked at once.
    pub max_flows: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_send_bytes: 1 << 20,
            max_rdma_bytes: 16 << 20,
            max_outstanding_reads: 1024,
            max_flows: 4096,
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

/// What the InfiniBand transport delivered, in capture order.
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
        data: Vec<u8>,
        immediate: Option<u32>,
    },
    /// A complete RDMA READ: the requester (on `flow`) pulled `data` from the peer at `reth`.
    Read {
        at: At,
        flow: FlowKey,
        reth: Reth,
        data: Vec<u8>,
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
}

impl Delivery {
    /// Where this delivery happened.
    pub fn at(&self) -> At {
        match self {
            Delivery::Send { at, .. }
            | Delivery::Write { at, .. }
            | Delivery::Read { at, .. }
            | Delivery::Cm { at, .. }
            | Delivery::Event { at, .. } => *at,
        }
    }
}

/// Transport-level anomalies and notices.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TransportEvent {
    /// A request PSN already seen: a retransmission (or a duplicate in the capture).
    Duplicate { psn: u32, opcode: &'static str },
    /// PSNs skipped: packets lost or not captured.
    Gap { expected: u32, got: u32 },
    /// A NAK or RNR NAK from the responder.
    Nak { psn: u32, syndrome: String },
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
    /// Tracking state was dropped to stay within limits.
    LimitReached { what: &'static str },
}

#[derive(Debug)]
struct Partial {
    first_frame: u32,
    /// Next PSN expected for this operation.
    next_psn: u32,
    reth: Option<Reth>,
    data: Vec<u8>,
    truncated: bool,
}

#[derive(Debug)]
struct OutstandingRead {
    frame: u32,
    psn: u32,
    reth: Reth,
    /// Next response PSN expected; responses at other PSNs are duplicates or gaps.
    next_psn: u32,
    first_response_frame: Option<u32>,
    data: Vec<u8>,
    truncated: bool,
}

#[derive(Debug, Default)]
struct FlowState {
    /// PSN ranges `[start, end)` skipped by gaps, oldest first (bounded).
    missing: VecDeque<(u32, u32)>,
    /// PSN of the next new request; `None` until the first request or after an unsized READ.
    expected_psn: Option<u32>,
    send: Option<Partial>,
    write: Option<Partial>,
    reads: VecDeque<OutstandingRead>,
    last_frame: u32,
}

/// Reassembles RC traffic packet by packet. Sans-IO: feed packets, drain deliveries.
#[derive(Debug, Default)]
pub struct Reassembler {
    limits: Limits,
    flows: HashMap<FlowKey, FlowState>,
    /// Path MTU per (unordered) address pair, from CM or from observed full-size packets.
    path_mtu: HashMap<(IpAddr, IpAddr), u32>,
    out: Vec<Delivery>,
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

    /// Take everything delivered so far.
    pub fn drain(&mut self) -> Vec<Delivery> {
        std::mem::take(&mut self.out)
    }

    /// Report operations still incomplete at the end of the capture.
    pub fn finish(&mut self, frame: u32, time: Duration) {
        let mut flows: Vec<_> = self.flows.iter_mut().collect();
        flows.sort_by_key(|(k, _)| **k);
        for (key, state) in flows {
            let at = At {
                frame,
                first_frame: frame,
                time,
            };
            if let Some(p) = state.send.take() {
                self.out.push(Delivery::Event {
                    at,
                    flow: Some(*key),
                    event: TransportEvent::Incomplete {
                        what: "send",
                        psn: p.next_psn,
                    },
                });
            }
            if let Some(p) = state.write.take() {
                self.out.push(Delivery::Event {
                    at,
                    flow: Some(*key),
                    event: TransportEvent::Incomplete {
                        what: "rdma_write",
                        psn: p.next_psn,
                    },
                });
            }
            for r in state.reads.drain(..) {
                self.out.push(Delivery::Event {
                    at,
                    flow: Some(*key),
                    event: TransportEvent::Incomplete {
                        what: "rdma_read",
                        psn: r.psn,
                    },
                });
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
            self.request(at, key, p);
        } else {
            self.response(at, key, p);
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

    fn flow(&mut self, key: FlowKey, at: At) -> Option<&mut FlowState> {
        if !self.flows.contains_key(&key) && self.flows.len() >= self.limits.max_flows {
            // Evict the least recently active flow to stay bounded.
            let oldest = self
                .flows
                .iter()
                .min_by_key(|(k, s)| (s.last_frame, **k))
                .map(|(k, _)| *k)?;
            self.flows.remove(&oldest);
            self.event(
                at,
                Some(oldest),
                TransportEvent::LimitReached { what: "flows" },
            );
        }
        let state = self.flows.entry(key).or_default();
        state.last_frame = at.frame;
        Some(state)
    }

    fn request(&mut self, at: At, key: FlowKey, p: &IbPacket) {
        let mtu = self.path_mtu.get(&pair(key.src, key.dst)).copied();
        let limits = self.limits.clone();
        let mut events = Vec::new();
        let mut deliveries = Vec::new();
        let Some(state) = self.flow(key, at) else {
            return;
        };
        // IBTA Vol 1 §9.7.5.1: a responder executes each PSN once; a request PSN below the
        // expected one is a duplicate, above it a sequence error. PSNs skipped by a gap are
        // remembered: a packet that later fills one (the requester going back after a NAK, or
        // a reordered capture) is processed, not dropped as a duplicate.
        let mut resume_expected = None;
        if let Some(expected) = state.expected_psn {
            let distance = ib::psn_distance(p.psn, expected);
            if distance < 0 {
                let fills = state.missing.iter().position(|&(start, end)| {
                    ib::psn_distance(p.psn, start) >= 0 && ib::psn_distance(end, p.psn) > 0
                });
                let Some(hole) = fills else {
                    events.push(TransportEvent::Duplicate {
                        psn: p.psn,
                        opcode: p.opcode.name(),
                    });
                    return self.flush(at, key, events, deliveries);
                };
                events.push(TransportEvent::LateFill {
                    psn: p.psn,
                    opcode: p.opcode.name(),
                });
                let (start, end) = state.missing[hole];
                state.missing.remove(hole);
                if start != p.psn {
                    state.missing.push_back((start, p.psn));
                }
                let after = ib::psn_add(p.psn, 1);
                if after != end {
                    state.missing.push_back((after, end));
                }
                resume_expected = Some(expected);
            } else if distance > 0 {
                events.push(TransportEvent::Gap {
                    expected,
                    got: p.psn,
                });
                if state.missing.len() >= MAX_MISSING_RANGES {
                    state.missing.pop_front();
                }
                state.missing.push_back((expected, p.psn));
                if let Some(s) = state.send.take() {
                    events.push(TransportEvent::Incomplete {
                        what: "send",
                        psn: s.next_psn,
                    });
                }
                if let Some(w) = state.write.take() {
                    events.push(TransportEvent::Incomplete {
                        what: "rdma_write",
                        psn: w.next_psn,
                    });
                }
            }
        }
        state.expected_psn = Some(ib::psn_add(p.psn, 1));
        use Opcode::*;
        match p.opcode {
            SendFirst | SendMiddle | SendLast | SendLastImm | SendLastInvalidate | SendOnly
            | SendOnlyImm | SendOnlyInvalidate => {
                let starts = matches!(
                    p.opcode,
                    SendFirst | SendOnly | SendOnlyImm | SendOnlyInvalidate
                );
                let ends = !matches!(p.opcode, SendFirst | SendMiddle);
                if starts {
                    if let Some(old) = state.send.take() {
                        events.push(TransportEvent::Incomplete {
                            what: "send",
                            psn: old.next_psn,
                        });
                    }
                    state.send = Some(Partial {
                        first_frame: at.frame,
                        next_psn: p.psn,
                        reth: None,
                        data: Vec::new(),
                        truncated: false,
                    });
                }
                let Some(partial) = state.send.as_mut() else {
                    events.push(TransportEvent::Orphan {
                        psn: p.psn,
                        opcode: p.opcode.name(),
                    });
                    return self.flush(at, key, events, deliveries);
                };
                append_bounded(partial, p.payload, limits.max_send_bytes);
                partial.next_psn = ib::psn_add(p.psn, 1);
                if ends {
                    if let Some(done) = state.send.take() {
                        if done.truncated {
                            events.push(TransportEvent::Overlong {
                                what: "send",
                                declared: limits.max_send_bytes as u64,
                            });
                        }
                        deliveries.push(Delivery::Send {
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
            }
            WriteFirst | WriteMiddle | WriteLast | WriteLastImm | WriteOnly | WriteOnlyImm => {
                if let Some(reth) = p.reth {
                    if let Some(old) = state.write.take() {
                        events.push(TransportEvent::Incomplete {
                            what: "rdma_write",
                            psn: old.next_psn,
                        });
                    }
                    state.write = Some(Partial {
                        first_frame: at.frame,
                        next_psn: p.psn,
                        reth: Some(reth),
                        data: Vec::new(),
                        truncated: false,
                    });
                }
                let Some(partial) = state.write.as_mut() else {
                    events.push(TransportEvent::Orphan {
                        psn: p.psn,
                        opcode: p.opcode.name(),
                    });
                    return self.flush(at, key, events, deliveries);
                };
                let cap = partial
                    .reth
                    .map(|r| r.dma_length as usize)
                    .unwrap_or(0)
                    .min(limits.max_rdma_bytes);
                append_bounded(partial, p.payload, cap);
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
                            events.push(TransportEvent::Overlong {
                                what: "rdma_write",
                                declared: u64::from(reth.dma_length),
                            });
                        }
                        deliveries.push(Delivery::Write {
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
            }
            ReadRequest => {
                if let Some(reth) = p.reth {
                    // A READ request consumes one PSN per response packet (IBTA Vol 1 §9.7.6.1).
                    state.expected_psn = match mtu {
                        Some(mtu) => {
                            let packets =
                                u64::from(reth.dma_length).div_ceil(u64::from(mtu)).max(1);
                            Some(ib::psn_add(p.psn, (packets & 0xff_ffff) as u32))
                        }
                        None => None,
                    };
                    if state.reads.len() >= limits.max_outstanding_reads {
                        if let Some(old) = state.reads.pop_front() {
                            events.push(TransportEvent::Incomplete {
                                what: "rdma_read",
                                psn: old.psn,
                            });
                        }
                    }
                    state.reads.push_back(OutstandingRead {
                        frame: at.frame,
                        psn: p.psn,
                        reth,
                        next_psn: p.psn,
                        first_response_frame: None,
                        data: Vec::new(),
                        truncated: false,
                    });
                }
            }
            // Atomics carry no data we reassemble; responses are not requests.
            _ => {}
        }
        if let Some(expected) = resume_expected {
            // A late fill does not move the sequence: new requests continue after the newest.
            state.expected_psn = Some(expected);
        }
        self.flush(at, key, events, deliveries);
    }

    fn flush(
        &mut self,
        at: At,
        key: FlowKey,
        events: Vec<TransportEvent>,
        deliveries: Vec<Delivery>,
    ) {
        for e in events {
            self.event(at, Some(key), e);
        }
        self.out.extend(deliveries);
    }

    fn response(&mut self, at: At, key: FlowKey, p: &IbPacket) {
        if let Some(aeth) = p.aeth {
            if !matches!(aeth.syndrome, AckSyndrome::Ack { .. }) {
                self.event(
                    at,
                    Some(key),
                    TransportEvent::Nak {
                        psn: p.psn,
                        syndrome: aeth.syndrome.describe(),
                    },
                );
                return;
            }
        }
        use Opcode::*;
        if !matches!(
            p.opcode,
            ReadResponseFirst | ReadResponseMiddle | ReadResponseLast | ReadResponseOnly
        ) {
            return;
        }
        // The request went the other way, to a QP we may not know: search the flows from the
        // responder's peer to the responder for the READ whose PSN range holds this PSN.
        let max_rdma = self.limits.max_rdma_bytes;
        let mut found: Option<(FlowKey, usize)> = None;
        for (flow, state) in self.flows.iter() {
            if flow.src != key.dst || flow.dst != key.src {
                continue;
            }
            for (i, r) in state.reads.iter().enumerate() {
                let span = ib::psn_distance(p.psn, r.psn);
                let last = ib::psn_distance(r.next_psn, r.psn);
                if span >= 0 && span <= last.max(0) + 1 {
                    found = Some((*flow, i));
                    break;
                }
            }
            if found.is_some() {
                break;
            }
        }
        let Some((req_flow, index)) = found else {
            self.event(
                at,
                Some(key),
                TransportEvent::UnmatchedResponse {
                    psn: p.psn,
                    opcode: p.opcode.name(),
                },
            );
            return;
        };
        let mut events = Vec::new();
        let mut delivery = None;
        if let Some(state) = self.flows.get_mut(&req_flow) {
            if let Some(read) = state.reads.get_mut(index) {
                let d = ib::psn_distance(p.psn, read.next_psn);
                if d < 0 {
                    events.push(TransportEvent::Duplicate {
                        psn: p.psn,
                        opcode: p.opcode.name(),
                    });
                } else {
                    if d > 0 {
                        events.push(TransportEvent::Gap {
                            expected: read.next_psn,
                            got: p.psn,
                        });
                        read.truncated = true;
                    }
                    if read.first_response_frame.is_none() {
                        read.first_response_frame = Some(at.frame);
                    }
                    let cap = (read.reth.dma_length as usize).min(max_rdma);
                    let room = cap.saturating_sub(read.data.len());
                    if p.payload.len() > room {
                        read.truncated = true;
                    }
                    read.data
                        .extend_from_slice(&p.payload[..p.payload.len().min(room)]);
                    read.next_psn = ib::psn_add(p.psn, 1);
                    if matches!(p.opcode, ReadResponseLast | ReadResponseOnly) {
                        if let Some(done) = state.reads.remove(index) {
                            if done.truncated {
                                events.push(TransportEvent::Incomplete {
                                    what: "rdma_read",
                                    psn: done.psn,
                                });
                            }
                            delivery = Some(Delivery::Read {
                                at: At {
                                    frame: at.frame,
                                    first_frame: done.frame,
                                    time: at.time,
                                },
                                flow: req_flow,
                                reth: done.reth,
                                data: done.data,
                            });
                        }
                    }
                }
            }
        }
        for e in events {
            self.event(at, Some(req_flow), e);
        }
        self.out.extend(delivery);
    }
}

/// Append at most `cap - data.len()` bytes; mark truncation instead of growing past the cap.
fn append_bounded(partial: &mut Partial, payload: &[u8], cap: usize) {
    let room = cap.saturating_sub(partial.data.len());
    if payload.len() > room {
        partial.truncated = true;
    }
    partial
        .data
        .extend_from_slice(&payload[..payload.len().min(room)]);
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
    fn gap_interrupts_send_and_is_reported() {
        let mut r = Reassembler::default();
        feed(&mut r, 1, C, S, &packet(0x00, 5, 10, &[], &[1; 256]));
        feed(&mut r, 2, C, S, &packet(0x04, 5, 12, &[], &[9; 8]));
        let out = r.drain();
        let kinds: Vec<_> = out
            .iter()
            .map(|d| match d {
                Delivery::Event { event, .. } => format!("{event:?}"),
                Delivery::Send { payload, .. } => format!("send {}", payload.len()),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "Gap { expected: 11, got: 12 }",
                "Incomplete { what: \"send\", psn: 11 }",
                "send 8"
            ]
        );
    }

    #[test]
    fn rdma_read_response_matched_by_psn_on_reverse_flow() {
        let mut r = Reassembler::default();
        r.set_path_mtu(C, S, 256);
        // server (S) reads 300 bytes from the client at rkey 7: two response packets
        feed(
            &mut r,
            1,
            S,
            C,
            &packet(0x0c, 9, 50, &reth(0x2000, 7, 300), &[]),
        );
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
        assert_eq!(data[299], 5);
        assert!(matches!(out[1], Delivery::Send { .. }), "{out:?}");
        assert_eq!(out.len(), 2);
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

    #[test]
    fn nak_and_unmatched_response_are_reported() {
        let mut r = Reassembler::default();
        feed(&mut r, 1, C, S, &packet(0x11, 3, 5, &[0x60, 0, 0, 0], &[]));
        feed(&mut r, 2, C, S, &packet(0x10, 3, 6, &[0, 0, 0, 0], &[1; 4]));
        let out = r.drain();
        assert!(matches!(
            &out[0],
            Delivery::Event { event: TransportEvent::Nak { syndrome, .. }, .. } if syndrome == "NAK PSN_SEQUENCE_ERROR"
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
    fn go_back_n_retransmission_fills_the_gap_once() {
        let mut r = Reassembler::default();
        feed(&mut r, 1, C, S, &packet(0x04, 5, 10, &[], &[10; 4]));
        // PSN 11 lost on the wire; the responder NAKs 12, the requester goes back to 11.
        feed(&mut r, 2, C, S, &packet(0x04, 5, 12, &[], &[12; 4]));
        feed(&mut r, 3, S, C, &packet(0x11, 3, 11, &[0x60, 0, 0, 1], &[]));
        feed(&mut r, 4, C, S, &packet(0x04, 5, 11, &[], &[11; 4]));
        feed(&mut r, 5, C, S, &packet(0x04, 5, 12, &[], &[12; 4]));
        feed(&mut r, 6, C, S, &packet(0x04, 5, 13, &[], &[13; 4]));
        let seen: Vec<String> = r
            .drain()
            .iter()
            .map(|d| match d {
                Delivery::Send { payload, .. } => format!("send {}", payload[0]),
                Delivery::Event { event, .. } => transport_name(event),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            seen,
            [
                "send 10",
                "gap",
                "send 12",
                "nak",
                "late_fill",
                "send 11",
                "duplicate",
                "send 13"
            ]
        );
    }

    fn transport_name(e: &TransportEvent) -> String {
        let v = serde_json::to_value(e).unwrap();
        v["kind"].as_str().unwrap().to_string()
    }
}
