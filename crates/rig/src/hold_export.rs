//! `rig hold-export`: kernel nfsd's side of a case's execution hold (the drc suite's server
//! guest). It answers the protocol `rig serve --control` speaks (`rdma::serve_control`) by
//! freezing the exported file system (`fsfreeze`, FIFREEZE): nfsd looks each call up in its DRC,
//! then its procedure blocks inside the frozen file system (`sb_start_write`), so the original
//! stays in progress (`RC_INPROG`) while its duplicate is looked up. The status counts nfsd's DRC
//! lookups since the hold began (`/proc/fs/nfsd/reply_cache_stats`: hits plus misses; per
//! network namespace, not per XID, so a case's own calls are the only ones that may arrive).
//!
//! The export-cache hold (`ServeRequest::HoldExportCache`, the `deferred` case) stops
//! rpc.mountd (SIGSTOP) and flushes nfsd's export caches (`nfsd.fh`, `nfsd.export`; the client
//! IP map `auth.unix.ip` stays, so the call is deferred inside nfsd_dispatch, not while
//! authenticating): fh_verify's upcall then goes unanswered, the nfsd thread waits its
//! `thread_wait` (5 s, net/sunrpc/svc_xprt.c) and defers the call (`svc_defer`). The status
//! counts the `sunrpc:svc_defer` events in the trace since the hold began; the release
//! continues rpc.mountd (SIGCONT), whose answer revisits the call.
//!
//! A hold nobody releases ends after `serve_control::HOLD_LIMIT`; SIGTERM/SIGINT end it before
//! exiting, and start-up undoes what a killed predecessor may have left (a frozen export, a
//! stopped rpc.mountd).

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdma::datagram::timed_out;
use rdma::serve_control::{
    decode_request, encode_status, nfsd_drc_lookups, refusal, svc_defer_events, ExecutionHold,
    Observed, ServeRequest, MAX_DATAGRAM,
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
    /// The ftrace text whose `sunrpc:svc_defer` events count deferred calls (enabled by the
    /// suite's set-up; read, never consumed).
    #[arg(long, default_value = "/sys/kernel/tracing/trace")]
    trace: PathBuf,
    /// sunrpc's cache directory (`<cache>/flush` for `nfsd.fh` and `nfsd.export`).
    #[arg(long, default_value = "/proc/net/rpc")]
    proc_net_rpc: PathBuf,
}

/// The caches the export-cache hold flushes: the file handle → export key map and the export
/// table, both answered by rpc.mountd (the client map `auth.unix.ip` is kept).
const EXPORT_CACHES: [&str; 2] = ["nfsd.fh", "nfsd.export"];
/// The process answering sunrpc's export-cache upcalls (its `/proc/<pid>/comm`).
const MOUNTD_COMM: &str = "rpc.mountd";
/// Most of the trace read for one count: a case's events are a few KiB.
const TRACE_READ_LIMIT: u64 = 16 << 20;

/// What the hold in force holds.
#[derive(Debug, Default)]
struct Held {
    /// The export is frozen; nfsd's DRC lookups when it was.
    frozen_at_lookups: Option<u64>,
    /// rpc.mountd is stopped (these pids); `svc_defer` events when it was.
    export_cache: Option<ExportCacheHeld>,
}

#[derive(Debug)]
struct ExportCacheHeld {
    mountd: Vec<u32>,
    deferred_before: usize,
}

/// How often the loop wakes without a request (to see the stop flag and the hold limit).
const TICK: Duration = Duration::from_millis(100);

pub fn run(args: Args) -> Result<u8> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    // A predecessor killed while holding may have left it frozen (EINVAL, not frozen, is fine)
    // or rpc.mountd stopped (a SIGCONT to a running one is nothing).
    let _ = fsfreeze(&args.path, false);
    let _ = signal_pids("CONT", &mountd_pids());
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
    let mut held = Held::default();
    let mut buf = [0u8; MAX_DATAGRAM];
    while !stop.load(Ordering::Relaxed) {
        if held.any() && !hold.holds(Instant::now()) {
            eprintln!("rig hold-export: hold limit reached, letting go");
            held.release(&args.path);
        }
        let (n, from) = match socket.recv_from(&mut buf) {
            Ok(received) => received,
            Err(e) if timed_out(&e) => continue,
            Err(e) => return Err(e.into()),
        };
        let answer = match decode_request(&buf[..n]) {
            Ok(request) => answer(request, &args, &mut hold, &mut held),
            Err(refused) => refused,
        };
        let _ = socket.send_to(&answer, from);
    }
    held.release(&args.path);
    Ok(0)
}

impl Held {
    fn any(&self) -> bool {
        self.frozen_at_lookups.is_some() || self.export_cache.is_some()
    }

    /// Thaw the export and continue rpc.mountd, whichever is held.
    fn release(&mut self, path: &Path) {
        if self.frozen_at_lookups.take().is_some() {
            if let Err(e) = fsfreeze(path, false) {
                eprintln!("rig hold-export: {e:#}");
            }
        }
        if let Some(export_cache) = self.export_cache.take() {
            if let Err(e) = signal_pids("CONT", &export_cache.mountd) {
                eprintln!("rig hold-export: {e:#}");
            }
        }
    }
}

/// Apply `request` (freezing before a hold is reported, thawing before a release is) and
/// return the answer datagram.
fn answer(
    request: ServeRequest,
    args: &Args,
    hold: &mut ExecutionHold,
    held: &mut Held,
) -> Vec<u8> {
    let now = Instant::now();
    match request {
        ServeRequest::HoldExecution if held.frozen_at_lookups.is_none() => {
            let before = match lookups(&args.reply_cache_stats) {
                Ok(n) => n,
                Err(e) => return refusal(&format!("{e:#}")),
            };
            if let Err(e) = fsfreeze(&args.path, true) {
                return refusal(&format!("{e:#}"));
            }
            held.frozen_at_lookups = Some(before);
        }
        ServeRequest::HoldExportCache if held.export_cache.is_none() => {
            match hold_export_cache(args) {
                Ok(export_cache) => held.export_cache = Some(export_cache),
                Err(e) => return refusal(&format!("{e:#}")),
            }
        }
        ServeRequest::Release => held.release(&args.path),
        _ => {}
    }
    hold.apply(request, now);
    let decisions = match (held.frozen_at_lookups, lookups(&args.reply_cache_stats)) {
        (Some(before), Ok(now)) => usize::try_from(now.saturating_sub(before)).unwrap_or(0),
        (Some(_), Err(e)) => return refusal(&format!("{e:#}")),
        (None, _) => 0,
    };
    let deferred = match &held.export_cache {
        Some(export_cache) => match deferrals(&args.trace) {
            Ok(n) => Some(n.saturating_sub(export_cache.deferred_before)),
            Err(e) => return refusal(&format!("{e:#}")),
        },
        None => None,
    };
    // nfsd's queue is not visible from here (0), nor which lookups dropped their call.
    let observed = Observed {
        queued: 0,
        decisions,
        dropped: None,
        deferred,
    };
    encode_status(&hold.status(now, observed))
}

/// Stop rpc.mountd, then flush nfsd's export caches: the next call's file handle needs an upcall
/// nobody answers. Refused (nothing left stopped) when rpc.mountd, the caches or the
/// `svc_defer` events are missing: a hold that could not defer must not pass for one.
fn hold_export_cache(args: &Args) -> Result<ExportCacheHeld> {
    let deferred_before = deferrals(&args.trace)?;
    let enabled = args.trace.with_file_name("events/sunrpc/svc_defer/enable");
    if std::fs::read_to_string(&enabled)
        .map(|v| v.trim() != "1")
        .unwrap_or(true)
    {
        bail!(
            "sunrpc:svc_defer is not enabled ({}): deferrals could not be counted",
            enabled.display()
        );
    }
    let mountd = mountd_pids();
    if mountd.is_empty() {
        bail!("no {MOUNTD_COMM} runs: nothing answers the export caches' upcalls to hold");
    }
    signal_pids("STOP", &mountd)?;
    for cache in EXPORT_CACHES {
        let flush = args.proc_net_rpc.join(cache).join("flush");
        // sunrpc flushes every entry whatever the number (net/sunrpc/cache.c, write_flush).
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if let Err(e) = std::fs::write(&flush, format!("{seconds}\n")) {
            let _ = signal_pids("CONT", &mountd);
            bail!("flushing {}: {e}", flush.display());
        }
    }
    Ok(ExportCacheHeld {
        mountd,
        deferred_before,
    })
}

/// `sunrpc:svc_defer` events in the trace now.
fn deferrals(trace: &Path) -> Result<usize> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(trace)
        .with_context(|| format!("opening {}", trace.display()))?
        .take(TRACE_READ_LIMIT)
        .read_to_string(&mut text)
        .with_context(|| format!("reading {}", trace.display()))?;
    Ok(svc_defer_events(&text))
}

/// The pids whose `comm` is rpc.mountd (its main process and any `--num-threads` workers).
fn mountd_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| comm.trim_end() == MOUNTD_COMM)
        })
        .collect()
}

/// `kill -<signal> pids...` (procps or util-linux kill; busybox's too).
fn signal_pids(signal: &str, pids: &[u32]) -> Result<()> {
    if pids.is_empty() {
        return Ok(());
    }
    let output = Command::new("kill")
        .arg(format!("-{signal}"))
        .args(pids.iter().map(u32::to_string))
        .output()
        .context("running kill")?;
    if !output.status.success() {
        bail!(
            "kill -{signal} {pids:?}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
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
