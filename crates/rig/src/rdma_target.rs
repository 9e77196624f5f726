//! The wire fuzzer's rdma [`Target`]: a raw RPC-over-RDMA requester over rdma_cm (crates/verbs) that posts the
//! exact bytes of each case to a live responder (kernel nfsd or `rig serve`) inside the interop
//! guests, and reports what comes back: a Receive, a disconnect, or nothing by the deadline.
//!
//! Unlike crates/rdma's engine driver there is no protocol state here on purpose: the point is to
//! send headers the engine would refuse to build. Every wait blocks in poll(2) on the rdma_cm
//! event channel and the completion channel (no busy-polling), bounded by the caller's deadline.

use std::collections::VecDeque;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use verbs::cq::wait_any_readable;
use verbs::{
    CmEventKind, CmId, CompletionChannel, ConnParams, Context, Cq, EventChannel, Mr, Pd, QpCaps,
    SendOp, VerbsError, WorkCompletion, CONNECT_ATTEMPTS_PORT_IN_USE,
};

use wirefuzz::case::{Region, RegionKey};
use wirefuzz::target::{Deadline, Target, TargetError, TargetEvent};

/// Open the rdma target at `addr` (`ADDR:PORT`), as [`wirefuzz::target::OpenRdma`] asks: refused
/// with the reason on a machine without an RDMA device.
pub fn open(addr: &str) -> Result<Box<dyn Target>, TargetError> {
    Ok(Box::new(RdmaTarget::open(addr)?))
}

/// Receives kept posted. The executor has at most one case and one NULL probe outstanding, so
/// a responder answering within its grant never needs more than a few; 16 leaves room for
/// strays (RFC 8166 §3.3.1: the responder must not send more than the credits it granted, but a
/// fuzzed responder may).
const RECEIVES: usize = 16;
/// Bytes per Receive: larger than any inline threshold a Linux responder offers (RFC 8797
/// private data caps the sizes at 1 KiB × 256), so a reply never overflows our Receive.
const RECEIVE_LEN: usize = 64 * 1024;
/// Largest Send (a case's bytes are bounded by `case::MAX_CASE_BYTES`, the same 64 KiB).
const SEND_LEN: usize = wirefuzz::case::MAX_CASE_BYTES;
/// RDMA Reads the responder may have in flight against our regions (Read chunks): svcrdma reads
/// a Read list with up to this many outstanding; the CM passes it as our responder resources.
const READ_DEPTH: u8 = 16;
/// Send Queue depth: one case plus one NULL probe at a time, with slack.
const SEND_DEPTH: u32 = 8;
/// Send buffers, one per Send in flight: the NULL probe is posted right behind the case, so the
/// case's buffer must not be rewritten before the HCA has read it (its completion frees it).
const SEND_SLOTS: usize = SEND_DEPTH as usize;
/// Largest private data rdma_connect carries on an RC (TCP port space) id.
const MAX_CONNECT_PRIVATE_DATA: usize = 56;
/// Completions taken from the CQ per wakeup.
const POLL_BATCH: usize = 32;
/// Bounded diagnostic notes kept between two `take_notes` calls.
const MAX_NOTES: usize = 64;
/// Wait for each connection-setup step (address, route, ESTABLISHED).
const SETUP_TIMEOUT: Duration = Duration::from_secs(5);

/// Send work requests are `WR_SEND_BASE + slot`.
const WR_SEND_BASE: u64 = 1;
const WR_RECV_BASE: u64 = 1000;

/// The protection domain and the registered Receive and Send buffers, kept from one connection
/// to the next on the same device: a case that ends in a close costs a reconnect, and the
/// buffers are 1.5 MiB to register each time.
struct Buffers {
    context: Context,
    pd: Pd,
    recv_mrs: Vec<Mr>,
    /// [`SEND_SLOTS`] buffers of [`SEND_LEN`] bytes, back to back.
    send_mr: Mr,
}

impl Buffers {
    fn register(context: Context) -> Result<Buffers, VerbsError> {
        let pd = Pd::new(context)?;
        let recv_mrs = (0..RECEIVES)
            .map(|_| pd.register(RECEIVE_LEN))
            .collect::<Result<Vec<_>, _>>()?;
        let send_mr = pd.register(SEND_LEN * SEND_SLOTS)?;
        Ok(Buffers {
            context,
            pd,
            recv_mrs,
            send_mr,
        })
    }
}

/// One live connection's verbs objects. The `CmId` owns the QP and keeps the PD, CQ and every
/// MR it posted alive until the QP is destroyed, so drop order does not matter.
struct Live {
    channel: EventChannel,
    id: CmId,
    cq: Cq,
    buffers: Buffers,
    /// Which send buffers a posted Send still reads.
    send_busy: [bool; SEND_SLOTS],
    /// Remote-access regions of the current case (dropped = deregistered).
    regions: Vec<Mr>,
    /// Set on DISCONNECTED, a failed completion or a failed post.
    broken: bool,
}

/// A raw requester against `ADDR:PORT` over rdma_cm.
pub struct RdmaTarget {
    spec: String,
    server: SocketAddr,
    live: Option<Live>,
    /// The buffers of the last connection, once its QP is gone (no Receive or Send uses them).
    spare: Option<Buffers>,
    pending: VecDeque<TargetEvent>,
    notes: Vec<String>,
}

impl RdmaTarget {
    /// Resolve `spec` (`HOST:PORT`) and check this machine has an RDMA device; no connection yet
    /// (the executor connects with each case's private data).
    pub fn open(spec: &str) -> Result<RdmaTarget, TargetError> {
        let server = spec
            .to_socket_addrs()
            .map_err(|e| TargetError::BadSpec(format!("{spec:?}: {e}")))?
            .next()
            .ok_or_else(|| TargetError::BadSpec(format!("{spec:?} resolves to no address")))?;
        // An event channel needs /dev/infiniband/rdma_cm: fail here, with the reason, on a host
        // without RDMA rather than on the first case.
        EventChannel::new().map_err(|e| {
            TargetError::Unavailable(format!(
                "rdma target {spec}: {e}; run it inside the interop guests (`just fuzz-wire`), \
                 or use --target sim:linux-2026 on the host"
            ))
        })?;
        Ok(RdmaTarget {
            spec: spec.to_string(),
            server,
            live: None,
            spare: None,
            pending: VecDeque::new(),
            notes: Vec::new(),
        })
    }

    fn note(&mut self, line: String) {
        if self.notes.len() < MAX_NOTES {
            self.notes.push(line);
        }
    }

    fn establish(&mut self, private_data: Option<&[u8]>) -> Result<Live, VerbsError> {
        let channel = EventChannel::new()?;
        let mut id = channel.create_id()?;
        id.resolve_addr(self.server, SETUP_TIMEOUT)?;
        channel.expect_event(CmEventKind::AddrResolved, SETUP_TIMEOUT)?;
        id.resolve_route(SETUP_TIMEOUT)?;
        channel.expect_event(CmEventKind::RouteResolved, SETUP_TIMEOUT)?;
        let context = id.context()?;
        let buffers = match self.spare.take() {
            Some(spare) if spare.context == context => spare,
            _ => Buffers::register(context)?,
        };
        let completion_channel = CompletionChannel::new(context)?;
        let caps = QpCaps {
            max_send_wr: SEND_DEPTH,
            max_recv_wr: RECEIVES as u32,
        };
        let cq = Cq::new(context, caps.cq_entries(), &completion_channel)?;
        id.create_qp(&buffers.pd, &cq, &cq, caps)?;
        // Receives go up before the connect request: the responder may answer (or send an
        // error) as soon as the connection is established.
        for (index, mr) in buffers.recv_mrs.iter().enumerate() {
            id.post_recv(WR_RECV_BASE + index as u64, &mr.sge(0, RECEIVE_LEN)?)?;
        }
        let params = ConnParams {
            // RFC 8797 §4: the requester's private data travels in the CM connect request; a
            // fuzz case may carry any bytes here (bad magic, short, padded), verbatim.
            private_data: private_data.map(<[u8]>::to_vec).unwrap_or_default(),
            // The responder RDMA Reads our Read chunks; we read nothing.
            responder_resources: READ_DEPTH,
            initiator_depth: 0,
            retry_count: 7,
            rnr_retry_count: 6,
        };
        id.connect(&params)?;
        let event = channel.next_event(SETUP_TIMEOUT)?;
        if event.kind != CmEventKind::Established || event.status != 0 {
            return Err(VerbsError::UnexpectedCmEvent {
                expected: CmEventKind::Established.name(),
                got: event.kind.name(),
                status: event.status,
            });
        }
        cq.request_notify(false)?;
        Ok(Live {
            channel,
            id,
            cq,
            buffers,
            send_busy: [false; SEND_SLOTS],
            regions: Vec::new(),
            broken: false,
        })
    }

    /// Turn completions into events; repost each consumed Receive.
    fn absorb(&mut self, completions: Vec<WorkCompletion>) {
        let mut notes = Vec::new();
        if let Some(live) = &mut self.live {
            for wc in completions {
                // A Send's completion, successful or flushed, frees its buffer.
                if let Some(slot) = wc
                    .wr_id
                    .checked_sub(WR_SEND_BASE)
                    .map(|i| i as usize)
                    .filter(|&i| i < SEND_SLOTS)
                {
                    live.send_busy[slot] = false;
                }
                if !wc.status.is_success() {
                    // A flushed or failed completion: the QP is in the error state. The opcode
                    // of a failed completion is undefined, so only wr_id and status are read.
                    notes.push(format!("completion wr {} {}", wc.wr_id, wc.status.name()));
                    if !live.broken {
                        live.broken = true;
                        self.pending.push_back(TargetEvent::Disconnected);
                    }
                    continue;
                }
                let Some(index) = wc
                    .wr_id
                    .checked_sub(WR_RECV_BASE)
                    .map(|i| i as usize)
                    .filter(|&i| i < RECEIVES)
                else {
                    continue; // our Send's completion
                };
                // byte_len comes from the peer's Send: never read past our own buffer.
                let len = (wc.byte_len as usize).min(RECEIVE_LEN);
                let mr = &live.buffers.recv_mrs[index];
                match mr.to_vec(0, len) {
                    Ok(bytes) => self.pending.push_back(TargetEvent::Message(bytes)),
                    Err(e) => notes.push(format!("receive copy: {e}")),
                }
                let repost = mr
                    .sge(0, RECEIVE_LEN)
                    .and_then(|sge| live.id.post_recv(wc.wr_id, &sge));
                if let Err(e) = repost {
                    notes.push(format!("repost receive: {e}"));
                }
            }
        }
        for line in notes {
            self.note(line);
        }
    }

    /// Read one rdma_cm event (the channel fd is readable).
    fn absorb_cm_event(&mut self) {
        let Some(live) = &mut self.live else { return };
        match live.channel.next_event(Duration::ZERO) {
            Ok(event) => {
                let kind = event.kind;
                let status = event.status;
                if matches!(
                    kind,
                    CmEventKind::Disconnected
                        | CmEventKind::DeviceRemoval
                        | CmEventKind::TimewaitExit
                        | CmEventKind::ConnectError
                        | CmEventKind::Unreachable
                        | CmEventKind::Rejected
                ) && !live.broken
                {
                    live.broken = true;
                    self.pending.push_back(TargetEvent::Disconnected);
                }
                self.note(format!("cm {} status {status}", kind.name()));
            }
            Err(e) => self.note(format!("cm event: {e}")),
        }
    }
}

impl Target for RdmaTarget {
    fn name(&self) -> String {
        self.spec.clone()
    }

    fn connect(&mut self, private_data: Option<&[u8]>) -> Result<(), TargetError> {
        self.disconnect();
        if private_data.is_some_and(|p| p.len() > MAX_CONNECT_PRIVATE_DATA) {
            return Err(TargetError::Local(format!(
                "private data over rdma_connect's {MAX_CONNECT_PRIVATE_DATA} bytes"
            )));
        }
        let mut attempt = 1;
        loop {
            match self.establish(private_data) {
                Ok(live) => {
                    self.live = Some(live);
                    self.note(format!("cm ESTABLISHED with {}", self.server));
                    return Ok(());
                }
                Err(e) if e.is_connect_port_in_use() && attempt < CONNECT_ATTEMPTS_PORT_IN_USE => {
                    self.note(format!(
                        "rdma_connect: local port in use (attempt {attempt}), connecting again"
                    ));
                    attempt += 1;
                }
                Err(e) => return Err(TargetError::Connect(format!("{}: {e}", self.server))),
            }
        }
    }

    fn is_connected(&self) -> bool {
        self.live.as_ref().is_some_and(|live| !live.broken)
    }

    fn register(&mut self, region: &Region) -> Result<RegionKey, TargetError> {
        let live = self
            .live
            .as_mut()
            .ok_or_else(|| TargetError::Local("register without a connection".into()))?;
        // Region lengths are bounded by the case loader (MAX_REGION_BYTES); a zero-length
        // region still needs a real MR to have a handle.
        let contents = region.contents();
        let mr = live
            .buffers
            .pd
            .register(contents.len().max(1))
            .map_err(|e| TargetError::Local(format!("register region: {e}")))?;
        mr.write(0, &contents)
            .map_err(|e| TargetError::Local(format!("fill region: {e}")))?;
        // Virtually addressed MR: the wire offset is the buffer's address, which the case's
        // `offset` relocation adds to the placeholder offset.
        let key = RegionKey {
            handle: mr.rkey(),
            base: mr.addr(),
        };
        live.regions.push(mr);
        Ok(key)
    }

    fn deregister_all(&mut self) {
        if let Some(live) = &mut self.live {
            live.regions.clear();
        }
    }

    fn post_send(&mut self, bytes: &[u8]) -> Result<(), TargetError> {
        let live = self
            .live
            .as_mut()
            .ok_or_else(|| TargetError::Local("send without a connection".into()))?;
        if live.broken {
            return Err(TargetError::Local("send on a broken connection".into()));
        }
        if bytes.len() > SEND_LEN {
            return Err(TargetError::Local(format!(
                "{} bytes exceed the {SEND_LEN}-byte Send buffer",
                bytes.len()
            )));
        }
        let slot = live
            .send_busy
            .iter()
            .position(|busy| !busy)
            .ok_or_else(|| {
                TargetError::Local(format!("all {SEND_SLOTS} Send buffers still in flight"))
            })?;
        let offset = slot * SEND_LEN;
        // A zero-length Send is legal on RC (the `short-header` family with 0 bytes).
        let result = live.buffers.send_mr.write(offset, bytes).and_then(|()| {
            let sge = live.buffers.send_mr.sge(offset, bytes.len())?;
            live.id
                .post_send(WR_SEND_BASE + slot as u64, SendOp::Send, &sge, true)
        });
        match result {
            Ok(()) => {
                live.send_busy[slot] = true;
                Ok(())
            }
            Err(e) => {
                live.broken = true;
                Err(TargetError::Local(format!("post Send: {e}")))
            }
        }
    }

    fn next_event(&mut self, deadline: Deadline) -> TargetEvent {
        let until = Instant::now() + deadline.wall;
        loop {
            if let Some(event) = self.pending.pop_front() {
                return event;
            }
            let Some(live) = &self.live else {
                return TargetEvent::Disconnected;
            };
            if live.broken {
                return TargetEvent::Disconnected;
            }
            // Consume a pending notification, re-arm, then poll: a completion that lands after
            // this poll makes the channel fd readable, so the wait below cannot miss it.
            match live.cq.on_notification(POLL_BATCH) {
                Ok(completions) if !completions.is_empty() => {
                    self.absorb(completions);
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    self.note(format!("poll CQ: {e}"));
                    return TargetEvent::Disconnected;
                }
            }
            let remaining = until.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return TargetEvent::Quiet;
            }
            let fds = [live.channel.fd(), live.cq.channel_fd()];
            match wait_any_readable(&fds, remaining) {
                Ok(ready) if ready.first() == Some(&true) => self.absorb_cm_event(),
                // CQ readable or timeout: the next turn polls, or sees the deadline passed.
                Ok(_) => {}
                Err(e) => {
                    self.note(format!("poll(2): {e}"));
                    return TargetEvent::Quiet;
                }
            }
        }
    }

    fn disconnect(&mut self) {
        self.pending.clear();
        if let Some(live) = self.live.take() {
            if !live.broken {
                // Best effort: the peer may already be gone.
                let _ = live.id.disconnect();
            }
            let Live {
                channel,
                id,
                cq,
                buffers,
                regions,
                ..
            } = live;
            // Destroying the id destroys the QP: nothing posted reads the buffers after this.
            drop(id);
            drop((regions, cq, channel));
            self.spare = Some(buffers);
        }
    }

    fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }
}
