//! TCP (RFC 9293) segments found in a frame, and per-connection byte stream reassembly for the
//! protocols above it (iWARP's MPA): both directions of each connection put back in sequence
//! order, bytes delivered once each.
//!
//! A segment whose bytes were all delivered already is a retransmission (counted, like a RoCE
//! PSN duplicate); one ahead of the next expected byte is held (bounded per direction and in
//! total) until the bytes before it come; one far from the expected sequence (beyond
//! [`TcpLimits::window`]) is out of window and dropped. A hold that would exceed its bounds, and
//! a hole still open at the end of the capture, make the gap final: the stream is lost from
//! there ([`StreamEvent::Lost`]), since MPA without markers cannot find its next frame.
//! Connections are tracked from their SYN; one first seen without it (the capture started
//! mid-connection) is reported once ([`StreamEvent::Midstream`]) and not decoded. The number of
//! connections is bounded: the least recently active is evicted first.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;

use etherparse::{NetSlice, SlicedPacket, TransportSlice};

use crate::capture::LinkType;

/// One TCP segment of a frame.
#[derive(Debug, Clone)]
pub struct TcpSegment<'a> {
    pub src: Endpoint,
    pub dst: Endpoint,
    pub seq: u32,
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub rst: bool,
    pub payload: &'a [u8],
}

/// An address and port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint {
    pub addr: IpAddr,
    pub port: u16,
}

/// Find the TCP segment in a frame (IPv4 or IPv6, not fragmented); `None` for anything else.
pub fn tcp_segment(link: LinkType, data: &[u8]) -> Option<TcpSegment<'_>> {
    let sliced = match link {
        LinkType::Ethernet => SlicedPacket::from_ethernet(data).ok()?,
        LinkType::LinuxSll => SlicedPacket::from_linux_sll(data).ok()?,
        LinkType::RawIp => SlicedPacket::from_ip(data).ok()?,
        LinkType::Other(_) => return None,
    };
    let (Some(net), Some(TransportSlice::Tcp(tcp))) = (&sliced.net, &sliced.transport) else {
        return None;
    };
    if sliced.is_ip_payload_fragmented() {
        return None;
    }
    let (src, dst) = match net {
        NetSlice::Ipv4(v4) => (
            IpAddr::V4(v4.header().source_addr()),
            IpAddr::V4(v4.header().destination_addr()),
        ),
        NetSlice::Ipv6(v6) => (
            IpAddr::V6(v6.header().source_addr()),
            IpAddr::V6(v6.header().destination_addr()),
        ),
    };
    Some(TcpSegment {
        src: Endpoint {
            addr: src,
            port: tcp.source_port(),
        },
        dst: Endpoint {
            addr: dst,
            port: tcp.destination_port(),
        },
        seq: tcp.sequence_number(),
        syn: tcp.syn(),
        ack: tcp.ack(),
        fin: tcp.fin(),
        rst: tcp.rst(),
        payload: tcp.payload(),
    })
}

/// Bounds on what stream reassembly keeps.
#[derive(Debug, Clone)]
pub struct TcpLimits {
    /// Connections tracked at once (the least recently active is evicted).
    pub max_connections: usize,
    /// Bytes of segments held ahead of a hole, over all connections (payload plus
    /// [`HELD_OVERHEAD`] per segment).
    pub max_held_bytes: usize,
    /// The same, per direction of one connection.
    pub max_held_per_direction: usize,
    /// Segments further than this from the next expected byte are out of window.
    pub window: u32,
}

impl Default for TcpLimits {
    fn default() -> Self {
        TcpLimits {
            max_connections: 4096,
            max_held_bytes: 16 << 20,
            max_held_per_direction: 4 << 20,
            window: 1 << 30,
        }
    }
}

/// What a held segment costs beyond its payload.
pub const HELD_OVERHEAD: usize = 64;

/// What the stream of one direction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent<'a> {
    /// The next bytes, in order.
    Data(&'a [u8]),
    /// The sender's FIN, after its last byte.
    Fin,
    /// A reset, from this direction's sender.
    Rst,
    /// A segment carrying bytes delivered already (`len` of them).
    Retransmission { seq: u32, len: u32 },
    /// A segment ahead of the expected sequence, held.
    OutOfOrder { expected: u32, seq: u32 },
    /// A segment too far from the expected sequence, dropped.
    OutOfWindow { expected: u32, seq: u32 },
    /// Bytes `[expected, got)` never came (or could not be waited for): the stream is lost.
    Lost { expected: u32, got: u32 },
    /// Bytes of a connection whose SYN the capture does not hold (reported once).
    Midstream,
}

/// One direction's sequence state.
#[derive(Debug, Default)]
struct Direction {
    /// The next expected sequence number and its stream offset.
    next: Option<(u32, u64)>,
    /// Segments ahead of `next`, by stream offset: bytes, whether a FIN follows them.
    held: BTreeMap<u64, (Vec<u8>, bool)>,
    held_bytes: usize,
    /// FIN delivered, or the stream lost: nothing more is delivered.
    done: bool,
    /// The stream was lost: later segments are not even counted.
    lost: bool,
}

/// One TCP connection.
#[derive(Debug)]
pub struct Conn<C> {
    /// The SYN's sender; `None` when the SYN was not captured.
    pub client: Option<Endpoint>,
    pub server: Option<Endpoint>,
    /// Per direction: 0 from the client, 1 from the server.
    dirs: [Direction; 2],
    /// Reset, or both FINs delivered.
    pub closed: bool,
    midstream: bool,
    tick: u64,
    /// The protocol above's state.
    pub user: C,
}

/// Connection key: the two endpoints, lower first.
pub type ConnKey = (Endpoint, Endpoint);

fn key_of(a: Endpoint, b: Endpoint) -> ConnKey {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// The connections of a capture. Sans-IO: feed segments, get events through a callback.
#[derive(Debug)]
pub struct Streams<C> {
    limits: TcpLimits,
    conns: HashMap<ConnKey, Conn<C>>,
    lru: BTreeSet<(u64, ConnKey)>,
    tick: u64,
    held_bytes: usize,
    /// Connections evicted to stay within `max_connections`, for the caller to finish.
    pub evicted: Vec<Conn<C>>,
}

impl<C: Default> Streams<C> {
    pub fn new(limits: TcpLimits) -> Self {
        Streams {
            limits,
            conns: HashMap::new(),
            lru: BTreeSet::new(),
            tick: 0,
            held_bytes: 0,
            evicted: Vec::new(),
        }
    }

    /// Bytes held ahead of holes now, over all connections.
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    /// Connections tracked now.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Feed one segment; `on` gets the connection, the direction (0 from the client) and each
    /// event, in stream order.
    pub fn segment(
        &mut self,
        seg: &TcpSegment<'_>,
        on: &mut dyn FnMut(&mut Conn<C>, usize, StreamEvent<'_>),
    ) {
        let key = key_of(seg.src, seg.dst);
        self.tick += 1;
        let tick = self.tick;
        let is_new_syn = seg.syn && !seg.ack;
        // A SYN with a new ISN on a tracked 4-tuple opens a new connection there.
        let replace = is_new_syn
            && self.conns.get(&key).is_some_and(|c| {
                c.client != Some(seg.src)
                    || c.dirs[0].next.map(|(s, _)| s) != Some(seg.seq.wrapping_add(1))
            });
        if replace {
            if let Some(old) = self.conns.remove(&key) {
                self.lru.remove(&(old.tick, key));
                self.release(&old);
            }
        }
        if !self.conns.contains_key(&key) {
            if self.conns.len() >= self.limits.max_connections.max(1) {
                if let Some(&(t, k)) = self.lru.iter().next() {
                    self.lru.remove(&(t, k));
                    if let Some(old) = self.conns.remove(&k) {
                        self.release(&old);
                        self.evicted.push(old);
                    }
                }
            }
            let (client, server) = match (seg.syn, seg.ack) {
                (true, false) => (Some(seg.src), Some(seg.dst)),
                (true, true) => (Some(seg.dst), Some(seg.src)),
                _ => (None, None),
            };
            self.conns.insert(
                key,
                Conn {
                    client,
                    server,
                    dirs: Default::default(),
                    closed: false,
                    midstream: false,
                    tick,
                    user: C::default(),
                },
            );
        }
        let Some(conn) = self.conns.get_mut(&key) else {
            return;
        };
        self.lru.remove(&(conn.tick, key));
        conn.tick = tick;
        self.lru.insert((tick, key));
        if conn.closed {
            return;
        }
        let Some(client) = conn.client else {
            if !seg.payload.is_empty() && !conn.midstream {
                conn.midstream = true;
                on(conn, 0, StreamEvent::Midstream);
            }
            return;
        };
        let d = usize::from(seg.src != client);
        if seg.syn {
            let dir = &mut conn.dirs[d];
            if dir.next.is_none() {
                dir.next = Some((seg.seq.wrapping_add(1), 0));
            }
            if seg.payload.is_empty() && !seg.fin {
                return;
            }
        }
        if seg.rst {
            conn.closed = true;
            let freed: usize = conn.dirs.iter().map(|x| x.held_bytes).sum();
            for dir in &mut conn.dirs {
                dir.held.clear();
                dir.held_bytes = 0;
            }
            self.held_bytes = self.held_bytes.saturating_sub(freed);
            on(conn, d, StreamEvent::Rst);
            return;
        }
        if seg.payload.is_empty() && !seg.fin {
            return;
        }
        // Sequence number of the first payload byte (a SYN's own number precedes it).
        let seq = if seg.syn {
            seg.seq.wrapping_add(1)
        } else {
            seg.seq
        };
        if conn.dirs[d].lost {
            return;
        }
        if conn.dirs[d].done {
            if !seg.payload.is_empty() {
                on(
                    conn,
                    d,
                    StreamEvent::Retransmission {
                        seq,
                        len: seg.payload.len() as u32,
                    },
                );
            }
            return;
        }
        let (next_seq, next_off) = match conn.dirs[d].next {
            Some(n) => n,
            // The other side's SYN was not captured: its stream starts here.
            None => (seq, 0),
        };
        conn.dirs[d].next = Some((next_seq, next_off));
        let delta = seq.wrapping_sub(next_seq) as i32;
        if delta.unsigned_abs() > self.limits.window {
            on(
                conn,
                d,
                StreamEvent::OutOfWindow {
                    expected: next_seq,
                    seq,
                },
            );
            return;
        }
        let offset = next_off as i64 + i64::from(delta);
        if offset < 0 {
            // Before the stream's first byte (before the SYN): nothing to deliver.
            on(
                conn,
                d,
                StreamEvent::OutOfWindow {
                    expected: next_seq,
                    seq,
                },
            );
            return;
        }
        let offset = offset as u64;
        if offset > next_off {
            let cost = seg.payload.len() + HELD_OVERHEAD;
            let dir = &mut conn.dirs[d];
            let fits = dir.held_bytes + cost <= self.limits.max_held_per_direction
                && self.held_bytes + cost <= self.limits.max_held_bytes;
            if fits {
                match dir.held.get(&offset) {
                    Some((bytes, _)) if bytes.len() >= seg.payload.len() => {}
                    _ => {
                        let old = dir
                            .held
                            .insert(offset, (seg.payload.to_vec(), seg.fin))
                            .map_or(0, |(b, _)| b.len() + HELD_OVERHEAD);
                        dir.held_bytes = dir.held_bytes + cost - old;
                        self.held_bytes = self.held_bytes + cost - old;
                    }
                }
                on(
                    conn,
                    d,
                    StreamEvent::OutOfOrder {
                        expected: next_seq,
                        seq,
                    },
                );
            } else {
                let freed = dir.held_bytes;
                dir.held.clear();
                dir.held_bytes = 0;
                dir.done = true;
                dir.lost = true;
                self.held_bytes = self.held_bytes.saturating_sub(freed);
                on(
                    conn,
                    d,
                    StreamEvent::Lost {
                        expected: next_seq,
                        got: seq,
                    },
                );
            }
            return;
        }
        let already = (next_off - offset) as usize;
        if already > 0 {
            on(
                conn,
                d,
                StreamEvent::Retransmission {
                    seq,
                    len: already.min(seg.payload.len()) as u32,
                },
            );
        }
        if already < seg.payload.len() || (seg.fin && already == seg.payload.len()) {
            let freed = deliver(
                conn,
                d,
                &seg.payload[already.min(seg.payload.len())..],
                seg.fin,
                on,
            );
            self.held_bytes = self.held_bytes.saturating_sub(freed);
        }
        if conn.dirs.iter().all(|x| x.done) {
            conn.closed = true;
        }
    }

    fn release(&mut self, conn: &Conn<C>) {
        let held: usize = conn.dirs.iter().map(|d| d.held_bytes).sum();
        self.held_bytes = self.held_bytes.saturating_sub(held);
    }

    /// End of the capture: holes still open are final; then every connection is handed to
    /// `each` (evicted ones first) to finish.
    pub fn finish(
        &mut self,
        on: &mut dyn FnMut(&mut Conn<C>, usize, StreamEvent<'_>),
    ) -> Vec<Conn<C>> {
        let mut all = std::mem::take(&mut self.evicted);
        let mut live: Vec<(u64, ConnKey)> = self.lru.iter().copied().collect();
        live.sort_unstable();
        for (_, key) in live {
            let Some(mut conn) = self.conns.remove(&key) else {
                continue;
            };
            for d in 0..2 {
                let dir = &mut conn.dirs[d];
                let (Some((next_seq, next_off)), Some((&first, _))) =
                    (dir.next, dir.held.iter().next())
                else {
                    continue;
                };
                let got = next_seq.wrapping_add((first - next_off) as u32);
                dir.held.clear();
                dir.held_bytes = 0;
                dir.done = true;
                dir.lost = true;
                on(
                    &mut conn,
                    d,
                    StreamEvent::Lost {
                        expected: next_seq,
                        got,
                    },
                );
            }
            all.push(conn);
        }
        self.lru.clear();
        self.held_bytes = 0;
        all
    }
}

/// Deliver `bytes` (then a FIN when `fin`) at the direction's next offset, then whatever held
/// segments now follow. Returns the held bytes freed.
fn deliver<C>(
    conn: &mut Conn<C>,
    d: usize,
    bytes: &[u8],
    fin: bool,
    on: &mut dyn FnMut(&mut Conn<C>, usize, StreamEvent<'_>),
) -> usize {
    advance(conn, d, bytes, fin, on);
    let mut freed = 0;
    loop {
        let dir = &mut conn.dirs[d];
        let Some((_, off)) = dir.next else { break };
        if dir.done {
            freed += dir.held_bytes;
            dir.held.clear();
            dir.held_bytes = 0;
            break;
        }
        let Some((&start, _)) = dir.held.iter().next() else {
            break;
        };
        if start > off {
            break;
        }
        let Some((bytes, fin)) = dir.held.remove(&start) else {
            break;
        };
        let cost = bytes.len() + HELD_OVERHEAD;
        dir.held_bytes = dir.held_bytes.saturating_sub(cost);
        freed += cost;
        let skip = (off - start) as usize;
        if skip < bytes.len() || (fin && skip == bytes.len()) {
            advance(conn, d, &bytes[skip.min(bytes.len())..], fin, on);
        }
    }
    freed
}

fn advance<C>(
    conn: &mut Conn<C>,
    d: usize,
    bytes: &[u8],
    fin: bool,
    on: &mut dyn FnMut(&mut Conn<C>, usize, StreamEvent<'_>),
) {
    let dir = &mut conn.dirs[d];
    if let Some((seq, off)) = dir.next {
        let n = bytes.len() as u64 + u64::from(fin);
        dir.next = Some((seq.wrapping_add(n as u32), off + n));
    }
    if fin {
        dir.done = true;
    }
    if !bytes.is_empty() {
        on(conn, d, StreamEvent::Data(bytes));
    }
    if fin {
        on(conn, d, StreamEvent::Fin);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn seg(from_client: bool, seq: u32, syn: bool, fin: bool, payload: &[u8]) -> TcpSegment<'_> {
        let c = Endpoint {
            addr: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            port: 40000,
        };
        let s = Endpoint {
            addr: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            port: 20049,
        };
        let (src, dst) = if from_client { (c, s) } else { (s, c) };
        TcpSegment {
            src,
            dst,
            seq,
            syn,
            ack: !from_client || !syn,
            fin,
            rst: false,
            payload,
        }
    }

    /// Feed segments, returning what the stream said, as text.
    fn run(streams: &mut Streams<()>, segs: &[TcpSegment<'_>]) -> Vec<String> {
        let mut out = Vec::new();
        for s in segs {
            streams.segment(s, &mut |_, d, e| out.push(format!("{d} {e:?}")));
        }
        out
    }

    #[test]
    fn sequence_wraps_and_fin_follows_held_data() {
        let mut s = Streams::new(TcpLimits::default());
        let isn = u32::MAX - 2;
        let out = run(
            &mut s,
            &[
                seg(true, isn, true, false, &[]),
                // bytes 4.. (wrapped) with the FIN, then bytes 0..4
                seg(true, isn.wrapping_add(5), false, true, b"efg"),
                seg(true, isn.wrapping_add(1), false, false, b"abcd"),
                seg(true, isn.wrapping_add(1), false, false, b"ab"),
            ],
        );
        assert_eq!(
            out,
            [
                "0 OutOfOrder { expected: 4294967294, seq: 2 }",
                "0 Data([97, 98, 99, 100])",
                "0 Data([101, 102, 103])",
                "0 Fin",
                "0 Retransmission { seq: 4294967294, len: 2 }",
            ]
        );
        assert_eq!(s.held_bytes(), 0);
    }

    #[test]
    fn a_full_hold_makes_the_gap_final() {
        let mut s = Streams::new(TcpLimits {
            max_held_per_direction: 2 * (HELD_OVERHEAD + 10),
            ..TcpLimits::default()
        });
        let mut segs = vec![seg(true, 0, true, false, &[])];
        // Byte 1 never comes; three 10-byte segments after it: two fit.
        for i in 0..3 {
            segs.push(seg(true, 11 + 10 * i, false, false, &[0; 10]));
        }
        segs.push(seg(true, 1, false, false, &[0; 10]));
        let out = run(&mut s, &segs);
        assert_eq!(out.len(), 3, "{out:?}");
        assert!(out[2].starts_with("0 Lost"), "{out:?}");
        assert_eq!(s.held_bytes(), 0);
        // At the end a hole still open is lost too.
        let mut s = Streams::new(TcpLimits::default());
        run(
            &mut s,
            &[
                seg(true, 0, true, false, &[]),
                seg(true, 5, false, false, b"x"),
            ],
        );
        let mut out = Vec::new();
        let conns = s.finish(&mut |_, d, e| out.push(format!("{d} {e:?}")));
        assert_eq!(conns.len(), 1);
        assert_eq!(out, ["0 Lost { expected: 1, got: 5 }"]);
    }

    #[test]
    fn finds_tcp_over_ipv4_and_ipv6_and_nothing_in_cut_frames() {
        let builder = etherparse::PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv6([1; 16], [2; 16], 64)
            .tcp(40000, 20049, 77, 1000)
            .syn();
        let mut frame = Vec::new();
        builder.write(&mut frame, b"hi").unwrap();
        let s = tcp_segment(LinkType::Ethernet, &frame).unwrap();
        assert_eq!(
            (s.src.port, s.dst.port, s.seq, s.syn, s.payload),
            (40000, 20049, 77, true, &b"hi"[..])
        );
        assert_eq!(s.dst.addr, IpAddr::from([2u8; 16]));
        for cut in 0..frame.len() - 2 {
            assert!(tcp_segment(LinkType::Ethernet, &frame[..cut]).is_none());
        }
        let builder = etherparse::PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4([10, 0, 0, 2], [10, 0, 0, 1], 64)
            .udp(1, 4791);
        let mut frame = Vec::new();
        builder.write(&mut frame, b"hi").unwrap();
        assert!(tcp_segment(LinkType::Ethernet, &frame).is_none());
    }

    #[test]
    fn connections_are_bounded_and_a_new_syn_replaces_an_old_one() {
        let mut s = Streams::<()>::new(TcpLimits {
            max_connections: 8,
            ..TcpLimits::default()
        });
        for port in 0..100u16 {
            let mut sg = seg(true, 7, true, false, &[]);
            sg.src.port = port;
            run(&mut s, &[sg]);
            assert!(s.connections() <= 8);
        }
        assert_eq!(s.evicted.len(), 92);
    }
}
