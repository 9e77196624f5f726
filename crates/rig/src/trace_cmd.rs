//! `rig trace`: RoCE captures (pcap/pcapng) as RPC-over-RDMA traces — show, diff, status,
//! extract.
//!
//! Text output is at one level, decided in the trace crate (`trace::Level`): by default the
//! RPC-over-RDMA exchange, with RC-level transport events (PSN duplicates, NAKs, RNR NAKs,
//! packets out of sequence) summarised after the lines as `transport: ...` counts, then
//! `capture: complete` or `capture: incomplete (...)`; `--level transport` (or `--raw`) shows
//! every event.
//!
//! Exit codes: `show` and `extract` 0 on success; `diff` 0 when the traces' lines at the level
//! are the same and 1 when they differ (like `diff(1)`); `status` 0 for a complete capture;
//! 3 for an incomplete capture (`status` always, `show` and `diff` with `--require-complete`);
//! 2 for usage or I/O errors (a file that is not a pcap/pcapng capture, or whose link type is
//! not decoded, included); 141 when standard output was closed by its reader.
//!
//! A capture is read through `crate::input` (at most [`MAX_CAPTURE`] bytes, `-` for standard
//! input, devices refused; a regular file streamed and read back by offset, not held whole). `diff` gives its line matching [`DIFF_TIME_FLOOR`] plus
//! `trace::render::DIFF_TIME_PER_LINE` per line (`--diff-seconds` overrides the floor); past
//! that the diff is coarser and says so.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use std::ops::ControlFlow;

use trace::render::{self, EventWriter, Rendered, Style};
use trace::{CaptureStatus, Event, Level, Options, Trace};

use crate::{out, outln};

/// Largest capture read (the trace holds at most a few copies of it in memory).
const MAX_CAPTURE: u64 = 1 << 30;
/// Least time `diff` gives its line matching, whatever the size of the traces.
const DIFF_TIME_FLOOR: Duration = Duration::from_secs(2);
/// Exit code for a capture that does not hold its whole exchange.
const EXIT_INCOMPLETE: u8 = 3;

/// Which events are lines (`trace::Level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LevelArg {
    /// The RPC-over-RDMA exchange; RC-level transport events counted, not shown (the default,
    /// what `diff` and the interop snapshots compare).
    Exchange,
    /// Every event, RC-level transport events included.
    Transport,
}

impl From<LevelArg> for Level {
    fn from(level: LevelArg) -> Self {
        match level {
            LevelArg::Exchange => Level::Exchange,
            LevelArg::Transport => Level::Transport,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusFormat {
    /// `capture: ...` and `transport: ...` lines.
    Text,
    /// One JSON object: capture status with reasons, transport counts, connections, messages.
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One compact line per event.
    Text,
    /// One JSON object per RPC-over-RDMA message.
    Jsonl,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Print the trace of a capture: one line per event at the level, then the transport counts
    /// and the capture status.
    Show {
        /// pcap or pcapng capture of RoCE traffic (Ethernet, Linux cooked or raw IP link type).
        file: PathBuf,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Keep frame numbers, times, xids, handles and offsets (text format) instead of
        /// normalising them; shows every event unless --level says otherwise.
        #[arg(long)]
        raw: bool,
        /// Which events are lines (default: exchange; with --raw: transport).
        #[arg(long, value_enum)]
        level: Option<LevelArg>,
        /// Exit 3 when the capture is incomplete (cut before the disconnect, packets lost).
        #[arg(long)]
        require_complete: bool,
        /// Do not verify the ICRC of each packet.
        #[arg(long)]
        no_icrc: bool,
    },
    /// Unified diff of two captures' normalised traces at the level; exit 1 when they differ.
    /// RC-level retransmissions alone make no difference at the default level.
    Diff {
        /// The baseline capture.
        a: PathBuf,
        /// The capture compared with it.
        b: PathBuf,
        #[arg(long, value_enum, default_value_t = LevelArg::Exchange)]
        level: LevelArg,
        /// Exit 3 when either capture is incomplete, whatever the diff says.
        #[arg(long)]
        require_complete: bool,
        /// Seconds the line matching may take beyond its time per line (default 2); past the
        /// deadline the rest of the diff shows as whole blocks, with a note.
        #[arg(long)]
        diff_seconds: Option<u64>,
    },
    /// Whether a capture holds its whole exchange; exit 0 when complete, 3 when not.
    Status {
        /// pcap or pcapng capture.
        file: PathBuf,
        #[arg(long, value_enum, default_value_t = StatusFormat::Text)]
        format: StatusFormat,
    },
    /// Write every RPC-over-RDMA Send payload to DIR/NNNN-<kind>.bin (NNNN = frame number).
    Extract {
        /// pcap or pcapng capture.
        file: PathBuf,
        /// Directory to write into (created if missing).
        dir: PathBuf,
    },
}

fn load(path: &Path, check_icrc: bool) -> anyhow::Result<Trace> {
    load_with(path, check_icrc, true)
}

/// The capture at `path` as a trace; `drop_payloads` unless the caller writes the payloads out.
fn load_with(path: &Path, check_icrc: bool, drop_payloads: bool) -> anyhow::Result<Trace> {
    let mut events = Vec::new();
    let mut trace = stream(path, check_icrc, drop_payloads, &mut |event| {
        events.push(event);
        ControlFlow::Continue(())
    })?;
    trace.events = events;
    Ok(trace)
}

/// The capture at `path`, each event handed to `on_event` as it is built instead of kept (see
/// `trace::stream_capture`); returns the rest of the trace (connections, capture error). A
/// regular file is streamed (never held whole) and its RDMA data read back by offset; standard
/// input and FIFOs are read whole.
fn stream(
    path: &Path,
    check_icrc: bool,
    drop_payloads: bool,
    on_event: &mut dyn FnMut(Event) -> ControlFlow<()>,
) -> anyhow::Result<Trace> {
    let options = Options {
        check_icrc,
        drop_payloads,
        ..Default::default()
    };
    let name = || format!("{}", path.display());
    if let Some(file) = crate::input::open_regular(path, MAX_CAPTURE, "capture")? {
        let mut reader = crate::input::Limited::new(&file, MAX_CAPTURE, "capture");
        let back = crate::input::ReadBack::new(&file);
        return trace::stream_capture_read(&mut reader, &back, &options, on_event)
            .with_context(name);
    }
    let bytes = crate::input::read_bounded(path, MAX_CAPTURE, "capture")?;
    trace::stream_capture(&bytes, &options, on_event).with_context(name)
}

/// `show`: the trace written as its events are built, so memory does not grow with the
/// number of events; returns the capture status.
fn show(
    path: &Path,
    check_icrc: bool,
    format: Format,
    style: Style,
    level: Level,
) -> anyhow::Result<CaptureStatus> {
    let mut capture_failure = None;
    let mut status = None;
    crate::output::write_with(|w| {
        let mut writer = match format {
            Format::Jsonl => EventWriter::jsonl(w),
            Format::Text => EventWriter::text(style, level, w),
        };
        let mut write_failure = None;
        let streamed = stream(
            path,
            check_icrc,
            true,
            &mut |event| match writer.event(&event) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    write_failure = Some(e);
                    ControlFlow::Break(())
                }
            },
        );
        // A capture error comes before any event (reassembly reads the whole capture first).
        let rest = match streamed {
            Ok(rest) => rest,
            Err(e) => {
                capture_failure = Some(e);
                return Ok(());
            }
        };
        if let Some(e) = write_failure {
            return Err(e);
        }
        status = Some(writer.finish(&rest)?);
        Ok(())
    })?;
    match (capture_failure, status) {
        (Some(e), _) => Err(e),
        (None, Some(status)) => Ok(status),
        (None, None) => anyhow::bail!("{}: no trace written", path.display()),
    }
}

fn rendered(path: &Path, style: Style, level: Level) -> anyhow::Result<Rendered> {
    Ok(render::render(&load(path, true)?, style, level))
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    match args.command {
        Command::Show {
            file,
            format,
            raw,
            level,
            require_complete,
            no_icrc,
        } => {
            let style = if raw { Style::Raw } else { Style::Normalised };
            let level = level.map(Level::from).unwrap_or(if raw {
                Level::Transport
            } else {
                Level::Exchange
            });
            let capture = show(&file, !no_icrc, format, style, level)?;
            Ok(if require_complete && !capture.is_complete() {
                EXIT_INCOMPLETE
            } else {
                0
            })
        }
        Command::Diff {
            a,
            b,
            level,
            require_complete,
            diff_seconds,
        } => {
            let level = Level::from(level);
            let (mut ra, mut rb) = (
                rendered(&a, Style::Normalised, level)?,
                rendered(&b, Style::Normalised, level)?,
            );
            if level == Level::Exchange {
                // The exchange, not the timing: concurrent messages in canonical order.
                ra = ra.in_canonical_order();
                rb = rb.in_canonical_order();
            }
            let lines = ra.lines.lines().count() + rb.lines.lines().count();
            let floor = diff_seconds.map_or(DIFF_TIME_FLOOR, Duration::from_secs);
            let deadline = Instant::now().checked_add(render::diff_time_allowed(lines, floor));
            let (an, bn) = (a.display().to_string(), b.display().to_string());
            for (name, r) in [(&an, &ra), (&bn, &rb)] {
                if !r.capture.is_complete() {
                    let status = r.capture.to_string();
                    eprintln!(
                        "rig trace diff: {name}: capture {}",
                        render::escape_text(&status)
                    );
                }
            }
            let incomplete = !ra.capture.is_complete() || !rb.capture.is_complete();
            let code = match render::diff_rendered_until(&an, &ra, &bn, &rb, deadline) {
                None => {
                    if ra.transport != rb.transport {
                        eprintln!(
                            "rig trace diff: same exchange; transport differs (not compared): \
                             {an}: {}; {bn}: {}",
                            ra.transport, rb.transport
                        );
                    }
                    0
                }
                Some(d) => {
                    if d.contains(render::DEADLINE_NOTE) {
                        eprintln!(
                            "rig trace diff: line matching stopped at its deadline; the diff \
                             is coarser (--diff-seconds gives it longer)"
                        );
                    }
                    out!("{d}")?;
                    1
                }
            };
            Ok(if require_complete && incomplete {
                EXIT_INCOMPLETE
            } else {
                code
            })
        }
        Command::Status { file, format } => {
            let t = load(&file, true)?;
            // The status and the counts only: the lines are never printed, so not rendered.
            let r = Rendered {
                lines: String::new(),
                transport: trace::TransportCounts::of(&t),
                capture: trace::capture_status(&t),
            };
            match format {
                StatusFormat::Text => out!("{}", r.summary())?,
                StatusFormat::Json => outln!(
                    "{}",
                    render::escape_json_text(
                        &serde_json::json!({
                            "complete": r.capture.is_complete(),
                            "capture": r.capture,
                            "transport": r.transport,
                            "connections": t.connections.iter().filter(|c| c.rpcrdma).count(),
                            "messages": t.messages().count(),
                        })
                        .to_string()
                    )
                )?,
            }
            Ok(if r.capture.is_complete() {
                0
            } else {
                EXIT_INCOMPLETE
            })
        }
        Command::Extract { file, dir } => {
            // The one command that writes the payloads out.
            let t = load_with(&file, true, false)?;
            std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
            let mut count = 0usize;
            for (e, m) in t.messages() {
                let name = format!("{:04}-{}.bin", e.frame, m.kind(e.dir));
                std::fs::write(dir.join(&name), &m.payload)
                    .with_context(|| format!("{}", dir.join(&name).display()))?;
                count += 1;
            }
            eprintln!("rig trace extract: {count} messages to {}", dir.display());
            Ok(0)
        }
    }
}
