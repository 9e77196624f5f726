//! `rig hold-export`: kernel nfsd's side of a case's execution hold (the drc suite's server
//! guest). It answers the protocol `rig serve --control` speaks (`rdma::serve_control`) by
//! freezing the exported file system (`fsfreeze`, FIFREEZE): nfsd looks each call up in its DRC,
//! then its procedure blocks inside the frozen file system (`sb_start_write`), so the original
//! stays in progress (`RC_INPROG`) while its duplicate is looked up. The status counts nfsd's DRC
//! lookups since the hold began (`/proc/fs/nfsd/reply_cache_stats`: hits plus misses; per
//! network namespace, not per XID, so a case's own calls are the only ones that may arrive),
//! and the asked XID's transmissions nfsd dropped (`nfsd:nfsd_drc_found result=DROPIT`: a
//! duplicate of a call in progress, never answered, fs/nfsd/nfscache.c:529-531 in 6.12.118), so
//! a case stops waiting for replies that will not come once every transmission is answered or
//! dropped.
//!
//! Both counts of events come from hold-export's own ftrace instance
//! (`instances/rig-hold-export`, its `trace_pipe` drained without blocking): the suite's trace in
//! the top-level buffer, which `rig judge` counts executions from, is never opened here, since
//! opening a `trace` file pauses recording into its buffer while it is open (`pause-on-trace`,
//! kernel/trace/trace.c:4624 in 6.12.118) and an event landing then would be lost.
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
    decode_request, encode_status, nfsd_drc_lookups, refusal, ExecutionHold, Observed,
    ServeRequest, MAX_DATAGRAM,
};
use verdict::counted::{drc_found_event, is_event, DrcFound, MAX_XIDS};

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
    /// The tracefs mount, where hold-export makes its own instance (`instances/rig-hold-export`)
    /// for the `sunrpc:svc_defer` and `nfsd:nfsd_drc_found` events it counts.
    #[arg(long, default_value = "/sys/kernel/tracing")]
    tracing: PathBuf,
    /// sunrpc's cache directory (`<cache>/flush` for `nfsd.fh` and `nfsd.export`).
    #[arg(long, default_value = "/proc/net/rpc")]
    proc_net_rpc: PathBuf,
}

/// The caches the export-cache hold flushes: the file handle → export key map and the export
/// table, both answered by rpc.mountd (the client map `auth.unix.ip` is kept).
const EXPORT_CACHES: [&str; 2] = ["nfsd.fh", "nfsd.export"];
/// The process answering sunrpc's export-cache upcalls (its `/proc/<pid>/comm`).
const MOUNTD_COMM: &str = "rpc.mountd";
/// hold-export's ftrace instance (under `<tracing>/instances/`).
const TRACE_INSTANCE: &str = "rig-hold-export";
/// The events enabled in it: what the drop count and the deferral count read.
const DRC_FOUND_EVENT: &str = "nfsd/nfsd_drc_found";
const SVC_DEFER_EVENT: &str = "sunrpc/svc_defer";
/// Most bytes one drain reads (a case's events are a few KiB; the rest waits for the next).
const DRAIN_LIMIT: usize = 4 << 20;
/// Longest event line kept whole (an ftrace line is under 200 bytes; a longer one is skipped).
const MAX_TRACE_LINE: usize = 4096;

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

/// What hold-export's ftrace instance has said since start-up: nfsd's drops per XID and its
/// deferrals. Lines come from our own guest's kernel, but are still read bounded: at most
/// [`MAX_XIDS`] XIDs are kept (an XID beyond that has no count), a line longer than
/// [`MAX_TRACE_LINE`] is skipped, one drain reads at most [`DRAIN_LIMIT`].
#[derive(Debug, Default)]
struct TraceTally {
    /// `DROPIT` lines per XID.
    drops: std::collections::BTreeMap<u32, usize>,
    /// Whether an XID's drop was not kept (the cap): an XID not in `drops` may have drops.
    drops_untracked: bool,
    /// `svc_defer` lines.
    deferrals: usize,
    /// The part of a line not yet ended by a newline.
    partial: Vec<u8>,
    /// The line under way is longer than [`MAX_TRACE_LINE`]: skipped up to its newline.
    overlong: bool,
}

impl TraceTally {
    /// Count the complete lines in `bytes` (the rest is kept for the next call).
    fn take(&mut self, bytes: &[u8]) {
        for piece in bytes.split_inclusive(|&b| b == b'\n') {
            let ended = piece.ends_with(b"\n");
            let piece = piece.strip_suffix(b"\n").unwrap_or(piece);
            if !self.overlong && self.partial.len() + piece.len() <= MAX_TRACE_LINE {
                self.partial.extend_from_slice(piece);
            } else {
                self.overlong = true;
                self.partial.clear();
            }
            if ended {
                let line = std::mem::take(&mut self.partial);
                if !std::mem::take(&mut self.overlong) {
                    self.line(&String::from_utf8_lossy(&line));
                }
            }
        }
    }

    fn line(&mut self, line: &str) {
        if is_event(line, "svc_defer") {
            self.deferrals += 1;
        } else if let Some((xid, DrcFound::DropIt)) = drc_found_event(line) {
            if self.drops.len() < MAX_XIDS || self.drops.contains_key(&xid) {
                *self.drops.entry(xid).or_default() += 1;
            } else {
                self.drops_untracked = true;
            }
        }
    }

    /// `xid`'s transmissions nfsd dropped, where the count can be vouched for.
    fn drops(&self, xid: u32) -> Option<usize> {
        match self.drops.get(&xid) {
            Some(&n) => Some(n),
            None if self.drops_untracked => None,
            None => Some(0),
        }
    }
}

/// hold-export's own ftrace instance: its `trace_pipe`, and which of the two events it has.
struct TraceInstance {
    dir: PathBuf,
    pipe: std::fs::File,
    drc_found: bool,
    svc_defer: bool,
    tally: TraceTally,
}

impl TraceInstance {
    /// Make (or reuse, after a killed predecessor) the instance, enable the events this kernel
    /// has, and open its `trace_pipe` without blocking.
    fn open(tracing: &Path) -> Result<TraceInstance> {
        let dir = tracing.join("instances").join(TRACE_INSTANCE);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => bail!("making the ftrace instance {}: {e}", dir.display()),
        }
        let enable = |event: &str| {
            std::fs::write(dir.join("events").join(event).join("enable"), "1").is_ok()
        };
        let drc_found = enable(DRC_FOUND_EVENT);
        let svc_defer = enable(SVC_DEFER_EVENT);
        std::fs::write(dir.join("tracing_on"), "1")
            .with_context(|| format!("turning on {}", dir.display()))?;
        use std::os::unix::fs::OpenOptionsExt;
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(dir.join("trace_pipe"))
            .with_context(|| format!("opening {}/trace_pipe", dir.display()))?;
        Ok(TraceInstance {
            dir,
            pipe,
            drc_found,
            svc_defer,
            tally: TraceTally::default(),
        })
    }

    /// Count what the kernel has traced since the last drain.
    fn drain(&mut self) -> Result<()> {
        use std::io::Read;
        let mut buf = [0u8; 64 << 10];
        let mut read = 0;
        while read < DRAIN_LIMIT {
            match self.pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    self.tally.take(&buf[..n]);
                    read += n;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).context("reading hold-export's trace_pipe"),
            }
        }
        Ok(())
    }

    /// Deferrals so far (`None` when this kernel has no `svc_defer` to count).
    fn deferrals(&mut self) -> Result<Option<usize>> {
        self.drain()?;
        Ok(self.svc_defer.then_some(self.tally.deferrals))
    }

    /// `xid`'s drops so far (`None` when they cannot be told).
    fn drops(&mut self, xid: u32) -> Option<usize> {
        self.drain().ok()?;
        self.tally.drops(xid).filter(|_| self.drc_found)
    }

    /// Turn the events off and remove the instance (the suite's trace is not touched).
    fn close(self) {
        let TraceInstance { dir, pipe, .. } = self;
        drop(pipe);
        let _ = std::fs::write(dir.join("tracing_on"), "0");
        for event in [DRC_FOUND_EVENT, SVC_DEFER_EVENT] {
            let _ = std::fs::write(dir.join("events").join(event).join("enable"), "0");
        }
        if let Err(e) = std::fs::remove_dir(&dir) {
            eprintln!("rig hold-export: removing {}: {e}", dir.display());
        }
    }
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
    // Without the instance the drop count and the export-cache hold are refused, nothing else.
    let mut trace = match TraceInstance::open(&args.tracing) {
        Ok(trace) => Some(trace),
        Err(e) => {
            eprintln!("rig hold-export: no drop or deferral counts: {e:#}");
            None
        }
    };
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
    let result = loop {
        if stop.load(Ordering::Relaxed) {
            break Ok(0);
        }
        if held.any() && !hold.holds(Instant::now()) {
            eprintln!("rig hold-export: hold limit reached, letting go");
            held.release(&args.path);
        }
        let (n, from) = match socket.recv_from(&mut buf) {
            Ok(received) => received,
            Err(e) if timed_out(&e) => {
                // Drained between requests too, so the pipe's buffer never fills.
                if let Some(trace) = trace.as_mut() {
                    let _ = trace.drain();
                }
                continue;
            }
            Err(e) => break Err(e.into()),
        };
        let answer = match decode_request(&buf[..n]) {
            Ok(request) => answer(request, &args, &mut hold, &mut held, trace.as_mut()),
            Err(refused) => refused,
        };
        let _ = socket.send_to(&answer, from);
    };
    held.release(&args.path);
    if let Some(trace) = trace {
        trace.close();
    }
    result
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
    mut trace: Option<&mut TraceInstance>,
) -> Vec<u8> {
    let now = Instant::now();
    let xid = match request {
        ServeRequest::Status { xid } => Some(xid),
        _ => None,
    };
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
            match hold_export_cache(trace.as_deref_mut(), &args.proc_net_rpc) {
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
    let deferred = match (&held.export_cache, trace.as_deref_mut()) {
        (Some(export_cache), Some(trace)) => match trace.deferrals() {
            Ok(n) => n.map(|n| n.saturating_sub(export_cache.deferred_before)),
            Err(e) => return refusal(&format!("{e:#}")),
        },
        _ => None,
    };
    // nfsd's queue is not visible from here (0). Its drops are: each transmission of the XID
    // that met the original in progress (the only DROPIT nfsd has, nfscache.c:529-531).
    let dropped = match (xid, trace) {
        (Some(xid), Some(trace)) => trace.drops(xid),
        _ => None,
    };
    let observed = Observed {
        queued: 0,
        decisions,
        dropped,
        deferred,
    };
    encode_status(&hold.status(now, observed))
}

/// Stop rpc.mountd, then flush nfsd's export caches: the next call's file handle needs an upcall
/// nobody answers. Refused (nothing left stopped) when rpc.mountd, the caches or the
/// `svc_defer` events are missing: a hold that could not defer must not pass for one.
fn hold_export_cache(
    trace: Option<&mut TraceInstance>,
    proc_net_rpc: &Path,
) -> Result<ExportCacheHeld> {
    let Some(trace) = trace else {
        bail!("hold-export has no ftrace instance: deferrals could not be counted");
    };
    let Some(deferred_before) = trace.deferrals()? else {
        bail!(
            "sunrpc:svc_defer could not be enabled in {}: deferrals could not be counted",
            trace.dir.display()
        );
    };
    let mountd = mountd_pids();
    if mountd.is_empty() {
        bail!("no {MOUNTD_COMM} runs: nothing answers the export caches' upcalls to hold");
    }
    signal_pids("STOP", &mountd)?;
    for cache in EXPORT_CACHES {
        let flush = proc_net_rpc.join(cache).join("flush");
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tally() -> TraceTally {
        TraceTally::default()
    }

    /// The 6.12.118 lines of a burst under the execution hold, and a deferral.
    const PIPE: &str = "\
            nfsd-347     [000] ...1.    72.120585: nfsd_drc_found: boot_time=        6b147943 xid=0x5bc90003 result=DROPIT
            nfsd-347     [000] ...1.    72.125425: nfsd_drc_found: boot_time=        6b147943 xid=0x5bc90003 result=DROPIT
            nfsd-347     [000] ...1.    72.126000: nfsd_drc_found: boot_time=        6b147943 xid=0x5bc90004 result=REPLY
            nfsd-812     [001] ..... 1239.000200: svc_defer: xid=0x5a3f0021 server=10.99.0.1:20049 client=10.99.0.2:0 flags=RQ_USEDEFERRAL
            nfsd-812     [001] ..... 1239.000300: svc_defer_queue: xid=0x5a3f0021
";

    #[test]
    fn counts_drops_per_xid_and_deferrals_whatever_the_pipe_cuts_the_lines_into() {
        for chunk in [1, 7, 64, PIPE.len()] {
            let mut t = tally();
            for piece in PIPE.as_bytes().chunks(chunk) {
                t.take(piece);
            }
            assert_eq!(t.drops(0x5bc9_0003), Some(2), "chunks of {chunk}");
            // A replay is answered: not a drop.
            assert_eq!(t.drops(0x5bc9_0004), Some(0));
            assert_eq!(t.drops(0x1234_5678), Some(0));
            assert_eq!(t.deferrals, 1, "svc_defer_queue is another event");
        }
    }

    #[test]
    fn a_line_not_yet_ended_is_not_counted() {
        let mut t = tally();
        let (first, _) = PIPE.split_once('\n').unwrap();
        t.take(first.as_bytes());
        assert_eq!(t.drops(0x5bc9_0003), Some(0));
        t.take(b"\n");
        assert_eq!(t.drops(0x5bc9_0003), Some(1));
    }

    #[test]
    fn an_overlong_line_is_skipped_and_the_next_one_counted() {
        let mut t = tally();
        let mut long = vec![b'x'; MAX_TRACE_LINE];
        long.extend_from_slice(b" nfsd_drc_found: xid=0x00000001 result=DROPIT\n");
        for piece in long.chunks(1000) {
            t.take(piece);
        }
        assert_eq!(t.drops(1), Some(0));
        t.take(PIPE.as_bytes());
        assert_eq!(t.drops(0x5bc9_0003), Some(2));
    }

    #[test]
    fn beyond_the_xid_cap_an_unkept_xid_has_no_count() {
        let mut t = tally();
        for xid in 0..MAX_XIDS as u32 {
            t.line(&format!(
                "nfsd-1 [000] ..... 1.0: nfsd_drc_found: xid={xid:#010x} result=DROPIT"
            ));
        }
        assert_eq!(t.drops(0x7fff_0000), Some(0));
        t.line("nfsd-1 [000] ..... 1.0: nfsd_drc_found: xid=0x7fff0000 result=DROPIT");
        // Dropped, but not kept: never reported as 0 (a wait would end too early).
        assert_eq!(t.drops(0x7fff_0000), None);
        t.line("nfsd-1 [000] ..... 1.0: nfsd_drc_found: xid=0x00000005 result=DROPIT");
        assert_eq!(t.drops(5), Some(2));
    }
}
