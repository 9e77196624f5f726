//! soft-iWARP (siw) captures: decoded into the same events as RoCEv2 (`synth::siw`), hostile TCP
//! and MPA input handled without panic and within bounds (typed errors or counts), and the real
//! siw captures committed under fixtures/pcap/.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use trace::ddp::{self, Placement, RdmapOpcode};
use trace::iwarp::{Decoder, IwarpLimits};
use trace::model::{EventBody, Role};
use trace::reassembly::{Delivery, Limits, TransportEvent};
use trace::render::{self, Style};
use trace::synth::siw::{self, Flags, RdmaCapture, Roce, Siw};
use trace::tcp::{Endpoint, TcpSegment};
use trace::{capture_status, CaptureStatus, Level, Options, Trace, TransportCounts};

fn traced(bytes: &[u8]) -> Trace {
    traced_with(bytes, Limits::default())
}

fn traced_with(bytes: &[u8], limits: Limits) -> Trace {
    trace::trace_capture(
        bytes,
        &Options {
            limits,
            ..Options::default()
        },
    )
    .unwrap()
}

/// The normalised exchange lines, without the connection lines (CM over RoCE, MPA and TCP over
/// iWARP) and without the summary.
fn exchange(t: &Trace) -> Vec<String> {
    render::render(t, Style::Normalised, Level::Exchange)
        .lines
        .lines()
        .filter(|l| {
            !["CM_", "MPA_", "TCP_FIN", "TCP_RST"]
                .iter()
                .any(|w| l.contains(w))
        })
        .map(str::to_string)
        .collect()
}

fn transport_events(t: &Trace) -> Vec<&TransportEvent> {
    t.events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Transport(t) => Some(t),
            _ => None,
        })
        .collect()
}

fn errors(t: &Trace) -> usize {
    t.messages().filter(|(_, m)| m.error.is_some()).count()
}

#[test]
fn siw_capture_decodes_to_the_roce_capture_s_exchange() {
    let roce = traced(&siw::nfs3_chunks_roce());
    let want = exchange(&roce);
    assert_eq!(want.len(), 9, "{want:#?}");
    for crc in [true, false] {
        let t = traced(&siw::nfs3_chunks_siw(crc));
        assert_eq!(exchange(&t), want, "crc={crc}");
        assert_eq!(errors(&t), 0);
        assert_eq!(t.messages().count(), 6);
        assert!(TransportCounts::of(&t).is_empty());
        // The MPA exchange opens the connection, the two FINs close it.
        assert_eq!(capture_status(&t), CaptureStatus::Complete);
        assert_eq!(t.connections.len(), 1);
        let c = &t.connections[0];
        assert!(c.rpcrdma && c.from_cm);
        assert_eq!(c.port, Some(20049));
        assert_eq!(c.client, Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2))));
        let text = render::render(&t, Style::Normalised, Level::Exchange).to_text();
        assert!(
            text.starts_with("c1 C MPA_REQ port=20049 crc rfc8797(send=4096 recv=4096 inv=true)\n")
                || !crc
        );
        assert!(text.contains("c1 C TCP_FIN\nc1 S TCP_FIN\n"), "{text}");
    }
}

#[test]
fn a_capture_mixing_roce_and_iwarp_decodes_both() {
    let mut s = Siw::new(40001, true);
    s.connect();
    let mut roce = Roce {
        synth: std::mem::take(&mut s.synth),
        ..Roce::default()
    };
    siw::nfs3_chunks(&mut roce);
    s.synth = std::mem::take(&mut roce.synth);
    siw::nfs3_chunks(&mut s);
    s.close();
    let t = traced(&s.into_pcap());
    assert_eq!(t.connections.len(), 2);
    assert_eq!(t.messages().count(), 12);
    assert_eq!(errors(&t), 0);
    let lines = exchange(&t);
    let roce_lines = exchange(&traced(&siw::nfs3_chunks_roce()));
    let (c1, c2): (Vec<_>, Vec<_>) = lines.iter().partition(|l| l.starts_with("c1 "));
    // Normalised xids and handles number the whole trace: compare without them.
    let roce_lines: Vec<String> = roce_lines.iter().map(|l| unnumbered(&l[3..])).collect();
    for conn in [c1, c2] {
        let conn: Vec<String> = conn.iter().map(|l| unnumbered(&l[3..])).collect();
        assert_eq!(conn, roce_lines);
    }
}

/// `x12` and `h3` (normalised xids and handles) as `x#` and `h#`.
fn unnumbered(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if (c == 'x' || c == 'h') && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push('#');
            while chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                chars.next();
            }
        }
    }
    out
}

#[test]
fn tcp_retransmissions_are_counted_not_compared() {
    let original = traced(&siw::nfs3_chunks_siw(true));
    let want = exchange(&original);
    let mut s = Siw::new(40001, true);
    s.duplicate_data = true;
    s.connect();
    siw::nfs3_chunks(&mut s);
    s.close();
    let t = traced(&s.into_pcap());
    assert_eq!(exchange(&t), want);
    let counts = TransportCounts::of(&t);
    // Every data segment twice: the MPA frames and every FPDU's segment.
    assert_eq!(
        counts.duplicates,
        u64::from(t.frames - original.frames),
        "{counts}"
    );
    assert!(counts.duplicates > 10);
    assert_eq!(capture_status(&t), CaptureStatus::Complete);
    // Shown at the transport level only.
    let all = render::render(&t, Style::Normalised, Level::Transport).lines;
    assert!(all.contains("! TCP_RETRANSMISSION len="), "{all}");
}

#[test]
fn out_of_order_segments_are_held_and_delivered_in_sequence() {
    let want = exchange(&traced(&siw::nfs3_chunks_siw(true)));
    let mut s = Siw::new(40001, true);
    s.swap_data = true;
    s.connect();
    siw::nfs3_chunks(&mut s);
    s.close();
    let t = traced(&s.into_pcap());
    assert_eq!(errors(&t), 0);
    assert_eq!(exchange(&t), want);
    assert!(TransportCounts::of(&t).out_of_sequence > 0);
}

/// A connected siw pair, the client's Send `payload` as FPDU bytes (not written yet).
fn connected_with_call() -> (Siw, Vec<u8>) {
    let mut s = Siw::new(40001, true);
    s.connect();
    let call = trace::synth::call(1, Default::default(), 100003, 3, 0, &[]);
    let fpdus = s.send_fpdus(Role::Client, &call);
    (s, fpdus)
}

#[test]
fn overlapping_segments_deliver_each_byte_once() {
    let (mut s, fpdus) = connected_with_call();
    let seq = s.ends[0].seq;
    let n = fpdus.len();
    let data = Flags {
        ack: true,
        ..Flags::default()
    };
    // [0, n/2), then [n/4, 3n/4) overlapping it, then [n/3, n) overlapping both.
    for (a, b) in [(0, n / 2), (n / 4, 3 * n / 4), (n / 3, n)] {
        s.raw(Role::Client, seq.wrapping_add(a as u32), data, &fpdus[a..b]);
    }
    s.ends[0].seq = seq.wrapping_add(n as u32);
    let t = traced(&s.into_pcap());
    assert_eq!(t.messages().count(), 1);
    assert_eq!(errors(&t), 0);
    assert_eq!(TransportCounts::of(&t).duplicates, 2);
}

#[test]
fn out_of_window_segments_are_counted_and_dropped() {
    let (mut s, fpdus) = connected_with_call();
    let seq = s.ends[0].seq;
    let data = Flags {
        ack: true,
        ..Flags::default()
    };
    s.raw(
        Role::Client,
        seq.wrapping_add(0x8000_0000),
        data,
        &[0xff; 64],
    );
    s.raw(
        Role::Client,
        seq.wrapping_sub(0x7000_0000),
        data,
        &[0xff; 64],
    );
    s.bytes(Role::Client, &fpdus);
    let t = traced(&s.into_pcap());
    assert_eq!(t.messages().count(), 1);
    assert_eq!(TransportCounts::of(&t).out_of_sequence, 2);
    assert!(transport_events(&t)
        .iter()
        .all(|e| matches!(e, TransportEvent::TcpOutOfWindow { .. })));
}

#[test]
fn huge_mpa_lengths_are_errors_not_allocations() {
    // Over the decoder's limit: a typed error naming RFC 5044, the stream not decoded further.
    let (mut s, fpdus) = connected_with_call();
    s.bytes(Role::Client, &[0xff, 0xff, 1, 2, 3, 4]);
    s.bytes(Role::Client, &fpdus);
    let limits = Limits {
        iwarp: IwarpLimits {
            max_ulpdu: 16 << 10,
            ..IwarpLimits::default()
        },
        ..Limits::default()
    };
    let t = traced_with(&s.into_pcap(), limits);
    assert_eq!(t.messages().count(), 0);
    let events = transport_events(&t);
    assert!(
        matches!(events.as_slice(), [TransportEvent::Undecodable { error }]
            if error.contains("65535 > limit 16384") && error.contains("RFC 5044 §4.1")),
        "{events:?}"
    );
    // Within the limit but never completed: the bytes wait (bounded), then are reported.
    let (mut s, _) = connected_with_call();
    s.bytes(Role::Client, &[0xff, 0xff, 1, 2, 3, 4]);
    let t = traced(&s.into_pcap());
    assert!(transport_events(&t).iter().any(|e| matches!(
        e,
        TransportEvent::Incomplete {
            what: "mpa_fpdu",
            ..
        }
    )));
    assert!(!capture_status(&t).is_complete());
}

#[test]
fn bad_crcs_are_counted_and_their_fpdus_dropped() {
    let (mut s, mut fpdus) = connected_with_call();
    let last = fpdus.len() - 1;
    fpdus[last] ^= 0x40;
    s.bytes(Role::Client, &fpdus);
    let call = trace::synth::call(2, Default::default(), 100003, 3, 0, &[]);
    s.send(Role::Client, &call);
    let t = traced(&s.into_pcap());
    assert_eq!(t.messages().count(), 1, "the second Call only");
    assert_eq!(TransportCounts::of(&t).bad_icrc, 1);
    assert_eq!(errors(&t), 0);
}

#[test]
fn a_connection_without_its_syn_is_reported_not_decoded() {
    let mut s = Siw::new(40001, true);
    s.mpa_exchange();
    siw::nfs3_chunks(&mut s);
    let t = traced(&s.into_pcap());
    assert_eq!(t.messages().count(), 0);
    let events = transport_events(&t);
    assert!(
        matches!(events.as_slice(), [TransportEvent::Undecodable { error }] if error.contains("without its SYN")),
        "{events:?}"
    );
    // Other TCP traffic without a SYN is not assumed to be iWARP: nothing said.
    let mut s = Siw::new(40001, true);
    s.ends[1].port = 22;
    s.bytes(Role::Client, b"SSH-2.0-OpenSSH_9.6\r\n");
    assert!(traced(&s.into_pcap()).events.is_empty());
}

#[test]
fn tcp_that_is_not_mpa_is_ignored() {
    let mut s = Siw::new(40001, true);
    s.handshake();
    // NFS over plain TCP on the NFS/RDMA port: a record mark, not an MPA Request.
    s.bytes(Role::Client, &[0x80, 0, 0, 0x28, 0, 0, 0, 1]);
    s.bytes(Role::Server, &[0x80, 0, 0, 0x18, 0, 0, 0, 1]);
    s.close();
    let t = traced(&s.into_pcap());
    assert!(t.events.is_empty(), "{:?}", t.events);
    assert!(t.connections.is_empty());
}

#[test]
fn a_lost_segment_loses_the_stream_and_says_so() {
    let (mut s, fpdus) = connected_with_call();
    // The first 40 bytes never reach the capture.
    let seq = s.ends[0].seq;
    s.ends[0].seq = seq.wrapping_add(40);
    s.bytes(Role::Client, &fpdus[40..]);
    let call = trace::synth::call(2, Default::default(), 100003, 3, 0, &[]);
    s.send(Role::Client, &call);
    s.send(
        Role::Server,
        &trace::synth::reply(1, Default::default(), &[]),
    );
    let t = traced(&s.into_pcap());
    // The server's stream still decodes; the client's is lost at the hole.
    assert_eq!(t.messages().count(), 1);
    assert!(transport_events(&t)
        .iter()
        .any(|e| matches!(e, TransportEvent::TcpLost { .. })));
    let status = capture_status(&t).to_string();
    assert!(
        status.contains("1 TCP streams with bytes never captured"),
        "{status}"
    );
}

#[test]
fn terminate_and_reset_are_exchange_events() {
    let mut s = Siw::new(40001, true);
    s.connect();
    s.terminate(
        Role::Server,
        ddp::Terminate {
            layer: 1,
            error_type: 0,
            error_code: 0x05,
        },
    );
    s.raw(
        Role::Server,
        s.ends[1].seq,
        Flags {
            rst: true,
            ..Flags::default()
        },
        &[],
    );
    let t = traced(&s.into_pcap());
    let text = render::render(&t, Style::Normalised, Level::Exchange).to_text();
    assert!(
        text.contains("c1 S ! TERMINATE layer=1 type=0 code=0x05\nc1 S TCP_RST\n"),
        "{text}"
    );
    assert_eq!(capture_status(&t), CaptureStatus::Complete);
}

/// Frames (as [`TcpSegment`]s) for the Decoder directly.
fn segment(port: u16, seq: u32, syn: bool, payload: &[u8]) -> TcpSegment<'_> {
    TcpSegment {
        src: Endpoint {
            addr: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            port,
        },
        dst: Endpoint {
            addr: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            port: 20049,
        },
        seq,
        syn,
        ack: !syn,
        fin: false,
        rst: false,
        payload,
    }
}

#[test]
fn many_half_open_connections_stay_bounded() {
    let limits = IwarpLimits {
        tcp: trace::tcp::TcpLimits {
            max_connections: 256,
            ..Default::default()
        },
        max_partial_bytes: 1 << 20,
        ..IwarpLimits::default()
    };
    let mut d = Decoder::new(limits);
    let mut request = Vec::new();
    trace::mpa::emit_start(
        &trace::mpa::StartFrame {
            kind: trace::mpa::StartKind::Request,
            markers: false,
            crc: true,
            reject: false,
            revision: 1,
            ird_ord: None,
            private_data: &[],
        },
        &mut request,
    );
    // An FPDU declaring 60000 bytes, 30000 of them sent: each connection would keep 30000.
    let mut out = Vec::new();
    let mut partial = vec![0xea, 0x60];
    partial.resize(30_000, 7);
    for i in 0..5000u32 {
        let port = 1024 + (i % 60_000) as u16;
        let frame = 4 * i;
        d.segment(frame, Duration::ZERO, &segment(port, 99, true, &[]));
        d.segment(
            frame + 1,
            Duration::ZERO,
            &segment(port, 100, false, &request),
        );
        let at = 100 + request.len() as u32;
        d.segment(
            frame + 2,
            Duration::ZERO,
            &segment(port, at, false, &partial),
        );
        assert!(d.connections() <= 256);
        assert!(d.partial_bytes() <= 1 << 20);
        out.extend(d.drain());
    }
    d.finish(20_000, Duration::ZERO);
    out.extend(d.drain());
    assert!(out.iter().any(|x| matches!(
        x,
        Delivery::Event {
            event: TransportEvent::LimitReached { .. },
            ..
        }
    )));
    assert_eq!(d.partial_bytes(), 0);
}

#[test]
fn garbage_after_the_mpa_exchange_never_panics() {
    let mut x = 0x1234_5678u32;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    for round in 0..200 {
        let (mut s, mut fpdus) = connected_with_call();
        // Flip a few bytes of valid FPDUs, or write plain noise.
        if round % 2 == 0 {
            for _ in 0..4 {
                let i = next() as usize % fpdus.len();
                fpdus[i] = next() as u8;
            }
        } else {
            fpdus = (0..(next() % 300)).map(|_| next() as u8).collect();
        }
        let cut = next() as usize % (fpdus.len() + 1);
        s.bytes(Role::Client, &fpdus[..cut]);
        s.bytes(Role::Client, &fpdus[cut..]);
        let mut ulpdu = Vec::new();
        ddp::emit(
            next() % 2 == 0,
            RdmapOpcode::from_u8((next() % 8) as u8).unwrap(),
            Placement::Untagged {
                ulp: 0,
                qn: next() % 3,
                msn: next() % 3,
                mo: next() % 3,
            },
            &[1, 2, 3],
            &mut ulpdu,
        );
        let mut fpdu = Vec::new();
        trace::mpa::emit_fpdu(&ulpdu, true, &mut fpdu);
        s.bytes(Role::Server, &fpdu);
        let _ = traced(&s.into_pcap());
    }
}

/// The real siw captures committed as fixtures (linux-6.12-siw's smoke suite, NFSv3 and NFSv4.1;
/// tshark's view of them is checked in `oracle.rs`): every RPC-over-RDMA message decodes, the
/// connections open with MPA and close with FIN, and nothing is left to TCP recovery.
#[test]
fn real_siw_captures_decode() {
    for name in ["siw-nfs3-linux-6.12", "siw-nfs41-linux-6.12"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../../fixtures/pcap/{name}.pcap"));
        let bytes = std::fs::read(&path).unwrap();
        let t = traced(&bytes);
        let text = render::render(&t, Style::Normalised, Level::Exchange).to_text();
        assert!(t.messages().count() > 90, "{name}: {text}");
        assert_eq!(errors(&t), 0, "{name}: {text}");
        assert!(
            text.contains("MPA_REQ") && text.contains("TCP_FIN"),
            "{name}: {text}"
        );
        assert_eq!(capture_status(&t), CaptureStatus::Complete, "{name}");
    }
}

#[test]
fn markers_are_reported_unsupported_and_a_reject_closes() {
    use trace::mpa::{emit_start, StartFrame, StartKind};
    let frame = |kind, markers, reject| {
        let mut out = Vec::new();
        emit_start(
            &StartFrame {
                kind,
                markers,
                crc: true,
                reject,
                revision: 1,
                ird_ord: None,
                private_data: &[],
            },
            &mut out,
        );
        out
    };
    let mut s = Siw::new(40001, true);
    s.handshake();
    s.bytes(Role::Client, &frame(StartKind::Request, true, false));
    s.bytes(Role::Server, &frame(StartKind::Reply, false, false));
    s.send(
        Role::Server,
        &trace::synth::reply(1, Default::default(), &[]),
    );
    let t = traced(&s.into_pcap());
    assert_eq!(t.messages().count(), 0);
    let text = render::render(&t, Style::Normalised, Level::Exchange).to_text();
    assert!(
        text.contains("MPA markers negotiated (RFC 5044 §4.3): not supported"),
        "{text}"
    );

    let mut s = Siw::new(40001, true);
    s.handshake();
    s.bytes(Role::Client, &frame(StartKind::Request, false, false));
    s.bytes(Role::Server, &frame(StartKind::Reply, false, true));
    let t = traced(&s.into_pcap());
    let text = render::render(&t, Style::Normalised, Level::Exchange).to_text();
    assert!(
        text.starts_with("c1 C MPA_REQ port=20049 crc\nc1 S MPA_REJ crc\n"),
        "{text}"
    );
    assert_eq!(capture_status(&t), CaptureStatus::Complete);
}

#[test]
fn the_peer_to_peer_ready_to_receive_message_is_not_an_rdma_write() {
    use trace::mpa::{emit_start, IrdOrd, StartFrame, StartKind};
    let mut s = Siw::new(40001, true);
    s.handshake();
    for (role, kind) in [
        (Role::Client, StartKind::Request),
        (Role::Server, StartKind::Reply),
    ] {
        let mut out = Vec::new();
        emit_start(
            &StartFrame {
                kind,
                markers: false,
                crc: true,
                reject: false,
                revision: 2,
                ird_ord: Some(IrdOrd {
                    ird: 8,
                    ord: 8,
                    peer_to_peer: true,
                    rtr: (0, 2),
                }),
                private_data: &[],
            },
            &mut out,
        );
        s.bytes(role, &out);
    }
    s.write(Role::Client, 0, 0, &[]);
    siw::nfs3_chunks(&mut s);
    s.close();
    let t = traced(&s.into_pcap());
    assert_eq!(exchange(&t), exchange(&traced(&siw::nfs3_chunks_roce())));
}

#[test]
fn rdma_data_stays_in_the_capture_and_streamed_reads_agree() {
    // Decoder level: a Write's FPDU fed with its place is kept as a range of the capture.
    let mut d = Decoder::default();
    let start = |kind| {
        let mut out = Vec::new();
        trace::mpa::emit_start(
            &trace::mpa::StartFrame {
                kind,
                markers: false,
                crc: true,
                reject: false,
                revision: 1,
                ird_ord: None,
                private_data: &[],
            },
            &mut out,
        );
        out
    };
    let (request, reply) = (
        start(trace::mpa::StartKind::Request),
        start(trace::mpa::StartKind::Reply),
    );
    let data: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
    let mut ulpdu = Vec::new();
    ddp::emit(
        true,
        RdmapOpcode::Write,
        Placement::Tagged { stag: 9, to: 64 },
        &data,
        &mut ulpdu,
    );
    let mut capture = vec![0xcc; 10];
    trace::mpa::emit_fpdu(&ulpdu, true, &mut capture);
    let mut server = segment(40000, 500, true, &[]);
    (server.src, server.dst) = (server.dst, server.src);
    server.ack = true;
    d.segment(1, Duration::ZERO, &segment(40000, 99, true, &[]));
    d.segment(2, Duration::ZERO, &server);
    d.segment(3, Duration::ZERO, &segment(40000, 100, false, &request));
    server.syn = false;
    server.seq = 501;
    server.payload = &reply;
    d.segment(4, Duration::ZERO, &server);
    server.seq = 501 + reply.len() as u32;
    server.payload = &capture[10..];
    d.captured_segment(5, Duration::ZERO, &server, 10);
    let out = d.drain();
    let Some(Delivery::Write {
        data: got, reth, ..
    }) = out.last()
    else {
        panic!("{out:?}")
    };
    assert_eq!((reth.rkey, reth.va, reth.dma_length), (9, 64, 1000));
    assert_eq!(got.to_vec::<[u8]>(&[]), None, "kept as a range, not copied");
    assert_eq!(got.to_vec(&capture).unwrap(), data);
    assert_eq!(d.partial_bytes(), 0);

    // Whole captures: read through a reader (ranges resolved against the bytes) as in memory.
    let bytes = siw::nfs3_chunks_siw(true);
    let whole = traced(&bytes);
    let streamed = trace::trace_capture_read(&mut &bytes[..], &bytes, &Options::default()).unwrap();
    assert_eq!(
        render::text(&streamed, Style::Raw),
        render::text(&whole, Style::Raw)
    );
}
