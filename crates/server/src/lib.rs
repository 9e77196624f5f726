//! Reference RPC-over-RDMA server: NFSv3 and MOUNT v3 over an in-memory file system, with the
//! duplicate reply cache as a pluggable policy ([`drc::DrcPolicy`]).
//!
//! Request processing is split the way nfsd's is, so duplicates can meet a call in progress:
//! a received call is queued (svc_xprt_enqueue); an "nfsd thread" step dispatches it (RPC
//! header, DRC lookup); a later step executes it and posts the reply. The server counts
//! executions per (XID, procedure), so verdicts are exact, not inferred from replies.
//!
//! Everything the server remembers is bounded ([`records`]): the DRC by its policy's cap, the
//! executions, decisions and trace events by [`records::RecordLimits`], so a server that runs for
//! days under a fuzzer holds what it held after the first minutes. The trace is kept as typed
//! events ([`trace::ServerEvent`]) and rendered only when taken.
//!
//! Architecture Invariant: the server reaches the transport only through [`engine::Responder`];
//! a verbs driver can host it unchanged.
#![forbid(unsafe_code)]

pub mod drc;
pub mod fs;
pub mod mount_service;
pub mod records;
pub mod trace;

mod dispatch;

use std::collections::{BTreeMap, VecDeque};

use records::{RecordLimits, RecordSizes, Records};

use engine::endpoint::{Endpoint, Event, MemoryTable, RemoteMemory, UpperLayer, WorkRequest};
use engine::{ConnectionConfig, IncomingCall, OutgoingReply, Responder, ResponderOutput, RpcCall};
use serde::Serialize;
use wire::mount3::{Mount3Call, Mount3Proc, MOUNT_V3};
use wire::nfs3::{DdpData, Nfs3Call, Nfs3Proc, NFS_V3};
use wire::nfs_client::Status;
use wire::rpc::{AcceptStat, CallHeader, ReplyHeader, MOUNT_PROGRAM, NFS_PROGRAM};
use wire::xdr::pad4;
use wire::{Reader, Writer, Xdr};

use crate::drc::{checksum, Decision, DrcPolicy, DrcRequest, EntryId};
use crate::fs::Fs;
use crate::trace::ServerEvent;

/// One execution of a procedure, as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Execution {
    pub xid: u32,
    pub procedure: &'static str,
    pub status: Status,
    pub connection: u64,
}

/// How much a [`Server`] holds (see [`Server::held`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub records: RecordSizes,
    pub drc_entries: usize,
    pub queued: usize,
    pub parked: usize,
}

impl Held {
    /// Everything held, in entries.
    pub fn total(&self) -> usize {
        self.records.total() + self.drc_entries + self.queued + self.parked
    }
}

/// One DRC decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DrcEvent {
    pub xid: u32,
    pub procedure: &'static str,
    pub decision: &'static str,
}

#[derive(Debug)]
enum Program {
    Nfs(Nfs3Call),
    Mount(Mount3Call),
}

#[derive(Debug)]
struct Parsed {
    header: CallHeader,
    /// Where the arguments start in the call message.
    args_offset: usize,
    program: Program,
    procedure: &'static str,
}

impl Program {
    /// The name executions and decisions are recorded under: the NFSv3 procedure's, or the
    /// MOUNT procedure's after `MOUNT.`.
    fn procedure(&self) -> &'static str {
        match self {
            Program::Nfs(call) => call.proc_().name(),
            Program::Mount(call) => match call.proc_() {
                Mount3Proc::Null => "MOUNT.NULL",
                Mount3Proc::Mnt => "MOUNT.MNT",
                Mount3Proc::Dump => "MOUNT.DUMP",
                Mount3Proc::Umnt => "MOUNT.UMNT",
                Mount3Proc::Umntall => "MOUNT.UMNTALL",
                Mount3Proc::Export => "MOUNT.EXPORT",
            },
        }
    }
}

/// Why a call never reaches a procedure.
#[derive(Debug)]
enum ParseError {
    /// The bytes are not an RPC call header.
    NotACall,
    /// An RPC call the server answers with an error accept status (RFC 5531 §9).
    Refused(CallHeader, AcceptStat),
}

#[derive(Debug)]
enum Job {
    Dispatch(IncomingCall),
    Execute {
        call: IncomingCall,
        parsed: Box<Parsed>,
        entry: Option<EntryId>,
    },
}

#[derive(Debug, Clone)]
struct ParkedCall {
    token: engine::CallToken,
    xid: u32,
}

/// The server endpoint.
pub struct Server {
    responder: Responder,
    fs: Fs,
    drc: Box<dyn DrcPolicy>,
    queue: VecDeque<Job>,
    parked: BTreeMap<EntryId, Vec<ParkedCall>>,
    client_addr: u32,
    records: Records,
    /// Calls are looked up in the DRC as they arrive, but none is executed: an original stays
    /// in progress until released (a scenario's `Hold::ServerExecution`).
    execution_held: bool,
}

impl Server {
    /// A server with policy `drc`, seeing one client at `client_addr` (svcrdma reports the peer
    /// address with port 0, so a reconnecting client keeps its address).
    pub fn new(config: ConnectionConfig, drc: Box<dyn DrcPolicy>, client_addr: u32) -> Self {
        Server {
            responder: Responder::new(config),
            fs: Fs::default(),
            drc,
            queue: VecDeque::new(),
            parked: BTreeMap::new(),
            client_addr,
            records: Records::new(RecordLimits::default()),
            execution_held: false,
        }
    }

    /// Hold (or let go) every execution: while held, received calls are still dispatched
    /// through the DRC (a duplicate then finds its original in progress), but the executions
    /// they start wait, in order, until released. What kernel nfsd does when the export's file
    /// system blocks the procedure.
    pub fn hold_execution(&mut self, held: bool) {
        self.execution_held = held;
    }

    /// Where in the queue the next job to run is: the first one, or while execution is held
    /// the first DRC lookup (the executions they started keep their order).
    fn next_job(&self) -> Option<usize> {
        if self.execution_held {
            self.queue
                .iter()
                .position(|job| matches!(job, Job::Dispatch(_)))
        } else if self.queue.is_empty() {
            None
        } else {
            Some(0)
        }
    }

    pub fn responder(&self) -> &Responder {
        &self.responder
    }

    /// Judge incoming transport headers as this kernel profile's svcrdma does.
    pub fn set_profile(&mut self, profile: wire::svcrdma::Profile) {
        self.responder.set_profile(profile);
    }

    /// Judge incoming transport headers as `model` does (a measured kernel profile included).
    pub fn set_model(&mut self, model: wire::svcrdma::KernelModel) {
        self.responder.set_model(model);
    }

    pub fn fs(&self) -> &Fs {
        &self.fs
    }

    pub fn fs_mut(&mut self) -> &mut Fs {
        &mut self.fs
    }

    pub fn drc(&self) -> &dyn DrcPolicy {
        self.drc.as_ref()
    }

    /// The most recent executions, oldest first (at most
    /// [`RecordLimits::recent_executions`]; [`Server::records`] has the counts).
    pub fn executions(&self) -> &VecDeque<Execution> {
        self.records.executions()
    }

    /// The most recent DRC decisions, oldest first.
    pub fn decisions(&self) -> &VecDeque<DrcEvent> {
        self.records.decisions()
    }

    /// How many times the call `xid` of `procedure` was executed (exact for the most recent
    /// [`RecordLimits::counted_xids`] pairs).
    pub fn executions_of(&self, xid: u32, procedure: &str) -> usize {
        usize::try_from(self.records.executions_of(xid, procedure)).unwrap_or(usize::MAX)
    }

    /// Everything the server counted: executions per (XID, procedure), totals, decisions.
    pub fn records(&self) -> &Records {
        &self.records
    }

    /// Change how much of each record is kept.
    pub fn set_record_limits(&mut self, limits: RecordLimits) {
        self.records.set_limits(limits);
    }

    /// How much the server holds: its records, DRC entries, queued and parked calls.
    pub fn held(&self) -> Held {
        Held {
            records: self.records.sizes(),
            drc_entries: self.drc.len(),
            queued: self.queue.len(),
            parked: self.parked(),
        }
    }

    /// Requests queued or executing (not yet answered or dropped).
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Calls parked on an in-progress entry.
    pub fn parked(&self) -> usize {
        self.parked.values().map(Vec::len).sum()
    }

    /// The trace since the last call, one line per event (at most
    /// [`RecordLimits::trace_lines`]: a first line says how many older ones were dropped).
    pub fn take_trace(&mut self) -> Vec<String> {
        self.sync_trace();
        self.records.take_trace()
    }

    /// Move the engine's events in first, so the log reads in causal order.
    fn sync_trace(&mut self) {
        for event in self.responder.drain_events() {
            self.records.trace_event(ServerEvent::Responder(event));
        }
    }

    fn note(&mut self, event: ServerEvent) {
        self.sync_trace();
        self.records.trace_event(event);
    }

    fn absorb_outputs(&mut self) {
        self.sync_trace();
        while let Some(output) = self.responder.poll_output() {
            match output {
                ResponderOutput::Received {
                    connection,
                    recv_seq,
                } => self.drc.received(connection, recv_seq),
                ResponderOutput::Call(call) => self.queue.push_back(Job::Dispatch(call)),
                ResponderOutput::Rejected {
                    connection,
                    recv_seq,
                    ..
                } => self.drc.discarded(connection, recv_seq),
                ResponderOutput::Acked {
                    connection,
                    position,
                } => {
                    let before = self.drc.len();
                    self.drc.acked(connection, position);
                    let evicted = before - self.drc.len();
                    if evicted > 0 {
                        self.note(ServerEvent::Evicted {
                            policy: self.drc.name(),
                            entries: evicted,
                        });
                    }
                }
                // acked-mark drops the lost connection's receive state and bounds how many lost
                // connections keep acknowledged entries; a new connection makes itself known by
                // its first Receive.
                ResponderOutput::Disconnected { connection } => self.drc.disconnected(connection),
                ResponderOutput::Connected { .. } => {}
            }
        }
    }
}

/// RFC 5531 §9: an accepted reply's header with an AUTH_NONE verifier is xid, REPLY,
/// MSG_ACCEPTED, the verifier's flavor and empty body, and SUCCESS.
const SUCCESS_HEADER_LEN: usize = 24;
/// Room reserved for results besides READ and READLINK data: what GETATTR, LOOKUP, WRITE and the
/// other small results take, so most replies are one allocation.
const RESULTS_ROOM: usize = 256;

impl Endpoint for Server {
    fn handle_event(&mut self, event: Event) {
        self.responder.handle_event(event);
        self.absorb_outputs();
    }

    fn poll_work(&mut self) -> Option<WorkRequest> {
        self.responder.poll_work()
    }

    fn private_data(&self) -> Option<Vec<u8>> {
        self.responder.private_data()
    }
}

impl RemoteMemory for Server {
    fn memory(&mut self) -> &mut MemoryTable {
        self.responder.memory()
    }
}

/// The server's nfsd: dispatching calls through the DRC and executing them, one queued job per
/// step, when the driver schedules it.
impl UpperLayer for Server {
    fn run_upper_layer(&mut self) -> bool {
        let Some(job) = self.next_job().and_then(|at| self.queue.remove(at)) else {
            return false;
        };
        match job {
            Job::Dispatch(call) => self.dispatch(call),
            Job::Execute {
                call,
                parsed,
                entry,
            } => self.execute(call, *parsed, entry),
        }
        self.absorb_outputs();
        true
    }

    fn has_upper_layer_work(&self) -> bool {
        self.next_job().is_some()
    }
}
