//! Phase-by-phase progress lines (one line per finished phase, with size and time).

use std::fmt;
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

/// Prints progress lines to stderr, timestamped from when the command started.
#[derive(Debug)]
pub struct Progress {
    started: Instant,
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            started: Instant::now(),
        }
    }
}

impl Progress {
    /// Report that `phase` for `subject` finished (`took` = its duration, when measured).
    pub fn done(&self, phase: Phase, subject: &str, what: &str, took: Option<Duration>) {
        eprintln!(
            "{}",
            render_line(self.started.elapsed(), phase, subject, what, took)
        );
    }

    /// Report that `phase` for `subject` is starting (for phases that take a while).
    pub fn start(&self, phase: Phase, subject: &str, what: &str) {
        eprintln!(
            "{}",
            render_line(self.started.elapsed(), phase, subject, what, None)
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
    fn sizes_pick_a_readable_unit() {
        assert_eq!(human_size(2048), "2 KiB");
        assert_eq!(human_size(5 * 1024 * 1024 + 512 * 1024), "5.5 MiB");
        assert_eq!(human_size(3 * 1024 * 1024 * 1024), "3.00 GiB");
    }
}
