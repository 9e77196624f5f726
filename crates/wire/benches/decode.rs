//! Decode throughput over the real Send payloads extracted from the fixture captures.
//!
//! Prints messages/s and MB/s for the transport header alone and for the full three-layer decode
//! (RPC-over-RDMA + RPC + NFS), measured side by side in the same run, and their ratio.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use wire::message::decode_message;
use wire::rpcrdma::Header;

fn load_messages() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pcap-messages");
    let mut out = Vec::new();
    for kernel in ["linux-6.1", "linux-7.2"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(kernel))
            .expect("fixtures/pcap-messages (run from a checkout)")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "bin"))
            .collect();
        paths.sort();
        out.extend(
            paths
                .iter()
                .map(|p| std::fs::read(p).expect("read fixture")),
        );
    }
    out
}

/// Run `f` over every message repeatedly for about `budget`; returns (messages, bytes, elapsed).
fn measure(
    messages: &[Vec<u8>],
    budget: Duration,
    f: impl Fn(&[u8]) -> bool,
) -> (u64, u64, Duration) {
    let bytes_per_pass: u64 = messages.iter().map(|m| m.len() as u64).sum();
    let (mut passes, start) = (0u64, Instant::now());
    while start.elapsed() < budget {
        for m in messages {
            assert!(f(black_box(m)), "a fixture message failed to decode");
        }
        passes += 1;
    }
    (
        passes * messages.len() as u64,
        passes * bytes_per_pass,
        start.elapsed(),
    )
}

fn main() {
    let messages = load_messages();
    let budget = Duration::from_millis(
        std::env::var("BENCH_MILLIS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2000),
    );
    println!(
        "wire decode bench: {} real Send payloads (Linux 6.1 + 7.2 captures)",
        messages.len()
    );
    let header = measure(&messages, budget, |m| Header::decode_prefix(m).is_ok());
    // Replies whose procedure is only known from the call still decode their RPC layer here.
    let full = measure(&messages, budget, |m| decode_message(m).is_ok());
    let mut rates = Vec::new();
    for (name, (n, bytes, elapsed)) in [("rpcrdma header", header), ("header+rpc+nfs", full)] {
        let secs = elapsed.as_secs_f64();
        let rate = n as f64 / secs;
        rates.push(rate);
        println!(
            "  {name:<16} {:>12.0} messages/s {:>9.1} MB/s  ({n} messages in {secs:.2} s)",
            rate,
            bytes as f64 / secs / 1e6
        );
    }
    println!(
        "  ratio header-only / full decode: {:.2}x",
        rates[0] / rates[1]
    );
}
