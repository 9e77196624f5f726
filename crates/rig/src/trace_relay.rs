//! `rig trace-relay`: the server guest's side of kernel-event feedback for `rig fuzz-wire`.
//!
//! It enables the rpcrdma, sunrpc and nfsd trace events in tracefs (minus a few that fire on
//! every request whatever it holds, or for the file cache), follows `trace_pipe`, and serves
//! one TCP client at a time on the link the fuzzer already uses. The protocol is line based:
//! the fuzzer sends `mark N` after case N; the relay writes `rigmark N` into `trace_marker` and
//! acknowledges at once (`marked N`), so the fuzzer's next case starts only after the mark is
//! in the trace; then it reads `trace_pipe` until that mark comes by (or `--mark-timeout-ms`)
//! and sends the normalised events that came before it ([`RelayReply`]): events between marks
//! N-1 and N belong to case N. The events line travels while the fuzzer runs case N+1, and the
//! fuzzer reads it before the ack of mark N+1 (one case of delay, no wait for `trace_pipe` on
//! the case's path). Normalisation and attribution are `wirefuzz::signature`'s (sans-IO); this
//! module only moves the lines.
//!
//! Bounds: lines are cut at [`MAX_LINE_BYTES`] as they are read, the line queue holds
//! [`LINE_QUEUE`] lines (the reader waits when it is full; the kernel's ring buffer drops the
//! overflow), a case keeps at most `MAX_LINES_PER_CASE` lines and
//! `MAX_EVENTS_PER_SIGNATURE` distinct events, requests are at most [`MAX_REQUEST_BYTES`].
//!
//! The fuzzer's side is [`RelayClient`].

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use wirefuzz::signature::{
    MarkCollector, RelayReply, Signature, MARK_PREFIX, MAX_LINE_BYTES, MAX_REPLY_BYTES,
};

/// Lines queued between the `trace_pipe` reader and the request loop.
const LINE_QUEUE: usize = 8192;
/// Longest request line (`mark N`).
const MAX_REQUEST_BYTES: u64 = 64;
/// Event groups enabled by default.
const DEFAULT_GROUPS: &str = "rpcrdma,sunrpc,nfsd";
/// Events switched off again after their group was enabled: they fire for every request (or
/// on timers) whatever the request holds, or belong to nfsd's file cache and callbacks.
const QUIET_EVENTS: &[&str] = &[
    "sunrpc/svc_xprt_enqueue",
    "sunrpc/svc_xprt_dequeue",
    "sunrpc/svc_wake_up",
    "sunrpc/svc_stats_latency",
];
/// Event name prefixes switched off in their group (nfsd's file cache, NFSv4 callbacks).
const QUIET_PREFIXES: &[(&str, &str)] = &[("nfsd", "nfsd_file_"), ("nfsd", "nfsd_cb_")];

#[derive(Debug, clap::Args)]
pub struct Args {
    /// TCP address to serve marks on (the server guest's address on the wire).
    #[arg(long)]
    listen: String,
    /// The tracefs mount.
    #[arg(long, default_value = "/sys/kernel/tracing")]
    tracefs: PathBuf,
    /// Event groups to enable (comma-separated).
    #[arg(long, default_value = DEFAULT_GROUPS)]
    groups: String,
    /// Write the enabled events (tracefs `set_event`) here once set up.
    #[arg(long)]
    events_out: Option<PathBuf>,
    /// How long to wait for a mark to come through `trace_pipe`.
    #[arg(long, default_value_t = 1000)]
    mark_timeout_ms: u64,
    /// Also keep every event line here, as read (at most [`MAX_LOG_BYTES`]): a replayed
    /// finding's svcrdma decode, Read posting and completion events, for its root cause.
    #[arg(long)]
    log: Option<PathBuf>,
}

/// Most bytes `--log` keeps; later lines are counted, not written.
pub const MAX_LOG_BYTES: u64 = 16 * 1024 * 1024;

/// The `--log` file: lines written until [`MAX_LOG_BYTES`], then a count of the rest.
struct EventLog {
    file: File,
    written: u64,
    dropped: u64,
}

impl EventLog {
    fn write(&mut self, line: &str) {
        let bytes = line.len() as u64 + 1;
        if self.written.saturating_add(bytes) > MAX_LOG_BYTES {
            self.dropped += 1;
            return;
        }
        if writeln!(self.file, "{line}").is_ok() {
            self.written += bytes;
        }
    }
}

impl Drop for EventLog {
    fn drop(&mut self) {
        if self.dropped > 0 {
            let _ = writeln!(
                self.file,
                "# rig trace-relay: {} lines past the log limit not kept",
                self.dropped
            );
        }
    }
}

pub fn run(args: Args) -> Result<u8> {
    let enabled = setup_tracefs(&args.tracefs, &args.groups)?;
    if let Some(path) = &args.events_out {
        std::fs::write(path, enabled.join("\n") + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    eprintln!("trace-relay: {} events enabled", enabled.len());
    let marker = OpenOptions::new()
        .write(true)
        .open(args.tracefs.join("trace_marker"))
        .context("opening trace_marker")?;
    let pipe = File::open(args.tracefs.join("trace_pipe")).context("opening trace_pipe")?;
    let (tx, rx) = sync_channel(LINE_QUEUE);
    let mut log = match &args.log {
        Some(path) => Some(EventLog {
            file: File::create(path).with_context(|| format!("creating {}", path.display()))?,
            written: 0,
            dropped: 0,
        }),
        None => None,
    };
    // The reader blocks in read(2) on trace_pipe for the relay's lifetime; it ends with the
    // process (SIGTERM from the suite's finish script).
    std::thread::spawn(move || {
        read_lines(pipe, &tx, |line| {
            if let Some(log) = log.as_mut() {
                log.write(line);
            }
        })
    });
    let listener =
        TcpListener::bind(&args.listen).with_context(|| format!("binding {}", args.listen))?;
    eprintln!("trace-relay: listening on {}", args.listen);
    let mut marker = marker;
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(s) => s,
            Err(e) => {
                eprintln!("trace-relay: accept: {e}");
                continue;
            }
        };
        if let Err(e) = serve_connection(
            stream,
            &mut marker,
            &rx,
            Duration::from_millis(args.mark_timeout_ms),
        ) {
            eprintln!("trace-relay: connection ended: {e:#}");
        }
    }
    Ok(0)
}

/// Enable `groups` (those the kernel has), switch the quiet events off, clear the buffer and
/// turn tracing on; returns the enabled events.
fn setup_tracefs(tracefs: &Path, groups: &str) -> Result<Vec<String>> {
    let write = |path: PathBuf, value: &str| -> Result<()> {
        std::fs::write(&path, value).with_context(|| format!("writing {}", path.display()))
    };
    let events = tracefs.join("events");
    if !events.is_dir() {
        bail!("{} has no events/: is tracefs mounted?", tracefs.display());
    }
    write(tracefs.join("tracing_on"), "0")?;
    for group in groups.split(',').map(str::trim).filter(|g| !g.is_empty()) {
        let enable = events.join(group).join("enable");
        if !enable.exists() {
            eprintln!("trace-relay: this kernel has no {group} events");
            continue;
        }
        write(enable, "1")?;
        for quiet in QUIET_EVENTS
            .iter()
            .filter(|q| q.starts_with(&format!("{group}/")))
        {
            let enable = events.join(quiet).join("enable");
            if enable.exists() {
                write(enable, "0")?;
            }
        }
        for (_, prefix) in QUIET_PREFIXES.iter().filter(|(g, _)| *g == group) {
            let entries = std::fs::read_dir(events.join(group))
                .with_context(|| format!("listing {group} events"))?;
            for entry in entries.flatten().take(4096) {
                if entry.file_name().to_string_lossy().starts_with(prefix) {
                    write(entry.path().join("enable"), "0")?;
                }
            }
        }
    }
    // Opening `trace` for writing with truncation clears the ring buffer.
    File::create(tracefs.join("trace")).context("clearing the trace buffer")?;
    write(tracefs.join("tracing_on"), "1")?;
    let set = std::fs::read_to_string(tracefs.join("set_event")).unwrap_or_default();
    Ok(set.lines().take(10_000).map(str::to_string).collect())
}

/// Read `pipe` into lines of at most [`MAX_LINE_BYTES`] (the rest of a longer line is
/// skipped), hand each to `keep` and queue it; ends when the pipe ends or the queue's receiver
/// is gone.
fn read_lines(mut pipe: impl Read, tx: &SyncSender<String>, mut keep: impl FnMut(&str)) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut line: Vec<u8> = Vec::with_capacity(MAX_LINE_BYTES);
    let mut skipping = false;
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                if !skipping || !line.is_empty() {
                    let text = String::from_utf8_lossy(&line).into_owned();
                    keep(&text);
                    if tx.send(text).is_err() {
                        return;
                    }
                }
                line.clear();
                skipping = false;
            } else if line.len() < MAX_LINE_BYTES {
                line.push(b);
            } else {
                skipping = true;
            }
        }
    }
}

/// Answer `mark N` requests on `stream` until it closes.
fn serve_connection(
    stream: TcpStream,
    marker: &mut dyn Write,
    lines: &Receiver<String>,
    timeout: Duration,
) -> Result<()> {
    stream.set_nodelay(true).ok();
    let mut writer = stream.try_clone().context("cloning the stream")?;
    let mut reader = BufReader::new(stream);
    let mut collector = MarkCollector::new();
    let mut request = Vec::new();
    loop {
        request.clear();
        let n = (&mut reader)
            .take(MAX_REQUEST_BYTES)
            .read_until(b'\n', &mut request)?;
        if n == 0 {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&request);
        let Some(mark) = text
            .trim()
            .strip_prefix("mark ")
            .and_then(|n| n.parse::<u64>().ok())
        else {
            bail!("bad request {:?}", text.trim());
        };
        marker
            .write_all(format!("{MARK_PREFIX}{mark}\n").as_bytes())
            .and_then(|()| marker.flush())
            .context("writing trace_marker")?;
        writer.write_all(format!("marked {mark}\n").as_bytes())?;
        let timed_out = wait_for_mark(&mut collector, lines, mark, timeout);
        let reply = RelayReply {
            mark,
            timed_out,
            events: collector.take(),
        };
        writer.write_all(reply.encode().as_bytes())?;
    }
}

/// Feed lines until mark `mark` comes by; `true` if it did not within `timeout`. An older
/// mark (one that timed out before) ends an earlier case: what came before it is dropped.
fn wait_for_mark(
    collector: &mut MarkCollector,
    lines: &Receiver<String>,
    mark: u64,
    timeout: Duration,
) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => match collector.feed(&line) {
                Some(m) if m == mark => return false,
                Some(_) => {
                    collector.take();
                }
                None => {}
            },
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return true,
        }
    }
}

/// The fuzzer's side: marks each case and reads the events of the case marked before it.
pub struct RelayClient {
    addr: String,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    next_mark: u64,
    /// The mark whose events line has not been read yet.
    pending: Option<u64>,
}

impl RelayClient {
    /// Connect to the relay at `addr` and take (and drop) what happened before the run.
    pub fn connect(addr: &str, timeout: Duration) -> Result<RelayClient> {
        let sockaddr = addr
            .to_socket_addrs()
            .with_context(|| format!("trace relay address {addr}"))?
            .next()
            .with_context(|| format!("trace relay address {addr} resolves to nothing"))?;
        let stream = TcpStream::connect_timeout(&sockaddr, timeout)
            .with_context(|| format!("connecting to the trace relay at {addr}"))?;
        stream.set_nodelay(true).ok();
        // The relay waits up to its mark timeout; a reply later than this is an error.
        stream.set_read_timeout(Some(timeout * 3)).ok();
        let writer = stream.try_clone()?;
        let mut client = RelayClient {
            addr: addr.to_string(),
            reader: BufReader::new(stream),
            writer,
            next_mark: 0,
            pending: None,
        };
        client.mark()?;
        client.take_pending()?;
        Ok(client)
    }

    /// Mark the end of the case just run (returns once the mark is in the trace) and return
    /// the events of the case marked before it: `None` when there was none, `Some(None)` when
    /// its mark did not come through in time (its events are not attributable).
    pub fn mark(&mut self) -> Result<Option<Option<Signature>>> {
        let mark = self.next_mark;
        self.next_mark += 1;
        self.writer
            .write_all(format!("mark {mark}\n").as_bytes())
            .with_context(|| format!("trace relay {}", self.addr))?;
        let previous = self.take_pending()?;
        let line = self.read_line()?;
        if line.trim_end() != format!("marked {mark}") {
            bail!("trace relay answered {:?} to mark {mark}", line.trim_end());
        }
        self.pending = Some(mark);
        Ok(previous)
    }

    /// The events of the last marked case, if not read yet.
    pub fn take_pending(&mut self) -> Result<Option<Option<Signature>>> {
        let Some(mark) = self.pending.take() else {
            return Ok(None);
        };
        let reply = RelayReply::decode(&self.read_line()?)?;
        if reply.mark != mark {
            bail!(
                "trace relay sent the events of mark {} for mark {mark}",
                reply.mark
            );
        }
        Ok(Some((!reply.timed_out).then_some(reply.events.signature)))
    }

    fn read_line(&mut self) -> Result<String> {
        let mut line = Vec::new();
        (&mut self.reader)
            .take(MAX_REPLY_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .with_context(|| format!("trace relay {}", self.addr))?;
        if line.is_empty() {
            bail!("trace relay {} closed the connection", self.addr);
        }
        Ok(String::from_utf8_lossy(&line).into_owned())
    }
}

/// A relay over a fake `trace_marker` for other modules' tests: mark N "fires" the events
/// `events(N)` returns, then comes through; serves one connection.
#[cfg(test)]
pub(crate) fn spawn_fake_relay(
    events: impl Fn(u64) -> Vec<String> + Send + 'static,
) -> (String, std::thread::JoinHandle<()>) {
    struct Marker<F> {
        tx: SyncSender<String>,
        events: F,
    }
    impl<F: Fn(u64) -> Vec<String>> Write for Marker<F> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let text = String::from_utf8_lossy(buf);
            let mark = text
                .trim()
                .strip_prefix(MARK_PREFIX)
                .unwrap()
                .parse()
                .unwrap();
            for event in (self.events)(mark) {
                self.tx
                    .send(format!("  nfsd-7  [000] ..... 1.0: {event}"))
                    .unwrap();
            }
            let line = format!(
                "  rig-9  [001] ..... 1.1: tracing_mark_write: {}",
                text.trim()
            );
            self.tx.send(line).unwrap();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let handle = std::thread::spawn(move || {
        let (tx, rx) = sync_channel(LINE_QUEUE);
        let mut marker = Marker { tx, events };
        let (stream, _) = listener.accept().unwrap();
        serve_connection(stream, &mut marker, &rx, Duration::from_secs(5)).unwrap();
    });
    (addr, handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `trace_marker` that feeds the relay's line queue as the kernel would: the events the
    /// "case" fired, then the mark line; marks listed in `swallow` never come through.
    struct FakeMarker {
        tx: SyncSender<String>,
        events_per_mark: Vec<Vec<&'static str>>,
        swallow: Vec<u64>,
    }

    impl Write for FakeMarker {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let text = String::from_utf8_lossy(buf);
            let mark: u64 = text
                .trim()
                .strip_prefix(MARK_PREFIX)
                .unwrap()
                .parse()
                .unwrap();
            for event in self
                .events_per_mark
                .get(mark as usize)
                .into_iter()
                .flatten()
            {
                let line = format!("  nfsd-7  [000] ..... 12.5: {event}");
                self.tx.send(line).unwrap();
            }
            if !self.swallow.contains(&mark) {
                let line = format!(
                    "  rig-9  [001] ..... 12.6: tracing_mark_write: {}",
                    text.trim()
                );
                self.tx.send(line).unwrap();
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_relay_answers_each_mark_with_the_events_before_it() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (tx, rx) = sync_channel(LINE_QUEUE);
        let mut marker = FakeMarker {
            tx,
            events_per_mark: vec![
                vec!["svc_xprt_accept: addr=10.0.0.2:1 protocol=rdma service=nfsd"],
                vec![
                    "svcrdma_decode_rqst: cq.id=1 cid=5 xid=0x57000000 vers=1 credits=32 \
                     proc=RDMA_MSG hdrlen=28",
                    "svc_process: addr=10.0.0.2:1 xid=0x57000000 service=nfsd vers=3 proc=NULL",
                ],
                vec!["svcrdma_err_chunk: xid=0x57000001"],
                vec!["svc_drop: addr=x xid=0x57000002 flags=RQ_DROPME"],
                vec!["svcrdma_decode_short_err: cq.id=1 cid=9 hdrlen=3"],
            ],
            swallow: vec![3],
        };
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            serve_connection(stream, &mut marker, &rx, Duration::from_millis(200)).unwrap();
        });
        // Connecting takes mark 0 (what came before the run) and drops it.
        let mut client = RelayClient::connect(&addr, Duration::from_secs(5)).unwrap();
        // Each mark returns the events of the case marked before it.
        assert_eq!(
            client.mark().unwrap(),
            None,
            "nothing marked since connecting"
        );
        let first = client.mark().unwrap().unwrap().unwrap();
        assert_eq!(
            first.events().collect::<Vec<_>>(),
            [
                "svc_process service=nfsd vers=3 proc=NULL",
                "svcrdma_decode_rqst vers=1 credits=~32 proc=RDMA_MSG hdrlen=~16",
            ]
        );
        let second = client.mark().unwrap().unwrap().unwrap();
        assert_eq!(second.events().collect::<Vec<_>>(), ["svcrdma_err_chunk"]);
        // Mark 3 never shows: its case has no attributable events...
        assert_eq!(client.mark().unwrap(), Some(None));
        // ...and what came before it is not taken for case 4's (the last one: taken apart).
        let fourth = client.take_pending().unwrap().unwrap().unwrap();
        assert_eq!(
            fourth.events().collect::<Vec<_>>(),
            ["svcrdma_decode_short_err hdrlen=~2"]
        );
        assert_eq!(client.take_pending().unwrap(), None);
        drop(client);
        server.join().unwrap();
    }

    #[test]
    fn long_lines_are_cut_as_they_are_read() {
        let (tx, rx) = sync_channel(16);
        let mut input = vec![b'a'; MAX_LINE_BYTES * 3];
        input.extend_from_slice(b"\nshort\n\n");
        read_lines(&input[..], &tx, |_| {});
        drop(tx);
        let lines: Vec<String> = rx.iter().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].len(), MAX_LINE_BYTES);
        assert_eq!(lines[1], "short");
        assert_eq!(lines[2], "");
    }

    #[test]
    fn setup_enables_the_groups_and_quiets_the_noisy_events() {
        let dir = std::env::temp_dir().join(format!("rig-trace-relay-{}", std::process::id()));
        let events = dir.join("events");
        for event in [
            "rpcrdma/svcrdma_err_chunk",
            "sunrpc/svc_process",
            "sunrpc/svc_xprt_enqueue",
            "nfsd/nfsd_drc_found",
            "nfsd/nfsd_file_acquire",
        ] {
            std::fs::create_dir_all(events.join(event)).unwrap();
            // tracefs shows each event's own switch; a group's switch sets them all.
            std::fs::write(events.join(event).join("enable"), "1").unwrap();
        }
        for group in ["rpcrdma", "sunrpc", "nfsd"] {
            std::fs::write(events.join(group).join("enable"), "0").unwrap();
        }
        std::fs::write(dir.join("set_event"), "rpcrdma:svcrdma_err_chunk\n").unwrap();
        let enabled = setup_tracefs(&dir, "rpcrdma,sunrpc,nfsd,nosuch").unwrap();
        let read = |p: &str| std::fs::read_to_string(events.join(p)).unwrap();
        assert_eq!(read("rpcrdma/enable"), "1");
        assert_eq!(read("sunrpc/enable"), "1");
        assert_eq!(read("sunrpc/svc_xprt_enqueue/enable"), "0");
        assert_eq!(read("nfsd/nfsd_file_acquire/enable"), "0");
        assert_eq!(read("nfsd/nfsd_drc_found/enable"), "1");
        assert_eq!(read("sunrpc/svc_process/enable"), "1");
        assert_eq!(
            std::fs::read_to_string(dir.join("tracing_on")).unwrap(),
            "1"
        );
        assert_eq!(enabled, ["rpcrdma:svcrdma_err_chunk"]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(setup_tracefs(&dir, "rpcrdma").is_err(), "no tracefs there");
    }
}
