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
                match time_tshark(&path) {
                    Some(ts) => println!(
                        "{name}: tshark -T fields {:.1} ms/capture; rig trace is {:.0}x faster",
                        ts.as_secs_f64() * 1e3,
                        ts.as_secs_f64() / per_iter.as_secs_f64()
                    ),
                    None => println!("{name}: tshark failed; no ratio"),
                }
            }
        }
    }
    if !tshark {
        println!("note: tshark not installed; no comparison");
    }
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
