//! Architecture Invariant (ARCHITECTURE.md, cross-cutting "Determinism"): the sans-IO core —
//! wire, engine, sim, server, client, wirefuzz, trace, relay and verdict — reads no clock and opens no file
//! outside its tests; drivers (rig, rdma, interop) own time and I/O (the wire fuzzer's verbs
//! target is rig's `rdma_target`). One named exception: trace's `render::diff_until` checks a
//! deadline its caller hands in.

use std::path::{Path, PathBuf};

const CORE_CRATES: [&str; 9] = [
    "wire", "engine", "sim", "server", "client", "wirefuzz", "trace", "relay", "verdict",
];

/// A clock read or a file opened, by the calls that do it.
const IO_CALLS: [&str; 7] = [
    "Instant::now",
    "SystemTime::now",
    "std::fs::",
    "File::create",
    "File::open",
    "fs::read",
    "fs::write",
];

/// (file under crates/, the one call it may make, why).
const ALLOWED: [(&str, &str, &str); 1] = [(
    "trace/src/render.rs",
    "Instant::now",
    "diff_until's caller-given deadline",
)];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source before its first `#[cfg(test)]` (test modules sit at the end of a file).
fn non_test_part(source: &str) -> &str {
    source
        .find("#[cfg(test)]")
        .map_or(source, |at| &source[..at])
}

#[test]
fn the_core_crates_read_no_clock_and_open_no_file() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for name in CORE_CRATES {
        let mut files = Vec::new();
        rust_files(&crates.join(name).join("src"), &mut files);
        assert!(!files.is_empty(), "crates/{name}/src has no Rust files");
        for file in files {
            let relative = file
                .strip_prefix(&crates)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let source = std::fs::read_to_string(&file).unwrap();
            for (number, line) in non_test_part(&source).lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for call in IO_CALLS {
                    let allowed = ALLOWED
                        .iter()
                        .any(|(path, ok, _)| *path == relative && *ok == call);
                    if code.contains(call) && !allowed {
                        found.push(format!("crates/{relative}:{}: {}", number + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "clock or file I/O in the sans-IO core (move it to the driver):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_sees_a_clock_read() {
    let planted = "fn f() { let t = std::time::Instant::now(); }\n#[cfg(test)]\nmod tests {}";
    assert!(non_test_part(planted).contains("Instant::now"));
    let in_tests = "fn f() {}\n#[cfg(test)]\nmod tests { fn g() { std::fs::write(\"x\", \"\"); } }";
    assert!(!non_test_part(in_tests).contains("std::fs::"));
}
