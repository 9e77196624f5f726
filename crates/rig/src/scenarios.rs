//! `rig scenarios`: run the retransmission scenario × DRC policy matrix and print the verdicts.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::ValueEnum;

use crate::{out, outln};

/// Where the scenarios run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    /// The deterministic simulated RC transport (no RDMA needed).
    Sim,
    /// Real RDMA (soft-RoCE in the VMs) against a live server (`--server`).
    Rdma,
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Transport to run over.
    #[arg(long, value_enum, default_value = "sim")]
    transport: Transport,
    /// Only this DRC policy (classic, acked, acked-mark).
    #[arg(long)]
    policy: Option<String>,
    /// Only this scenario.
    #[arg(long)]
    scenario: Option<String>,
    /// Scheduler seed: same seed, same output byte for byte.
    #[arg(long, default_value_t = client::DEFAULT_SEED)]
    seed: u64,
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Also print each run's normalised trace (table format only).
    #[arg(long)]
    traces: bool,
    /// List the scenarios and what each proves, then exit.
    #[arg(long)]
    list: bool,
    /// RDMA: the server's address (ours or kernel nfsd), e.g. 10.99.0.1:20049.
    #[arg(long)]
    server: Option<std::net::SocketAddr>,
    /// RDMA: the export's root file handle, in hex.
    #[arg(long, conflicts_with_all = ["mount_tcp", "mount_rdma"])]
    root_fh: Option<String>,
    /// RDMA: get the root handle by MOUNT over TCP (rpc.mountd on a fixed port).
    #[arg(long, conflicts_with = "mount_rdma")]
    mount_tcp: Option<std::net::SocketAddr>,
    /// RDMA: get the root handle by MOUNT over the RDMA connection (our server; the default).
    #[arg(long)]
    mount_rdma: bool,
    /// RDMA: the exported path to MOUNT.
    #[arg(long, default_value = "/export")]
    export: String,
    /// RDMA: a label for the verdicts (the server under test, the policy).
    #[arg(long, default_value = "rdma")]
    label: String,
    /// RDMA: longest wait for one reply, in seconds.
    #[arg(long, default_value_t = 10)]
    timeout_secs: u64,
    /// RDMA: the wire runs through the rig's relay (the interop guests' wire does): holds it
    /// can make on the wire (the server's Send completions, by holding RC ACKs) are made there,
    /// and the scenarios that need them run against any server. Without an answer from the
    /// relay on UDP 4792 each scenario is an error.
    #[arg(long)]
    relay: bool,
    /// RDMA: the server's execution hold answers at this UDP address (`rig serve --control`,
    /// or `rig hold-export` beside kernel nfsd): before-execution, burst and
    /// large-write-read-chunk hold the original in progress there until its duplicates have
    /// been looked up, whatever the scheduling. Without an answer each scenario is an error.
    #[arg(long)]
    execution_hold: Option<std::net::SocketAddr>,
    /// RDMA: the --execution-hold server is `rig hold-export` beside kernel nfsd, which also
    /// holds nfsd's export cache (stops rpc.mountd and flushes the caches): the `deferred`
    /// scenario runs (it is unsupported elsewhere).
    #[arg(long, requires = "execution_hold")]
    export_cache_hold: bool,
    /// RDMA: the NFSv4.1 session scenarios (v41-*: a REMOVE COMPOUND retransmitted into the
    /// session slot replay cache, RFC 8881 §2.10.6) instead of the NFSv3 catalogue; no MOUNT.
    #[arg(long, conflicts_with_all = ["root_fh", "mount_tcp", "mount_rdma", "policy"])]
    v41: bool,
    /// RDMA, --v41: longest wait for the server's grace period to end, in seconds.
    #[arg(long, default_value_t = 30, requires = "v41")]
    grace_secs: u64,
    /// Append this run's capture window to this file: `<case> start <epoch µs>` as it begins
    /// and `<case> end <epoch µs>` as it ends, error or not (the guests' `capture.windows`, by
    /// which the host cuts the suite's capture into the case's own, interop/src/capture.rs).
    /// The guest script's `date` made two execs a case for it.
    #[arg(long, requires = "capture_case")]
    capture_windows: Option<PathBuf>,
    /// The case the window lines name (one word).
    #[arg(long, requires = "capture_windows")]
    capture_case: Option<String>,
}

/// One run's capture window, its end line written when dropped (an error return included).
struct CaptureWindow {
    file: PathBuf,
    case: String,
}

impl CaptureWindow {
    /// Write the start line (nothing without `--capture-windows`).
    fn begin(file: Option<&Path>, case: Option<&str>) -> Result<Option<CaptureWindow>> {
        let (Some(file), Some(case)) = (file, case) else {
            return Ok(None);
        };
        if case.is_empty() || case.contains(char::is_whitespace) {
            bail!("--capture-case {case:?}: one word, as the windows file is read");
        }
        let window = CaptureWindow {
            file: file.to_path_buf(),
            case: case.to_owned(),
        };
        window.line("start")?;
        Ok(Some(window))
    }

    fn line(&self, edge: &str) -> Result<()> {
        use std::io::Write;
        let micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros());
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.file)
            .with_context(|| format!("opening {}", self.file.display()))?;
        writeln!(file, "{} {edge} {micros}", self.case)
            .with_context(|| format!("writing {}", self.file.display()))
    }
}

impl Drop for CaptureWindow {
    fn drop(&mut self) {
        if let Err(e) = self.line("end") {
            eprintln!("rig scenarios: {e:#}");
        }
    }
}

/// A fresh prefix per run: names never collide with an earlier run's in the export.
fn run_prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("rig{}x{nanos:08x}", std::process::id())
}

fn run_v41(args: &Args) -> Result<u8> {
    let Some(server) = args.server else {
        bail!("--v41 needs --transport rdma --server ADDR:PORT");
    };
    let options = rdma::v41::Options {
        server,
        label: args.label.clone(),
        timeout: std::time::Duration::from_secs(args.timeout_secs.max(1)),
        prefix: run_prefix(),
        grace_wait: std::time::Duration::from_secs(args.grace_secs),
    };
    let verdicts =
        rdma::v41::run(&options, args.scenario.as_deref()).map_err(|e| anyhow::anyhow!(e))?;
    match args.format {
        Format::Json => outln!("{}", serde_json::to_string_pretty(&verdicts)?)?,
        Format::Table => out!("{}", rdma::v41::table(&verdicts))?,
    }
    Ok(if verdicts.iter().any(|v| v.base.outcome == "error") {
        1
    } else {
        0
    })
}

fn run_rdma(args: &Args) -> Result<u8> {
    let Some(server) = args.server else {
        bail!("--transport rdma needs --server ADDR:PORT");
    };
    let root = match (&args.root_fh, args.mount_tcp) {
        (Some(hex), _) => rdma::scenarios::RootSource::Handle(wire::nfs3::FileHandle(
            parse_hex(hex).ok_or_else(|| anyhow::anyhow!("--root-fh {hex}: not hex"))?,
        )),
        // MNT over TCP (rpc.mountd on a fixed port, or `rig serve --mount-tcp`), once, here.
        (None, Some(addr)) => rdma::scenarios::RootSource::Handle(
            crate::mount_tcp::mount(
                addr,
                args.export.as_bytes(),
                std::time::Duration::from_secs(args.timeout_secs.max(1)),
            )
            .map_err(|e| anyhow::anyhow!("MOUNT over TCP at {addr}: {e}"))?,
        ),
        (None, None) => rdma::scenarios::RootSource::MountRdma,
    };
    let options = rdma::scenarios::Options {
        server,
        root,
        export: args.export.as_bytes().to_vec(),
        label: args.label.clone(),
        timeout: std::time::Duration::from_secs(args.timeout_secs.max(1)),
        prefix: run_prefix(),
        relay: args.relay,
        execution_hold: args.execution_hold,
        export_cache_hold: args.export_cache_hold,
        link: rdma::relay_control::RdmaLink::of_this_host(),
    };
    let verdicts =
        rdma::scenarios::run(&options, args.scenario.as_deref()).map_err(|e| anyhow::anyhow!(e))?;
    match args.format {
        Format::Json => outln!("{}", serde_json::to_string_pretty(&verdicts)?)?,
        Format::Table => out!("{}", verdict::record::table(&verdicts))?,
    }
    Ok(if verdicts.iter().any(|v| v.outcome == "error") {
        1
    } else {
        0
    })
}

/// A root file handle in hex: at most 64 bytes (RFC 1813 §2.6, NFS3_FHSIZE).
fn parse_hex(hex: &str) -> Option<Vec<u8>> {
    let hex = hex.trim();
    if hex.len() > 128 {
        return None;
    }
    wire::hex::decode(hex).ok()
}

pub fn run(args: Args) -> Result<u8> {
    let _window = CaptureWindow::begin(
        args.capture_windows.as_deref(),
        args.capture_case.as_deref(),
    )?;
    if args.v41 && args.list {
        for scenario in rdma::v41::catalogue() {
            outln!("{:<24} REMOVE  {}", scenario.name, scenario.expected)?;
        }
        return Ok(0);
    }
    if args.v41 {
        if args.transport != Transport::Rdma {
            bail!("--v41 runs over RDMA only (--transport rdma): the simulator hosts no NFSv4.1 server");
        }
        return run_v41(&args);
    }
    if args.transport == Transport::Rdma && !args.list {
        return run_rdma(&args);
    }
    if args.list {
        for scenario in client::scenarios::catalogue() {
            outln!(
                "{:<24} {:<7} {}",
                scenario.name,
                scenario.procedure,
                scenario.proves
            )?;
        }
        return Ok(0);
    }
    let runs = client::run_matrix(args.policy.as_deref(), args.scenario.as_deref(), args.seed)?;
    match args.format {
        Format::Json => out!("{}", client::verdicts_json(&runs))?,
        Format::Table => {
            out!("{}", client::verdicts_table(&runs))?;
            if args.traces {
                for run in &runs {
                    outln!("\n== {} / {}", run.verdict.scenario, run.verdict.policy)?;
                    for line in &run.trace {
                        outln!("{line}")?;
                    }
                }
            }
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    type Cli = crate::test_cli::Cli<Args>;

    /// The window's two lines, as interop's capture cutter reads them, around a run that
    /// failed as well as one that did not; a case name the file could not carry is refused.
    #[test]
    fn a_run_records_its_capture_window_even_when_it_fails() {
        let file = std::env::temp_dir().join(format!("rig-windows-{}", std::process::id()));
        let _ = std::fs::remove_file(&file);
        let path = file.to_str().unwrap();
        let windowed = |first: &[&str], case: &str| {
            let window = ["--capture-windows", path, "--capture-case", case];
            let argv = ["rig"].iter().chain(first).chain(&window).copied();
            run(Cli::parse_from(argv).args)
        };
        assert_eq!(windowed(&["--list"], "classic.once").unwrap(), 0);
        assert!(windowed(&["--transport", "rdma"], "nfsd.burst").is_err());
        let text = std::fs::read_to_string(&file).unwrap();
        let edges: Vec<(&str, &str)> = text
            .lines()
            .map(|l| {
                let mut w = l.split(' ');
                let (case, edge) = (w.next().unwrap(), w.next().unwrap());
                assert!(w.next().unwrap().parse::<u64>().unwrap() > 0);
                (case, edge)
            })
            .collect();
        assert_eq!(
            edges,
            [
                ("classic.once", "start"),
                ("classic.once", "end"),
                ("nfsd.burst", "start"),
                ("nfsd.burst", "end")
            ]
        );
        assert!(windowed(&["--list"], "two words").is_err());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
        std::fs::remove_file(&file).unwrap();
    }

    #[test]
    fn rdma_needs_a_server_and_a_valid_root_handle() {
        let cli = Cli::parse_from(["rig", "--transport", "rdma"]);
        let err = run(cli.args).unwrap_err();
        assert!(err.to_string().contains("--server"), "{err}");
        let cli = Cli::parse_from([
            "rig",
            "--transport",
            "rdma",
            "--server",
            "127.0.0.1:20049",
            "--root-fh",
            "zz",
        ]);
        let err = run(cli.args).unwrap_err();
        assert!(err.to_string().contains("not hex"), "{err}");
        assert_eq!(parse_hex("00ff10"), Some(vec![0, 0xff, 0x10]));
        assert_eq!(parse_hex("abc"), None);
    }

    #[test]
    fn v41_needs_rdma_and_a_server_and_lists_its_catalogue() {
        let cli = Cli::parse_from(["rig", "--v41"]);
        let err = run(cli.args).unwrap_err();
        assert!(err.to_string().contains("--transport rdma"), "{err}");
        let cli = Cli::parse_from(["rig", "--v41", "--transport", "rdma"]);
        let err = run(cli.args).unwrap_err();
        assert!(err.to_string().contains("--server"), "{err}");
        // No MOUNT for NFSv4.1: the root handle options do not combine with it.
        assert!(Cli::try_parse_from(["rig", "--v41", "--mount-tcp", "10.0.0.1:20048"]).is_err());
        assert!(Cli::try_parse_from(["rig", "--grace-secs", "5"]).is_err());
        let cli = Cli::parse_from(["rig", "--v41", "--list"]);
        assert_eq!(run(cli.args).unwrap(), 0);
    }

    #[test]
    fn refuses_unknown_policies_and_scenarios() {
        let cli = Cli::parse_from(["rig", "--policy", "lru"]);
        assert!(run(cli.args)
            .unwrap_err()
            .to_string()
            .contains("unknown policy"));
        let cli = Cli::parse_from(["rig", "--scenario", "never"]);
        assert!(run(cli.args)
            .unwrap_err()
            .to_string()
            .contains("unknown scenario"));
    }
}
