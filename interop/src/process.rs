//! Child processes in their own process groups, bounded by timeouts and killed on every exit path.
//!
//! Architecture Invariant: every long-running child (qemu, debootstrap, apt-get, tshark) is
//! started through [`GroupChild::spawn`] (or [`run_logged`] / [`output_with_timeout`] on top of
//! it), which puts it in a fresh process group and records the group in a global registry. The
//! group is killed when the handle drops, when a timeout expires, from the SIGINT/SIGTERM/SIGHUP
//! handler installed by [`install_signal_handler`], and when `interop` itself dies by SIGKILL.
//!
//! Dying with the parent: each group is led by a *guardian*, `sh -c 'read _; kill -KILL 0'`,
//! whose stdin is the read end of a pipe whose only write end `interop` holds (close-on-exec, so
//! no other child inherits it). The child joins the guardian's group. When `interop` exits for
//! any reason, SIGKILL included, the kernel closes the write end, the guardian's `read` sees end
//! of file, and it kills its whole group: the child and everything the child started. This is
//! `setpriv --pdeathsig KILL` without its two catches: a parent-death signal fires when the
//! *thread* that forked exits (the harness spawns from worker threads), and it reaches only the
//! direct child, not the helpers qemu or a shell start. No `pre_exec`, no `unsafe`.
//!
//! The start/kill race: [`shut_down`] marks the registry closed and kills every group while
//! holding the registry lock, and [`GroupChild::spawn`] spawns and registers while holding the
//! same lock and refuses once it is closed, so no child can start unseen after the handler ran.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// Process groups we started and have not yet killed, and whether new ones may start.
struct Registry {
    groups: BTreeSet<i32>,
    closed: bool,
}

static LIVE_GROUPS: Mutex<Registry> = Mutex::new(Registry {
    groups: BTreeSet::new(),
    closed: false,
});

fn registry() -> std::sync::MutexGuard<'static, Registry> {
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

/// Kill every process group still registered. Called at exit and by [`shut_down`].
pub fn kill_all_groups() -> usize {
    let mut registry = registry();
    let groups: Vec<i32> = std::mem::take(&mut registry.groups).into_iter().collect();
    for pgid in &groups {
        kill_group_id(*pgid);
    }
    groups.len()
}

/// Refuse every later [`GroupChild::spawn`] and kill every registered group, atomically: a
/// spawn racing with this either finished (its group is killed here) or fails.
pub fn shut_down() -> usize {
    let mut registry = registry();
    registry.closed = true;
    let groups: Vec<i32> = std::mem::take(&mut registry.groups).into_iter().collect();
    for pgid in &groups {
        kill_group_id(*pgid);
    }
    groups.len()
}

/// Let children start again after [`shut_down`] (tests share one process).
#[cfg(test)]
fn reopen() {
    registry().closed = false;
}

/// Number of process groups currently registered (for tests and diagnostics).
pub fn live_group_count() -> usize {
    registry().groups.len()
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
                let killed = shut_down();
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

/// A child in its own process group, led by a guardian that kills the group when `interop` dies
/// (see the module docs); the group dies with this handle.
#[derive(Debug)]
pub struct GroupChild {
    name: String,
    child: Child,
    /// The group's leader: `sh` waiting for end of file on `lifeline`'s pipe.
    guardian: Child,
    /// The write end of the guardian's pipe, held only to be closed: when this process ends
    /// (exit, SIGKILL) the kernel closes it and the guardian fires.
    _lifeline: std::io::PipeWriter,
    pgid: i32,
    reaped: Option<ExitStatus>,
}

/// What the guardian runs: wait for end of file on stdin, then kill its own process group.
const GUARDIAN_SCRIPT: &str = "read _lifeline; kill -KILL 0";

impl GroupChild {
    /// Spawn `command` in a new process group led by a guardian, and register the group.
    /// Refused once [`shut_down`] ran.
    pub fn spawn(name: &str, mut command: Command) -> Result<Self> {
        // Held across both spawns and the registration: see "the start/kill race".
        let mut registry = registry();
        if registry.closed {
            bail!("not starting {name}: interop is shutting down");
        }
        // std's pipe is close-on-exec on both ends: only the guardian gets the read end (as its
        // stdin), and no child inherits the write end.
        let (lifeline_rx, lifeline) = std::io::pipe().context("creating the guardian's pipe")?;
        let mut guardian = Command::new("sh");
        guardian
            .args(["-c", GUARDIAN_SCRIPT])
            .stdin(Stdio::from(lifeline_rx))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let mut guardian = guardian
            .spawn()
            .with_context(|| format!("starting the guardian of {name}"))?;
        let pgid = match i32::try_from(guardian.id()) {
            Ok(pgid) => pgid,
            Err(_) => {
                let _ = guardian.kill();
                let _ = guardian.wait();
                bail!("guardian pid out of range");
            }
        };
        command.process_group(pgid);
        let child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                kill_group_id(pgid);
                let _ = guardian.wait();
                return Err(e).with_context(|| format!("starting {name}: {command:?}"));
            }
        };
        registry.groups.insert(pgid);
        Ok(GroupChild {
            name: name.to_owned(),
            child,
            guardian,
            _lifeline: lifeline,
            pgid,
            reaped: None,
        })
    }

    /// The child's pid.
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap_or(-1)
    }

    /// The process group (the guardian's pid).
    pub fn pgid(&self) -> i32 {
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

    /// SIGKILL the whole group (guardian included), reap the child and the guardian and forget
    /// the group.
    pub fn kill_group(&mut self) {
        if registry().groups.remove(&self.pgid) {
            kill_group_id(self.pgid);
        }
        if self.reaped.is_none() {
            // After SIGKILL the child exits promptly; reap it so no zombie remains.
            if let Ok(status) = self.child.wait() {
                self.reaped = Some(status);
            }
        }
        // The guardian got the same SIGKILL (or is gone already): reap it too. Its group id
        // cannot be reused before this, since the guardian's pid is the group's.
        if matches!(self.guardian.try_wait(), Ok(None)) {
            let _ = self.guardian.kill();
        }
        let _ = self.guardian.wait();
    }

    /// The child's standard output, if it was piped.
    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.stdout.take()
    }

    /// The child's standard error, if it was piped.
    pub fn take_stderr(&mut self) -> Option<std::process::ChildStderr> {
        self.child.stderr.take()
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// Poll `condition` until it returns true (→ `Ok(true)`) or `timeout` passes (→ `Ok(false)`).
/// The condition is always evaluated at least once. The interval starts at 1 ms and doubles up
/// to `poll`: a helper that exits within milliseconds (a `rig trace show` per snapshot, 196 of
/// them after a run) is not charged a whole `poll` each, and a long wait still polls at `poll`.
pub fn wait_until(
    timeout: Duration,
    poll: Duration,
    mut condition: impl FnMut() -> Result<bool>,
) -> Result<bool> {
    let deadline = Instant::now() + timeout;
    let mut interval = Duration::from_millis(1).min(poll);
    loop {
        if condition()? {
            return Ok(true);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        std::thread::sleep(interval.min(deadline - now));
        interval = (interval * 2).min(poll);
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

/// Largest output kept per stream by [`output_with_timeout`]; the rest is read and dropped.
pub const MAX_CAPTURED_OUTPUT: usize = 16 << 20;

/// Run `command` (tshark, a probe) to completion in its own guarded process group, with its
/// stdout and stderr captured (each at most [`MAX_CAPTURED_OUTPUT`] bytes) and stdin null; after
/// `timeout` the group is killed and this is an error naming the command. A non-zero exit is
/// not an error here: the status is in the [`Output`].
pub fn output_with_timeout(name: &str, mut command: Command, timeout: Duration) -> Result<Output> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = GroupChild::spawn(name, command)?;
    let drain = |stream: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            if let Some(mut stream) = stream {
                let _ = (&mut stream)
                    .take(MAX_CAPTURED_OUTPUT as u64)
                    .read_to_end(&mut kept);
                // Keep reading (and dropping) so the child never blocks on a full pipe.
                let _ = std::io::copy(&mut stream, &mut std::io::sink());
            }
            kept
        })
    };
    let stdout = drain(
        child
            .take_stdout()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .take_stderr()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let outcome = child.wait_timeout(timeout)?;
    // The group is dead either way now (exited, or killed on timeout): the pipes close.
    child.kill_group();
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    match outcome {
        WaitOutcome::Exited(status) => Ok(Output {
            status,
            stdout,
            stderr,
        }),
        WaitOutcome::TimedOut => bail!(
            "{name} timed out after {:.1}s and was killed",
            timeout.as_secs_f64()
        ),
    }
}

/// How much of a file's end [`tail`] reads: logs and consoles can be megabytes, the lines a
/// message quotes are at the end.
const TAIL_BYTES: u64 = 256 << 10;

/// The last `max_bytes` bytes of `path` (lossy UTF-8), read without loading the rest.
pub fn read_tail(path: &Path, max_bytes: u64) -> std::io::Result<String> {
    use std::io::{Seek, SeekFrom};
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(max_bytes)))?;
    let mut bytes = Vec::new();
    file.take(max_bytes).read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The last `lines` lines of a text file (empty if unreadable), from its last 256 KiB.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = read_tail(path, TAIL_BYTES).unwrap_or_default();
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

    /// Env var under which [`alone`] runs a test's body in the re-executed test binary.
    const ALONE_ENV: &str = "INTEROP_PROCESS_TEST_ALONE";

    /// Run `body` in a process of its own: this test binary again, running only the test
    /// `name`. A test that acts on every registered group (`kill_all_groups`, `shut_down`) would
    /// otherwise reach the children of tests running beside it in this process (a kernel-build
    /// test's `find` was killed so, now and then).
    fn alone(name: &str, body: impl FnOnce()) {
        if std::env::var_os(ALONE_ENV).is_some() {
            body();
            return;
        }
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--test-threads=1"])
            .env(ALONE_ENV, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{name} in its own process: {}\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn kill_all_groups_reaches_registered_children() {
        alone(
            "process::tests::kill_all_groups_reaches_registered_children",
            || {
                let (mut child, grandchild) = spawn_sleeper_group();
                assert!(live_group_count() >= 1);
                assert!(kill_all_groups() >= 1);
                let gone = wait_until(Duration::from_secs(5), Duration::from_millis(20), || {
                    Ok(!process_alive(grandchild) && child.try_wait()?.is_some())
                })
                .unwrap();
                assert!(gone);
            },
        );
    }

    /// Env var that turns [`helper_or_guarded_sleeper`] into the parent process of
    /// [`a_killed_parent_takes_its_group_children_with_it`].
    const HELPER_ENV: &str = "INTEROP_PROCESS_TEST_HELPER";

    /// As a helper (HELPER_ENV set, run by the test below): spawn a sleeper through
    /// `GroupChild::spawn` from this test's thread, print its pid, and wait to be killed. As an
    /// ordinary test: the sleeper's group is led by its guardian, and dropping the handle takes
    /// both.
    #[test]
    fn helper_or_guarded_sleeper() {
        let _serial = serial();
        let mut command = Command::new("sleep");
        command.arg("300").stdout(Stdio::null());
        let child = GroupChild::spawn("sleeper", command).unwrap();
        if std::env::var_os(HELPER_ENV).is_some() {
            println!("sleeper-pid {}", child.pid());
            std::io::Write::flush(&mut std::io::stdout()).unwrap();
            std::thread::sleep(Duration::from_secs(300));
            return;
        }
        let (pid, pgid) = (child.pid(), child.pgid());
        assert_ne!(pid, pgid, "the guardian leads the group");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let fields: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
        assert_eq!(
            fields[2],
            pgid.to_string(),
            "the sleeper is in the guardian's group"
        );
        assert!(process_alive(pgid));
        drop(child);
        let gone = wait_until(Duration::from_secs(5), Duration::from_millis(20), || {
            Ok(!process_alive(pid) && !process_alive(pgid))
        })
        .unwrap();
        assert!(gone, "sleeper {pid} or guardian {pgid} survived the drop");
    }

    #[test]
    fn a_killed_parent_takes_its_group_children_with_it() {
        let _serial = serial();
        // The parent: this test binary again, running only the helper above.
        let mut parent = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "process::tests::helper_or_guarded_sleeper",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(HELPER_ENV, "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = parent.stdout.take().unwrap();
        let mut sleeper = None;
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
            let line = line.unwrap();
            // libtest may have written "test NAME ... " on the same line first.
            if let Some((_, pid)) = line.split_once("sleeper-pid ") {
                sleeper = Some(pid.trim().parse::<i32>().unwrap());
                break;
            }
        }
        let sleeper = sleeper.expect("the helper printed its sleeper's pid");
        assert!(process_alive(sleeper));
        // SIGKILL: no handler, no Drop, no cleanup in the parent runs.
        nix::sys::signal::kill(
            Pid::from_raw(i32::try_from(parent.id()).unwrap()),
            Signal::SIGKILL,
        )
        .unwrap();
        let _ = parent.wait();
        let gone = wait_until(Duration::from_secs(10), Duration::from_millis(20), || {
            Ok(!process_alive(sleeper))
        })
        .unwrap();
        assert!(gone, "sleeper {sleeper} outlived its SIGKILLed parent");
    }

    #[test]
    fn no_child_starts_after_shut_down() {
        alone("process::tests::no_child_starts_after_shut_down", || {
            let (child, grandchild) = spawn_sleeper_group();
            assert!(shut_down() >= 1);
            let err = GroupChild::spawn("late", Command::new("true")).unwrap_err();
            assert!(err.to_string().contains("shutting down"), "{err}");
            reopen();
            let gone = wait_until(Duration::from_secs(5), Duration::from_millis(20), || {
                Ok(!process_alive(grandchild))
            })
            .unwrap();
            assert!(gone);
            drop(child);
            GroupChild::spawn("after reopen", Command::new("true")).unwrap();
        });
    }

    #[test]
    fn output_is_captured_and_a_hung_helper_is_killed_at_its_timeout() {
        let _serial = serial();
        let mut command = Command::new("sh");
        command.args(["-c", "echo out; echo err >&2; exit 4"]);
        let out = output_with_timeout("echo", command, Duration::from_secs(10)).unwrap();
        assert_eq!(out.status.code(), Some(4));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 300 & echo $!; wait"]);
        let started = Instant::now();
        let err = output_with_timeout("hung", command, Duration::from_millis(300)).unwrap_err();
        assert!(err.to_string().contains("hung timed out"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
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
