//! Child processes in their own process groups, bounded by timeouts and killed on every exit path.
//!
//! Architecture Invariant: every long-running child (qemu, debootstrap, apt-get) is started through
//! [`GroupChild::spawn`], which puts it in a fresh process group and records the group in a global
//! registry. The group is killed when the handle drops, when a timeout expires, and from the
//! SIGINT/SIGTERM/SIGHUP handler installed by [`install_signal_handler`], so no qemu outlives us.

use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// Process groups we started and have not yet killed.
static LIVE_GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn registry() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    // A panic while holding the lock must not stop the cleanup path: take the data anyway.
    LIVE_GROUPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// SIGKILL one process group; a group that is already gone is not an error.
fn kill_group_id(pgid: i32) {
    match killpg(Pid::from_raw(pgid), Signal::SIGKILL) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(err) => eprintln!("interop: killpg({pgid}) failed: {err}"),
    }
}

/// Kill every process group still registered. Called from the signal handler and at exit.
pub fn kill_all_groups() -> usize {
    let groups: Vec<i32> = std::mem::take(&mut *registry()).into_iter().collect();
    for pgid in &groups {
        kill_group_id(*pgid);
    }
    groups.len()
}

/// Number of process groups currently registered (for tests and diagnostics).
pub fn live_group_count() -> usize {
    registry().len()
}

/// Install a SIGINT/SIGTERM/SIGHUP handler thread that kills all registered process groups and
/// exits with 128+signal. Signal-safe: the handler only writes to a self-pipe; the work happens on
/// an ordinary thread.
pub fn install_signal_handler() -> Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .context("installing signal handler")?;
    std::thread::Builder::new()
        .name("interop-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                let killed = kill_all_groups();
                eprintln!("\ninterop: caught signal {signal}, killed {killed} process group(s)");
                std::process::exit(128 + signal);
            }
        })
        .context("spawning signal thread")?;
    Ok(())
}

/// How a bounded wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// The child exited by itself.
    Exited(ExitStatus),
    /// The deadline passed; the whole group has been killed.
    TimedOut,
}

/// A child that leads its own process group; the group dies with this handle.
#[derive(Debug)]
pub struct GroupChild {
    name: String,
    child: Child,
    pgid: i32,
    reaped: Option<ExitStatus>,
}

impl GroupChild {
    /// Spawn `command` as the leader of a new process group and register the group.
    pub fn spawn(name: &str, mut command: Command) -> Result<Self> {
        command.process_group(0);
        let child = command
            .spawn()
            .with_context(|| format!("starting {name}: {command:?}"))?;
        let pgid = i32::try_from(child.id()).context("pid out of range")?;
        registry().insert(pgid);
        Ok(GroupChild {
            name: name.to_owned(),
            child,
            pgid,
            reaped: None,
        })
    }

    /// The child's pid (which is also its process group id).
    pub fn pid(&self) -> i32 {
        self.pgid
    }

    /// The label given at spawn time.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Non-blocking: `Some(status)` once the group leader has exited. Leftover members of the
    /// group are killed right away, before the group id could ever be reused.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        if let Some(status) = self.reaped {
            return Ok(Some(status));
        }
        let status = self
            .child
            .try_wait()
            .with_context(|| format!("waiting for {}", self.name))?;
        if let Some(status) = status {
            self.reaped = Some(status);
            self.kill_group();
        }
        Ok(status)
    }

    /// Wait for the child to exit, at most `timeout`; on timeout kill the whole group.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Result<WaitOutcome> {
        let mut exit = None;
        let exited = wait_until(timeout, Duration::from_millis(50), || {
            exit = self.try_wait()?;
            Ok(exit.is_some())
        })?;
        match (exited, exit) {
            (true, Some(status)) => Ok(WaitOutcome::Exited(status)),
            _ => {
                self.kill_group();
                Ok(WaitOutcome::TimedOut)
            }
        }
    }

    /// SIGKILL the whole group, reap the leader and forget the group.
    pub fn kill_group(&mut self) {
        if registry().remove(&self.pgid) {
            kill_group_id(self.pgid);
        }
        if self.reaped.is_none() {
            // After SIGKILL the leader exits promptly; reap it so no zombie remains.
            if let Ok(status) = self.child.wait() {
                self.reaped = Some(status);
            }
        }
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// Poll `condition` every `poll` until it returns true (→ `Ok(true)`) or `timeout` passes
/// (→ `Ok(false)`). The condition is always evaluated at least once.
pub fn wait_until(
    timeout: Duration,
    poll: Duration,
    mut condition: impl FnMut() -> Result<bool>,
) -> Result<bool> {
    let deadline = Instant::now() + timeout;
    loop {
        if condition()? {
            return Ok(true);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        std::thread::sleep(poll.min(deadline - now));
    }
}

/// Run `command` to completion in its own process group with stdout+stderr appended to `log`;
/// fail on non-zero exit or after `timeout` (the group is killed). Errors carry the log's tail.
pub fn run_logged(name: &str, command: Command, log: &Path, timeout: Duration) -> Result<()> {
    run_logged_with_heartbeat(name, command, log, timeout, timeout, |_| {})
}

/// [`run_logged`], calling `heartbeat(elapsed)` every `every` while the command runs (a kernel
/// build prints where it is, so a long phase is never silent).
pub fn run_logged_with_heartbeat(
    name: &str,
    mut command: Command,
    log: &Path,
    timeout: Duration,
    every: Duration,
    mut heartbeat: impl FnMut(Duration),
) -> Result<()> {
    let out = File::options()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    command
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    let started = std::time::Instant::now();
    let mut last_beat = started;
    let mut child = GroupChild::spawn(name, command)?;
    let outcome = loop {
        if let Some(status) = child.try_wait()? {
            break WaitOutcome::Exited(status);
        }
        if started.elapsed() >= timeout {
            child.kill_group();
            break WaitOutcome::TimedOut;
        }
        if last_beat.elapsed() >= every {
            last_beat = std::time::Instant::now();
            heartbeat(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    match outcome {
        WaitOutcome::Exited(status) if status.success() => Ok(()),
        WaitOutcome::Exited(status) => {
            bail!(
                "{name} failed ({status}); log {}:\n{}",
                log.display(),
                tail(log, 15)
            )
        }
        WaitOutcome::TimedOut => bail!(
            "{name} timed out after {}s and was killed; log {}:\n{}",
            timeout.as_secs(),
            log.display(),
            tail(log, 15)
        ),
    }
}

/// The last `lines` lines of a text file (empty if unreadable).
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `kill_all_groups` reaches every registered group, so these tests must not overlap.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn process_alive(pid: i32) -> bool {
        // A zombie has exited; only count processes that can still run.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z')),
            Err(_) => false,
        }
    }

    /// A shell that leaves a background grandchild in its group and prints the grandchild's pid.
    fn spawn_sleeper_group() -> (GroupChild, i32) {
        let mut command = Command::new("sh");
        command
            .args(["-c", "sleep 300 & echo $!; sleep 300"])
            .stdout(Stdio::piped());
        let mut child = GroupChild::spawn("sleeper", command).unwrap();
        let stdout = child.child.stdout.take().unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
        (child, line.trim().parse().unwrap())
    }

    #[test]
    fn timeout_kills_leader_and_grandchild() {
        let _serial = serial();
        let (mut child, grandchild) = spawn_sleeper_group();
        let leader = child.pid();
        assert!(process_alive(grandchild));
        let outcome = child.wait_timeout(Duration::from_millis(200)).unwrap();
        assert_eq!(outcome, WaitOutcome::TimedOut);
        assert!(!process_alive(leader));
        let gone = wait_until(Duration::from_secs(5), Duration::from_millis(20), || {
            Ok(!process_alive(grandchild))
        })
        .unwrap();
        assert!(gone, "grandchild {grandchild} survived the group kill");
    }

    #[test]
    fn drop_kills_the_group() {
        let _serial = serial();
        let (child, grandchild) = spawn_sleeper_group();
        drop(child);
        let gone = wait_until(Duration::from_secs(5), Duration::from_millis(20), || {
            Ok(!process_alive(grandchild))
        })
        .unwrap();
        assert!(gone);
    }

    #[test]
    fn kill_all_groups_reaches_registered_children() {
        let _serial = serial();
        let (mut child, grandchild) = spawn_sleeper_group();
        assert!(live_group_count() >= 1);
        assert!(kill_all_groups() >= 1);
        let gone = wait_until(Duration::from_secs(5), Duration::from_millis(20), || {
            Ok(!process_alive(grandchild) && child.try_wait()?.is_some())
        })
        .unwrap();
        assert!(gone);
    }

    #[test]
    fn quick_child_exits_with_its_status() {
        let _serial = serial();
        let mut command = Command::new("sh");
        command.args(["-c", "exit 3"]);
        let mut child = GroupChild::spawn("exit3", command).unwrap();
        match child.wait_timeout(Duration::from_secs(10)).unwrap() {
            WaitOutcome::Exited(status) => assert_eq!(status.code(), Some(3)),
            WaitOutcome::TimedOut => panic!("sh -c 'exit 3' timed out"),
        }
    }

    #[test]
    fn run_logged_reports_failure_with_log_tail() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("step.log");
        let mut command = Command::new("sh");
        command.args(["-c", "echo first-line; echo boom >&2; exit 1"]);
        let err = run_logged("failing", command, &log, Duration::from_secs(10)).unwrap_err();
        let message = format!("{err:#}");
        assert!(message.contains("boom"), "{message}");
        assert!(message.contains("failing failed"), "{message}");
    }

    #[test]
    fn run_logged_times_out() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("slow.log");
        let mut command = Command::new("sleep");
        command.arg("30");
        let started = Instant::now();
        let err = run_logged("slow", command, &log, Duration::from_millis(300)).unwrap_err();
        assert!(format!("{err}").contains("timed out"));
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn wait_until_evaluates_once_even_with_zero_timeout() {
        let _serial = serial();
        let mut calls = 0;
        let met = wait_until(Duration::ZERO, Duration::from_millis(1), || {
            calls += 1;
            Ok(true)
        })
        .unwrap();
        assert!(met);
        assert_eq!(calls, 1);
    }
}
