//! Decode throughput over the fixture captures (MB/s of capture, RPC-over-RDMA messages/s), and
//! the same capture decoded by `tshark -T fields` in the same run, with the ratio.
//!
//! Run with `cargo bench -p rpcrdma-trace --bench decode` (the lead wires it into `just bench`).
//! `RIG_BENCH_ITERS` overrides the iteration count; `RIG_BENCH_E2E_RUNS` the runs of the
//! end-to-end comparison (default 7: `rig trace show` and tshark interleaved, best of each, so a
//! busy host slows both alike); `RIG_BENCH_KEEP=DIR` keeps the replicated captures in DIR. On
//! the replicated captures tshark runs twice, with the oracle's nine fields and with the three
//! the speed goal names. The tshark part is skipped, with a note, when tshark is not installed.

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
    // Larger captures, so tshark's start-up no longer dominates: a fixture repeated with every
    // PSN shifted per copy (ICRC recomputed), i.e. the same workload over many reconnections.
    // Two kinds: small NFSv3 messages (inline), and NFSv4.1 writing a 1 MiB file in 32 KiB
    // WRITEs pulled by RDMA Read (85 % of the bytes are RDMA Read payload), where getting bytes
    // in costs more than decoding.
    let e2e_runs: u32 = std::env::var("RIG_BENCH_E2E_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    for (name, copies, kind) in [
        ("nfs3-linux-6.1", 40, "small messages"),
        (
            "nfs41-linux-6.12",
            20,
            "large I/O: 32 KiB WRITEs by RDMA Read",
        ),
    ] {
        bench_replicated(&root, name, copies, kind, iters, tshark, e2e_runs);
    }
    if !tshark {
        println!("note: tshark not installed; no comparison");
    }
}

/// Decode `copies` copies of fixture `name` in memory and through `rig trace show --format
/// jsonl` (the release binary, when built: file read and output included), beside tshark (runs
/// interleaved, best of `e2e_runs` each).
fn bench_replicated(
    root: &Path,
    name: &str,
    copies: u32,
    kind: &str,
    iters: u32,
    tshark: bool,
    e2e_runs: u32,
) {
    let big = replicate(
        &std::fs::read(root.join(format!("fixtures/pcap/{name}.pcap"))).unwrap(),
        copies,
    );
    // RIG_BENCH_KEEP=DIR keeps the replicated capture there (for profiling `rig trace show`).
    let keep = std::env::var_os("RIG_BENCH_KEEP").map(std::path::PathBuf::from);
    let big_path = match &keep {
        Some(dir) => dir.join(format!("{name}-x{copies}.pcap")),
        None => std::env::temp_dir().join(format!(
            "rig-bench-{}-{name}-x{copies}.pcap",
            std::process::id()
        )),
    };
    std::fs::write(&big_path, &big).unwrap();
    let options = trace::Options {
        check_icrc: true,
        ..Default::default()
    };
    let t = trace::trace_capture(&big, &options).unwrap();
    let messages = t.messages().count();
    let errors = t.messages().filter(|(_, m)| m.error.is_some()).count();
    drop(t);
    let runs = (iters / 20).max(3);
    let start = Instant::now();
    for _ in 0..runs {
        std::hint::black_box(trace::trace_capture(&big, &options).unwrap());
    }
    let ours = start.elapsed() / runs;
    let label = format!("{name} x{copies} ({kind})");
    println!(
        "{label} [icrc]: {} bytes, {messages} messages ({errors} with errors), {:.2} ms/capture, {:.1} MB/s, {:.0} messages/s",
        big.len(),
        ours.as_secs_f64() * 1e3,
        big.len() as f64 / ours.as_secs_f64() / 1e6,
        messages as f64 / ours.as_secs_f64()
    );
    let rig = root.join("target/release/rig");
    let mut commands = Vec::new();
    if rig.is_file() {
        commands.push(rig_cli(&rig, &big_path));
    }
    if tshark {
        commands.push(tshark_fields(&big_path, &ORACLE_FIELDS));
        commands.push(tshark_fields(&big_path, &GOAL_FIELDS));
    }
    let best = best_interleaved(commands, e2e_runs);
    let (cli, ts) = match (rig.is_file(), tshark, best.as_deref()) {
        (true, true, Some(&[cli, ts9, ts3])) => (Some(cli), Some((ts9, ts3))),
        (true, false, Some(&[cli])) => (Some(cli), None),
        (false, true, Some(&[ts9, ts3])) => (None, Some((ts9, ts3))),
        _ => (None, None),
    };
    let mb_s = |t: Duration| big.len() as f64 / t.as_secs_f64() / 1e6;
    match cli {
        Some(cli) => println!(
            "{label}: rig trace show --format jsonl {:.1} ms end to end (best of {e2e_runs}), {:.1} MB/s",
            cli.as_secs_f64() * 1e3,
            mb_s(cli)
        ),
        None if !rig.is_file() => {
            println!("{label}: target/release/rig not built; no end-to-end time")
        }
        None => println!("{label}: rig trace show failed; no end-to-end time"),
    }
    if tshark {
        match ts {
            Some((ts9, ts3)) => {
                for (ts, fields) in [(ts9, ORACLE_FIELDS.len()), (ts3, GOAL_FIELDS.len())] {
                    println!(
                        "{label}: tshark -T fields ({fields} fields) {:.0} ms/capture (best of {e2e_runs}), {:.1} MB/s; rig trace is {:.1}x faster in memory{}",
                        ts.as_secs_f64() * 1e3,
                        mb_s(ts),
                        ts.as_secs_f64() / ours.as_secs_f64(),
                        cli.map(|cli| format!(
                            ", {:.1}x end to end",
                            ts.as_secs_f64() / cli.as_secs_f64()
                        ))
                        .unwrap_or_default()
                    );
                }
            }
            None => println!("{label}: tshark failed; no ratio"),
        }
    }
    if keep.is_none() {
        let _ = std::fs::remove_file(big_path);
    }
}

/// `rig trace show --format jsonl <path>`.
fn rig_cli(rig: &Path, path: &Path) -> Command {
    let mut command = Command::new(rig);
    command
        .args(["trace", "show", "--format", "jsonl"])
        .arg(path);
    command
}

/// The shortest of three runs of `command` (output discarded); `None` if one fails.
fn best_of_three(command: Command) -> Option<Duration> {
    best_interleaved(vec![command], 3).and_then(|best| best.first().copied())
}

/// The shortest of `runs` runs of each command (output discarded), the commands taking turns
/// so that a change in the host's load falls on all of them; `None` if a run fails.
fn best_interleaved(mut commands: Vec<Command>, runs: u32) -> Option<Vec<Duration>> {
    let mut best = vec![Duration::MAX; commands.len()];
    for command in &mut commands {
        command.stdout(Stdio::null()).stderr(Stdio::null());
    }
    for _ in 0..runs.max(1) {
        for (command, best) in commands.iter_mut().zip(&mut best) {
            let start = Instant::now();
            if !command.status().ok()?.success() {
                return None;
            }
            *best = (*best).min(start.elapsed());
        }
    }
    Some(best)
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
    best_of_three(tshark_fields(path, &ORACLE_FIELDS))
}

/// The fields the oracle records (`tests/oracle.rs`).
const ORACLE_FIELDS: [&str; 9] = [
    "frame.number",
    "rpcordma.xid",
    "rpcordma.flow_control",
    "rpcordma.msg_type",
    "rpcordma.reads_count",
    "rpcordma.writes_count",
    "rpcordma.reply_count",
    "rpc.program",
    "rpc.procedure",
];

/// The three fields the speed goal compares with (issue 14: frame number, xid, message type).
const GOAL_FIELDS: [&str; 3] = ["frame.number", "rpcordma.xid", "rpcordma.msg_type"];

/// tshark printing `fields` of every RPC-over-RDMA frame.
fn tshark_fields(path: &Path, fields: &[&str]) -> Command {
    let mut command = Command::new("tshark");
    command
        .arg("-r")
        .arg(path)
        .args(["-Y", "rpcordma", "-T", "fields"]);
    for field in fields {
        command.args(["-e", field]);
    }
    command
}
