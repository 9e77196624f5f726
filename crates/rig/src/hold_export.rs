//! `rig hold-export`: kernel nfsd's side of a case's execution hold (the drc suite's server
//! guest). It answers the protocol `rig serve --control` speaks (`rdma::serve_control`) by
//! freezing the exported file system (`fsfreeze`, FIFREEZE): nfsd looks each call up in its DRC,
//! then its procedure blocks inside the frozen file system (`sb_start_write`), so the original
//! stays in progress (`RC_INPROG`) while its duplicate is looked up. The status counts nfsd's DRC
//! lookups since the hold began (`/proc/fs/nfsd/reply_cache_stats`: hits plus misses; per
//! network namespace, not per XID, so a case's own calls are the only ones that may arrive).
//!
//! A hold nobody releases thaws after `serve_control::HOLD_LIMIT`; SIGTERM/SIGINT thaw before
//! exiting, and start-up thaws what a killed predecessor may have left frozen.

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdma::datagram::timed_out;
use rdma::serve_control::{
    decode_request, encode_status, nfsd_drc_lookups, refusal, ExecutionHold, Observed,
    ServeRequest, MAX_DATAGRAM,
};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// UDP address to answer on (the server guest's address, port 4793).
    #[arg(long)]
    listen: SocketAddr,
    /// Mount point of the exported file system to freeze (one that supports FIFREEZE: ext4, xfs,
    /// btrfs; not tmpfs).
    #[arg(long)]
    path: PathBuf,
    /// nfsd's reply cache statistics.
    #[arg(long, default_value = "/proc/fs/nfsd/reply_cache_stats")]
    reply_cache_stats: PathBuf,
}

/// How often the loop wakes without a request (to see the stop flag and the hold limit).
const TICK: Duration = Duration::from_millis(100);

pub fn run(args: Args) -> Result<u8> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    // A predecessor killed while holding may have left it frozen; EINVAL (not frozen) is fine.
    let _ = fsfreeze(&args.path, false);
    lookups(&args.reply_cache_stats)?;
    let socket =
        UdpSocket::bind(args.listen).with_context(|| format!("binding {}", args.listen))?;
    socket.set_read_timeout(Some(TICK))?;
    eprintln!(
        "rig hold-export: holds of {} answered on UDP {}",
        args.path.display(),
        args.listen
    );
    let mut hold = ExecutionHold::default();
    let mut frozen_at_lookups: Option<u64> = None;
    let mut buf = [0u8; MAX_DATAGRAM];
    while !stop.load(Ordering::Relaxed) {
        if frozen_at_lookups.is_some() && !hold.holds(Instant::now()) {
            eprintln!("rig hold-export: hold limit reached, thawing");
            thaw(&args.path, &mut frozen_at_lookups);
        }
        let (n, from) = match socket.recv_from(&mut buf) {
            Ok(received) => received,
            Err(e) if timed_out(&e) => continue,
            Err(e) => return Err(e.into()),
        };
        let answer = match decode_request(&buf[..n]) {
            Ok(request) => answer(request, &args, &mut hold, &mut frozen_at_lookups),
            Err(refused) => refused,
        };
        let _ = socket.send_to(&answer, from);
    }
    thaw(&args.path, &mut frozen_at_lookups);
    Ok(0)
}

/// Apply `request` (freezing before a hold is reported, thawing before a release is) and
/// return the answer datagram.
fn answer(
    request: ServeRequest,
    args: &Args,
    hold: &mut ExecutionHold,
    frozen_at_lookups: &mut Option<u64>,
) -> Vec<u8> {
    let now = Instant::now();
    match request {
        ServeRequest::HoldExecution if frozen_at_lookups.is_none() => {
            let before = match lookups(&args.reply_cache_stats) {
                Ok(n) => n,
                Err(e) => return refusal(&format!("{e:#}")),
            };
            if let Err(e) = fsfreeze(&args.path, true) {
                return refusal(&format!("{e:#}"));
            }
            *frozen_at_lookups = Some(before);
        }
        ServeRequest::Release => thaw(&args.path, frozen_at_lookups),
        _ => {}
    }
    hold.apply(request, now);
    let decisions = match (*frozen_at_lookups, lookups(&args.reply_cache_stats)) {
        (Some(before), Ok(now)) => usize::try_from(now.saturating_sub(before)).unwrap_or(0),
        (Some(_), Err(e)) => return refusal(&format!("{e:#}")),
        (None, _) => 0,
    };
    // nfsd's queue is not visible from here (0), nor which lookups dropped their call.
    let observed = Observed {
        queued: 0,
        decisions,
        dropped: None,
    };
    encode_status(&hold.status(now, observed))
}

fn thaw(path: &Path, frozen_at_lookups: &mut Option<u64>) {
    if frozen_at_lookups.take().is_some() {
        if let Err(e) = fsfreeze(path, false) {
            eprintln!("rig hold-export: {e:#}");
        }
    }
}

/// `fsfreeze --freeze|--unfreeze path` (util-linux), its error output in the error.
fn fsfreeze(path: &Path, freeze: bool) -> Result<()> {
    let flag = if freeze { "--freeze" } else { "--unfreeze" };
    let output = Command::new("fsfreeze")
        .arg(flag)
        .arg(path)
        .output()
        .context("running fsfreeze (util-linux)")?;
    if !output.status.success() {
        bail!(
            "fsfreeze {flag} {}: {}",
            path.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

fn lookups(path: &Path) -> Result<u64> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    nfsd_drc_lookups(&text).with_context(|| {
        format!(
            "{}: no `cache hits` / `cache misses` counts",
            path.display()
        )
    })
}
