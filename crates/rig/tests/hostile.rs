//! The `rig` binary on hostile inputs and outputs: devices and endless streams are refused or
//! bounded, a huge message decodes within 4 × its size + 64 MiB of address space, a closed or
//! full standard output ends the command cleanly (never a panic), and captures that are not
//! captures are errors with a non-zero exit.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn rig() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rig"))
}

fn run(args: &[&str]) -> Output {
    rig()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("rig runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rig-hostile-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An RDMA_MSG reply whose Write list holds `chunks` chunks of 4096 segments each (16 bytes a
/// segment): 255 chunks make a 16 MB message with a million segments.
fn write_segments_message(chunks: u32) -> Vec<u8> {
    let mut m = Vec::new();
    let word = |m: &mut Vec<u8>, v: u32| m.extend_from_slice(&v.to_be_bytes());
    for v in [1, 1, 32, 0, 0] {
        word(&mut m, v); // xid, vers, credits, RDMA_MSG, no Read list
    }
    for _ in 0..chunks {
        word(&mut m, 1);
        word(&mut m, 4096);
        for _ in 0..4096 {
            m.extend_from_slice(&0x1234u32.to_be_bytes());
            m.extend_from_slice(&4096u32.to_be_bytes());
            m.extend_from_slice(&0x1000u64.to_be_bytes());
        }
    }
    for v in [0, 0, 1, 1, 0, 0, 0, 0] {
        word(&mut m, v); // end of Write list, no Reply chunk, RPC reply SUCCESS
    }
    m
}

#[test]
fn devices_are_refused_by_every_reader() {
    let dir = temp_dir("devices");
    let log = dir.join("log.jsonl");
    let log = log.to_str().unwrap();
    let cases: [&[&str]; 5] = [
        &["trace", "show", "/dev/zero"],
        &["trace", "diff", "/dev/zero", "/dev/zero"],
        &["decode", "/dev/zero"],
        &[
            "fuzz-wire",
            "--target",
            "sim:linux-2026",
            "--replay",
            "/dev/zero",
            "--log",
            log,
        ],
        &[
            "fuzz-wire",
            "--target",
            "sim:linux-2026",
            "--cases",
            "1",
            "--known",
            "/dev/zero",
            "--log",
            log,
        ],
    ];
    for args in cases {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("is a character device"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_endless_stream_on_standard_input_stops_at_the_limit() {
    let mut child = rig()
        .args(["decode", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Writes until rig stops reading (then EPIPE): far more than the 16 MiB limit if it never did.
    let feeder = std::thread::spawn(move || {
        let block = [0u8; 64 << 10];
        let mut sent = 0u64;
        while sent < (256 << 20) && stdin.write_all(&block).is_ok() {
            sent += block.len() as u64;
        }
        sent
    });
    let out = child.wait_with_output().unwrap();
    let sent = feeder.join().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("larger than"), "{}", stderr(&out));
    assert!(sent < (256 << 20), "rig read {sent} bytes");
}

#[test]
fn a_million_segments_decode_within_four_times_the_input_plus_64_mib() {
    let dir = temp_dir("segments");
    let path = dir.join("million.bin");
    let message = write_segments_message(255);
    std::fs::write(&path, &message).unwrap();
    // The budget as an address-space limit: what it allocates can never exceed it.
    let limit_kib = (4 * message.len() as u64 + (64 << 20)) / 1024;
    for format in ["json", "text"] {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v {limit_kib} && exec \"$0\" decode --format {format} \"$1\""
            ))
            .arg(env!("CARGO_BIN_EXE_rig"))
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{format}: {}", stderr(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.len() < message.len() / 8,
            "{format}: {} bytes",
            text.len()
        );
        match format {
            "json" => {
                let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(
                    v["rpcrdma"]["segments_not_listed"],
                    255 * 4096 - 4096,
                    "{v}"
                );
            }
            _ => assert!(text.contains("segments not listed"), "{text}"),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_closed_standard_output_ends_quietly_with_141() {
    let dir = temp_dir("epipe");
    let path = dir.join("message.bin");
    std::fs::write(&path, write_segments_message(2)).unwrap();
    let mut child = rig()
        .arg("decode")
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_full_disk_is_a_clear_error_not_a_panic() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pcap/nfs3-linux-6.1.pcap");
    let out = rig()
        .args(["trace", "show"])
        .arg(fixture)
        .stdout(Stdio::from(full))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("writing standard output") && stderr(&out).contains("No space"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("panicked"));
}

#[test]
fn files_that_are_not_captures_are_errors() {
    let dir = temp_dir("captures");
    let garbage = dir.join("garbage.pcap");
    let mut bytes = vec![0xd4, 0xc3, 0xb2, 0xa1];
    bytes.extend_from_slice(b"this is not a capture at all, only text after a magic");
    std::fs::write(&garbage, bytes).unwrap();
    let other = dir.join("linktype.pcap");
    let mut bytes = trace::synth::null_calls(3, 100_003);
    bytes[20..24].copy_from_slice(&147u32.to_le_bytes());
    std::fs::write(&other, bytes).unwrap();
    for (path, says) in [(&garbage, "pcap version"), (&other, "link type 147")] {
        let out = run(&["trace", "show", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
        assert!(out.stdout.is_empty());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn names_from_the_capture_are_escaped_in_text_output() {
    let dir = temp_dir("escape");
    let path = dir.join("lookup.pcap");
    std::fs::write(
        &path,
        trace::synth::lookup_named(b"a\x1b]0;owned\x07\nc1 C FORGED"),
    )
    .unwrap();
    for args in [vec!["trace", "show"], vec!["trace", "show", "--raw"]] {
        let out = rig().args(&args).arg(&path).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(
            !text.lines().any(|l| l.starts_with("c1 C FORGED")),
            "{text}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
