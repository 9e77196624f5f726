//! `rig send-completion`: the client side of the Send-completion measurement (drc suite case
//! `premise.send-completion`): `rdma::send_completion` against the server, its
//! `verdict::send_completion::ClientMeasurement` printed as JSON for the server side's
//! `rig guest send-completion-result`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use crate::outln;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The server's NFS/RDMA address (nfsd's 20049 in the drc suite).
    #[arg(long)]
    server: SocketAddr,
    /// The relay's case name (its capture wire/<case>.pcapng).
    #[arg(long)]
    case: String,
    /// Milliseconds the cut stands before the server is asked to copy its trace.
    #[arg(long, default_value_t = 2000)]
    cut_ms: u64,
    /// Longest wait for a reply, and for the server's copy, in seconds.
    #[arg(long, default_value_t = 30)]
    timeout_secs: u64,
    /// File written when the server should copy its trace (the cut stands).
    #[arg(long)]
    signal_cut: PathBuf,
    /// File the server writes when it has its copy (then the cut is mended).
    #[arg(long)]
    await_copied: PathBuf,
}

pub fn run(args: Args) -> Result<u8> {
    let measurement = rdma::send_completion::measure(&rdma::send_completion::Options {
        server: args.server,
        case: args.case,
        timeout: Duration::from_secs(args.timeout_secs.max(1)),
        cut_for: Duration::from_millis(args.cut_ms),
        signal_cut: args.signal_cut,
        await_copied: args.await_copied,
    });
    outln!("{}", serde_json::to_string_pretty(&measurement)?)?;
    Ok(u8::from(measurement.error.is_some()))
}
