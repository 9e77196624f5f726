//! The scenario harness: our requester and the reference server joined by the simulator, with a
//! record of every transmission and reply and a trace of every endpoint event.

use std::collections::BTreeMap;

use engine::endpoint::UpperLayer;
use engine::{ConnectionConfig, OutgoingCall, ReceivedReply, Requester, RequesterOutput};
use server::drc::policy_by_name;
use server::Server;
use sim::{Action, Side, Sim, SimConfig};
use wire::mount3::{DirPath, Mount3Call};
use wire::nfs3::{
    CreateArgs, CreateHow3, Ddp, DirOpArgs3, FileHandle, Filename, LookupArgs, Nfs3Call, Nfs3Reply,
    NfsRes, Sattr3,
};
use wire::nfs_client::{self, Procedure};

use crate::scenarios::{Control, Credits, Driver, DriverError, Hold, Until, NO_EXPORT_CACHE};

/// Steps any single phase may take before the harness gives up (keeps every run bounded).
pub const MAX_STEPS: u64 = 20_000;
/// The address the server sees for our client.
pub const CLIENT_ADDR: u32 = 0x0a00_0002;

/// A reply as recorded for verdicts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedReply {
    pub reply: ReceivedReply,
    /// NFS or MOUNT status decoded from the reply, or the RPC-level outcome.
    pub status: String,
}

/// Our requester + the reference server over the simulator.
pub struct Harness {
    pub sim: Sim<Requester, Server>,
    pub credits: u32,
    procedures: BTreeMap<u32, Procedure>,
    transmissions: BTreeMap<u32, usize>,
    replies: BTreeMap<u32, Vec<RecordedReply>>,
    transport_errors: BTreeMap<u32, usize>,
    unmatched: usize,
    trace: Vec<String>,
    next_xid: u32,
    pub root: FileHandle,
}

impl Harness {
    /// Connect, mount the export and learn the credit grant.
    pub fn new(policy: &str, seed: u64) -> Option<Harness> {
        let config = ConnectionConfig::default();
        let drc = policy_by_name(policy, config.credits)?;
        let server = Server::new(config, drc, CLIENT_ADDR);
        let client = Requester::new(config);
        let sim = Sim::new(
            client,
            server,
            SimConfig {
                seed,
                ..SimConfig::default()
            },
        );
        let mut h = Harness {
            sim,
            credits: config.credits,
            procedures: BTreeMap::new(),
            transmissions: BTreeMap::new(),
            replies: BTreeMap::new(),
            transport_errors: BTreeMap::new(),
            unmatched: 0,
            trace: Vec::new(),
            next_xid: 0x1000,
            root: FileHandle(Vec::new()),
        };
        h.connect();
        Some(h)
    }

    /// Connect without mounting (scenarios that need the raw first exchange).
    pub fn connect(&mut self) {
        self.sim.connect();
        self.collect();
    }

    /// MOUNT the export over the wire; sets `root`.
    pub fn mount(&mut self) {
        let xid = self.fresh_xid();
        let call = self.mount_call(xid, Mount3Call::Mnt(DirPath(b"/export".to_vec())));
        self.send(call, true);
        self.settle();
        let reply = self.replies.get(&xid).and_then(|r| r.first());
        if let Some(Ok(root)) = reply.map(|r| nfs_client::mount_root(&r.reply.message)) {
            self.root = root;
        }
    }

    pub fn fresh_xid(&mut self) -> u32 {
        self.next_xid += 1;
        self.next_xid
    }

    /// An NFSv3 call message.
    pub fn nfs_call(&mut self, xid: u32, args: &Nfs3Call) -> OutgoingCall {
        self.procedures.insert(xid, Procedure::Nfs3(args.proc_()));
        OutgoingCall::inline(xid, nfs_client::nfs3_call(xid, args))
    }

    /// An NFSv3 call whose DDP-eligible argument (`args` carries `DdpData::Moved`) travels in a
    /// Read chunk at its XDR position.
    pub fn nfs_call_moving(&mut self, xid: u32, args: &Nfs3Call, data: Vec<u8>) -> OutgoingCall {
        self.procedures.insert(xid, Procedure::Nfs3(args.proc_()));
        OutgoingCall::moving_argument(xid, nfs_client::nfs3_call(xid, args), data)
    }

    /// A MOUNT v3 call message.
    pub fn mount_call(&mut self, xid: u32, args: Mount3Call) -> OutgoingCall {
        self.procedures.insert(xid, Procedure::Mount3(args.proc_()));
        OutgoingCall::inline(xid, nfs_client::mount3_call(xid, &args))
    }

    /// Send one transmission; returns whether the requester accepted it.
    pub fn send(&mut self, call: OutgoingCall, honour_credits: bool) -> bool {
        let xid = call.xid;
        let ok = self.sim.client.call(call, honour_credits).is_ok();
        if ok {
            *self.transmissions.entry(xid).or_default() += 1;
        } else {
            self.trace.push(format!("cli refused xid={xid:#x}"));
        }
        self.sim.flush_work(Side::Client);
        self.collect();
        ok
    }

    /// Take trace lines and requester outputs after anything happened.
    pub fn collect(&mut self) {
        self.trace.extend(self.sim.take_trace());
        self.trace.extend(self.sim.client.take_trace());
        self.trace.extend(self.sim.server.take_trace());
        while let Some(output) = self.sim.client.poll_output() {
            match output {
                RequesterOutput::Reply(reply) => {
                    let status = self.status_of(&reply);
                    self.trace
                        .push(format!("cli done xid={:#x} {status}", reply.xid));
                    self.replies
                        .entry(reply.xid)
                        .or_default()
                        .push(RecordedReply { reply, status });
                }
                RequesterOutput::TransportError { xid, .. } => {
                    *self.transport_errors.entry(xid).or_default() += 1;
                }
                RequesterOutput::UnmatchedReply { .. } => self.unmatched += 1,
                RequesterOutput::BadHeader(_)
                | RequesterOutput::Disconnected { .. }
                | RequesterOutput::Connected => {}
            }
        }
    }

    fn status_of(&self, reply: &ReceivedReply) -> String {
        let procedure = self.procedures.get(&reply.xid).copied();
        let moved = reply
            .write_chunk_data
            .as_ref()
            .is_some_and(|d| !d.is_empty());
        nfs_client::reply_status(&reply.message, procedure, Ddp::moved_if(moved))
    }

    /// One scheduler step, with bookkeeping.
    pub fn step(&mut self) -> Option<Action> {
        let action = self.sim.step();
        self.collect();
        action
    }

    /// Step until `done` or nothing can run; returns whether `done` held.
    pub fn run_until(&mut self, mut done: impl FnMut(&Harness) -> bool) -> bool {
        for _ in 0..MAX_STEPS {
            if done(self) {
                return true;
            }
            if self.step().is_none() {
                break;
            }
        }
        done(self)
    }

    /// Run until nothing can run.
    pub fn settle(&mut self) -> bool {
        for _ in 0..MAX_STEPS {
            if self.step().is_none() {
                return true;
            }
        }
        false
    }

    pub fn hold(&mut self, action: Action) {
        self.sim.hold(action);
    }

    pub fn release_all(&mut self) {
        self.sim.release_all();
    }

    pub fn transmissions(&self, xid: u32) -> usize {
        self.transmissions.get(&xid).copied().unwrap_or(0)
    }

    pub fn replies(&self, xid: u32) -> &[RecordedReply] {
        self.replies.get(&xid).map_or(&[], Vec::as_slice)
    }

    pub fn transport_errors(&self, xid: u32) -> usize {
        self.transport_errors.get(&xid).copied().unwrap_or(0)
    }

    pub fn unmatched(&self) -> usize {
        self.unmatched
    }

    /// The trace so far (raw; see [`crate::trace::normalise`]).
    pub fn trace(&self) -> &[String] {
        &self.trace
    }

    /// Server-side DRC decisions seen for `xid`.
    pub fn decisions(&self, xid: u32) -> Vec<&'static str> {
        self.sim
            .server
            .decisions()
            .iter()
            .filter(|d| d.xid == xid)
            .map(|d| d.decision)
            .collect()
    }

    /// Whether the requester has nothing outstanding and the server nothing unanswered, with
    /// every credit's Receive back in place on a live connection.
    pub fn credits_balanced(&self) -> bool {
        let responder = self.sim.server.responder();
        let client_clear = self.sim.client.outstanding() == 0;
        let server_clear = responder.unanswered() == 0 && self.sim.server.parked() == 0;
        let receives_ok = !self.sim.is_connected()
            || self.sim.posted_receives(Side::Server) == responder.credits() as usize;
        client_clear && server_clear && receives_ok
    }

    /// Whether the requester has been told the server's grant.
    pub fn learned_grant(&self) -> bool {
        self.sim.client.credits_granted() == self.credits
    }

    /// Names in the export root.
    pub fn root_names(&self) -> Vec<String> {
        self.sim
            .server
            .fs()
            .root_names()
            .iter()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .collect()
    }

    /// Run an NFS call directly on the server's file system (fixtures; not traced, not counted).
    pub fn fixture(&mut self, call: &Nfs3Call) -> Nfs3Reply {
        self.sim.server.fs_mut().nfs(call)
    }

    /// Whether the client endpoint could still talk.
    pub fn connected(&self) -> bool {
        self.sim.is_connected() && self.sim.client.is_connected()
    }

    /// Receive completions the client's software has not polled yet.
    pub fn client_unpolled(&self) -> usize {
        self.sim.pending_receive_completions(Side::Client)
    }

    pub fn server_has_work(&self) -> bool {
        self.sim.server.has_upper_layer_work()
    }
}

/// The catalogue's [`Driver`] over the simulator: every hold and wait is a scheduler action,
/// fixtures go straight to the server's file system (not traced, not counted), nothing fails.
pub struct SimDriver<'h> {
    pub harness: &'h mut Harness,
}

impl SimDriver<'_> {
    fn dirop(&self, name: &str) -> DirOpArgs3 {
        DirOpArgs3 {
            dir: self.harness.root.clone(),
            name: Filename(name.as_bytes().to_vec()),
        }
    }
}

impl Driver for SimDriver<'_> {
    fn supports(control: Control) -> Result<(), &'static str> {
        match control {
            Control::Hold(Hold::ExportCacheUpcall) => Err(NO_EXPORT_CACHE),
            _ => Ok(()),
        }
    }

    fn name(&self, base: &str) -> String {
        base.to_string()
    }

    fn root(&self) -> FileHandle {
        self.harness.root.clone()
    }

    fn fresh_xid(&mut self) -> u32 {
        self.harness.fresh_xid()
    }

    fn nfs_call(&mut self, xid: u32, args: &Nfs3Call) -> OutgoingCall {
        self.harness.nfs_call(xid, args)
    }

    fn send(&mut self, call: OutgoingCall, credits: Credits) -> Result<(), DriverError> {
        // A refusal is recorded in the trace; the verdict shows what it cost.
        self.harness.send(call, credits == Credits::Honour);
        Ok(())
    }

    fn await_replies(&mut self, xid: u32, n: usize) -> bool {
        self.harness.run_until(|h| h.replies(xid).len() >= n)
    }

    fn first_status(&self, xid: u32) -> String {
        self.harness
            .replies(xid)
            .first()
            .map_or_else(|| "no reply".to_string(), |r| r.status.clone())
    }

    fn create_file(&mut self, name: &str) -> Result<FileHandle, DriverError> {
        let call = Nfs3Call::Create(CreateArgs {
            where_: self.dirop(name),
            how: CreateHow3::Unchecked(Sattr3::default()),
        });
        Ok(match self.harness.fixture(&call) {
            Nfs3Reply::Create(NfsRes::Ok(ok)) => ok.obj.unwrap_or_default(),
            _ => FileHandle::default(),
        })
    }

    fn lookup(&mut self, name: &str) -> Result<String, DriverError> {
        let call = Nfs3Call::Lookup(LookupArgs {
            what: self.dirop(name),
        });
        Ok(self.harness.fixture(&call).status().name().to_string())
    }

    fn exec(&mut self, args: &Nfs3Call) -> Result<String, DriverError> {
        let xid = self.fresh_xid();
        let call = self.nfs_call(xid, args);
        self.send(call, Credits::Honour)?;
        self.await_replies(xid, 1);
        Ok(self.first_status(xid))
    }

    fn credits_granted(&self) -> u32 {
        self.harness.sim.client.credits_granted()
    }

    fn outstanding(&self) -> usize {
        self.harness.sim.client.outstanding()
    }

    fn hold(&mut self, hold: Hold) -> bool {
        let action = match hold {
            Hold::ServerExecution => {
                self.harness.sim.server.hold_execution(true);
                return true;
            }
            Hold::ServerSendCompletions => Action::PollSendQueue(Side::Server),
            Hold::ServerTransmissions => Action::Transmit(Side::Server),
            Hold::ServerReceives => Action::PollRecvQueue(Side::Server),
            Hold::ClientReceives => Action::PollRecvQueue(Side::Client),
            // No RC layer here: a lost reply is one that has not left the server, a lost ACK
            // one whose Send the server has not seen complete.
            Hold::ReplyLost => Action::Transmit(Side::Server),
            Hold::ReplyAckLost => Action::PollSendQueue(Side::Server),
            // Lost at the next connect or disconnect, which the retry completes.
            Hold::CmLost(message) => {
                self.harness.sim.lose_cm_message(message);
                return true;
            }
            Hold::ExportCacheUpcall => return false,
        };
        self.harness.hold(action);
        true
    }

    fn until(&mut self, point: Until) -> Result<bool, DriverError> {
        if let Until::ServerDeferred(_) = point {
            return Ok(false);
        }
        Ok(self.harness.run_until(|h| match point {
            Until::ServerQueued(n) => h.sim.server.queued() >= n,
            Until::RepliesHeld(n) => h.client_unpolled() >= n,
            Until::ReplyHeldAndAcked => {
                h.client_unpolled() >= 1 && h.sim.pending_send_completions(Side::Server) == 0
            }
            Until::RetransmitSettled { xid } => {
                h.client_unpolled() >= 2 || h.decisions(xid).len() >= 2 && !h.server_has_work()
            }
            Until::Decided { xid, n } => h.decisions(xid).len() >= n,
            Until::DecidedAndIdle { xid, n } => h.decisions(xid).len() >= n && !h.server_has_work(),
            Until::ServerInFlight(n) => h.sim.in_flight(Side::Server) >= n,
            Until::RnrNaks(n) => h.sim.stats().rnr_naks >= n,
            Until::ReplyLost => h.sim.in_flight(Side::Server) >= 1 && !h.server_has_work(),
            Until::AckLost => true,
            Until::CmLost => h.sim.stats().cm_messages_lost >= 1,
            // No export cache here, nothing is ever deferred.
            Until::ServerDeferred(_) => false,
        }))
    }

    fn release_all(&mut self) {
        self.harness.sim.server.hold_execution(false);
        self.harness.release_all();
    }

    fn let_ack_settle(&mut self) -> Result<(), DriverError> {
        self.harness.settle();
        Ok(())
    }

    fn lose_reply_with_connection(&mut self, call: OutgoingCall) -> Result<bool, DriverError> {
        // The reply is posted but never leaves the server: the client times out and reconnects.
        let h = &mut *self.harness;
        h.hold(Action::Transmit(Side::Server));
        h.send(call, true);
        let held = h.run_until(|h| h.sim.in_flight(Side::Server) >= 1 && !h.server_has_work());
        h.release_all();
        h.sim.disconnect(Side::Client);
        h.collect();
        h.settle();
        h.connect();
        h.settle();
        Ok(held)
    }

    fn reconnect_with_late_receives(&mut self) -> Result<(), DriverError> {
        let h = &mut *self.harness;
        h.sim.disconnect(Side::Client);
        h.settle();
        h.sim.client.defer_receive_posting();
        h.connect();
        Ok(())
    }

    fn post_receives(&mut self) -> Result<(), DriverError> {
        let h = &mut *self.harness;
        h.sim.client.post_receives();
        h.sim.flush_work(Side::Client);
        Ok(())
    }

    fn rnr_naks(&self) -> Option<u64> {
        Some(self.harness.sim.stats().rnr_naks)
    }
}
