//! The relay's cost per frame: the frames of the 7.2 fixture capture, replayed many times from a
//! "client guest" socket to a "server guest" socket, once over a direct socket pair (what the
//! guests' wire was) and once through the relay (crate::wire, no rule installed: classify,
//! capture, forward), interleaved, best of each; frames/s of each and their ratio.
//!
//! Run with `cargo bench -p interop --bench wire_relay` (part of `just bench`).
//! `RIG_BENCH_FRAMES` sets the frames per run (default 200000), `RIG_BENCH_RUNS` the runs of each
//! (default 5).

use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::{Duration, Instant};

use interop::wire::WireRelay;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn fixture_frames() -> Vec<Vec<u8>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/pcap/nfs3-linux-7.2.pcap");
    let bytes = std::fs::read(path).expect("fixture capture");
    trace::capture::read_capture(&bytes)
        .expect("fixture parses")
        .frames
        .into_iter()
        .map(|f| f.data.into_owned())
        .collect()
}

/// Send `count` frames (cycling through `frames`) from `client` to `to`, receive them at
/// `server`; the frames/s from the first send to the last receive, and how many arrived.
fn run(
    frames: &[Vec<u8>],
    count: usize,
    client: &UnixDatagram,
    to: &Path,
    server: UnixDatagram,
) -> (f64, usize, UnixDatagram) {
    server
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("read timeout");
    let receiver = std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        let mut received = 0usize;
        while received < count {
            match server.recv(&mut buf) {
                Ok(_) => received += 1,
                Err(_) => break,
            }
        }
        (received, Instant::now(), server)
    });
    let start = Instant::now();
    for frame in frames.iter().cycle().take(count) {
        client.send_to(frame, to).expect("send");
    }
    let (received, end, server) = receiver.join().expect("receiver");
    let rate = received as f64 / (end - start).as_secs_f64();
    (rate, received, server)
}

fn main() {
    let count = env_number("RIG_BENCH_FRAMES", 200_000);
    let runs = env_number("RIG_BENCH_RUNS", 5);
    let frames = fixture_frames();
    let dir = tempfile::tempdir().expect("temp dir");
    let client_path = dir.path().join("cli.sock");
    let server_path = dir.path().join("srv.sock");
    let client = UnixDatagram::bind(&client_path).expect("bind client");
    let mut server = UnixDatagram::bind(&server_path).expect("bind server");
    let relay = WireRelay::start(
        dir.path(),
        (&server_path, &client_path),
        &dir.path().join("wire.pcapng"),
        interop::wire::IWARP_ACCEPT_FENCE,
    )
    .expect("start the relay");
    println!(
        "wire relay bench: {count} frames per run ({} distinct from the 7.2 fixture), {runs} runs each, interleaved",
        frames.len()
    );
    let (mut direct_best, mut relay_best) = (0f64, 0f64);
    let mut lost = 0usize;
    for _ in 0..runs {
        let (rate, received, back) = run(&frames, count, &client, &server_path, server);
        assert_eq!(received, count, "the direct pair lost frames");
        direct_best = direct_best.max(rate);
        let (rate, received, back) = run(&frames, count, &client, &relay.client_remote, back);
        lost += count - received;
        relay_best = relay_best.max(rate);
        server = back;
    }
    let report = relay.stop().expect("stop the relay");
    println!("direct socket pair: {direct_best:.0} frames/s (best of {runs})");
    println!("through the relay:  {relay_best:.0} frames/s (best of {runs}), {lost} frames lost");
    println!(
        "relay / direct: {:.2} (relay's capture {} bytes, {} forwarded)",
        relay_best / direct_best,
        report.capture_bytes,
        report.forwarded
    );
    drop(server);
}
