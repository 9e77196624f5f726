//! Decode throughput over the fixture captures (MB/s of capture, RPC-over-RDMA messages/s), and
//! the same capture decoded by `tshark -T fields` in the same run, with the ratio.
//!
//! Run with `cargo bench -p rpcrdma-trace --bench decode` (the lead wires it into `just bench`).
//! `RIG_BENCH_ITERS` overrides the iteration count. The tshark part is skipped, with a note, when
//! tshark is not installed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FIXTURES: [&str; 2] = ["nfs3-linux-6.1", "nfs3-linux-7.2"];

fn main() {
    let iters: u32 = std::env::var("RIG_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tshark = Command::new("tshark")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    println!("trace decode bench: {iters} iterations per capture");
    for name in FIXTURES {
        let path = root.join(format!("fixtures/pcap/{name}.pcap"));
        let bytes = std::fs::read(&path).expect("fixture capture");
        for (label, check_icrc) in [("icrc", true), ("no-icrc", false)] {
            let options = trace::Options {
                check_icrc,
                ..Default::default()
            };
            let mut messages = 0usize;
            // Warm-up, and the message count.
            let t = trace::trace_capture(&bytes, &options).expect("decode");
            let per_run = t.messages().count();
            let start = Instant::now();
            for _ in 0..iters {
                let t =
                    trace::trace_capture(std::hint::black_box(&bytes), &options).expect("decode");
                messages += t.messages().count();
            }
            let elapsed = start.elapsed();
            let per_iter = elapsed / iters;
            let mb_s = bytes.len() as f64 * f64::from(iters) / elapsed.as_secs_f64() / 1e6;
            let msg_s = messages as f64 / elapsed.as_secs_f64();
            println!(
                "{name} [{label}]: {} bytes, {per_run} messages, {:.3} ms/capture, {mb_s:.1} MB/s, {msg_s:.0} messages/s",
                bytes.len(),
                per_iter.as_secs_f64() * 1e3
            );
            if tshark && check_icrc {
                // tshark's fixed start-up cost dominates on captures this small, so also time it
                // on a one-frame capture and report the ratio net of start-up.
                let one = one_frame_capture(&bytes, name);
                match (time_tshark(&path), one.as_deref().and_then(time_tshark)) {
                    (Some(ts), Some(startup)) => {
                        let net = ts.saturating_sub(startup);
                        let net_text = if net * 10 < startup {
                            "start-up dominates; see the replicated capture below".to_string()
                        } else {
                            format!(
                                "{:.0}x net of start-up",
                                net.as_secs_f64() / per_iter.as_secs_f64()
                            )
                        };
                        println!(
                            "{name}: tshark -T fields {:.1} ms/capture (one-frame start-up {:.1} ms); rig trace is {:.0}x faster end to end ({net_text})",
                            ts.as_secs_f64() * 1e3,
                            startup.as_secs_f64() * 1e3,
                            ts.as_secs_f64() / per_iter.as_secs_f64(),
                        );
                    }
                    _ => println!("{name}: tshark failed; no ratio"),
                }
                if let Some(one) = one {
                    let _ = std::fs::remove_file(one);
                }
            }
        }
    }
    // A larger capture, so tshark's start-up no longer dominates: the 6.1 capture repeated with
    // every PSN shifted per copy (ICRC recomputed), i.e. the same workload over 40 reconnections.
    let copies = 40;
    let big = replicate(
        &std::fs::read(root.join("fixtures/pcap/nfs3-linux-6.1.pcap")).unwrap(),
        copies,
    );
    let big_path =
        std::env::temp_dir().join(format!("rig-bench-{}-x{copies}.pcap", std::process::id()));
    std::fs::write(&big_path, &big).unwrap();
    let options = trace::Options {
        check_icrc: true,
        ..Default::default()
    };
    let t = trace::trace_capture(&big, &options).unwrap();
    let messages = t.messages().count();
    let errors = t.messages().filter(|(_, m)| m.error.is_some()).count();
    let runs = (iters / 20).max(3);
    let start = Instant::now();
    for _ in 0..runs {
        std::hint::black_box(trace::trace_capture(&big, &options).unwrap());
    }
    let ours = start.elapsed() / runs;
    println!(
        "6.1 x{copies} [icrc]: {} bytes, {messages} messages ({errors} with errors), {:.2} ms/capture, {:.1} MB/s, {:.0} messages/s",
        big.len(),
        ours.as_secs_f64() * 1e3,
        big.len() as f64 / ours.as_secs_f64() / 1e6,
        messages as f64 / ours.as_secs_f64()
    );
    if tshark {
        match time_tshark(&big_path) {
            Some(ts) => println!(
                "6.1 x{copies}: tshark -T fields {:.0} ms/capture; rig trace is {:.0}x faster",
                ts.as_secs_f64() * 1e3,
                ts.as_secs_f64() / ours.as_secs_f64()
            ),
            None => println!("6.1 x{copies}: tshark failed; no ratio"),
        }
    } else {
        println!("note: tshark not installed; no comparison");
    }
    let _ = std::fs::remove_file(big_path);
}

/// `copies` back-to-back copies of a RoCEv2 pcap, PSNs shifted by 0x20000 per copy and the ICRC
/// recomputed, times shifted so frames stay in order.
fn replicate(bytes: &[u8], copies: u32) -> Vec<u8> {
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    let capture = trace::capture::read_capture(bytes).unwrap();
    let span =
        capture.frames.last().unwrap().time - capture.frames[0].time + Duration::from_secs(1);
    let header = PcapHeader {
        datalink: pcap_file::DataLink::ETHERNET,
        ..Default::default()
    };
    let mut w = PcapWriter::with_header(Vec::new(), header).unwrap();
    for k in 0..copies {
        for f in &capture.frames {
            let mut data = f.data.to_vec();
            let (offset, len) = {
                let p = trace::link::roce_packet(f.link, &data).unwrap();
                (
                    p.transport.as_ptr() as usize - data.as_ptr() as usize,
                    p.transport.len(),
                )
            };
            let psn_at = offset + 9;
            let psn = u32::from_be_bytes([0, data[psn_at], data[psn_at + 1], data[psn_at + 2]]);
            let shifted = (psn + k * 0x20000) & 0xff_ffff;
            data[psn_at..psn_at + 3].copy_from_slice(&shifted.to_be_bytes()[1..]);
            let icrc = {
                let p = trace::link::roce_packet(f.link, &data).unwrap();
                trace::icrc::compute(p.icrc_prefix, p.transport).unwrap()
            };
            data[offset + len - 4..offset + len].copy_from_slice(&icrc.to_le_bytes());
            let time = f.time + span * k;
            w.write_packet(&PcapPacket::new(time, data.len() as u32, &data))
                .unwrap();
        }
    }
    w.into_writer()
}

/// The pcap header and first record of `bytes`, written to a temporary file.
fn one_frame_capture(bytes: &[u8], name: &str) -> Option<std::path::PathBuf> {
    let incl = bytes.get(24 + 8..24 + 12)?;
    let incl = u32::from_le_bytes([incl[0], incl[1], incl[2], incl[3]]) as usize;
    let end = 24usize.checked_add(16)?.checked_add(incl)?;
    let path = std::env::temp_dir().join(format!("rig-bench-{}-{name}.pcap", std::process::id()));
    std::fs::write(&path, bytes.get(..end)?).ok()?;
    Some(path)
}

/// Best of three runs of tshark extracting the same fields the oracle records.
fn time_tshark(path: &Path) -> Option<Duration> {
    let mut best: Option<Duration> = None;
    for _ in 0..3 {
        let start = Instant::now();
        let status = Command::new("tshark")
            .arg("-r")
            .arg(path)
            .args(["-Y", "rpcordma", "-T", "fields"])
            .args([
                "-e",
                "frame.number",
                "-e",
                "rpcordma.xid",
                "-e",
                "rpcordma.flow_control",
                "-e",
                "rpcordma.msg_type",
                "-e",
                "rpcordma.reads_count",
                "-e",
                "rpcordma.writes_count",
                "-e",
                "rpcordma.reply_count",
                "-e",
                "rpc.program",
                "-e",
                "rpc.procedure",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .ok()?;
        if !status.success() {
            return None;
        }
        let took = start.elapsed();
        best = Some(best.map_or(took, |b| b.min(took)));
    }
    best
}
