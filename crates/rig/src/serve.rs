//! `rig serve`: our NFSv3 + MOUNT v3 server over RDMA (soft-RoCE in the VMs), until SIGTERM/SIGINT;
//! then the --stats JSON. SIGUSR1 disconnects every connection (the reconnect test).

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use engine::ConnectionConfig;
use wire::svcrdma::Profile;

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
    /// Which svcrdma's header checks to apply (linux-6.1 or linux-2026).
    #[arg(long, default_value = "linux-2026")]
    profile: Profile,
    /// Write statistics JSON here on exit.
    #[arg(long)]
    stats: Option<PathBuf>,
    /// Concurrent connections (each beyond the first gets its own file system and DRC).
    #[arg(long, default_value_t = 4)]
    max_connections: usize,
    /// Also serve MOUNT v3 and portmap GETPORT over TCP here (for the kernel client's
    /// `mountproto=tcp,mountport=P`).
    #[arg(long)]
    mount_tcp: Option<SocketAddr>,
    /// Disconnect each connection once after this many replies (the reconnect test).
    #[arg(long)]
    drop_after: Option<u64>,
    /// Largest file in the in-memory export, MiB (the whole export holds at most 4 such files).
    #[arg(long, default_value_t = 24)]
    max_file_mib: u64,
    /// Credits granted per connection (RFC 8166 §3.3.1).
    #[arg(long, default_value_t = ConnectionConfig::default().credits)]
    credits: u32,
}

pub fn run(args: Args) -> Result<u8> {
    if args.export.as_bytes() != server::fs::EXPORT_PATH {
        bail!(
            "--export {}: the in-memory file system exports only {}",
            args.export,
            String::from_utf8_lossy(server::fs::EXPORT_PATH)
        );
    }
    if args.credits == 0 {
        bail!("--credits must be at least 1");
    }
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
            let ports = rdma::mount_tcp::Ports {
                nfs: args.listen.port(),
                mount: addr.port(),
            };
            let stop = Arc::clone(&stop);
            eprintln!("rig serve: MOUNT v3 + portmap over TCP on {addr}");
            Some(std::thread::spawn(move || {
                rdma::mount_tcp::serve(listener, ports, stop)
            }))
        }
        None => None,
    };
    let options = rdma::ServeOptions {
        listen: args.listen,
        policy: args.policy.clone(),
        profile: args.profile,
        config: ConnectionConfig {
            credits: args.credits,
            ..ConnectionConfig::default()
        },
        max_connections: args.max_connections.max(1),
        drop_after: args.drop_after,
        fs_limits: server::fs::Limits {
            max_file_bytes: args.max_file_mib << 20,
            max_total_bytes: (args.max_file_mib << 20).saturating_mul(4),
            ..server::fs::Limits::default()
        },
    };
    let stats = rdma::serve(
        &options,
        rdma::Controls {
            stop: &stop,
            drop_all: &drop_all,
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
        std::fs::write(path, serde_json::to_string_pretty(&stats)? + "\n")
            .with_context(|| format!("--stats {}", path.display()))?;
    }
    eprintln!(
        "rig serve: stopped after {} connection(s)",
        stats.connections_seen
    );
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

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
    fn refuses_unknown_policies_before_touching_rdma() {
        let cli = Cli::parse_from(["rig", "--listen", "127.0.0.1:20049", "--policy", "lru"]);
        let err = run(cli.args).unwrap_err();
        assert!(format!("{err:#}").contains("unknown DRC policy"), "{err:#}");
    }
}
