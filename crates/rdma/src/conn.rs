//! One RPC-over-RDMA connection on real verbs: its QP, CQ and buffers; posts the engine's work
//! requests and turns completions back into engine events.

use std::collections::BTreeMap;
use std::time::Duration;

use engine::endpoint::{CompletionError, Event, WorkRequest, WrId};
use verbs::{
    CmEvent, CmEventKind, CmId, CompletionChannel, ConnParams, Cq, EventChannel, Mr, Pd, QpCaps,
    RemoteRegion, SendOp, VerbsError, WorkCompletion,
};

use crate::pool::{Pool, Slot};

/// RDMA Reads a peer may have in flight against us, and we against it (explicit, not the
/// library's defaults: svcrdma reads client memory, so the client must accept Reads).
pub const READ_DEPTH: u8 = 16;
/// RDMA operations one RPC may add to the Send Queue (chunk segments).
const RDMA_OPS_PER_RPC: u32 = 8;
/// Local bounce-buffer budget per connection.
const POOL_BYTES: usize = 64 << 20;
/// Completions taken per CQ notification round.
const POLL_MAX: usize = 256;

/// Which side of RPC-over-RDMA this connection drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Client: its chunk memory is registered by the engine through [`crate::memory`].
    Requester,
    Responder,
}

#[derive(Debug)]
enum Pending {
    Recv(Slot),
    Send(Slot),
    Read(Slot, u32),
    Write(Slot),
}

/// Counters for stats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ConnCounters {
    pub receives: u64,
    pub sends: u64,
    pub rdma_reads: u64,
    pub rdma_writes: u64,
    pub failed_completions: u64,
}

/// One connection.
pub struct Connection {
    pub id: CmId,
    pd: Pd,
    cq: Cq,
    pool: Pool<Mr>,
    pending: BTreeMap<WrId, Pending>,
    pub counters: ConnCounters,
    close: CloseGate,
}

/// When the engine's Disconnect may reach rdma_cm. A responder's connection is usable before
/// its ESTABLISHED event (the Receives are posted before the accept, and the client sends as
/// soon as it sees ESTABLISHED itself), but `rdma_disconnect` there only moves the QP to error:
/// the IB CM sends no DREQ before the RTU, so the client never hears of the close, its Sends
/// go unacknowledged and it sees a silent, live connection (the wire fuzzer's "hang" after an
/// ERR_CHUNK-then-close on a fresh connection, issue 16). The close waits for ESTABLISHED.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CloseGate {
    established: bool,
    deferred: bool,
    closing: bool,
}

impl CloseGate {
    /// A gate whose connection is established already (the requester connects before posting).
    pub fn established() -> CloseGate {
        CloseGate {
            established: true,
            deferred: false,
            closing: false,
        }
    }

    /// The engine asked to close: whether to disconnect now (else at [`CloseGate::on_established`]).
    pub fn request(&mut self) -> bool {
        self.deferred = !self.established;
        self.closing = true;
        self.established
    }

    /// A close was asked for: nothing more is posted on this connection (as svcrdma stops
    /// sending once the transport is marked for close), so a close deferred to ESTABLISHED
    /// does not let the calls behind it be answered first.
    pub fn closing(&self) -> bool {
        self.closing
    }

    /// ESTABLISHED arrived: whether a close requested before it is due now.
    pub fn on_established(&mut self) -> bool {
        self.established = true;
        std::mem::take(&mut self.deferred)
    }
}

/// The connect/accept parameters: RFC 8797 private data and explicit Read depths.
pub fn conn_params(private_data: Vec<u8>, role: Role, peer: Option<&CmEvent>) -> ConnParams {
    let (responder_resources, initiator_depth) = match (role, peer) {
        // The client is RDMA Read by the server (Read chunks) and reads nothing itself.
        (Role::Requester, _) => (READ_DEPTH, 0),
        // The IB CM swaps the REQ's depths into the passive side's view (ib_cm
        // cm_format_req_event): the event's initiator_depth is the client's responder resources,
        // i.e. how deep *we* may read (svcrdma takes it as its ORD, sc_ord). So: read as deep as
        // the client accepts, and let it read us as deep as it initiates (zero for a client).
        (Role::Responder, Some(request)) => (
            request.responder_resources.min(READ_DEPTH),
            request.initiator_depth.min(READ_DEPTH),
        ),
        (Role::Responder, None) => (0, READ_DEPTH),
    };
    ConnParams::new(private_data, responder_resources, initiator_depth)
}

fn completion_error(wc: &WorkCompletion) -> CompletionError {
    match wc.status.name() {
        "IBV_WC_RNR_RETRY_EXC_ERR" => CompletionError::RnrRetryExceeded,
        "IBV_WC_REM_ACCESS_ERR" | "IBV_WC_LOC_PROT_ERR" | "IBV_WC_LOC_ACCESS_ERR" => {
            CompletionError::RemoteAccess
        }
        "IBV_WC_LOC_LEN_ERR" => CompletionError::LocalLength,
        // A flushed or otherwise broken QP: the connection is going down.
        _ => CompletionError::Flushed,
    }
}

impl Connection {
    /// Create the PD, completion channel, CQ and RC QP for `id` (resolved, or from a connect
    /// request), sized for `credits`.
    pub fn set_up(mut id: CmId, credits: u32, role: Role) -> Result<Connection, VerbsError> {
        let context = id.context()?;
        let pd = Pd::new(context)?;
        let channel = CompletionChannel::new(context)?;
        // Twice the credits on the Send Queue: our requester may exceed its grant on purpose.
        let caps = QpCaps::for_credits(credits.saturating_mul(2).max(1), RDMA_OPS_PER_RPC)?;
        let caps = QpCaps {
            max_recv_wr: credits.max(1),
            ..caps
        };
        let cq = Cq::new(context, caps.cq_entries(), &channel)?;
        id.create_qp(&pd, &cq, &cq, caps)?;
        cq.request_notify(false)?;
        Ok(Connection {
            id,
            pd,
            cq,
            pool: Pool::new(POOL_BYTES),
            pending: BTreeMap::new(),
            counters: ConnCounters::default(),
            close: match role {
                Role::Requester => CloseGate::established(),
                Role::Responder => CloseGate::default(),
            },
        })
    }

    /// The responder's ESTABLISHED event arrived: a close the engine asked for before it is
    /// carried out now ([`CloseGate`]). Returns whether it was.
    pub fn established(&mut self) -> bool {
        let due = self.close.on_established();
        if due {
            let _ = self.id.disconnect();
        }
        due
    }

    /// The completion channel fd (readable when a completion is pending).
    pub fn completion_fd(&self) -> std::os::fd::RawFd {
        self.cq.channel_fd()
    }

    /// Work requests posted and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// The protection domain: the requester's chunk memory is registered in it.
    pub fn pd(&self) -> &Pd {
        &self.pd
    }

    fn buffer(&mut self, len: usize) -> Option<(Slot, Mr)> {
        let pd = self.pd.clone();
        // Bounce buffers are local: no peer names them, so they grant no remote access.
        let slot = self
            .pool
            .acquire(len, |size| pd.register_local(size).ok())?;
        self.pool.get(slot).cloned().map(|mr| (slot, mr))
    }

    /// Post one of the engine's work requests. Failures that the engine must see (no buffer,
    /// post refused) come back as events; the caller feeds them in.
    pub fn post(&mut self, work: WorkRequest) -> Vec<Event> {
        let Some(wr_id) = wr_id_of(&work) else {
            // Disconnect: once closing, the close is under way already.
            if !self.close.closing() && self.close.request() {
                let _ = self.id.disconnect();
            }
            return Vec::new();
        };
        if self.close.closing() {
            // Closing: the QP is (or is about to be) in error; nothing more leaves.
            return vec![failed(wr_id, CompletionError::Flushed)];
        }
        let posted = match work {
            WorkRequest::PostRecv { capacity, .. } => self.post_recv(wr_id, capacity),
            WorkRequest::PostSend { payload, .. } => self
                .post_from_buffer(wr_id, &payload, SendOp::Send)
                .map(Pending::Send),
            // Nothing to move: complete at once, as the HCA would.
            WorkRequest::RdmaRead { length: 0, .. } => {
                return vec![Event::ReadCompleted {
                    wr_id,
                    data: Vec::new(),
                }]
            }
            WorkRequest::RdmaRead {
                handle,
                offset,
                length,
                ..
            } => self.post_rdma_read(wr_id, remote(handle, offset), length),
            WorkRequest::RdmaWrite { data, .. } if data.is_empty() => {
                return vec![Event::WriteCompleted { wr_id }]
            }
            WorkRequest::RdmaWrite {
                handle,
                offset,
                data,
                ..
            } => {
                let op = SendOp::RdmaWrite {
                    remote: remote(handle, offset),
                };
                self.post_from_buffer(wr_id, &data, op).map(Pending::Write)
            }
            WorkRequest::Disconnect => return Vec::new(),
        };
        match posted {
            Ok(pending) => {
                self.pending.insert(wr_id, pending);
                Vec::new()
            }
            Err(error) => vec![failed(wr_id, error)],
        }
    }

    /// Post a Receive into a pool buffer of `capacity` bytes. Any failure is reported as a flush.
    fn post_recv(&mut self, wr_id: WrId, capacity: usize) -> Result<Pending, CompletionError> {
        let (slot, mr) = self.buffer(capacity).ok_or(CompletionError::Flushed)?;
        let posted = mr
            .sge(0, capacity)
            .and_then(|sge| self.id.post_recv(wr_id, &sge));
        match posted {
            Ok(()) => Ok(Pending::Recv(slot)),
            Err(_) => {
                self.pool.release(slot);
                Err(CompletionError::Flushed)
            }
        }
    }

    /// Post an RDMA Read of `length` (> 0) bytes from the peer's `remote` into a pool buffer.
    fn post_rdma_read(
        &mut self,
        wr_id: WrId,
        remote: RemoteRegion,
        length: u32,
    ) -> Result<Pending, CompletionError> {
        let (slot, mr) = self
            .buffer(length as usize)
            .ok_or(CompletionError::LocalLength)?;
        let posted = mr.sge(0, length as usize).and_then(|sge| {
            self.id
                .post_send(wr_id, SendOp::RdmaRead { remote }, &sge, true)
        });
        match posted {
            Ok(()) => Ok(Pending::Read(slot, length)),
            Err(_) => {
                self.pool.release(slot);
                Err(CompletionError::Flushed)
            }
        }
    }

    fn post_from_buffer(
        &mut self,
        wr_id: WrId,
        bytes: &[u8],
        op: SendOp,
    ) -> Result<Slot, CompletionError> {
        let (slot, mr) = self
            .buffer(bytes.len())
            .ok_or(CompletionError::LocalLength)?;
        let posted = mr
            .write(0, bytes)
            .and_then(|()| mr.sge(0, bytes.len()))
            .and_then(|sge| self.id.post_send(wr_id, op, &sge, true));
        match posted {
            Ok(()) => Ok(slot),
            Err(_) => {
                self.pool.release(slot);
                Err(CompletionError::Flushed)
            }
        }
    }

    /// Consume a CQ notification (call when the completion fd is readable, or periodically) and
    /// return the completions as engine events.
    pub fn completions(&mut self) -> Result<Vec<Event>, VerbsError> {
        let mut events = Vec::new();
        // Bounded: each round drains at most POLL_MAX, and we stop on a short round.
        for _ in 0..64 {
            let batch = self.cq.on_notification(POLL_MAX)?;
            let short = batch.len() < POLL_MAX;
            for wc in batch {
                if let Some(event) = self.complete(&wc) {
                    events.push(event);
                }
            }
            if short {
                break;
            }
        }
        Ok(events)
    }

    fn complete(&mut self, wc: &WorkCompletion) -> Option<Event> {
        let pending = self.pending.remove(&wc.wr_id)?;
        let slot = match pending {
            Pending::Recv(s) | Pending::Send(s) | Pending::Read(s, _) | Pending::Write(s) => s,
        };
        let mr = self.pool.get(slot).cloned();
        self.pool.release(slot);
        if !wc.status.is_success() {
            self.counters.failed_completions += 1;
            return Some(failed(wc.wr_id, completion_error(wc)));
        }
        let mr = mr?;
        Some(match pending {
            Pending::Recv(_) => {
                self.counters.receives += 1;
                // byte_len comes from the peer's Send; never read past our own buffer.
                let len = (wc.byte_len as usize).min(mr.len());
                let payload = mr.to_vec(0, len).unwrap_or_default();
                Event::RecvCompleted {
                    wr_id: wc.wr_id,
                    payload,
                }
            }
            Pending::Send(_) => {
                self.counters.sends += 1;
                Event::SendCompleted { wr_id: wc.wr_id }
            }
            Pending::Read(_, length) => {
                self.counters.rdma_reads += 1;
                Event::ReadCompleted {
                    wr_id: wc.wr_id,
                    data: mr.to_vec(0, length as usize).unwrap_or_default(),
                }
            }
            Pending::Write(_) => {
                self.counters.rdma_writes += 1;
                Event::WriteCompleted { wr_id: wc.wr_id }
            }
        })
    }
}

/// The work request's id; `None` for a Disconnect, which has none.
fn wr_id_of(work: &WorkRequest) -> Option<WrId> {
    match work {
        WorkRequest::PostRecv { wr_id, .. }
        | WorkRequest::PostSend { wr_id, .. }
        | WorkRequest::RdmaRead { wr_id, .. }
        | WorkRequest::RdmaWrite { wr_id, .. } => Some(*wr_id),
        WorkRequest::Disconnect => None,
    }
}

/// Where the peer's memory is: the segment's handle is its rkey, its offset the address.
fn remote(handle: u32, offset: u64) -> RemoteRegion {
    RemoteRegion {
        addr: offset,
        rkey: handle,
    }
}

fn failed(wr_id: WrId, error: CompletionError) -> Event {
    Event::WorkFailed { wr_id, error }
}

/// Wait for the next CM event on `channel` that is `expected`; other kinds are an error.
pub fn expect(
    channel: &EventChannel,
    expected: CmEventKind,
    timeout: Duration,
) -> Result<CmEvent, VerbsError> {
    channel.expect_event(expected, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::ConnectionConfig;
    use verbs::cm::MAX_CONNECT_PRIVATE_DATA;
    use wire::private_data::PrivateData;

    #[test]
    fn conn_params_carry_rfc8797_private_data_and_read_depths() {
        let config = ConnectionConfig {
            inline_send: 4096,
            inline_recv: 8192,
            credits: 8,
        };
        let private = config.private_data().encode().to_vec();
        let params = conn_params(private, Role::Requester, None);
        // The client is read by the server and reads nothing itself.
        assert_eq!(
            (params.responder_resources, params.initiator_depth),
            (READ_DEPTH, 0)
        );
        let raw = params
            .to_raw(MAX_CONNECT_PRIVATE_DATA, "connect private data")
            .unwrap();
        assert_eq!(raw.private_data_len, 8);
        // The bytes the CM carries decode back to what the engine advertised (RFC 8797 §4).
        assert_eq!(&params.private_data[..4], &[0xf6, 0xab, 0x0e, 0x18]);
        assert_eq!(
            PrivateData::decode(&params.private_data).unwrap(),
            config.private_data()
        );
    }

    #[test]
    fn a_close_asked_for_before_established_waits_for_it() {
        // The responder's case: the engine answers ERR_CHUNK-then-close to a Receive that
        // arrived before the server's ESTABLISHED event.
        let mut gate = CloseGate::default();
        assert!(!gate.closing());
        assert!(!gate.request(), "no rdma_disconnect before ESTABLISHED");
        assert!(gate.closing(), "but nothing more is posted meanwhile");
        assert!(gate.on_established(), "the close happens at ESTABLISHED");
        assert!(!gate.on_established(), "and only once");
        assert!(gate.request(), "after ESTABLISHED a close is immediate");
        // Nothing asked for: ESTABLISHED closes nothing.
        assert!(!CloseGate::default().on_established());
        // The requester connects before it posts anything.
        assert!(CloseGate::established().request());
    }
}
