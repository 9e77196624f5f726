//! [`Target`] over the deterministic simulated RC transport (`rpcrdma-sim`): our requester side
//! is a raw peer that sends exactly the bytes it is given; the responder is either the engine's
//! responder with a kernel profile and a trivial upper layer, or the reference NFSv3 server.
//!
//! "Quiet" here means the simulation ran out of enabled actions (or steps): the same case
//! stream always produces the same outcomes, which is what makes replay and minimisation exact.

use std::collections::VecDeque;

use engine::endpoint::{
    Access, Endpoint, Event, MemoryTable, RemoteMemory, UpperLayer, WorkRequest, WrId,
};
use engine::{ConnectionConfig, OutgoingReply, Responder, ResponderOutput};
use server::Server;
use sim::{Side, Sim, SimConfig};
use wire::nfs3::{
    CreateArgs, CreateHow3, DdpData, DirOpArgs3, FileHandle, Filename, Nfs3Call, Nfs3Reply, NfsRes,
    Sattr3, StableHow, WriteArgs,
};
use wire::raw::{proc_value, RawBuilder};
use wire::rpcrdma::{ERR_CHUNK, ERR_VERS};
use wire::skeleton::FixedWords;
use wire::svcrdma::{self, KernelModel, DEFAULT_MAX_REQ_SIZE};

use crate::case::{Observed, Region, RegionAccess, RegionKey};
use crate::generate::{FUZZ_FILE_BYTES, FUZZ_FILE_HANDLE, ROOT_FILE_HANDLE};
use crate::mutate::Skeleton;
use crate::signature::{normalise_event, Signature};
use crate::target::{Deadline, SimServerKind, Target, TargetError, TargetEvent};

/// Trace lines kept for [`Target::take_notes`] (older ones are dropped).
const MAX_NOTES: usize = 512;
/// Receives our side keeps posted, and their size (larger than any reply the responder sends).
const PEER_RECEIVES: usize = 16;
const PEER_RECEIVE_BYTES: usize = 64 * 1024;
/// The address the reference server sees for us.
const CLIENT_ADDR: u32 = 0x0a00_00fe;
/// First handle our registrations get (distinct from the responder's 0x8000 range).
const PEER_FIRST_HANDLE: u32 = 0x0001_0000;

/// The responder's connection parameters before private data: Linux's 4 KiB Receives
/// (`svcrdma_max_req_size`) in both directions, so the model's receive-overflow limit and the
/// simulated Receive size agree; 8 credits.
fn responder_config() -> ConnectionConfig {
    ConnectionConfig {
        inline_send: DEFAULT_MAX_REQ_SIZE,
        inline_recv: DEFAULT_MAX_REQ_SIZE,
        credits: 8,
    }
}

/// The requester side: posts what it is told, registers regions, queues what arrives.
#[derive(Debug)]
pub struct RawPeer {
    memory: MemoryTable,
    registered: Vec<u32>,
    work: VecDeque<WorkRequest>,
    inbox: VecDeque<TargetEvent>,
    next_wr: WrId,
    /// Offered in the CM connect request; the simulator carries it to the responder, which
    /// negotiates its inline thresholds from it (RFC 8797 §4).
    private_data: Option<Vec<u8>>,
}

impl RawPeer {
    fn new() -> RawPeer {
        RawPeer {
            memory: MemoryTable::new(PEER_FIRST_HANDLE),
            registered: Vec::new(),
            work: VecDeque::new(),
            inbox: VecDeque::new(),
            next_wr: 1,
            private_data: None,
        }
    }

    fn wr(&mut self) -> WrId {
        self.next_wr += 1;
        self.next_wr
    }

    fn post_receive(&mut self) {
        let wr_id = self.wr();
        self.work.push_back(WorkRequest::PostRecv {
            wr_id,
            capacity: PEER_RECEIVE_BYTES,
        });
    }
}

impl Endpoint for RawPeer {
    fn handle_event(&mut self, event: Event) {
        match event {
            Event::Connected { .. } => (0..PEER_RECEIVES).for_each(|_| self.post_receive()),
            Event::RecvCompleted { payload, .. } => {
                self.inbox.push_back(TargetEvent::Message(payload));
                self.post_receive();
            }
            Event::ConnectionLost => self.inbox.push_back(TargetEvent::Disconnected),
            // Send/Read/Write completions and flushes carry nothing the executor classifies.
            _ => {}
        }
    }

    fn poll_work(&mut self) -> Option<WorkRequest> {
        self.work.pop_front()
    }

    fn private_data(&self) -> Option<Vec<u8>> {
        self.private_data.clone()
    }
}

impl RemoteMemory for RawPeer {
    fn memory(&mut self) -> &mut MemoryTable {
        &mut self.memory
    }
}

/// The engine's responder with a trivial upper layer: every call that reaches it is answered
/// with an empty RPC SUCCESS reply, so only transport behaviour is observed.
#[derive(Debug)]
pub struct BareResponder {
    responder: Responder,
}

impl BareResponder {
    fn answer_calls(&mut self) {
        while let Some(output) = self.responder.poll_output() {
            if let ResponderOutput::Call(call) = output {
                // RFC 5531 §9: xid, REPLY, MSG_ACCEPTED, verifier AUTH_NONE, SUCCESS.
                let message = RawBuilder::new().words(&[call.xid, 1, 0, 0, 0, 0]).bytes();
                // A lost connection just means the reply is never sent; nothing to do.
                let _ = self
                    .responder
                    .reply(call.token, OutgoingReply { message, ddp: None });
            }
        }
    }
}

impl Endpoint for BareResponder {
    fn handle_event(&mut self, event: Event) {
        self.responder.handle_event(event);
        self.answer_calls();
    }

    fn poll_work(&mut self) -> Option<WorkRequest> {
        self.responder.poll_work()
    }

    fn private_data(&self) -> Option<Vec<u8>> {
        self.responder.private_data()
    }
}

impl RemoteMemory for BareResponder {
    fn memory(&mut self) -> &mut MemoryTable {
        self.responder.memory()
    }
}

/// The simulated responder.
pub enum SimResponder {
    Bare(Box<BareResponder>),
    Server(Box<Server>),
}

impl Endpoint for SimResponder {
    fn handle_event(&mut self, event: Event) {
        match self {
            SimResponder::Bare(r) => r.handle_event(event),
            SimResponder::Server(s) => s.handle_event(event),
        }
    }

    fn poll_work(&mut self) -> Option<WorkRequest> {
        match self {
            SimResponder::Bare(r) => r.poll_work(),
            SimResponder::Server(s) => s.poll_work(),
        }
    }

    fn private_data(&self) -> Option<Vec<u8>> {
        match self {
            SimResponder::Bare(r) => r.private_data(),
            SimResponder::Server(s) => s.private_data(),
        }
    }
}

impl RemoteMemory for SimResponder {
    fn memory(&mut self) -> &mut MemoryTable {
        match self {
            SimResponder::Bare(r) => r.memory(),
            SimResponder::Server(s) => s.memory(),
        }
    }
}

/// The bare responder answers each call as it arrives (inside its events), so only the
/// reference server has upper-layer work for the simulator to schedule.
impl UpperLayer for SimResponder {
    fn run_upper_layer(&mut self) -> bool {
        match self {
            SimResponder::Bare(_) => false,
            SimResponder::Server(s) => s.run_upper_layer(),
        }
    }

    fn has_upper_layer_work(&self) -> bool {
        match self {
            SimResponder::Bare(_) => false,
            SimResponder::Server(s) => s.has_upper_layer_work(),
        }
    }
}

/// Build the responder for `kind` with `config`; `None` for an unknown DRC policy.
fn build_responder(kind: &SimServerKind, config: ConnectionConfig) -> Option<SimResponder> {
    match kind {
        SimServerKind::Responder(model) => {
            let mut responder = Responder::new(config);
            responder.set_model(*model);
            Some(SimResponder::Bare(Box::new(BareResponder { responder })))
        }
        SimServerKind::Server { policy, profile } => {
            let drc = server::drc::policy_by_name(policy, config.credits)?;
            let mut server = Server::new(config, drc, CLIENT_ADDR);
            server.set_model(*profile);
            provision_fuzz_file(&mut server);
            Some(SimResponder::Server(Box::new(server)))
        }
    }
}

/// Create the file READ/WRITE cases address ([`FUZZ_FILE_HANDLE`]) with [`FUZZ_FILE_BYTES`].
fn provision_fuzz_file(server: &mut Server) {
    let root = FileHandle(ROOT_FILE_HANDLE.to_vec());
    let created = server.fs_mut().nfs(&Nfs3Call::Create(CreateArgs {
        where_: DirOpArgs3 {
            dir: root,
            name: Filename(b"wirefuzz".to_vec()),
        },
        how: CreateHow3::Unchecked(Sattr3::default()),
    }));
    let file = match created {
        Nfs3Reply::Create(NfsRes::Ok(ok)) => ok.obj.unwrap_or_default(),
        _ => FileHandle(FUZZ_FILE_HANDLE.to_vec()),
    };
    let data: Vec<u8> = (0..FUZZ_FILE_BYTES).map(|i| (i % 251) as u8).collect();
    server.fs_mut().nfs(&Nfs3Call::Write(WriteArgs {
        file,
        offset: 0,
        count: FUZZ_FILE_BYTES as u32,
        stable: StableHow::FileSync,
        data: DdpData::Inline(data),
    }));
}

/// A [`Target`] over the simulator.
pub struct SimTarget {
    name: String,
    sim: Sim<RawPeer, SimResponder>,
    notes: VecDeque<String>,
    /// The kernel model the responder judges headers with (the event source's model).
    profile: KernelModel,
    /// Events since the last [`Target::take_events`] (bounded by [`Signature`]).
    events: Signature,
}

/// The kernel-like events the model's decisions on one Send stand for: what svcrdma's decoder
/// would trace for the header (`svcrdma_decode_rqst`, one `svcrdma_decode_rseg`/`_wseg` per
/// segment, `svcrdma_decode_short_err`/`_parse_err` when it does not read back) and the rule
/// model's verdict for `profile`; numbers normalised as the trace relay normalises a live
/// kernel's fields. Deterministic: guided runs over the simulator replay exactly.
pub fn model_events(bytes: &[u8], profile: &KernelModel, into: &mut Signature) {
    let verdict = svcrdma::classify_with(bytes, profile);
    into.insert(&format!(
        "svcrdma_model rule={} outcome={}",
        verdict.rule.name(),
        Observed::from(verdict.outcome).name()
    ));
    let Some(skeleton) = Skeleton::parse_bytes(bytes, &[]) else {
        let event = if bytes.len() < 16 {
            normalise_event(
                "svcrdma_decode_short_err",
                &format!("hdrlen={}", bytes.len()),
            )
        } else {
            "svcrdma_decode_parse_err".to_string()
        };
        into.insert(&event);
        return;
    };
    into.insert(&normalise_event(
        "svcrdma_decode_rqst",
        &format!(
            "vers={} credits={} proc={} hdrlen={} inline={}",
            skeleton.vers,
            skeleton.credits,
            skeleton.proc_,
            skeleton.header_len(),
            skeleton.inline.len()
        ),
    ));
    for (segno, (position, seg)) in skeleton.reads.iter().enumerate() {
        into.insert(&normalise_event(
            "svcrdma_decode_rseg",
            &format!("segno={segno} position={position} length={}", seg.length),
        ));
    }
    for chunk in skeleton.writes.iter().chain(skeleton.reply.as_ref()) {
        into.insert(&normalise_event(
            "svcrdma_decode_wchunk",
            &format!("segcount={} present={}", chunk.segcount, chunk.segs.len()),
        ));
        for (segno, seg) in chunk.segs.iter().enumerate() {
            into.insert(&normalise_event(
                "svcrdma_decode_wseg",
                &format!("segno={segno} length={}", seg.length),
            ));
        }
    }
}

/// The event for a message our side received: its kind, as the responder's Send.
fn answer_event(bytes: &[u8]) -> String {
    let words = FixedWords::peek(bytes);
    let kind = match (words.proc_, words.error_code) {
        (Some(proc_value::ERROR), Some(ERR_VERS)) => "err_vers",
        (Some(proc_value::ERROR), Some(ERR_CHUNK)) => "err_chunk",
        (Some(proc_value::ERROR), _) => "error",
        (Some(_), _) => "reply",
        (None, _) => "short",
    };
    format!("svcrdma_post_send kind={kind}")
}

impl SimTarget {
    /// A simulated responder of `kind`; `seed` drives the simulator's scheduler.
    pub fn new(kind: SimServerKind, seed: u64) -> Result<SimTarget, TargetError> {
        let name = kind.name();
        let responder = build_responder(&kind, responder_config())
            .ok_or_else(|| TargetError::BadSpec(format!("{name}: unknown DRC policy")))?;
        let sim = Sim::new(
            RawPeer::new(),
            responder,
            SimConfig {
                seed,
                ..SimConfig::default()
            },
        );
        let profile = match &kind {
            SimServerKind::Responder(profile) | SimServerKind::Server { profile, .. } => *profile,
        };
        Ok(SimTarget {
            name,
            sim,
            notes: VecDeque::new(),
            profile,
            events: Signature::new(),
        })
    }

    /// The responder side (tests inspect the reference server's executions through it).
    pub fn responder(&self) -> &SimResponder {
        &self.sim.server
    }

    /// The simulator and the endpoints keep every trace line until taken; a fuzz run sends
    /// millions of messages, so move them into a bounded buffer as we go (memory stays flat).
    fn collect_traces(&mut self) {
        let mut lines = self.sim.take_trace();
        lines.extend(match &mut self.sim.server {
            SimResponder::Bare(bare) => bare.responder.take_trace(),
            SimResponder::Server(server) => server.take_trace(),
        });
        for line in lines {
            if self.notes.len() == MAX_NOTES {
                self.notes.pop_front();
            }
            self.notes.push_back(line);
        }
    }

    /// Connections established so far on the current simulator instance.
    pub fn connections(&self) -> u64 {
        self.sim.stats().connections
    }
}

impl Target for SimTarget {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn connect(&mut self, private_data: Option<&[u8]>) -> Result<(), TargetError> {
        if self.sim.is_connected() {
            self.sim.disconnect(Side::Client);
        }
        // The responder decodes it; RFC 8797 §4: data that does not decode (wrong Format
        // Identifier or version, too short) is ignored and the RFC 8166 §3.3.2 defaults apply.
        self.sim.client.private_data = private_data.map(<[u8]>::to_vec);
        self.sim.client.inbox.clear();
        self.sim.connect();
        Ok(())
    }

    fn is_connected(&self) -> bool {
        self.sim.is_connected()
    }

    fn register(&mut self, region: &Region) -> Result<RegionKey, TargetError> {
        let access = match region.access {
            RegionAccess::RemoteRead => Access::RemoteRead,
            RegionAccess::RemoteWrite => Access::RemoteWrite,
        };
        let handle = self.sim.client.memory.register(region.contents(), access);
        self.sim.client.registered.push(handle);
        // The simulated HCA addresses regions from zero (like a zero-based MR).
        Ok(RegionKey { handle, base: 0 })
    }

    fn deregister_all(&mut self) {
        let peer = &mut self.sim.client;
        for handle in std::mem::take(&mut peer.registered) {
            peer.memory.invalidate(handle);
        }
    }

    fn post_send(&mut self, bytes: &[u8]) -> Result<(), TargetError> {
        model_events(bytes, &self.profile, &mut self.events);
        let wr_id = self.sim.client.wr();
        self.sim.client.work.push_back(WorkRequest::PostSend {
            wr_id,
            payload: bytes.to_vec(),
        });
        self.sim.flush_work(Side::Client);
        Ok(())
    }

    fn next_event(&mut self, deadline: Deadline) -> TargetEvent {
        if self.sim.client.inbox.is_empty() {
            self.sim
                .run_until(deadline.sim_steps, |s| !s.client.inbox.is_empty());
        }
        self.collect_traces();
        let event = self
            .sim
            .client
            .inbox
            .pop_front()
            .unwrap_or(TargetEvent::Quiet);
        match &event {
            TargetEvent::Message(bytes) => self.events.insert(&answer_event(bytes)),
            TargetEvent::Disconnected => self.events.insert("svcrdma_disconnect"),
            TargetEvent::Quiet => {}
        }
        event
    }

    fn disconnect(&mut self) {
        self.sim.disconnect(Side::Client);
        self.sim.client.inbox.clear();
    }

    fn take_notes(&mut self) -> Vec<String> {
        self.collect_traces();
        self.notes.drain(..).collect()
    }

    fn take_events(&mut self) -> Option<Signature> {
        Some(std::mem::take(&mut self.events))
    }
}
