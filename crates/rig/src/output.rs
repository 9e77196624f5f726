//! Standard output of the CLI: every subcommand writes through [`out!`](crate::out) /
//! [`outln!`](crate::outln), never `print!` (which panics when the write fails).
//!
//! - The reader went away (`rig trace show x.pcap | head`): the write fails with EPIPE (Rust
//!   ignores SIGPIPE), which becomes [`StdoutClosed`]; `main` then exits quietly with
//!   [`EXIT_STDOUT_CLOSED`] = 141, what a shell reports for a C tool killed by SIGPIPE, so a
//!   `set -o pipefail` pipeline sees `rig` as it would see `cat`.
//! - Any other failure (ENOSPC on a full disk, EIO) is an error naming standard output: exit 2
//!   with a message, as for any I/O error.

use std::io::Write;

/// Exit code when standard output was closed by its reader (128 + SIGPIPE).
pub const EXIT_STDOUT_CLOSED: u8 = 141;

/// The reader of standard output went away (EPIPE): not worth a message.
#[derive(Debug)]
pub struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output closed by its reader")
    }
}

impl std::error::Error for StdoutClosed {}

fn classify(e: std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        anyhow::Error::new(StdoutClosed)
    } else {
        anyhow::Error::new(e).context("writing standard output")
    }
}

/// Write formatted text to standard output.
pub fn write_fmt(args: std::fmt::Arguments<'_>) -> anyhow::Result<()> {
    std::io::stdout().lock().write_fmt(args).map_err(classify)
}

/// Run `f` with a buffered standard output (for output too large to build in memory first).
pub fn write_with(f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::with_capacity(64 << 10, stdout.lock());
    f(&mut w).and_then(|()| w.flush()).map_err(classify)
}

/// Flush standard output (what is still buffered fails here, not silently at exit).
pub fn flush() -> anyhow::Result<()> {
    std::io::stdout().lock().flush().map_err(classify)
}

/// Whether `e` (or what caused it) is [`StdoutClosed`].
pub fn is_stdout_closed(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| cause.is::<StdoutClosed>())
}

/// `print!` that returns `anyhow::Result<()>` instead of panicking.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write_fmt(format_args!($($arg)*)) };
}

/// `println!` that returns `anyhow::Result<()>` instead of panicking.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::write_fmt(format_args!("{}\n", format_args!($($arg)*)))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_pipe_is_recognised_through_context_and_other_errors_are_not() {
        let closed = classify(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert!(is_stdout_closed(&closed.context("rig trace show")));
        let full = classify(std::io::Error::from_raw_os_error(28));
        assert!(!is_stdout_closed(&full));
        assert!(
            format!("{full:#}").contains("writing standard output"),
            "{full:#}"
        );
    }
}
