//! The scenario catalogue (`client::scenarios`) over a real connection, against any
//! NFSv3-over-RDMA server (ours or kernel nfsd): [`Session`] is its [`Driver`]. Executions cannot
//! be counted on a foreign server, so they are *inferred* from NFS statuses (a second REMOVE
//! answered NOENT was executed twice) and every verdict says so. Scenarios that need control only
//! the simulator has are reported `unsupported-on-rdma`, with the reason [`Driver::supports`] gives.
//!
//! Each verdict is judged by the one rule ([`verdict::judge::judge`]) from the inferred counts;
//! `rig judge` re-judges it later from counts taken on the server ([`verdict::counted`]).

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use client::scenarios::{
    catalogue, select, Control, Credits, Driver, DriverError, Hold, Outcome, Scenario, Until,
};
use engine::{ConnectionConfig, OutgoingCall, ReceivedReply, RequesterOutput};
use wire::mount3::{DirPath, Mount3Call};
use wire::nfs3::{
    CreateArgs, CreateHow3, Ddp, DirOpArgs3, FileHandle, Filename, LookupArgs, Nfs3Call, Nfs3Proc,
    Nfs3Reply, NfsRes, Sattr3,
};
use wire::nfs_client::{self, Procedure};

use crate::relay_control::{self, RdmaLink, RelayControl};
use crate::requester::{ClientError, RdmaClient};
use crate::serve_control::ServeControl;
use verdict::judge::{Basis, LOST_REPLY};
use verdict::record::{Verdict, UNSUPPORTED};

/// Where the export's root handle comes from.
#[derive(Debug, Clone)]
pub enum RootSource {
    /// Known already (given, or mounted over TCP by the caller).
    Handle(FileHandle),
    /// MNT over the RDMA connection itself (our server serves MOUNT v3 on the NFS listener).
    MountRdma,
}

/// How to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub server: SocketAddr,
    pub root: RootSource,
    pub export: Vec<u8>,
    pub label: String,
    /// Longest wait for any one reply.
    pub timeout: Duration,
    /// Prefix of every name created (unique per run, so runs never collide).
    pub prefix: String,
    /// The wire runs through the rig's relay: holds it can provide are made on the wire
    /// ([`crate::relay_control`]) and the scenarios that need them run; a relay that does not
    /// answer is an error of each scenario, never a silent fallback to timing.
    pub relay: bool,
    /// The server's execution hold answers at this UDP address (`rig serve --control`, or
    /// `rig hold-export` beside kernel nfsd): a scenario's [`Hold::ServerExecution`] is made
    /// there ([`crate::serve_control`]); without an answer each scenario is an error.
    pub execution_hold: Option<SocketAddr>,
    /// The execution hold's server is `rig hold-export` beside kernel nfsd, which also holds
    /// nfsd's export cache ([`Hold::ExportCacheUpcall`]: the `deferred` scenario runs).
    pub export_cache_hold: bool,
    /// What the link carries (RoCEv2 or iWARP), which decides the holds the relay provides.
    pub link: RdmaLink,
}

#[derive(Debug, Clone)]
struct Reply {
    bytes: Vec<u8>,
    status: String,
}

/// One scenario's connection plus bookkeeping.
pub struct Session {
    client: RdmaClient,
    options: Options,
    root: FileHandle,
    next_xid: u32,
    procs: BTreeMap<u32, Nfs3Proc>,
    transmissions: BTreeMap<u32, usize>,
    replies: BTreeMap<u32, Vec<Reply>>,
    transport_errors: BTreeMap<u32, usize>,
    /// Per XID, a hash of each distinct call transmitted (RPC message and Read chunk data).
    argument_sets: BTreeMap<u32, BTreeSet<u64>>,
    /// Replies that reached our Receive buffer but were lost with the connection unprocessed.
    lost_replies: usize,
    /// The rig's relay, when the wire runs through it.
    relay: Option<RelayControl>,
    /// When the current wire hold began (waits under it end inside the relay's hold limit).
    wire_hold_since: Option<Instant>,
    /// Why the ordering the scenario asked for was not forced (a wire hold ran out, the relay
    /// refused): the verdict is then an error, not a judgement of the server.
    not_forced: Option<String>,
    /// The server's execution hold (`rig serve --control` or `rig hold-export`), when offered.
    serve: Option<ServeControl>,
    /// The server's execution is held through `serve`.
    execution_held: bool,
    /// The server's export cache is held through `serve` (`rig hold-export`).
    export_cache_held: bool,
    /// Whether `serve` says which transmissions its DRC dropped (`rig serve` does, `rig
    /// hold-export` cannot); unknown until asked.
    serve_counts_drops: Option<bool>,
}

/// Run the catalogue (or one scenario) against `options.server`.
pub fn run(options: &Options, only: Option<&str>) -> Result<Vec<Verdict>, String> {
    let scenarios = select(catalogue(), |s| s.name, only, "scenario")?;
    let root = match &options.root {
        RootSource::Handle(h) => Some(h.clone()),
        RootSource::MountRdma => None,
    };
    let mut verdicts = Vec::new();
    for scenario in scenarios {
        verdicts.push(run_one(&scenario, options, root.clone()));
    }
    Ok(verdicts)
}

fn empty_verdict(
    scenario: &Scenario,
    options: &Options,
    outcome: &'static str,
    note: String,
) -> Verdict {
    Verdict::without_call(
        scenario.name,
        &options.label,
        scenario.procedure,
        outcome,
        note,
    )
}

/// What a run with `options` lets a scenario control: a real link's, the relay's holds with
/// `--relay`, and nfsd's export cache with `rig hold-export` (`--export-cache-hold`).
fn supports_with(options: &Options) -> impl Fn(Control) -> Result<(), &'static str> {
    let base: fn(Control) -> Result<(), &'static str> = match (options.relay, options.link) {
        (true, RdmaLink::RoceV2) => Session::supports_over_relay,
        (true, RdmaLink::Iwarp) => Session::supports_over_iwarp_relay,
        (false, _) => Session::supports,
    };
    let export_cache_hold = options.export_cache_hold && options.execution_hold.is_some();
    move |control| match control {
        Control::Hold(Hold::ExportCacheUpcall) if export_cache_hold => Ok(()),
        other => base(other),
    }
}

fn run_one(scenario: &Scenario, options: &Options, root: Option<FileHandle>) -> Verdict {
    if let Some(reason) = scenario.unsupported_by(supports_with(options)) {
        return empty_verdict(scenario, options, UNSUPPORTED, reason.to_string());
    }
    let mut opts = options.clone();
    opts.prefix = format!("{}-{}", options.prefix, scenario.name);
    let session = Session::open(opts, root, scenario.name);
    let mut session = match session {
        Ok(s) => s,
        Err(e) => return empty_verdict(scenario, options, "error", e.to_string()),
    };
    match (scenario.run)(&mut session) {
        Ok(outcome) => session.verdict(scenario, outcome),
        Err(e) => empty_verdict(scenario, options, "error", e.to_string()),
    }
}

fn dirop(dir: &FileHandle, name: &str) -> DirOpArgs3 {
    DirOpArgs3 {
        dir: dir.clone(),
        name: Filename(name.as_bytes().to_vec()),
    }
}

impl Session {
    fn open(
        options: Options,
        root: Option<FileHandle>,
        case: &str,
    ) -> Result<Session, ClientError> {
        let relay = if options.relay {
            let case = format!("{}.{case}", options.label);
            Some(
                RelayControl::open(options.server.ip(), &case)
                    .map_err(|e| ClientError::NotEstablished(e.to_string()))?,
            )
        } else {
            None
        };
        let serve = match options.execution_hold {
            Some(addr) => Some(
                ServeControl::open(addr).map_err(|e| ClientError::NotEstablished(e.to_string()))?,
            ),
            None => None,
        };
        let config = ConnectionConfig::default();
        let client = RdmaClient::connect(options.server, config, options.timeout)?;
        let mut session = Session {
            client,
            options,
            root: root.clone().unwrap_or_default(),
            next_xid: std::process::id().wrapping_mul(0x10000) ^ 0x5a00_0000,
            procs: BTreeMap::new(),
            transmissions: BTreeMap::new(),
            replies: BTreeMap::new(),
            transport_errors: BTreeMap::new(),
            argument_sets: BTreeMap::new(),
            lost_replies: 0,
            relay,
            wire_hold_since: None,
            not_forced: None,
            serve,
            execution_held: false,
            export_cache_held: false,
            serve_counts_drops: None,
        };
        if root.is_none() {
            session.mount_rdma()?;
        }
        // Learn the server's grant (a new connection starts at one, RFC 8166 §3.3.3).
        let xid = session.fresh_xid();
        let call = session.nfs_call(xid, &Nfs3Call::Null);
        session.transmit(call, true)?;
        session.await_replies(xid, 1);
        Ok(session)
    }

    fn mount_rdma(&mut self) -> Result<(), ClientError> {
        let xid = self.fresh_xid();
        let message =
            nfs_client::mount3_call(xid, &Mount3Call::Mnt(DirPath(self.options.export.clone())));
        self.client.call(OutgoingCall::inline(xid, message), true)?;
        let timeout = self.options.timeout;
        let mut reply = None;
        self.client.run_until(timeout, |c| {
            c.outputs()
                .iter()
                .any(|o| matches!(o, RequesterOutput::Reply(r) if r.xid == xid))
        })?;
        for output in self.client.take_outputs() {
            if let RequesterOutput::Reply(r) = output {
                if r.xid == xid {
                    reply = Some(r.message);
                }
            }
        }
        let reply = reply.ok_or_else(|| ClientError::NotEstablished("no MNT reply".into()))?;
        self.root = nfs_client::mount_root(&reply)
            .map_err(|e| ClientError::NotEstablished(format!("MNT over RDMA failed: {e}")))?;
        Ok(())
    }

    fn transmit(&mut self, call: OutgoingCall, honour_credits: bool) -> Result<(), ClientError> {
        let xid = call.xid;
        let arguments = call_hash(&call);
        self.client.call(call, honour_credits)?;
        *self.transmissions.entry(xid).or_default() += 1;
        self.argument_sets.entry(xid).or_default().insert(arguments);
        Ok(())
    }

    fn absorb(&mut self) {
        for reply in replies_of(self.client.take_outputs(), &mut self.transport_errors) {
            let status = self.status_of(reply.xid, &reply.message, &reply.write_chunk_data);
            let xid = reply.xid;
            let bytes = reply_bytes(reply);
            self.replies
                .entry(xid)
                .or_default()
                .push(Reply { bytes, status });
        }
    }

    fn status_of(&self, xid: u32, message: &[u8], write: &Option<Vec<u8>>) -> String {
        // Only NFS calls are answered here (MNT's reply is taken by mount_rdma).
        let procedure = self.procs.get(&xid).map(|p| Procedure::Nfs3(*p));
        let moved = write.as_ref().is_some_and(|d| !d.is_empty());
        nfs_client::reply_status(message, procedure, Ddp::moved_if(moved))
    }

    fn verdict(&mut self, scenario: &Scenario, outcome: Outcome) -> Verdict {
        let Outcome {
            xid,
            note,
            inference,
        } = outcome;
        self.absorb();
        let replies = self.replies.get(&xid).cloned().unwrap_or_default();
        // A reply lost with its connection still proves an execution; it leads the list.
        let statuses: Vec<String> = std::iter::repeat_n(LOST_REPLY.to_string(), self.lost_replies)
            .chain(replies.iter().map(|r| r.status.clone()))
            .collect();
        let identical = replies.windows(2).all(|w| w[0].bytes == w[1].bytes);
        let (executions, inference) =
            inference.unwrap_or_else(|| infer(scenario.procedure, &statuses));
        let mut verdict = Verdict {
            scenario: scenario.name.to_string(),
            label: self.options.label.clone(),
            procedure: scenario.procedure.to_string(),
            outcome: "ok".to_string(),
            xid,
            transmissions: self.transmissions.get(&xid).copied().unwrap_or(0),
            argument_sets: self.argument_sets.get(&xid).map_or(0, BTreeSet::len),
            replies: replies.len(),
            replies_identical: identical,
            statuses,
            executions,
            executions_basis: Basis::Inferred.verdict_name().to_string(),
            inference,
            judgement: verdict::record::PASS.to_string(),
            failure: String::new(),
            credits_requested: ConnectionConfig::default().credits,
            credits_granted: self.client.engine.credits_granted(),
            unanswered: self.client.engine.outstanding(),
            credits_balanced: self.client.engine.outstanding() == 0,
            transport_errors: self.transport_errors.get(&xid).copied().unwrap_or(0),
            connects: self.client.connects(),
            connection: if self.client.is_connected() {
                "up"
            } else {
                "down"
            }
            .to_string(),
            note,
        };
        // The outcome is recorded in the verdict; a failure is not an error of the run.
        let _ = verdict.apply_judgement(Basis::Inferred);
        if let Some(why) = self.not_forced.take() {
            // What the server did under an ordering nobody controlled is not its verdict.
            verdict.outcome = "error".to_string();
            verdict.note = format!("{}; ordering not forced: {why}", verdict.note);
        }
        verdict
    }
}

impl Session {
    /// What a real link through the rig's relay lets a scenario control: [`Session::supports`],
    /// plus the server's Send completions (its RC ACKs held on the wire).
    fn supports_over_relay(control: Control) -> Result<(), &'static str> {
        match control {
            Control::Hold(hold) if RelayControl::can_hold(hold) => Ok(()),
            other => Session::supports(other),
        }
    }

    /// [`Session::supports_over_relay`] over iWARP: a wire hold only where the transport lets
    /// one stand for the ordering ([`RelayControl::cannot_hold_on`] says why not).
    fn supports_over_iwarp_relay(control: Control) -> Result<(), &'static str> {
        match control {
            Control::RnrRetry => Err(
                "needs a Send beyond the credit grant retried until a Receive is posted (an RC RNR NAK); iWARP has no RNR: a Send that finds no Receive is a DDP untagged buffer error and siw terminates the connection (RFC 5041 §7.1; seen: \"siw: got TERMINATE. layer 1, type 2, code 2\")",
            ),
            Control::Hold(hold) if RelayControl::can_hold(hold) => {
                match RelayControl::cannot_hold_on(RdmaLink::Iwarp, hold) {
                    None => Ok(()),
                    Some(reason) => Err(reason),
                }
            }
            other => Session::supports(other),
        }
    }

    /// [`Session::until_answered`] under a wire hold: a server that has not answered before
    /// the hold must end would answer after its Send completed, which is the other ordering, so
    /// the case says its ordering was not forced instead of judging it.
    fn until_answered_under_hold(&mut self, xid: u32, n: usize) -> Result<bool, ClientError> {
        let reached = self.until_answered(xid, n)?;
        if !reached && self.not_forced.is_none() {
            self.not_forced = Some(format!(
                "the server had not answered XID {xid:#010x} {n} times within the wire hold ({} ms)",
                relay_control::WIRE_HOLD_BUDGET.as_millis()
            ));
        }
        Ok(reached)
    }

    /// Run until the server has answered `xid` `n` times (replies held in our Receive buffers
    /// count), ending early enough that the wire hold has not run out.
    fn until_answered(&mut self, xid: u32, n: usize) -> Result<bool, ClientError> {
        let since = self.wire_hold_since.unwrap_or_else(Instant::now);
        let budget = relay_control::WIRE_HOLD_BUDGET.saturating_sub(WIRE_HOLD_MARGIN);
        let left = budget.saturating_sub(since.elapsed());
        let taken = self.replies.get(&xid).map_or(0, Vec::len);
        let reached = self.client.run_until(left, |c| {
            let arrived = c
                .outputs()
                .iter()
                .filter(|o| matches!(o, RequesterOutput::Reply(r) if r.xid == xid))
                .count();
            taken + arrived + c.held_receives() >= n
        })?;
        self.absorb();
        Ok(reached)
    }
}

impl Session {
    /// Run until a reply waits in our held Receive buffer (our HCA acknowledged it), then let
    /// the server process that Send's completion as after-ack does; false when none came
    /// within the reply timeout.
    fn until_reply_held_and_acked(&mut self) -> Result<bool, DriverError> {
        let timeout = self.options.timeout;
        let held = self.client.run_until(timeout, |c| c.held_receives() >= 1)?;
        if held {
            self.let_ack_settle()?;
        }
        Ok(held)
    }

    /// Run until the server under an execution hold has made `n` DRC decisions for `xid` (our
    /// completions processed meanwhile), bounded by the reply timeout; a hold that never saw
    /// them leaves the ordering unforced.
    fn until_decided(&mut self, xid: u32, n: usize) -> Result<bool, DriverError> {
        let deadline = Instant::now() + self.options.timeout;
        let unforced = format!(
            "the server under the execution hold had not decided XID {xid:#010x} {n} times within {} s",
            self.options.timeout.as_secs()
        );
        self.poll_until(deadline, unforced, |session| {
            let Some(serve) = session.serve.as_mut() else {
                return Asked::GiveUp;
            };
            match serve.status(xid) {
                Ok(status) if !status.held => Asked::Gone,
                Ok(status) if status.decisions >= n => Asked::Reached,
                Ok(_) => Asked::NotYet,
                Err(e) => Asked::Failed(e.to_string()),
            }
        })
    }

    /// Run until the server under an export-cache hold has deferred `n` calls (our completions
    /// processed meanwhile), bounded by the reply timeout; a hold that never saw them (the
    /// upcall answered in time, the hold's limit first) leaves the ordering unforced.
    fn until_deferred(&mut self, n: usize) -> Result<bool, DriverError> {
        let deadline = Instant::now() + self.options.timeout;
        let unforced = format!(
            "the server under the export-cache hold had not deferred {n} call(s) within {} s",
            self.options.timeout.as_secs()
        );
        self.poll_until(deadline, unforced, |session| {
            let Some(serve) = session.serve.as_mut() else {
                return Asked::GiveUp;
            };
            match serve.status(0) {
                Ok(status) if !status.held => Asked::Gone,
                Ok(status) => match status.deferred {
                    Some(deferred) if deferred >= n => Asked::Reached,
                    Some(_) => Asked::NotYet,
                    None => Asked::Failed(
                        "the server's status does not count deferred calls".to_string(),
                    ),
                },
                Err(e) => Asked::Failed(e.to_string()),
            }
        })
    }

    /// Run until the relay's rule `rule` has acted on a frame (our completions processed
    /// meanwhile), ending early enough that the wire hold has not run out; a rule that never
    /// acted leaves the ordering unforced.
    fn until_relay_rule_acted(&mut self, rule: &str) -> Result<bool, DriverError> {
        let since = self.wire_hold_since.unwrap_or_else(Instant::now);
        let budget = relay_control::WIRE_HOLD_BUDGET.saturating_sub(WIRE_HOLD_MARGIN);
        let unforced = format!(
            "the relay's rule {rule} had not acted within the wire hold ({} ms)",
            relay_control::WIRE_HOLD_BUDGET.as_millis()
        );
        self.until_relay_rule_acted_by(rule, since + budget, unforced)
    }

    /// Run until the relay's rule `rule` has acted on a frame, bounded by `deadline`; a rule
    /// that never acted leaves the ordering unforced (`unforced` says why).
    fn until_relay_rule_acted_by(
        &mut self,
        rule: &str,
        deadline: Instant,
        unforced: String,
    ) -> Result<bool, DriverError> {
        self.poll_until(deadline, unforced, |session| {
            let Some(relay) = session.relay.as_ref() else {
                return Asked::GiveUp;
            };
            match relay.rule_hits(rule) {
                Ok(0) => Asked::NotYet,
                Ok(_) => Asked::Reached,
                Err(e) => Asked::Failed(e.to_string()),
            }
        })
    }

    /// Ask `ask` every [`STATUS_POLL_INTERVAL`] (our completions processed in between) until it
    /// answers or `deadline` passes; a wait that ended without reaching its point leaves the
    /// ordering unforced, saying why (`unforced` when time ran out or the hold was gone).
    fn poll_until(
        &mut self,
        deadline: Instant,
        unforced: String,
        mut ask: impl FnMut(&mut Session) -> Asked,
    ) -> Result<bool, DriverError> {
        while Instant::now() < deadline {
            match ask(self) {
                Asked::Reached => return Ok(true),
                Asked::NotYet => {}
                Asked::Gone => break,
                Asked::GiveUp => return Ok(false),
                Asked::Failed(why) => {
                    self.not_forced = Some(why);
                    return Ok(false);
                }
            }
            self.client.run_until(STATUS_POLL_INTERVAL, |_| false)?;
        }
        if self.not_forced.is_none() {
            self.not_forced = Some(unforced);
        }
        Ok(false)
    }
}

impl Session {
    /// Whether the server says the transmissions of `xid` still unanswered (`n` wanted, `have`
    /// taken) were dropped by its DRC, with nothing held or queued: `rig serve` then never
    /// answers them, and a wait for them ends instead of running into the timeout. A server
    /// that cannot tell (`rig hold-export`: nfsd counts drops and replays alike) is not asked
    /// again, and its waits run to the timeout.
    fn dropped_by_the_server(&mut self, xid: u32, have: usize, n: usize) -> bool {
        if !self.asks_about_drops() {
            return false;
        }
        let Some(serve) = self.serve.as_mut() else {
            return false;
        };
        match serve.status(xid) {
            Ok(status) => {
                self.serve_counts_drops = Some(status.dropped.is_some());
                status.dropped.is_some_and(|dropped| {
                    !status.held && status.queued == 0 && have + dropped >= n
                })
            }
            // Not asked again: the wait runs to the timeout as it would without the channel.
            Err(_) => {
                self.serve_counts_drops = Some(false);
                false
            }
        }
    }

    /// Whether a wait for replies asks the server about drops: it has a control channel that
    /// has not said it cannot tell, and holds no execution (a held call is not dropped yet).
    fn asks_about_drops(&self) -> bool {
        self.serve.is_some() && self.serve_counts_drops != Some(false) && !self.execution_held
    }
}

/// How long a wait for replies runs before it asks a server that counts its drops whether the
/// missing ones were dropped.
const DROP_CHECK_INTERVAL: Duration = Duration::from_millis(200);

/// What a server or relay answered a waiting case.
enum Asked {
    Reached,
    NotYet,
    /// The hold the case waits under is gone (it ran into its limit): the point will not come.
    Gone,
    /// Nothing to ask (no control channel): the driver does not wait.
    GiveUp,
    Failed(String),
}

/// How often a case asks the server (under an execution hold) or the relay for its state while
/// waiting.
const STATUS_POLL_INTERVAL: Duration = Duration::from_millis(20);

/// What is left of a wire hold's budget for releasing it (a few control round trips from a
/// TCG guest) after a wait under it.
const WIRE_HOLD_MARGIN: Duration = Duration::from_millis(300);

/// The catalogue's [`Driver`] over a real connection: waits are bounded by the timeout, our
/// Receive processing and (through the rig's relay) the server's Send completions are what a
/// scenario can hold; the server's execution is out of reach.
impl Driver for Session {
    /// What a real link lets a scenario control: our own Receive processing, nothing of the
    /// server's, and no deterministic RNR races.
    fn supports(control: Control) -> Result<(), &'static str> {
        match control {
            Control::Hold(Hold::ClientReceives) => Ok(()),
            Control::Hold(Hold::ExportCacheUpcall) => Err(
                "needs kernel nfsd's export cache held (rpc.mountd stopped), which only rig hold-export beside nfsd does (--execution-hold with --export-cache-hold)",
            ),
            Control::Hold(hold) if RelayControl::can_hold(hold) => Err(
                "needs frames held or lost on the wire, which only the rig's relay (--relay) or the simulator controls",
            ),
            Control::Hold(_) => Err(
                "needs the server's software held back, which only the simulator controls",
            ),
            Control::LateReceivePosting => Err(LATE_RECEIVE_POSTING_UNSUPPORTED),
            Control::RnrRetryExhaustion => Err(
                "needs RNR retries exhausted before we post Receives; not reproducible deterministically over rxe",
            ),
            // What RoCE's RC layer does (the one link a plain run cannot tell from iWARP;
            // `supports_over_iwarp_relay` refuses it there).
            Control::RnrRetry => Ok(()),
        }
    }

    fn name(&self, base: &str) -> String {
        format!("{}-{base}", self.options.prefix)
    }

    fn root(&self) -> FileHandle {
        self.root.clone()
    }

    fn fresh_xid(&mut self) -> u32 {
        self.next_xid = self.next_xid.wrapping_add(1);
        self.next_xid
    }

    fn nfs_call(&mut self, xid: u32, args: &Nfs3Call) -> OutgoingCall {
        self.procs.insert(xid, args.proc_());
        OutgoingCall::inline(xid, nfs_client::nfs3_call(xid, args))
    }

    fn send(&mut self, call: OutgoingCall, credits: Credits) -> Result<(), DriverError> {
        Ok(self.transmit(call, credits == Credits::Honour)?)
    }

    fn await_replies(&mut self, xid: u32, n: usize) -> bool {
        let deadline = Instant::now() + self.options.timeout;
        loop {
            let have = self.replies.get(&xid).map_or(0, Vec::len);
            if have >= n {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            // Most waits end within the first stretch; the server is asked only after one.
            let stretch = if self.asks_about_drops() {
                left.min(DROP_CHECK_INTERVAL)
            } else {
                left
            };
            run_until_replies(&mut self.client, stretch, xid, have, n);
            self.absorb();
            let have = self.replies.get(&xid).map_or(0, Vec::len);
            if have < n && self.dropped_by_the_server(xid, have, n) {
                return false;
            }
        }
    }

    fn first_status(&self, xid: u32) -> String {
        self.replies
            .get(&xid)
            .and_then(|r| r.first())
            .map_or_else(|| "no reply".to_string(), |r| r.status.clone())
    }

    fn create_file(&mut self, name: &str) -> Result<FileHandle, DriverError> {
        let xid = self.fresh_xid();
        let call = self.nfs_call(
            xid,
            &Nfs3Call::Create(CreateArgs {
                where_: dirop(&self.root, name),
                how: CreateHow3::Unchecked(Sattr3::default()),
            }),
        );
        self.transmit(call, true)?;
        self.await_replies(xid, 1);
        let handle = self
            .replies
            .get(&xid)
            .and_then(|r| r.first())
            .and_then(|r| nfs_client::nfs3_reply(&r.bytes, Nfs3Proc::Create, Ddp::Inline).ok())
            .and_then(|reply| match reply {
                Nfs3Reply::Create(NfsRes::Ok(ok)) => ok.obj,
                _ => None,
            });
        Ok(handle.unwrap_or_default())
    }

    fn lookup(&mut self, name: &str) -> Result<String, DriverError> {
        let args = Nfs3Call::Lookup(LookupArgs {
            what: dirop(&self.root, name),
        });
        self.exec(&args)
    }

    fn exec(&mut self, args: &Nfs3Call) -> Result<String, DriverError> {
        let xid = self.fresh_xid();
        let call = self.nfs_call(xid, args);
        self.transmit(call, true)?;
        self.await_replies(xid, 1);
        Ok(self.first_status(xid))
    }

    fn credits_granted(&self) -> u32 {
        self.client.engine.credits_granted()
    }

    fn outstanding(&self) -> usize {
        self.client.engine.outstanding()
    }

    fn hold(&mut self, hold: Hold) -> bool {
        if hold == Hold::ClientReceives {
            self.client.hold_receives = true;
            return true;
        }
        if let (Hold::ServerExecution, Some(serve)) = (hold, self.serve.as_mut()) {
            return match serve.hold() {
                Ok(_) => {
                    self.execution_held = true;
                    true
                }
                Err(e) => {
                    self.not_forced = Some(e.to_string());
                    false
                }
            };
        }
        if let (Hold::ExportCacheUpcall, Some(serve)) = (hold, self.serve.as_mut()) {
            return match serve.hold_export_cache() {
                Ok(_) => {
                    self.export_cache_held = true;
                    true
                }
                Err(e) => {
                    self.not_forced = Some(e.to_string());
                    false
                }
            };
        }
        let Some(relay) = self.relay.as_mut().filter(|_| RelayControl::can_hold(hold)) else {
            return false;
        };
        match relay.hold(hold) {
            Ok(()) => {
                if RelayControl::holds_frames(hold) {
                    self.wire_hold_since.get_or_insert_with(Instant::now);
                }
                true
            }
            Err(e) => {
                self.not_forced = Some(e.to_string());
                false
            }
        }
    }

    fn until(&mut self, point: Until) -> Result<bool, DriverError> {
        let held = match point {
            Until::RepliesHeld(n) => n,
            // The retransmit then follows the ACK whatever the scheduling.
            Until::ReplyHeldAndAcked => return self.until_reply_held_and_acked(),
            Until::ServerDeferred(n) if self.export_cache_held => return self.until_deferred(n),
            // Under an execution hold the server says how many DRC decisions it has made.
            Until::Decided { xid, n } | Until::DecidedAndIdle { xid, n } if self.execution_held => {
                return self.until_decided(xid, n)
            }
            // Under a wire hold the server's decisions show as its answers: `n` replies to `xid`
            // (held in our buffers or taken), or none more before the hold must end.
            Until::Decided { xid, n } | Until::DecidedAndIdle { xid, n }
                if self.wire_hold_since.is_some() =>
            {
                return Ok(self.until_answered_under_hold(xid, n)?);
            }
            Until::RetransmitSettled { xid } if self.wire_hold_since.is_some() => {
                return Ok(self.until_answered_under_hold(xid, 2)?);
            }
            // The relay says when its rule has acted on the wire.
            Until::ReplyLost if self.wire_hold_since.is_some() => {
                return self.until_relay_rule_acted(relay_control::REPLY_LOST)
            }
            Until::AckLost if self.wire_hold_since.is_some() => {
                return self.until_relay_rule_acted(relay_control::ACK_LOST)
            }
            // Nothing is held: the connect or disconnect the message belonged to has completed
            // (or failed) by now, so the rule has acted or never will; the wait is the reply
            // timeout only for the relay's answer to come.
            Until::CmLost if self.relay.as_ref().is_some_and(RelayControl::holding) => {
                let deadline = Instant::now() + self.options.timeout;
                let unforced = format!(
                    "the relay's rule {} had not dropped a CM message by the time the connection \
                     was set up again",
                    relay_control::CM_LOST
                );
                return self.until_relay_rule_acted_by(relay_control::CM_LOST, deadline, unforced);
            }
            // The server's queues, decisions and the link's NAKs are out of sight here.
            _ => return Ok(false),
        };
        let timeout = self.options.timeout;
        Ok(self
            .client
            .run_until(timeout, |c| c.held_receives() >= held)?)
    }

    fn release_all(&mut self) {
        let held = self.execution_held || self.export_cache_held;
        if let (true, Some(serve)) = (held, self.serve.as_mut()) {
            match serve.release() {
                Ok(false) => {}
                Ok(true) => {
                    self.not_forced = Some(format!(
                        "the server's hold ran into its limit ({} s) before the case released it",
                        crate::serve_control::HOLD_LIMIT.as_secs()
                    ))
                }
                Err(e) => self.not_forced = Some(e.to_string()),
            }
            self.execution_held = false;
            self.export_cache_held = false;
        }
        if let Some(relay) = self.relay.as_mut() {
            match relay.release_all() {
                Ok(false) => {}
                Ok(true) => {
                    self.not_forced = Some(format!(
                    "a wire hold ran into the relay's limit ({} ms) before the case released it",
                    relay_control::WIRE_HOLD_BUDGET.as_millis()
                ))
                }
                Err(e) => self.not_forced = Some(e.to_string()),
            }
            self.wire_hold_since = None;
        }
        if self.client.hold_receives || self.client.held_receives() > 0 {
            self.client.release_receives();
        }
    }

    fn let_ack_settle(&mut self) -> Result<(), DriverError> {
        // Keep processing our completions (no bare sleep) while the server takes its own.
        self.client.run_until(ACK_SETTLE, |_| false)?;
        Ok(())
    }

    fn lose_reply_with_connection(&mut self, call: OutgoingCall) -> Result<bool, DriverError> {
        // The reply reaches our buffer (our HCA acknowledged it) and the server processes the
        // Send completion as after-ack lets it; then the connection goes before we process the
        // reply. (In the simulator the reply never leaves the server: no Send completes.)
        self.client.hold_receives = true;
        self.transmit(call, true)?;
        self.until_reply_held_and_acked()?;
        let (held, lost) = self
            .client
            .reconnect_losing_held_replies(self.options.timeout)?;
        self.lost_replies = lost;
        Ok(held)
    }

    fn reconnect_with_late_receives(&mut self) -> Result<(), DriverError> {
        Err(DriverError(LATE_RECEIVE_POSTING_UNSUPPORTED.to_owned()))
    }

    fn post_receives(&mut self) -> Result<(), DriverError> {
        Err(DriverError(LATE_RECEIVE_POSTING_UNSUPPORTED.to_owned()))
    }

    fn rnr_naks(&self) -> Option<u64> {
        None
    }
}

/// Why [`Control::LateReceivePosting`] is unsupported: `supports` says it, and the two driver
/// calls that need it fail with it (only a scenario that does not list the control in
/// `Scenario::requires` can make them).
const LATE_RECEIVE_POSTING_UNSUPPORTED: &str = "needs the server's first Send to race our Receive posting, which the HCA's RNR retry hides on a real link";

impl From<ClientError> for DriverError {
    fn from(e: ClientError) -> DriverError {
        DriverError(e.to_string())
    }
}

/// One argument set: the whole call message (XID included, the same for every transmission of
/// one XID) plus any Read chunk's position and data. Equal hashes, equal calls.
fn call_hash(call: &OutgoingCall) -> u64 {
    let mut hasher = DefaultHasher::new();
    call.message.hash(&mut hasher);
    call.read_chunk.hash(&mut hasher);
    hasher.finish()
}

/// Executions inferred from the statuses of the replies to one XID. A non-idempotent procedure
/// executed again fails the second time (REMOVE/RENAME → NOENT, CREATE GUARDED/MKDIR/LINK →
/// EXIST); an identical success is a replay from the cache.
fn infer(procedure: &str, statuses: &[String]) -> (Option<usize>, String) {
    let again = match procedure {
        "REMOVE" | "RENAME" => "NFS3ERR_NOENT",
        "CREATE" | "MKDIR" | "LINK" => "NFS3ERR_EXIST",
        _ => {
            return (
                None,
                "not inferable: the procedure succeeds again when re-executed".to_string(),
            )
        }
    };
    let Some(first) = statuses.first() else {
        return (None, "no reply: nothing to infer from".to_string());
    };
    // A reply lost with its connection answered an execution: it counts as the first success.
    if first != "NFS3_OK" && first != LOST_REPLY {
        return (None, format!("first reply {first}: nothing to infer from"));
    }
    let re_executed = statuses.iter().skip(1).filter(|s| *s == again).count();
    let replayed = statuses.iter().skip(1).filter(|s| *s == "NFS3_OK").count();
    (
        Some(1 + re_executed),
        format!(
            "inferred: {re_executed} later reply(ies) {again} (executed again), {replayed} NFS3_OK (replayed)"
        ),
    )
}

/// How long `after-ack` waits after the reply before it retransmits. Our HCA acknowledges the
/// reply on receipt, but the server learns of it only when it processes its Send completion: a
/// retransmit sent at once raced that (rig serve --policy acked on the 7.x guest once replayed
/// instead of re-executing, 1 run in 7). The wait makes the scenario what it says, after the ack.
pub const ACK_SETTLE: Duration = Duration::from_millis(200);

/// The replies among a session's requester `outputs`, in order; each RDMA_ERROR is counted by
/// XID in `transport_errors`, the other outputs dropped (both catalogues' sessions sort them so).
pub(crate) fn replies_of(
    outputs: Vec<RequesterOutput>,
    transport_errors: &mut BTreeMap<u32, usize>,
) -> Vec<ReceivedReply> {
    let mut replies = Vec::new();
    for output in outputs {
        match output {
            RequesterOutput::Reply(reply) => replies.push(reply),
            RequesterOutput::TransportError { xid, .. } => {
                *transport_errors.entry(xid).or_default() += 1;
            }
            _ => {}
        }
    }
    replies
}

/// A reply as a session compares it: the message, then the bytes written to its Write chunk.
pub(crate) fn reply_bytes(reply: ReceivedReply) -> Vec<u8> {
    let mut bytes = reply.message;
    bytes.extend(reply.write_chunk_data.unwrap_or_default());
    bytes
}

/// Run `client` until `xid` has `n` replies, `have` of them already taken from its outputs (or
/// until `timeout`).
pub(crate) fn run_until_replies(
    client: &mut RdmaClient,
    timeout: Duration,
    xid: u32,
    have: usize,
    n: usize,
) {
    let _ = client.run_until(timeout, |c| {
        let new = c
            .outputs()
            .iter()
            .filter(|o| matches!(o, RequesterOutput::Reply(r) if r.xid == xid))
            .count();
        have + new >= n
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use verdict::record::SKIP;

    #[test]
    fn executions_are_inferred_from_statuses() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            infer("REMOVE", &s(&["NFS3_OK", "NFS3ERR_NOENT"])).0,
            Some(2)
        );
        assert_eq!(infer("REMOVE", &s(&["NFS3_OK", "NFS3_OK"])).0, Some(1));
        assert_eq!(
            infer("LINK", &s(&["NFS3_OK", "NFS3ERR_EXIST", "NFS3_OK"])).0,
            Some(2)
        );
        assert_eq!(infer("WRITE", &s(&["NFS3_OK", "NFS3_OK"])).0, None);
        assert_eq!(infer("REMOVE", &s(&["NFS3ERR_NOENT"])).0, None);
        assert_eq!(infer("REMOVE", &[]).0, None);
        assert_eq!(
            infer("REMOVE", &s(&[LOST_REPLY, "NFS3ERR_NOENT"])).0,
            Some(2)
        );
        assert_eq!(infer("REMOVE", &s(&[LOST_REPLY, "NFS3_OK"])).0, Some(1));
    }

    #[test]
    fn argument_sets_are_distinct_call_messages() {
        let call = |message: &[u8], chunk: Option<(u32, Vec<u8>)>| OutgoingCall {
            read_chunk: chunk,
            ..OutgoingCall::inline(7, message.to_vec())
        };
        let a = call(b"remove a", None);
        assert_eq!(call_hash(&a), call_hash(&a.clone()));
        // A Reply chunk offered by each transmission is not an argument.
        let mut with_reply_chunk = a.clone();
        with_reply_chunk.reply_chunk_capacity = Some(4096);
        assert_eq!(call_hash(&a), call_hash(&with_reply_chunk));
        assert_ne!(call_hash(&a), call_hash(&call(b"remove b", None)));
        let data = call(b"write", Some((8, vec![1; 16])));
        assert_ne!(
            call_hash(&data),
            call_hash(&call(b"write", Some((8, vec![2; 16]))))
        );
    }

    fn sample(statuses: &[&str], executions: Option<usize>, argument_sets: usize) -> Verdict {
        let scenario = &catalogue()[0];
        let options = Options {
            server: "10.99.0.1:20049".parse().unwrap(),
            root: RootSource::MountRdma,
            export: b"/export".to_vec(),
            label: "nfsd".to_string(),
            timeout: Duration::from_secs(1),
            prefix: "p".to_string(),
            relay: false,
            execution_hold: None,
            export_cache_hold: false,
            link: RdmaLink::RoceV2,
        };
        let mut v = empty_verdict(scenario, &options, "ok", String::new());
        v.xid = 0x5a3f_0012;
        v.statuses = statuses.iter().map(|s| s.to_string()).collect();
        v.replies = statuses.len();
        v.transmissions = statuses.len();
        v.executions = executions;
        v.argument_sets = argument_sets;
        v.connects = 1;
        v
    }

    #[test]
    fn verdicts_record_the_judgement_and_read_back() {
        let mut v = sample(&["NFS3_OK", "NFS3ERR_NOENT"], Some(2), 1);
        assert!(v.apply_judgement(Basis::Inferred).is_err());
        assert_eq!(v.judgement, "fail");
        assert!(
            v.failure
                .starts_with("non-idempotent REMOVE executed 2 times for XID 0x5a3f0012"),
            "{}",
            v.failure
        );
        let json = serde_json::to_string_pretty(&vec![v.clone()]).unwrap();
        for key in [
            "\"xid\": 1514078226",
            "\"argument_sets\": 1",
            "\"judgement\": \"fail\"",
        ] {
            assert!(json.contains(key), "{key} in {json}");
        }
        let back: Vec<Verdict> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, vec![v.clone()]);
        v.executions = Some(1);
        assert!(v.apply_judgement(Basis::Inferred).is_ok());
        assert_eq!((v.judgement.as_str(), v.failure.as_str()), ("pass", ""));
    }

    #[test]
    fn a_scenario_that_sent_nothing_is_not_a_pass() {
        let note = "needs the simulator".to_string();
        let skipped = Verdict::without_call("burst", "nfsd", "LINK", UNSUPPORTED, note.clone());
        assert_eq!(
            (skipped.judgement.as_str(), skipped.transmissions),
            (SKIP, 0)
        );
        let broken = Verdict::without_call("burst", "nfsd", "LINK", "error", note);
        assert_eq!(broken.judgement, "error");
    }

    #[test]
    fn verdicts_from_before_the_judgement_still_read() {
        let old = r#"{"scenario": "once", "label": "nfsd", "procedure": "REMOVE", "outcome": "ok",
            "transmissions": 1, "replies": 1, "replies_identical": true, "statuses": ["NFS3_OK"],
            "executions": 1, "executions_basis": "inferred", "inference": "", "credits_requested": 32,
            "credits_granted": 32, "unanswered": 0, "credits_balanced": true, "transport_errors": 0,
            "connects": 1, "connection": "up", "note": ""}"#;
        let v: Verdict = serde_json::from_str(old).unwrap();
        assert_eq!(
            (v.xid, v.argument_sets, v.judgement.as_str()),
            (0, 0, "pass")
        );
    }

    #[test]
    fn every_scenario_runs_on_rdma_or_says_why_not() {
        let unsupported: Vec<(&str, &str)> = catalogue()
            .iter()
            .filter_map(|s| s.unsupported_by(Session::supports).map(|r| (s.name, r)))
            .collect();
        let names: Vec<&str> = unsupported.iter().map(|(name, _)| *name).collect();
        assert_eq!(
            names,
            [
                "deferred",
                "after-reply-before-ack",
                "changed-args-same-xid",
                "after-reconnect-rep-lost",
                "after-reconnect-rtu-lost",
                "after-reconnect-drep-lost",
                "reply-chunk",
                "reply-lost-live",
                "ack-lost",
                "passive-first",
                "passive-first-exhausted"
            ]
        );
        assert!(unsupported
            .iter()
            .all(|(_, reason)| reason.starts_with("needs ")));
    }

    #[test]
    fn through_the_rigs_relay_the_send_completion_scenarios_run_too() {
        let unsupported: Vec<&str> = catalogue()
            .iter()
            .filter(|s| s.unsupported_by(Session::supports_over_relay).is_some())
            .map(|s| s.name)
            .collect();
        assert_eq!(
            unsupported,
            ["deferred", "passive-first", "passive-first-exhausted"]
        );
    }

    #[test]
    fn over_iwarp_the_relay_holds_nothing_and_each_scenario_says_why() {
        let options = |link| Options {
            server: "10.99.0.1:20049".parse().unwrap(),
            root: RootSource::MountRdma,
            export: b"/export".to_vec(),
            label: "nfsd".into(),
            timeout: Duration::from_secs(10),
            prefix: "t".into(),
            relay: true,
            execution_hold: Some("10.99.0.1:4793".parse().unwrap()),
            export_cache_hold: true,
            link,
        };
        let unsupported = |link| -> Vec<(&'static str, &'static str)> {
            catalogue()
                .iter()
                .filter_map(|s| Some((s.name, s.unsupported_by(supports_with(&options(link)))?)))
                .collect()
        };
        let over_roce: Vec<&str> = unsupported(RdmaLink::RoceV2).iter().map(|u| u.0).collect();
        assert_eq!(over_roce, ["passive-first", "passive-first-exhausted"]);
        let over_iwarp = unsupported(RdmaLink::Iwarp);
        let names: Vec<&str> = over_iwarp.iter().map(|u| u.0).collect();
        assert_eq!(
            names,
            [
                "after-reply-before-ack",
                "changed-args-same-xid",
                "over-credit",
                "after-reconnect-rep-lost",
                "after-reconnect-rtu-lost",
                "after-reconnect-drep-lost",
                "reply-chunk",
                "reply-lost-live",
                "ack-lost",
                "passive-first",
                "passive-first-exhausted"
            ]
        );
        // The wire's scenarios name iWARP as the reason, not a missing relay.
        for (name, why) in &over_iwarp[..9] {
            assert!(why.contains("iWARP"), "{name}: {why}");
        }
    }

    #[test]
    fn deferred_runs_only_beside_rig_hold_export() {
        let deferred = catalogue()
            .into_iter()
            .find(|s| s.name == "deferred")
            .unwrap();
        let mut options = Options {
            server: "10.99.0.1:20049".parse().unwrap(),
            root: RootSource::MountRdma,
            export: b"/export".to_vec(),
            label: "nfsd".into(),
            timeout: Duration::from_secs(10),
            prefix: "t".into(),
            relay: true,
            execution_hold: None,
            export_cache_hold: true,
            link: RdmaLink::RoceV2,
        };
        // The flag alone is not the control: without the hold's address nothing answers.
        assert!(deferred.unsupported_by(supports_with(&options)).is_some());
        options.execution_hold = Some("10.99.0.1:4793".parse().unwrap());
        assert_eq!(deferred.unsupported_by(supports_with(&options)), None);
        // rig serve's control port (no --export-cache-hold) has no export cache.
        options.export_cache_hold = false;
        let why = deferred.unsupported_by(supports_with(&options)).unwrap();
        assert!(why.contains("rig hold-export"), "{why}");
    }
}
