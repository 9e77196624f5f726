//! `rig trace`: RoCE captures (pcap/pcapng) as RPC-over-RDMA traces — show, diff, extract.
//!
//! Exit codes: `show` and `extract` 0 on success; `diff` 0 when the normalised traces are the
//! same and 1 when they differ (like `diff(1)`); 2 for usage or I/O errors.

use std::path::{Path, PathBuf};

use anyhow::Context;
use trace::render::{self, Style};
use trace::{Options, Trace};

/// Largest capture read (the trace holds at most a few copies of it in memory).
const MAX_CAPTURE: u64 = 1 << 30;

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
    /// Print the trace of a capture.
    Show {
        /// pcap or pcapng capture of RoCE traffic (Ethernet, Linux cooked or raw IP link type).
        file: PathBuf,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Keep frame numbers, times, xids, handles and offsets (text format) instead of
        /// normalising them.
        #[arg(long)]
        raw: bool,
        /// Do not verify the ICRC of each packet.
        #[arg(long)]
        no_icrc: bool,
    },
    /// Unified diff of two captures' normalised traces; exit 1 when they differ.
    Diff {
        /// The baseline capture.
        a: PathBuf,
        /// The capture compared with it.
        b: PathBuf,
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
    let len = std::fs::metadata(path)
        .with_context(|| format!("{}", path.display()))?
        .len();
    anyhow::ensure!(
        len <= MAX_CAPTURE,
        "{}: {len} bytes is over the {MAX_CAPTURE}-byte limit",
        path.display()
    );
    let bytes = std::fs::read(path).with_context(|| format!("{}", path.display()))?;
    let options = Options {
        check_icrc,
        ..Default::default()
    };
    trace::trace_capture(&bytes, &options).with_context(|| format!("{}", path.display()))
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    match args.command {
        Command::Show {
            file,
            format,
            raw,
            no_icrc,
        } => {
            let t = load(&file, !no_icrc)?;
            let out = match (format, raw) {
                (Format::Jsonl, _) => render::jsonl(&t),
                (Format::Text, true) => render::text(&t, Style::Raw),
                (Format::Text, false) => render::text(&t, Style::Normalised),
            };
            print!("{out}");
            Ok(0)
        }
        Command::Diff { a, b } => {
            let ta = render::text(&load(&a, true)?, Style::Normalised);
            let tb = render::text(&load(&b, true)?, Style::Normalised);
            match render::diff(&a.display().to_string(), &ta, &b.display().to_string(), &tb) {
                None => Ok(0),
                Some(d) => {
                    print!("{d}");
                    Ok(1)
                }
            }
        }
        Command::Extract { file, dir } => {
            let t = load(&file, true)?;
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
