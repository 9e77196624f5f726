//! `rig serve`: our NFSv3 + MOUNT v3 server over RDMA (soft-RoCE in the VMs), until SIGTERM/SIGINT;
//! then the --stats JSON. SIGUSR1 disconnects every connection (the reconnect test).
//!
//! Every numeric option is range-checked before anything is bound or set up ([`check_args`]):
//! a value the verbs layer or the poll loop would refuse later (credits above
//! `rdma::serve::MAX_CREDITS`, connections above `rdma::serve::MAX_CONNECTIONS`) or that would
//! wrap (`--max-file-mib`) is an error naming the range.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use engine::ConnectionConfig;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// RDMA listen address (an address of the rxe device's netdev), e.g. 10.99.0.1:20049.
    #[arg(long)]
    listen: SocketAddr,
    /// DRC policy: classic, acked or acked-mark.
    #[arg(long)]
    policy: String,
    /// Exported path (MOUNT); the in-memory file system exports /export.
    #[arg(long, default_value = "/export")]
    export: String,
    /// Which kernel's svcrdma to answer headers as: a measured profile (debian-6.1.176,
    /// debian-6.12.117, debian-7.2.13, mainline-2026: fixtures/svcrdma-profiles, compiled in)
    /// or a modelled one (linux-6.1, linux-2026).
    #[arg(long, default_value = "linux-2026")]
    profile: String,
    /// Write statistics JSON here on exit.
    #[arg(long)]
    stats: Option<PathBuf>,
    /// Also rewrite the --stats file each time a connection closes, so a client can count its
    /// executions while the server runs (the selftest suite; each rewrite is the whole file).
    #[arg(long, requires = "stats")]
    stats_on_close: bool,
    /// Concurrent connections (each beyond the first gets its own file system and DRC);
    /// 1..=1022 (one poll(2) also watches the CM channel and the control socket).
    #[arg(long, default_value_t = 4)]
    max_connections: usize,
    /// Also serve MOUNT v3 and portmap GETPORT over TCP here (for the kernel client's
    /// `mountproto=tcp,mountport=P`).
    #[arg(long)]
    mount_tcp: Option<SocketAddr>,
    /// Disconnect each connection once after this many replies (the reconnect test); 1 or more.
    #[arg(long)]
    drop_after: Option<u64>,
    /// Largest file in the in-memory export, MiB (the whole export holds at most 4 such files);
    /// 1..=4096.
    #[arg(long, default_value_t = 24)]
    max_file_mib: u64,
    /// Credits granted per connection (RFC 8166 §3.3.1); 1..=2048.
    #[arg(long, default_value_t = ConnectionConfig::default().credits)]
    credits: u32,
    /// Answer execution holds on this UDP address (`rig scenarios --execution-hold`): while a
    /// case holds it, calls are looked up in the DRC but none executes until it releases them
    /// (at most 10 s), so a duplicate meets its original in progress whatever the scheduling.
    #[arg(long)]
    control: Option<SocketAddr>,
}

/// Largest `--max-file-mib` (each slot's export holds up to four such files in memory).
const MAX_FILE_MIB: u64 = 4096;

/// The server options from `args`, every number checked against its range.
fn check_args(args: &Args) -> Result<rdma::ServeOptions> {
    if !(1..=MAX_FILE_MIB).contains(&args.max_file_mib) {
        bail!(
            "--max-file-mib {} out of range 1..={MAX_FILE_MIB}",
            args.max_file_mib
        );
    }
    let max_file_bytes = args.max_file_mib << 20; // at most 2^32: no wrap
    let options = rdma::ServeOptions {
        listen: args.listen,
        policy: args.policy.clone(),
        model: wirefuzz::rules::kernel_model(&args.profile)
            .with_context(|| format!("--profile {}", args.profile))?,
        // svcrdma's Receives and inline threshold: 4 KiB (`svcrdma_max_req_size`), advertised
        // in the CM reply as nfsd does. With 1 KiB Receives (the RFC 8166 default), a client
        // that sends no RFC 8797 private data and a 1025-4096-byte inline call overran the
        // Receive and lost its connection, where nfsd replies (issue 16, `inline-near-threshold`).
        config: ConnectionConfig {
            inline_send: wire::svcrdma::DEFAULT_MAX_REQ_SIZE,
            inline_recv: wire::svcrdma::DEFAULT_MAX_REQ_SIZE,
            credits: args.credits,
        },
        max_connections: args.max_connections,
        drop_after: args.drop_after,
        fs_limits: server::fs::Limits {
            max_file_bytes,
            max_total_bytes: max_file_bytes.saturating_mul(4),
            ..server::fs::Limits::default()
        },
        control: args.control,
    };
    if let Err(reason) = rdma::serve::check_options(&options) {
        // Name the option as the user typed it.
        let reason = reason
            .replace("credits ", "--credits ")
            .replace("max connections ", "--max-connections ")
            .replace("drop-after ", "--drop-after ")
            .replace("unknown DRC policy", "--policy: unknown DRC policy");
        bail!("{reason}");
    }
    Ok(options)
}

pub fn run(args: Args) -> Result<u8> {
    if args.export.as_bytes() != server::fs::EXPORT_PATH {
        bail!(
            "--export {}: the in-memory file system exports only {}",
            args.export,
            String::from_utf8_lossy(server::fs::EXPORT_PATH)
        );
    }
    let options = check_args(&args)?;
    let stop = Arc::new(AtomicBool::new(false));
    let drop_all = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(&drop_all))?;

    let mount_thread = match args.mount_tcp {
        Some(addr) => {
            let listener =
                TcpListener::bind(addr).with_context(|| format!("--mount-tcp {addr}"))?;
            let ports = server::mount_service::Ports {
                nfs: args.listen.port(),
                mount: addr.port(),
            };
            let stop = Arc::clone(&stop);
            eprintln!("rig serve: MOUNT v3 + portmap over TCP on {addr}");
            Some(
                std::thread::Builder::new()
                    .name("mount-tcp".into())
                    .spawn(move || {
                        crate::mount_tcp::serve(
                            listener,
                            ports,
                            &stop,
                            crate::mount_tcp::Limits::default(),
                        )
                    })
                    .context("--mount-tcp: starting its thread")?,
            )
        }
        None => None,
    };
    // --stats-on-close: each closed connection rewrites the stats file, so a client can count
    // its executions while the server keeps running (the selftest suite judges every case so).
    let checkpoint = |stats: &rdma::ServeStats| {
        if let Some(path) = &args.stats {
            if let Err(e) = write_stats(path, stats) {
                eprintln!("rig serve: {e:#}");
            }
        }
    };
    let stats = rdma::serve(
        &options,
        rdma::Controls {
            stop: &stop,
            drop_all: &drop_all,
            checkpoint: args
                .stats_on_close
                .then_some(&checkpoint as &dyn Fn(&rdma::ServeStats)),
        },
    );
    // Stop the MOUNT thread whatever happened to the RDMA side.
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(thread) = mount_thread {
        if let Ok(Err(e)) = thread.join() {
            eprintln!("rig serve: mount-tcp: {e}");
        }
    }
    let stats = stats.context("rig serve")?;
    if let Some(path) = &args.stats {
        write_stats(path, &stats)?;
    }
    eprintln!(
        "rig serve: stopped after {} connection(s)",
        stats.connections_seen
    );
    Ok(0)
}

/// Write the stats JSON to a sibling temporary file and rename it over `path`: a reader on the
/// other guest sees the old file or the new one, never half of one.
fn write_stats(path: &Path, stats: &rdma::ServeStats) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, serde_json::to_string_pretty(stats)? + "\n")
        .with_context(|| format!("--stats {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("--stats {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    type Cli = crate::test_cli::Cli<Args>;

    #[test]
    fn refuses_exports_the_file_system_does_not_have() {
        let cli = Cli::parse_from([
            "rig",
            "--listen",
            "127.0.0.1:20049",
            "--policy",
            "classic",
            "--export",
            "/srv",
        ]);
        let err = run(cli.args).unwrap_err();
        assert!(err.to_string().contains("exports only /export"), "{err}");
    }

    #[test]
    fn receives_and_inline_threshold_are_svcrdma_s() {
        let cli = Cli::parse_from(["rig", "--listen", "127.0.0.1:20049", "--policy", "classic"]);
        let config = check_args(&cli.args).unwrap().config;
        // Without RFC 8797 private data a client may send up to the server's Receive size
        // (negotiate keeps our Receives): nfsd takes a 4 KiB inline call, so must we.
        let negotiated = config.negotiate(None);
        assert_eq!(negotiated.inline_recv, wire::svcrdma::DEFAULT_MAX_REQ_SIZE);
        assert_eq!(
            config.private_data().recv_size() as usize,
            wire::svcrdma::DEFAULT_MAX_REQ_SIZE
        );
    }

    #[test]
    fn profiles_are_measured_or_modelled_names() {
        let base = ["rig", "--listen", "127.0.0.1:20049", "--policy", "classic"];
        let with = |name: &str| {
            let argv: Vec<&str> = base.iter().copied().chain(["--profile", name]).collect();
            check_args(&Cli::parse_from(argv).args)
        };
        for name in [
            "debian-6.12.117",
            "debian-6.1.176",
            "linux-6.1",
            "linux-2026",
        ] {
            assert_eq!(with(name).unwrap().model.name, name);
        }
        let model = with("debian-6.12.117").unwrap().model;
        assert_eq!(
            model.answer(wire::svcrdma::Rule::ReadChunksOverlap),
            wire::svcrdma::Outcome::ErrChunkThenClose
        );
        let err = format!("{:#}", with("linux-5.4").unwrap_err());
        assert!(err.contains("--profile linux-5.4"), "{err}");
        assert!(err.contains("debian-7.2.13"), "{err}");
    }

    #[test]
    fn stats_on_close_needs_a_stats_file() {
        let base = ["rig", "--listen", "127.0.0.1:20049", "--policy", "classic"];
        assert!(Cli::try_parse_from(base.iter().chain(&["--stats-on-close"])).is_err());
        assert!(Cli::try_parse_from(
            base.iter()
                .chain(&["--stats", "s.json", "--stats-on-close"])
        )
        .is_ok());
    }

    #[test]
    fn stats_are_replaced_whole() {
        let dir = std::env::temp_dir().join(format!("rig-serve-stats-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("serve-classic.stats.json");
        std::fs::write(&path, "old").unwrap();
        let stats = rdma::ServeStats::new("10.99.0.1:20049", "classic");
        write_stats(&path, &stats).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"policy\": \"classic\""), "{text}");
        assert!(!dir.join("serve-classic.stats.json.tmp").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn numeric_options_out_of_range_are_refused_before_anything_starts() {
        let base = ["rig", "--listen", "127.0.0.1:20049", "--policy", "acked"];
        for (option, value, says) in [
            ("--credits", "0", "--credits 0 out of range 1..=2048"),
            ("--credits", "2049", "--credits 2049 out of range 1..=2048"),
            ("--credits", "4096", "out of range 1..=2048"),
            (
                "--max-connections",
                "0",
                "--max-connections 0 out of range 1..=1022",
            ),
            ("--max-connections", "1023", "out of range 1..=1022"),
            (
                "--max-file-mib",
                "0",
                "--max-file-mib 0 out of range 1..=4096",
            ),
            ("--max-file-mib", "17592186044416", "out of range 1..=4096"),
            ("--drop-after", "0", "--drop-after 0"),
        ] {
            let cli = Cli::parse_from(base.iter().chain(&[option, value]));
            let err = format!("{:#}", run(cli.args).unwrap_err());
            assert!(err.contains(says), "{option} {value}: {err}");
        }
        for (option, value) in [
            ("--credits", "2048"),
            ("--max-connections", "1022"),
            ("--max-file-mib", "4096"),
            ("--drop-after", "1"),
        ] {
            let cli = Cli::parse_from(base.iter().chain(&[option, value]));
            assert!(check_args(&cli.args).is_ok(), "{option} {value}");
        }
    }

    #[test]
    fn refuses_unknown_policies_before_touching_rdma() {
        let cli = Cli::parse_from(["rig", "--listen", "127.0.0.1:20049", "--policy", "lru"]);
        let err = run(cli.args).unwrap_err();
        assert!(format!("{err:#}").contains("unknown DRC policy"), "{err:#}");
    }
}
