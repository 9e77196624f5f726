//! The guests' wire with the rig in the middle: a relay thread between the two qemu `dgram` netdevs.
//!
//! Each guest's netdev sends to a socket of the relay instead of to the other guest
//! (`server → relay-srv.sock`, `client → relay-cli.sock`); the relay receives each Ethernet frame,
//! hands it to the sans-IO [`relay::Relay`] (which applies the rules a case installed over the
//! in-band control port, keeps soft-iWARP's first client bytes out of siw's accept window
//! ([`IWARP_ACCEPT_FENCE`]), and forwards everything else untouched, in order), sends what comes
//! out to the other guest's socket from the socket that guest expects to hear from, and writes
//! every frame it forwarded or dropped to `wire.pcapng` in forwarding order, each fault marked
//! with a comment. The capture is complete by construction: a frame reaches a guest only through it.
//! A case that begins over the control port (`rig scenarios --relay`) also gets its frames in a
//! file of its own, `wire/<case>.pcapng` beside it, from its beginning to the next case's.
//!
//! Architecture Invariant: the relay is the guests' only link, and it lives exactly as long as the
//! pair: [`WireRelay`] is started before the server qemu and stopped (thread joined, capture
//! flushed) when the pair is, on every path, by `Drop` if nothing else.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use relay::{Direction, Limits, Output, Relay, Side};

/// The largest Ethernet frame a guest sends: qemu's dgram netdev carries one frame per datagram
/// and virtio-net's MTU here is 1500 (plus headers); 64 KiB leaves room for any offload.
const MAX_FRAME: usize = 65536;
/// Frames taken from one socket before the other is looked at again: one busy direction must not
/// starve the other.
const FRAMES_PER_TURN: usize = 64;
/// How long the thread waits for a frame before it checks whether it was asked to stop.
const IDLE_WAIT: Duration = Duration::from_millis(50);
/// How soon a frame a full guest socket refused is offered again.
const RETRY_FULL_GUEST: Duration = Duration::from_millis(1);
/// The capture stops growing at this size (a marker says so): a long fuzz run must not fill the
/// disk; the relay keeps forwarding.
const MAX_CAPTURE_BYTES: u64 = 1 << 30;
/// Where each case's own capture goes, beside the run's (`wire/<case>.pcapng`).
pub const CASES_DIR: &str = "wire";
/// How long the client's bytes on a new soft-iWARP connection wait after the server's MPA Reply
/// ([`Relay::fence_iwarp_accepts`]; why in docs/findings.md, "siw: the first message after an
/// accept can be left unread"). The window it keeps the suites out of is the server's delay
/// between sending the Reply and handing the socket to the QP: unfenced (run of 2026-12-05 18:25,
/// 184 siw connections), 7 of the 34 connections whose first client bytes came within 1.7 ms of
/// the Reply were left unread, none of the 150 whose bytes came later (2-126 ms). 50 ms is 30
/// times the latest stuck one, inside TCP's 200 ms minimum retransmission timeout (the client
/// sees a slow ACK, not a loss), and costs 50 ms per soft-iWARP connection; RoCE has no MPA
/// Reply.
pub const IWARP_ACCEPT_FENCE: Duration = Duration::from_millis(50);

/// What the relay did during one pair's life.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct WireReport {
    /// Frames received from the client guest and from the server guest.
    pub from_client: u64,
    pub from_server: u64,
    /// Frames the relay sent on (both directions), dropped by a rule, and could not deliver
    /// because the receiving guest's socket was not there (not started yet, or gone).
    pub forwarded: u64,
    pub dropped: u64,
    pub undeliverable: u64,
    /// Control requests answered (a case installing or clearing its rules).
    pub control: u64,
    /// Bytes written to the capture, and whether it stopped at its size limit.
    pub capture_bytes: u64,
    pub capture_truncated: bool,
    /// Client frames the iWARP accept fence held ([`IWARP_ACCEPT_FENCE`]), and soft-iWARP
    /// connections it could not fence (too many at once).
    pub fenced: u64,
    pub unfenced_over_limit: u64,
}

/// The running relay of one guest pair.
pub struct WireRelay {
    /// The socket the server guest sends to (its netdev's `remote.path`).
    pub server_remote: PathBuf,
    /// The socket the client guest sends to.
    pub client_remote: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<WireReport>>>,
}

impl WireRelay {
    /// Bind the relay's two sockets in `dir` and start forwarding between the guests' sockets
    /// `(server_local, client_local)` (which their qemus bind), capturing into `capture`, with an
    /// iWARP accept fence of `fence` (zero: none).
    pub fn start(
        dir: &Path,
        (server_local, client_local): (&Path, &Path),
        capture: &Path,
        fence: Duration,
    ) -> Result<WireRelay> {
        let server_remote = dir.join("relay-srv.sock");
        let client_remote = dir.join("relay-cli.sock");
        let mut sockets = Vec::new();
        for path in [&server_remote, &client_remote] {
            let _ = std::fs::remove_file(path);
            let socket = UnixDatagram::bind(path)
                .with_context(|| format!("relay: bind {}", path.display()))?;
            socket.set_nonblocking(true)?;
            sockets.push(socket);
        }
        let client_socket = sockets.pop().expect("two sockets were bound");
        let server_socket = sockets.pop().expect("two sockets were bound");
        let file = File::create(capture)
            .with_context(|| format!("relay: create {}", capture.display()))?;
        let cases_dir = capture.with_file_name(CASES_DIR);
        let ends = Ends {
            server: End {
                socket: server_socket,
                peer: server_local.to_path_buf(),
            },
            client: End {
                socket: client_socket,
                peer: client_local.to_path_buf(),
            },
        };
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("wire-relay".into())
            .spawn({
                let stop = Arc::clone(&stop);
                move || forward_until_stopped(ends, BufWriter::new(file), cases_dir, fence, &stop)
            })
            .context("relay: spawn its thread")?;
        Ok(WireRelay {
            server_remote,
            client_remote,
            stop,
            thread: Some(thread),
        })
    }

    /// Stop forwarding, flush the capture and say what the relay did.
    pub fn stop(mut self) -> Result<WireReport> {
        self.join()
    }

    fn join(&mut self) -> Result<WireReport> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .map_err(|_| anyhow::anyhow!("relay thread panicked"))?,
            None => Ok(WireReport::default()),
        }
    }
}

impl Drop for WireRelay {
    fn drop(&mut self) {
        let _ = self.join();
    }
}

/// One guest's side of the relay: the relay's socket it sends to, and its own socket.
struct End {
    socket: UnixDatagram,
    peer: PathBuf,
}

struct Ends {
    server: End,
    client: End,
}

impl Ends {
    /// The end a frame for `to` leaves by: the socket that guest expects to hear from.
    fn towards(&self, to: Side) -> &End {
        match to {
            Side::Server => &self.server,
            Side::Client => &self.client,
        }
    }
}

fn forward_until_stopped(
    ends: Ends,
    capture: BufWriter<File>,
    cases_dir: PathBuf,
    fence: Duration,
    stop: &AtomicBool,
) -> Result<WireReport> {
    let started = Instant::now();
    let now_us = || u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    // Holds end inside the RC retry budget of the connections the wire carries.
    let mut relay = Relay::new(Limits {
        max_hold_micros: relay::RC_SAFE_HOLD_MICROS,
        ..Limits::default()
    });
    relay.fence_iwarp_accepts(u64::try_from(fence.as_micros()).unwrap_or(u64::MAX));
    let mut report = WireReport::default();
    let mut capture = Capture::new(capture, cases_dir)?;
    let mut buf = vec![0u8; MAX_FRAME];
    let mut pending = Pending::default();
    while !stop.load(Ordering::Relaxed) {
        // A guest that did not take a frame is tried again soon; otherwise wait for a frame,
        // the relay's next timer, or the stop check, whichever comes first.
        let idle = if pending.is_empty() {
            IDLE_WAIT
        } else {
            RETRY_FULL_GUEST
        };
        let wait = relay
            .poll_timeout()
            .map(|at| Duration::from_micros(at.saturating_sub(now_us())))
            .map_or(idle, |due| due.min(idle));
        let timeout = PollTimeout::try_from(wait).unwrap_or(PollTimeout::ZERO);
        let ready = {
            let mut fds = [
                PollFd::new(ends.server.socket.as_fd(), PollFlags::POLLIN),
                PollFd::new(ends.client.socket.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, timeout) {
                Ok(_) => [0, 1].map(|i| {
                    fds[i]
                        .revents()
                        .is_some_and(|r| r.intersects(PollFlags::POLLIN))
                }),
                Err(nix::errno::Errno::EINTR) => [false, false],
                Err(err) => return Err(err).context("relay: poll"),
            }
        };
        for (is_ready, end, from) in [
            (ready[0], &ends.server, Direction::FromServer),
            (ready[1], &ends.client, Direction::FromClient),
        ] {
            if !is_ready {
                continue;
            }
            for _ in 0..FRAMES_PER_TURN {
                match end.socket.recv(&mut buf) {
                    Ok(len) => {
                        match from {
                            Direction::FromServer => report.from_server += 1,
                            Direction::FromClient => report.from_client += 1,
                        }
                        relay.handle_frame(now_us(), from, buf[..len].to_vec());
                    }
                    Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(err) => return Err(err).context("relay: receive"),
                }
            }
        }
        if relay.poll_timeout().is_some_and(|at| at <= now_us()) {
            relay.handle_timeout(now_us());
        }
        while let Some(output) = relay.poll_output() {
            deliver(output, &mut pending, &mut capture, &mut report, now_us())?;
        }
        pending.flush(&ends, &mut report)?;
    }
    report.capture_bytes = capture.written;
    report.capture_truncated = capture.truncated;
    let stats = relay.stats();
    report.fenced = stats.fenced;
    report.unfenced_over_limit = stats.unfenced_over_limit;
    capture.finish()?;
    Ok(report)
}

/// Frames waiting for a guest whose socket is full (qemu stops reading while the guest's ring is
/// full; a direct socket pair made the sending qemu wait, so the relay waits too instead of
/// dropping). Bounded: past it the wire loses the frame, counted as undeliverable.
const MAX_PENDING_PER_GUEST: usize = 8192;

/// Frames on their way to each guest, oldest first: a frame is sent only after every frame
/// before it to the same guest, so the relay never reorders what no rule asked it to.
#[derive(Default)]
struct Pending {
    to_server: std::collections::VecDeque<Outgoing>,
    to_client: std::collections::VecDeque<Outgoing>,
}

/// A frame for a guest; control replies are not counted as forwarded traffic.
struct Outgoing {
    frame: Vec<u8>,
    relayed: bool,
}

impl Pending {
    fn queue(&mut self, to: Side) -> &mut std::collections::VecDeque<Outgoing> {
        match to {
            Side::Server => &mut self.to_server,
            Side::Client => &mut self.to_client,
        }
    }

    /// Queue `frame` for `to`; false when the queue is full (the frame is not queued).
    fn push(&mut self, to: Side, frame: Vec<u8>, relayed: bool) -> bool {
        let queue = self.queue(to);
        if queue.len() >= MAX_PENDING_PER_GUEST {
            return false;
        }
        queue.push_back(Outgoing { frame, relayed });
        true
    }

    fn is_empty(&self) -> bool {
        self.to_server.is_empty() && self.to_client.is_empty()
    }

    /// Send what each guest's socket takes now; stop at the first frame it does not.
    fn flush(&mut self, ends: &Ends, report: &mut WireReport) -> Result<()> {
        for to in [Side::Server, Side::Client] {
            let end = ends.towards(to);
            let queue = self.queue(to);
            while let Some(out) = queue.front() {
                match end.socket.send_to(&out.frame, &end.peer) {
                    Ok(_) if out.relayed => report.forwarded += 1,
                    Ok(_) => {}
                    Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                    // The receiving guest is not up yet, or already gone: a wire without a peer
                    // loses the frame, as the direct socket pair did.
                    Err(err)
                        if matches!(
                            err.kind(),
                            std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                        ) =>
                    {
                        report.undeliverable += 1
                    }
                    Err(err) => return Err(err).context("relay: send"),
                }
                queue.pop_front();
            }
        }
        Ok(())
    }
}

/// Put one output of the relay on its way and record it in the capture.
fn deliver(
    output: Output,
    pending: &mut Pending,
    capture: &mut Capture,
    report: &mut WireReport,
    now_us: u64,
) -> Result<()> {
    capture.record(now_us, &output)?;
    match output {
        Output::Forward { to, frame, .. } => {
            if !pending.push(to, frame, true) {
                report.undeliverable += 1;
            }
        }
        Output::Dropped { .. } => report.dropped += 1,
        Output::CaseBegins { case } => capture.begin_case(&case)?,
        Output::Reply { to, frame } => {
            report.control += 1;
            // A control reply that finds the guest's queue full is lost like any datagram;
            // the case asks again.
            pending.push(to, frame, false);
        }
    }
    Ok(())
}

/// The relay's pcapng (relay::pcapng): interface 0 holds the frames it delivered, interface 1
/// (trace::capture::DROPPED_BY_RIG_INTERFACE) the frames a rule dropped, each fault as the
/// comment of its frame; control replies are not recorded. The current case's file gets the
/// same blocks; both count against one size limit.
struct Capture {
    out: BufWriter<File>,
    cases_dir: PathBuf,
    case: Option<BufWriter<File>>,
    written: u64,
    truncated: bool,
}

impl Capture {
    fn new(mut out: BufWriter<File>, cases_dir: PathBuf) -> Result<Capture> {
        let head = relay::pcapng::capture_header();
        out.write_all(&head)?;
        Ok(Capture {
            out,
            cases_dir,
            case: None,
            written: head.len() as u64,
            truncated: false,
        })
    }

    /// Close the previous case's file and start `case`'s (a case run again starts it afresh).
    fn begin_case(&mut self, case: &str) -> Result<()> {
        if let Some(mut previous) = self.case.take() {
            previous.flush()?;
        }
        if self.truncated {
            return Ok(());
        }
        std::fs::create_dir_all(&self.cases_dir)
            .with_context(|| format!("relay: create {}", self.cases_dir.display()))?;
        let path = self.cases_dir.join(case_file_name(case));
        let mut out = BufWriter::new(
            File::create(&path).with_context(|| format!("relay: create {}", path.display()))?,
        );
        let head = relay::pcapng::capture_header();
        out.write_all(&head)?;
        self.written += head.len() as u64;
        self.case = Some(out);
        Ok(())
    }

    fn record(&mut self, now_us: u64, output: &Output) -> Result<()> {
        if self.truncated {
            return Ok(());
        }
        let Some(block) = relay::pcapng::output_record(now_us, output) else {
            return Ok(());
        };
        let copies = if self.case.is_some() { 2 } else { 1 };
        if self.written + copies * block.len() as u64 > MAX_CAPTURE_BYTES {
            self.truncated = true;
            return Ok(());
        }
        self.out.write_all(&block)?;
        if let Some(case) = self.case.as_mut() {
            case.write_all(&block)?;
        }
        self.written += copies * block.len() as u64;
        Ok(())
    }

    fn finish(mut self) -> Result<()> {
        self.out.flush()?;
        if let Some(mut case) = self.case.take() {
            case.flush()?;
        }
        Ok(())
    }
}

/// A case's capture file name: its name with anything but letters, digits, `.`, `_` and `-`
/// replaced (the name came over the wire), never a hidden or parent path.
fn case_file_name(case: &str) -> String {
    let name: String = case
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
            '.' => '.',
            _ => '_',
        })
        .collect();
    let name = name.trim_start_matches('.');
    let name = if name.is_empty() { "_" } else { name };
    format!("{name}.pcapng")
}
