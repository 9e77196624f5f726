//! `kill -9` of `interop` in the middle of a run leaves no qemu behind: the guests die with the
//! harness (process.rs's guardian groups), not only when it exits cleanly.
//!
//! Needs the VM images and boots a guest pair, so it is gated: `RIG_VM_TESTS=1`, which
//! `just interop` sets when it runs this test after the suites. Without it the test says so and
//! checks nothing.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Pids of the processes whose command line mentions `marker` (a path only this run uses).
fn processes_mentioning(marker: &str) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        // A zombie has exited; it holds no guest.
        let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = state
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'));
        if cmdline.contains(marker) && !zombie {
            found.push((pid, cmdline));
        }
    }
    found
}

#[test]
fn kill_9_of_interop_mid_run_leaves_no_qemu() {
    if std::env::var_os("RIG_VM_TESTS").is_none_or(|v| v != "1") {
        println!("note: gated VM test: RIG_VM_TESTS=1 boots a guest pair (just interop runs it)");
        return;
    }
    let out = tempfile::Builder::new()
        .prefix("rig-kill-test-")
        .tempdir()
        .unwrap();
    let marker = out.path().display().to_string();
    let mut interop = Command::new(env!("CARGO_BIN_EXE_interop"))
        .args([
            "run",
            "--suite",
            "smoke",
            "--kernel",
            "linux-6.12",
            "--case",
            "rping",
        ])
        .env("RIG_INTEROP_OUT", out.path())
        // Progress lines ("both guests up") go to stderr.
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Lines come through a thread so that waiting for "both guests up" has a deadline.
    let (lines, receive) = mpsc::channel();
    let progress = interop.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(progress).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let started = Instant::now();
    let mut up = false;
    while started.elapsed() < Duration::from_secs(600) {
        match receive.recv_timeout(Duration::from_secs(5)) {
            Ok(line) if line.contains("both guests up") => {
                up = true;
                break;
            }
            Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let qemus: Vec<_> = processes_mentioning(&marker)
        .into_iter()
        .filter(|(_, cmdline)| cmdline.starts_with("qemu-system"))
        .collect();
    // SIGKILL: no signal handler, no Drop and no cleanup runs in interop.
    kill(
        Pid::from_raw(i32::try_from(interop.id()).unwrap()),
        Signal::SIGKILL,
    )
    .unwrap();
    let _ = interop.wait();
    assert!(up, "the guests did not come up within 600 s");
    assert_eq!(qemus.len(), 2, "two guests run before the kill: {qemus:?}");
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut left = processes_mentioning(&marker);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        left = processes_mentioning(&marker);
    }
    if !left.is_empty() {
        // Do not leak them into the rest of the run, then fail.
        for (pid, _) in &left {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
    }
    assert!(
        left.is_empty(),
        "processes of the killed run still alive 15 s after kill -9: {left:?}"
    );
    assert!(Path::new(&marker).exists());
}
