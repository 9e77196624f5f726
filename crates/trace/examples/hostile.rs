//! Write the hostile captures of `trace::synth` to files, for measuring `rig trace` by hand:
//! `cargo run --release -p rpcrdma-trace --example hostile DIR`.
fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".into()));
    std::fs::create_dir_all(&dir).expect("create DIR");
    let write = |name: &str, bytes: Vec<u8>| {
        std::fs::write(dir.join(name), bytes).expect("write capture");
        eprintln!("{}", dir.join(name).display());
    };
    write(
        "shared-read-256k.pcap",
        trace::synth::shared_read(4000, 256 << 10),
    );
    write(
        "shared-read-1m.pcap",
        trace::synth::shared_read(4000, 1 << 20),
    );
    // 600k flows and 100k WRITEs: the sizes that once timed out (quadratic scans).
    for n in [20_000, 40_000, 80_000, 600_000] {
        write(&format!("flows-{n}.pcap"), trace::synth::many_flows(n));
    }
    for n in [10_000, 20_000, 100_000] {
        write(
            &format!("writes-{n}.pcap"),
            trace::synth::old_writes(n, 500, 4000),
        );
    }
    write(
        "nfs-null-100k.pcap",
        trace::synth::null_calls(100_000, 100_003),
    );
    // 1M tiny messages (142 MB): what each decoded message costs (`Options::drop_payloads`).
    write(
        "nfs-null-1m.pcap",
        trace::synth::null_calls(1_000_000, 100_003),
    );
    write(
        "mount-null-100k.pcap",
        trace::synth::null_calls(100_000, 100_005),
    );
    write(
        "lookup-escape.pcap",
        trace::synth::lookup_named(b"a\x1b[31mred\x07\nc1 C FORGED"),
    );
    let mut garbage = vec![0xd4, 0xc3, 0xb2, 0xa1];
    garbage.extend_from_slice(b"this is not a capture at all, only text after a magic");
    write("magic-garbage.pcap", garbage);
    let mut other = trace::synth::null_calls(3, 100_003);
    other[20..24].copy_from_slice(&147u32.to_le_bytes());
    write("linktype-147.pcap", other);
}
