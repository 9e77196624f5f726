//! Untrusted captures: mutated and truncated packets never panic and never make the trace lose
//! track of frames; pcapng holding the same packets gives the same trace as pcap; a capture
//! streamed (read through a window, events written as they are built) gives what the capture
//! in memory gives.

use std::borrow::Cow;
use std::ops::ControlFlow;
use std::path::Path;

use trace::render::{EventWriter, Style};

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;

fn fixture() -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pcap/nfs3-linux-6.1.pcap"),
    )
    .unwrap()
}

/// Deterministic xorshift, so a failure names its seed and reproduces.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn frames(bytes: &[u8]) -> Vec<(std::time::Duration, Vec<u8>)> {
    trace::capture::read_capture(bytes)
        .unwrap()
        .frames
        .into_iter()
        .map(|f| (f.time, f.data.into_owned()))
        .collect()
}

/// `frames` as a pcapng: one Ethernet interface with `snaplen`, one Enhanced Packet Block each.
fn write_pcapng(frames: &[(std::time::Duration, Vec<u8>)], snaplen: u32) -> Vec<u8> {
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    w.write_pcapng_block(InterfaceDescriptionBlock {
        linktype: DataLink::ETHERNET,
        snaplen,
        options: vec![],
    })
    .unwrap();
    for (t, d) in frames {
        w.write_pcapng_block(EnhancedPacketBlock {
            interface_id: 0,
            timestamp: *t,
            original_len: d.len() as u32,
            data: Cow::Borrowed(d),
            options: vec![],
        })
        .unwrap();
    }
    w.into_inner()
}

fn write_pcap(frames: &[(std::time::Duration, Vec<u8>)]) -> Vec<u8> {
    let header = PcapHeader {
        datalink: DataLink::ETHERNET,
        ..Default::default()
    };
    let mut w = PcapWriter::with_header(Vec::new(), header).unwrap();
    for (t, d) in frames {
        w.write_packet(&PcapPacket::new(*t, d.len() as u32, d))
            .unwrap();
    }
    w.into_writer()
}

#[test]
fn mutated_packets_never_panic_and_every_frame_is_counted() {
    let original = frames(&fixture());
    for seed in 1..=60u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut mutated = original.clone();
        for _ in 0..40 {
            let i = rng.below(mutated.len());
            let data = &mut mutated[i].1;
            match rng.below(4) {
                // Flip a byte in the RoCE part (past Ethernet/IP/UDP) or anywhere.
                0 | 1 => {
                    let at = 42 + rng.below(data.len().saturating_sub(42));
                    if let Some(b) = data.get_mut(at) {
                        *b ^= (rng.next() as u8) | 1;
                    }
                }
                // Truncate the frame.
                2 => {
                    let keep = rng.below(data.len());
                    data.truncate(keep);
                }
                // Duplicate a frame elsewhere (retransmission-like).
                _ => {
                    let copy = mutated[i].clone();
                    let at = rng.below(mutated.len());
                    mutated.insert(at, copy);
                }
            }
        }
        let pcap = write_pcap(&mutated);
        for check_icrc in [false, true] {
            let options = trace::Options {
                check_icrc,
                ..Default::default()
            };
            let t = trace::trace_capture(&pcap, &options)
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert_eq!(t.frames as usize, mutated.len(), "seed {seed}");
            // Every event names a frame of the capture.
            assert!(t
                .events
                .iter()
                .all(|e| e.frame >= 1 && e.frame as usize <= mutated.len()));
            // Rendering never panics either, at either level.
            let _ = trace::render::text(&t, trace::render::Style::Normalised);
            let _ = trace::render::jsonl(&t);
            for level in [trace::Level::Exchange, trace::Level::Transport] {
                let r = trace::render::render(&t, trace::render::Style::Raw, level);
                assert!(r.to_text().ends_with('\n'));
            }
        }
    }
}

#[test]
fn duplicated_send_is_reported_not_decoded_twice() {
    let mut f = frames(&fixture());
    // Frame 33 (index 32) is the first NFS Call; replay it right after itself.
    let call = f[32].clone();
    f.insert(33, call);
    let t = trace::trace_capture(&write_pcap(&f), &trace::Options::default()).unwrap();
    let dup = t
        .events
        .iter()
        .find(|e| e.frame == 34)
        .expect("event for the replayed frame");
    assert!(
        matches!(
            &dup.body,
            trace::EventBody::Transport(trace::reassembly::TransportEvent::Duplicate { .. })
        ),
        "{dup:?}"
    );
    assert_eq!(t.messages().count(), 99);
}

#[test]
fn pcapng_gives_the_same_trace_as_pcap() {
    let bytes = fixture();
    let f = frames(&bytes);
    let ng = write_pcapng(&f, 0);
    let options = trace::Options::default();
    let a = trace::trace_capture(&bytes, &options).unwrap();
    let b = trace::trace_capture(&ng, &options).unwrap();
    assert_eq!(b.frames, a.frames);
    assert_eq!(
        trace::render::text(&b, trace::render::Style::Normalised),
        trace::render::text(&a, trace::render::Style::Normalised)
    );
    assert_eq!(trace::render::jsonl(&b), trace::render::jsonl(&a));
}

#[test]
fn without_the_cm_exchange_connections_and_roles_come_from_traffic() {
    let bytes = fixture();
    let all = frames(&bytes);
    // Drop the CM MADs (UD sends to QP1): what a capture started after connect would hold.
    let without_cm: Vec<_> = all
        .iter()
        .filter(|(_, d)| {
            let p = trace::link::roce_packet(trace::capture::LinkType::Ethernet, d).unwrap();
            trace::ib::decode(p.transport).unwrap().dest_qp != 1
        })
        .cloned()
        .collect();
    assert_eq!(all.len() - without_cm.len(), 8, "8 CM MADs in the capture");
    let options = trace::Options::default();
    let with = trace::trace_capture(&bytes, &options).unwrap();
    let without = trace::trace_capture(&write_pcap(&without_cm), &options).unwrap();
    assert!(with.connections.iter().all(|c| c.from_cm));
    assert!(without.connections.iter().all(|c| !c.from_cm));
    for (a, b) in with.connections.iter().zip(&without.connections) {
        assert_eq!(
            (a.client, a.server, a.client_qp, a.server_qp, a.rpcrdma),
            (b.client, b.server, b.client_qp, b.server_qp, b.rpcrdma)
        );
    }
    let expected: String = trace::render::text(&with, trace::render::Style::Normalised)
        .lines()
        .filter(|l| !l.contains(" CM_"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        trace::render::text(&without, trace::render::Style::Normalised),
        expected
    );
}

#[test]
fn reconnect_reusing_qp_numbers_keeps_each_connection_apart() {
    // The capture twice, the second time with every PSN shifted: the same QP numbers, xids and
    // handles on a new connection (as after a reconnect that reuses QPNs).
    let first = frames(&fixture());
    let span = first.last().unwrap().0 + std::time::Duration::from_secs(1);
    let mut all = first.clone();
    for (t, d) in &first {
        let mut d = d.clone();
        let p = trace::link::roce_packet(trace::capture::LinkType::Ethernet, &d).unwrap();
        let psn_at = (p.transport.as_ptr() as usize - d.as_ptr() as usize) + 9;
        d[psn_at] ^= 0x40;
        all.push((*t + span, d));
    }
    let t = trace::trace_capture(&write_pcap(&all), &trace::Options::default()).unwrap();
    assert_eq!(t.connections.len(), 4);
    let messages: Vec<_> = t.messages().collect();
    assert_eq!(messages.len(), 2 * 99);
    let boundary = first.len() as u32;
    for (e, m) in &messages {
        assert_eq!(m.error, None, "frame {}", e.frame);
        let second = e.frame > boundary;
        assert_eq!(
            e.conn,
            Some(if second { 3 } else { 1 }),
            "frame {}",
            e.frame
        );
        if let Some(call) = m.call_frame {
            assert_eq!(call > boundary, second, "reply paired across connections");
        }
    }
}

#[test]
fn capture_started_mid_connection_decodes_with_notes_not_errors() {
    // Keep frames 70.. of the 6.1 capture: no CM exchange, and the Reply in frame 71 answers a
    // Call (frame 69) that was not captured.
    let late: Vec<_> = frames(&fixture()).into_iter().skip(69).collect();
    let t = trace::trace_capture(&write_pcap(&late), &trace::Options::default()).unwrap();
    let messages: Vec<_> = t.messages().collect();
    assert!(messages.len() > 60);
    for (e, m) in &messages {
        assert_eq!(m.error, None, "frame {}", e.frame);
    }
    let (first, reply) = messages[0];
    assert_eq!(first.frame, 2, "frame 71 of the original is frame 2 here");
    assert_eq!(first.dir, Some(trace::Role::Server));
    assert_eq!(
        reply.note.as_deref(),
        Some("Call not captured: results not decoded")
    );
    assert_eq!(reply.rpc.as_ref().unwrap().kind, "reply");
    assert!(messages[1..].iter().all(|(_, m)| m.note.is_none()));
}

#[test]
fn shuffled_frames_stay_bounded_and_never_invent_messages() {
    let original = frames(&fixture());
    let baseline = trace::trace_capture(&fixture(), &trace::Options::default()).unwrap();
    for seed in 1..=20u64 {
        let mut rng = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let mut shuffled = original.clone();
        // Fisher-Yates over a window of the capture: PSNs arrive in any order there.
        let (from, to) = (30, shuffled.len());
        for i in (from + 1..to).rev() {
            let j = from + rng.below(i - from + 1);
            shuffled.swap(i, j);
        }
        let t = trace::trace_capture(&write_pcap(&shuffled), &trace::Options::default())
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(t.frames as usize, shuffled.len(), "seed {seed}");
        assert!(
            t.messages().count() <= baseline.messages().count(),
            "seed {seed}: a shuffle cannot add messages"
        );
        let r = trace::render::render(&t, trace::render::Style::Normalised, trace::Level::Exchange);
        // Reordering shows up in the counts, and the lines hold no RC-level event.
        assert!(!r.transport.is_empty(), "seed {seed}");
        assert!(!r.lines.contains(" ! DUPLICATE") && !r.lines.contains(" ! OUT_OF_SEQUENCE"));
    }
}

/// A reader that gives at most `step` bytes per read (then `step` grows by 7), so that records
/// and pcapng blocks straddle the streaming window's refills at every kind of boundary.
struct Trickle<'a> {
    bytes: &'a [u8],
    step: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        self.step += 7;
        Ok(n)
    }
}

/// Capture bytes that note every read back: (offset, length).
struct Recording<'a> {
    bytes: &'a [u8],
    reads: std::cell::RefCell<Vec<(usize, usize)>>,
}

impl trace::CaptureBytes for Recording<'_> {
    fn read_at(&self, offset: usize, out: &mut [u8]) -> bool {
        self.reads.borrow_mut().push((offset, out.len()));
        self.bytes.read_at(offset, out)
    }
}

/// The rendered lines and status of a trace, or its error, for comparing two ways of reading.
fn outcome(t: Result<trace::Trace, trace::capture::CaptureError>) -> String {
    match t {
        Ok(t) => format!(
            "{}{}\n{}",
            trace::render::text(&t, trace::render::Style::Raw),
            trace::render::jsonl(&t),
            trace::capture_status(&t)
        ),
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn a_streamed_capture_gives_the_trace_of_the_capture_in_memory() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pcap");
    let options = trace::Options {
        check_icrc: true,
        ..Default::default()
    };
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    for name in ["nfs3-linux-6.1", "nfs41-linux-6.12"] {
        let pcap = std::fs::read(root.join(format!("{name}.pcap"))).unwrap();
        let f = frames(&pcap);
        // pcapng of the same frames, cut inside a block, cut inside a record, and garbage.
        let ng = write_pcapng(&f, 0xffff);
        inputs.push((
            format!("{name} pcapng cut"),
            ng[..ng.len() * 2 / 3].to_vec(),
        ));
        inputs.push((format!("{name} pcapng"), ng));
        inputs.push((format!("{name} cut"), pcap[..pcap.len() - 100].to_vec()));
        inputs.push((format!("{name} header"), pcap[..30].to_vec()));
        inputs.push((name.to_string(), pcap));
    }
    inputs.push(("garbage".into(), b"\xd4\xc3\xb2\xa1garbage".to_vec()));
    inputs.push(("short".into(), b"\x0a\x0d".to_vec()));
    for (name, bytes) in &inputs {
        let whole = outcome(trace::trace_capture(bytes, &options));
        for step in [1, 1000, 1 << 20] {
            let mut reader = Trickle { bytes, step };
            let streamed = outcome(trace::trace_capture_read(&mut reader, bytes, &options));
            assert_eq!(streamed, whole, "{name}, reads of {step} bytes and more");
        }
    }
    // Chunk data is read back from the same places however the stream was cut, and those
    // places hold what was captured there (the bytes handed back are the capture's own).
    let nfs41 = std::fs::read(root.join("nfs41-linux-6.12.pcap")).unwrap();
    let reads_with = |step: usize| {
        let back = Recording {
            bytes: &nfs41,
            reads: std::cell::RefCell::new(Vec::new()),
        };
        let mut reader = Trickle {
            bytes: &nfs41,
            step,
        };
        trace::trace_capture_read(&mut reader, &back, &options).unwrap();
        back.reads.into_inner()
    };
    let reads = reads_with(1 << 20);
    // Reply chunks and the like: WRITE data, which the decoder only counts, is not read back.
    assert!(reads.len() >= 10, "chunk data gathered: {}", reads.len());
    assert_eq!(reads_with(1), reads);
    assert_eq!(reads_with(4093), reads);
    // A reader that fails is an error naming the read, not a short trace.
    struct Failing;
    impl std::io::Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk on fire"))
        }
    }
    let err = trace::trace_capture_read(&mut Failing, &Vec::new(), &options).unwrap_err();
    assert_eq!(err.to_string(), "reading the capture: disk on fire");
}

/// What `EventWriter` writes for events streamed one by one (`stream_capture`, none kept).
fn streamed_output(
    bytes: &[u8],
    jsonl: bool,
    style: Style,
    level: trace::Level,
) -> (Vec<u8>, String) {
    let mut out = Vec::new();
    let status = {
        let mut writer = if jsonl {
            EventWriter::jsonl(&mut out)
        } else {
            EventWriter::text(style, level, &mut out)
        };
        let rest = trace::stream_capture(bytes, &trace::Options::default(), &mut |event| {
            writer.event(&event).unwrap();
            ControlFlow::Continue(())
        })
        .unwrap();
        assert!(rest.events.is_empty(), "a streamed trace keeps no events");
        writer.finish(&rest).unwrap()
    };
    (out, status.to_string())
}

#[test]
fn events_written_as_they_are_built_are_the_whole_traces_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pcap");
    let mut checked = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let whole = trace::trace_capture(&bytes, &trace::Options::default()).unwrap();
        for (style, level) in [
            (Style::Normalised, trace::Level::Exchange),
            (Style::Raw, trace::Level::Transport),
        ] {
            let mut expected = Vec::new();
            let status = trace::render::write_text(&whole, style, level, &mut expected).unwrap();
            let (streamed, streamed_status) = streamed_output(&bytes, false, style, level);
            assert_eq!(
                String::from_utf8_lossy(&streamed),
                String::from_utf8_lossy(&expected),
                "{}",
                path.display()
            );
            assert_eq!(streamed_status, status.to_string());
        }
        let mut expected = Vec::new();
        trace::render::write_jsonl(&whole, &mut expected).unwrap();
        let (streamed, status) =
            streamed_output(&bytes, true, Style::Normalised, trace::Level::Exchange);
        assert_eq!(streamed, expected, "{}", path.display());
        assert_eq!(status, trace::capture_status(&whole).to_string());
        checked += 1;
    }
    assert!(checked >= 5, "{checked} fixture captures");
}

#[test]
fn a_stopped_stream_builds_no_further_events() {
    let bytes = fixture();
    let mut seen = 0;
    trace::stream_capture(&bytes, &trace::Options::default(), &mut |_| {
        seen += 1;
        if seen == 3 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .unwrap();
    assert_eq!(seen, 3);
}
