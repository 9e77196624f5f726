//! Phase-by-phase progress lines (one line per finished phase, with size and time), and on a
//! terminal a live status line under them (suite runs done of planned, case steps, elapsed).

use std::fmt;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The phases of building images and running a suite, in the order they normally happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    HostPackages,
    AptIndex,
    FetchKernel,
    KernelBuild,
    Rootfs,
    Initramfs,
    Modules,
    KernelConfigCheck,
    KvmProbe,
    Snapshot,
    Boot,
    Setup,
    Case,
    Collect,
    Report,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let label = match self {
            Phase::HostPackages => "host-packages",
            Phase::AptIndex => "apt-index",
            Phase::FetchKernel => "fetch-kernel",
            Phase::KernelBuild => "kernel-build",
            Phase::Rootfs => "rootfs",
            Phase::Initramfs => "initramfs",
            Phase::Modules => "modules",
            Phase::KernelConfigCheck => "kernel-config",
            Phase::KvmProbe => "kvm-probe",
            Phase::Snapshot => "snapshot",
            Phase::Boot => "boot",
            Phase::Setup => "setup",
            Phase::Case => "case",
            Phase::Collect => "collect",
            Phase::Report => "report",
        };
        f.write_str(label)
    }
}

/// Whether a phase's result came from the cache or was produced now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Cached,
    Built,
}

/// Render one progress line: `[   12.3s] rootfs       linux-6.1  built  (41.2 MiB) 34.1s`.
pub fn render_line(
    since_start: Duration,
    phase: Phase,
    subject: &str,
    what: &str,
    took: Option<Duration>,
) -> String {
    let took = took
        .map(|t| format!(" {:.1}s", t.as_secs_f64()))
        .unwrap_or_default();
    format!(
        "[{:>7.1}s] {:<14} {:<12} {what}{took}",
        since_start.as_secs_f64(),
        phase.to_string(),
        subject
    )
}

/// Human size: bytes → "812 KiB" / "41.2 MiB".
pub fn human_size(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b < KIB * KIB {
        format!("{:.0} KiB", b / KIB)
    } else if b < KIB * KIB * KIB {
        format!("{:.1} MiB", b / KIB / KIB)
    } else {
        format!("{:.2} GiB", b / KIB / KIB / KIB)
    }
}

/// The live status line: `[=====>    ] 3/8 suite runs · 57 case steps · 2:31`.
pub fn render_status(done: usize, total: usize, steps: usize, elapsed: Duration) -> String {
    const WIDTH: usize = 20;
    let filled = (done.min(total) * WIDTH).checked_div(total).unwrap_or(0);
    let mut bar = "=".repeat(filled);
    if filled < WIDTH {
        bar.push('>');
        bar.push_str(&" ".repeat(WIDTH - filled - 1));
    }
    let secs = elapsed.as_secs();
    format!(
        "[{bar}] {done}/{total} suite runs · {steps} case steps · {}:{:02}",
        secs / 60,
        secs % 60
    )
}

/// What the status line counts.
#[derive(Debug, Default)]
struct Status {
    planned_runs: usize,
    done_runs: usize,
    case_steps: usize,
}

/// Prints progress lines to stderr, timestamped from when the command started; on a terminal
/// (and `TERM` not `dumb`) a status line stays under them, redrawn after each line.
#[derive(Debug)]
pub struct Progress {
    started: Instant,
    /// `Some` when stderr is a terminal: the status line is drawn.
    live: Option<Mutex<Status>>,
}

impl Default for Progress {
    fn default() -> Self {
        let terminal = std::io::stderr().is_terminal()
            && std::env::var_os("TERM").is_some_and(|t| t != "dumb");
        Progress {
            started: Instant::now(),
            live: terminal.then(|| Mutex::new(Status::default())),
        }
    }
}

impl Progress {
    /// Print `line`, counting it (`phase`) in the status line and redrawing it on a terminal.
    fn emit(&self, phase: Phase, line: &str) {
        let Some(live) = &self.live else {
            eprintln!("{line}");
            return;
        };
        let Ok(mut status) = live.lock() else {
            eprintln!("{line}");
            return;
        };
        match phase {
            Phase::Collect => status.done_runs += 1,
            Phase::Case => status.case_steps += 1,
            _ => {}
        }
        let mut err = std::io::stderr().lock();
        if status.planned_runs == 0 {
            // Building images: no runs planned yet, no status line.
            let _ = writeln!(err, "{line}");
            return;
        }
        let bar = render_status(
            status.done_runs,
            status.planned_runs,
            status.case_steps,
            self.started.elapsed(),
        );
        // Clear the old status line, print the line, draw the status line again (no newline).
        let _ = write!(err, "\r\x1b[2K{line}\n{bar}");
        let _ = err.flush();
    }

    /// `runs` more kernel × suite runs are planned (the status line's total).
    pub fn plan_runs(&self, runs: usize) {
        if let Some(Ok(mut status)) = self.live.as_ref().map(Mutex::lock) {
            status.planned_runs += runs;
        }
    }

    /// Clear the status line (before the report table).
    pub fn finish(&self) {
        if self.live.is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }

    /// Report that `phase` for `subject` finished (`took` = its duration, when measured).
    pub fn done(&self, phase: Phase, subject: &str, what: &str, took: Option<Duration>) {
        self.emit(
            phase,
            &render_line(self.started.elapsed(), phase, subject, what, took),
        );
    }

    /// Report that `phase` for `subject` is starting (for phases that take a while).
    pub fn start(&self, phase: Phase, subject: &str, what: &str) {
        // A start is not a finished step: counted as nothing.
        self.emit(
            Phase::Report,
            &render_line(self.started.elapsed(), phase, subject, what, None),
        );
    }

    /// Time since the command started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_has_phase_subject_and_duration() {
        let line = render_line(
            Duration::from_millis(12_340),
            Phase::Rootfs,
            "bookworm",
            "built (41.2 MiB)",
            Some(Duration::from_millis(34_060)),
        );
        assert_eq!(
            line,
            "[   12.3s] rootfs         bookworm     built (41.2 MiB) 34.1s"
        );
    }

    #[test]
    fn status_line_shows_runs_steps_and_time() {
        assert_eq!(
            render_status(3, 8, 57, Duration::from_secs(151)),
            "[=======>            ] 3/8 suite runs · 57 case steps · 2:31"
        );
        assert_eq!(
            render_status(8, 8, 90, Duration::from_secs(600)),
            "[====================] 8/8 suite runs · 90 case steps · 10:00"
        );
        // Nothing planned yet (images still building): an empty bar, no division by zero.
        assert!(render_status(0, 0, 0, Duration::ZERO).starts_with("[>   "));
    }

    #[test]
    fn sizes_pick_a_readable_unit() {
        assert_eq!(human_size(2048), "2 KiB");
        assert_eq!(human_size(5 * 1024 * 1024 + 512 * 1024), "5.5 MiB");
        assert_eq!(human_size(3 * 1024 * 1024 * 1024), "3.00 GiB");
    }
}
