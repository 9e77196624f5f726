//! The executor: sends each case on a live connection with an NFS NULL liveness probe right
//! behind it, classifies what comes back, reconnects after a disconnect, and appends every case
//! to the case log *before* sending it, so a crash of the target reproduces from the log.
//!
//! Why the probe travels with the case: an answered case then costs no fixed wait at all (the
//! probe's answer, or the close that flushes it, says whether the connection outlived the case),
//! where a probe sent after the answer needed a settle period to see a close that follows it.
//! A case answered after its probe is still the case's answer: responders may answer out of
//! order (an nfsd thread executing the case while another answers the NULL; `rig serve` pulling a
//! Read chunk). Once the probe is answered the case has been received, so silence becomes a drop
//! after [`GRACE_DIVISOR`]-th of the deadline rather than the whole of it.

use std::io::Write;

use wire::nfs3::Nfs3Call;
use wire::nfs_client::nfs3_call;
use wire::raw::{proc_value, RawBuilder};
use wire::rpcrdma::{ERR_CHUNK, ERR_VERS};
use wire::skeleton::FixedWords;
use wire::svcrdma::{self, KernelModel};

use crate::case::{Case, Observed};
use crate::signature::Signature;
use crate::target::{Deadline, Target, TargetError, TargetEvent};

/// Events one case may produce before the executor stops listening (bounds the wait loop).
const MAX_EVENTS_PER_CASE: usize = 64;
/// After the probe's answer, a case still unanswered gets a `1/GRACE_DIVISOR` of the deadline
/// before it counts as dropped. Measured over rxe under TCG (6.12 nfsd and `rig serve`, 309
/// cases, seed 1): 41 answers came after their probe's, the latest 22 ms after it; with the
/// default 1 s deadline the grace is 100 ms, 4.5 times that. A later answer is never taken for
/// the next case's: it is a stray there, and flagged as a late answer
/// ([`CaseResult::late_answer`]) so a drop that was only slow shows in the report.
pub const GRACE_DIVISOR: u32 = 10;
/// Liveness-probe XIDs: `PROBE_XID_BASE + n` (disjoint from [`crate::generate::XID_BASE`]).
const PROBE_XID_BASE: u32 = 0x9000_0000;

/// What one case did to one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseResult {
    pub index: u64,
    pub family: String,
    pub target_rule: String,
    pub outcome: Observed,
    /// Whether a NULL call after the case was answered (`false` after a disconnect).
    pub alive_after: bool,
    /// Messages that answered neither the case nor a probe (late replies to earlier cases).
    pub stray_messages: u32,
    /// One of the strays answered the previous case, which had been classified a drop: that
    /// drop was an answer slower than the grace ([`GRACE_DIVISOR`]).
    pub late_answer: bool,
    /// What the target noted while running the case (trace lines; the model's rule).
    pub notes: Vec<String>,
    /// The responder's events for this case, when the target has its own event source
    /// ([`Target::take_events`]: the simulator); `None` otherwise.
    pub events: Option<Signature>,
}

/// Something that turns a case into an outcome: a live target or a model.
pub trait CaseRunner {
    fn name(&self) -> String;
    fn run_case(&mut self, case: &Case) -> Result<CaseResult, TargetError>;
    /// Run `case` again on a connection that carries nothing before it (a runner without
    /// connections: as [`CaseRunner::run_case`]). A divergence is confirmed this way before it
    /// is reported: what a case saw on a live connection can belong to the case before it (a
    /// close the kernel deferred past the previous case's answer and its probe).
    fn rerun_on_fresh_connection(&mut self, case: &Case) -> Result<CaseResult, TargetError> {
        self.run_case(case)
    }
    /// Connections re-established after a close so far (a runner without a transport: 0).
    fn reconnects(&self) -> u64 {
        0
    }
}

/// The svcrdma rule model's prediction, as a runner (for `--against model:PROFILE`).
#[derive(Debug, Clone, Copy)]
pub struct ModelRunner {
    /// A modelled or measured kernel (`crate::rules::kernel_model`).
    pub model: KernelModel,
}

impl CaseRunner for ModelRunner {
    fn name(&self) -> String {
        format!("model:{}", self.model.name)
    }

    fn run_case(&mut self, case: &Case) -> Result<CaseResult, TargetError> {
        let verdict = svcrdma::classify_with(&case.bytes, &self.model);
        let outcome = Observed::from(verdict.outcome);
        Ok(CaseResult {
            index: case.index,
            family: case.family.clone(),
            target_rule: case.target_rule.clone(),
            outcome,
            alive_after: !matches!(
                outcome,
                Observed::Disconnect | Observed::ErrChunkThenClose | Observed::Hang
            ),
            stray_messages: 0,
            late_answer: false,
            notes: vec![format!(
                "model {}: {} ({}; {})",
                self.model.name,
                verdict,
                verdict.rule.kernel_check(),
                verdict.rule.rfc()
            )],
            events: None,
        })
    }
}

/// What the wait after a Send saw.
#[derive(Debug, Default)]
struct Collected {
    answer: Option<Observed>,
    /// The liveness probe sent behind the case was answered.
    probe_answered: bool,
    /// A stray answered the previous case (classified a drop).
    late_answer: bool,
    disconnected: bool,
    strays: u32,
}

/// Runs cases against one [`Target`].
pub struct Executor<T: Target> {
    target: T,
    deadline: Deadline,
    log: Option<Box<dyn Write>>,
    /// Private data of the current connection; `None` before the first connect.
    connected_with: Option<Option<Vec<u8>>>,
    probes: u32,
    reconnects: u64,
    /// The XID of the previous case when it was classified a drop.
    previous_drop: Option<u32>,
}

impl<T: Target> Executor<T> {
    pub fn new(target: T, deadline: Deadline) -> Self {
        Executor {
            target,
            deadline,
            log: None,
            connected_with: None,
            probes: 0,
            reconnects: 0,
            previous_drop: None,
        }
    }

    /// Append every case (one JSON line) to `log`, flushed before the case is sent.
    pub fn with_log(mut self, log: Box<dyn Write>) -> Self {
        self.log = Some(log);
        self
    }

    pub fn target(&self) -> &T {
        &self.target
    }

    /// Connections made after the first one.
    pub fn reconnects(&self) -> u64 {
        self.reconnects
    }

    fn ensure_connected(&mut self, private_data: Option<&[u8]>) -> Result<(), TargetError> {
        let wanted = private_data.map(<[u8]>::to_vec);
        if self.target.is_connected() && self.connected_with.as_ref() == Some(&wanted) {
            return Ok(());
        }
        if self.connected_with.is_some() {
            self.reconnects += 1;
        }
        self.target.connect(private_data)?;
        self.connected_with = Some(wanted);
        Ok(())
    }

    fn log_case(&mut self, case: &Case) -> Result<(), TargetError> {
        if let Some(log) = &mut self.log {
            writeln!(log, "{}", case.to_json_line())
                .and_then(|()| log.flush())
                .map_err(|e| TargetError::Local(format!("case log: {e}")))?;
        }
        Ok(())
    }

    /// The next liveness probe: an NFS NULL call with a probe XID.
    fn next_probe(&mut self) -> (u32, Vec<u8>) {
        self.probes = self.probes.wrapping_add(1);
        let xid = PROBE_XID_BASE.wrapping_add(self.probes);
        let call = nfs3_call(xid, &Nfs3Call::Null);
        let bytes = RawBuilder::new()
            .fixed(xid, 1, 8, 0)
            .empty_lists()
            .raw(&call)
            .bytes();
        (xid, bytes)
    }

    /// Listen until the case and the probe behind it are both answered, the connection closes,
    /// or the target stays quiet: for the deadline while the probe is outstanding, for the grace
    /// ([`GRACE_DIVISOR`]) after its answer. The first message with `xid` is the case's answer;
    /// with `any_error`, an RDMA_ERROR with any XID also counts (a header too short to carry an
    /// XID is answered with whatever the responder found there).
    fn collect(&mut self, xid: u32, probe_xid: Option<u32>, any_error: bool) -> Collected {
        let mut seen = Collected::default();
        let grace = Deadline {
            sim_steps: self.deadline.sim_steps,
            wall: self.deadline.wall / GRACE_DIVISOR,
        };
        // A responder that closes may take longer than one deadline to do it (the close of an
        // ERR_CHUNK-then-close case under TCG): silence with the probe outstanding gets a second
        // deadline before it is a hang, as when the probe was sent only after the first.
        let mut extended = false;
        for _ in 0..MAX_EVENTS_PER_CASE {
            let probe_done = probe_xid.is_none() || seen.probe_answered;
            if probe_done && seen.answer.is_some() {
                break;
            }
            let deadline = if seen.probe_answered {
                grace
            } else {
                self.deadline
            };
            match self.target.next_event(deadline) {
                TargetEvent::Message(bytes) => match parse_answer(&bytes) {
                    Some((answer_xid, Observed::Reply))
                        if Some(answer_xid) == probe_xid && !seen.probe_answered =>
                    {
                        seen.probe_answered = true;
                    }
                    Some((answer_xid, kind))
                        if seen.answer.is_none()
                            && (answer_xid == xid
                                || (any_error
                                    && matches!(kind, Observed::ErrVers | Observed::ErrChunk))) =>
                    {
                        seen.answer = Some(kind);
                    }
                    answer => {
                        seen.strays += 1;
                        if answer.is_some_and(|(x, _)| Some(x) == self.previous_drop) {
                            seen.late_answer = true;
                        }
                    }
                },
                TargetEvent::Disconnected => {
                    seen.disconnected = true;
                    break;
                }
                TargetEvent::Quiet if !seen.probe_answered && probe_xid.is_some() && !extended => {
                    extended = true;
                }
                TargetEvent::Quiet => break,
            }
        }
        seen
    }
}

/// The XID and kind of a responder's message, read leniently: Linux's RDMA_ERROR echoes the
/// *received* version word (`svc_rdma_send_error_msg` copies the first two words of the
/// Receive), so an ERR_VERS answer to version 2 carries vers = 2 and the strict codec would
/// refuse it. `None` for fewer than the four fixed words or an unknown error code.
fn parse_answer(bytes: &[u8]) -> Option<(u32, Observed)> {
    let words = FixedWords::peek(bytes);
    let xid = words.xid?;
    let kind = match words.proc_? {
        // RFC 8166 §4.5: RDMA_ERROR's body starts with the error code.
        proc_value::ERROR => match words.error_code? {
            ERR_VERS => Observed::ErrVers,
            ERR_CHUNK => Observed::ErrChunk,
            _ => return None,
        },
        // RDMA_MSG / RDMA_NOMSG carry the reply; anything else is still an answer to the XID.
        _ => Observed::Reply,
    };
    Some((xid, kind))
}

impl<T: Target> CaseRunner for Executor<T> {
    fn name(&self) -> String {
        self.target.name()
    }

    fn reconnects(&self) -> u64 {
        Executor::reconnects(self)
    }

    fn rerun_on_fresh_connection(&mut self, case: &Case) -> Result<CaseResult, TargetError> {
        // Torn down from our side: `run_case` connects anew, and a late answer or a deferred
        // close of the old connection cannot reach the rerun.
        self.target.disconnect();
        self.previous_drop = None;
        self.run_case(case)
    }

    fn run_case(&mut self, case: &Case) -> Result<CaseResult, TargetError> {
        // Notes from before this case belong to the previous one.
        self.target.take_notes();
        self.target.take_events();
        self.ensure_connected(case.private_data.as_deref())?;
        let mut keys = Vec::with_capacity(case.regions.len());
        for region in &case.regions {
            keys.push(self.target.register(region)?);
        }
        let bytes = case.wire_bytes(&keys);
        // Logged before the Send: if this case takes the target down, the log ends with it.
        self.log_case(case)?;
        if let Err(e) = self.target.post_send(&bytes) {
            self.target.deregister_all();
            return Err(e);
        }
        // The probe right behind the case (a failed post means the case closed the connection,
        // which the wait below sees).
        let (probe_xid, probe) = self.next_probe();
        let probe_xid = self.target.post_send(&probe).is_ok().then_some(probe_xid);
        let seen = self.collect(case.xid, probe_xid, case.bytes.len() < 4);
        let strays = seen.strays;
        let (outcome, alive_after) = match (seen.answer, seen.disconnected, seen.probe_answered) {
            (Some(Observed::ErrChunk), true, _) => (Observed::ErrChunkThenClose, false),
            (Some(answer), true, _) => (answer, false),
            (None, true, _) => (Observed::Disconnect, false),
            (Some(answer), false, probe_answered) => (answer, probe_answered),
            (None, false, true) => (Observed::Drop, true),
            (None, false, false) => (Observed::Hang, false),
        };
        self.previous_drop = (outcome == Observed::Drop).then_some(case.xid);
        if outcome == Observed::Hang {
            // A silent responder on a live connection: start the next case afresh.
            self.target.disconnect();
        }
        self.target.deregister_all();
        Ok(CaseResult {
            index: case.index,
            family: case.family.clone(),
            target_rule: case.target_rule.clone(),
            outcome,
            alive_after,
            stray_messages: strays,
            late_answer: seen.late_answer,
            notes: self.target.take_notes(),
            events: self.target.take_events(),
        })
    }
}

/// Open a runner for a parsed target spec (`seed` drives a simulator's scheduler; `open_rdma`
/// opens a live rdma target, the caller's driver); live targets log every case to `log` before
/// sending it.
pub fn open_runner(
    spec: &crate::target::TargetSpec,
    seed: u64,
    deadline: Deadline,
    log: Option<Box<dyn Write>>,
    open_rdma: crate::target::OpenRdma<'_>,
) -> Result<Box<dyn CaseRunner>, TargetError> {
    use crate::target::TargetSpec;
    fn live<T: Target + 'static>(
        executor: Executor<T>,
        log: Option<Box<dyn Write>>,
    ) -> Box<dyn CaseRunner> {
        match log {
            Some(log) => Box::new(executor.with_log(log)),
            None => Box::new(executor),
        }
    }
    Ok(match spec {
        TargetSpec::Sim(kind) => live(
            Executor::new(
                crate::sim_target::SimTarget::new(kind.clone(), seed)?,
                deadline,
            ),
            log,
        ),
        TargetSpec::Model(model) => Box::new(ModelRunner { model: *model }),
        TargetSpec::Rdma(addr) => live(Executor::new(open_rdma(addr)?, deadline), log),
    })
}

impl Target for Box<dyn Target> {
    fn name(&self) -> String {
        (**self).name()
    }
    fn connect(&mut self, private_data: Option<&[u8]>) -> Result<(), TargetError> {
        (**self).connect(private_data)
    }
    fn is_connected(&self) -> bool {
        (**self).is_connected()
    }
    fn register(
        &mut self,
        region: &crate::case::Region,
    ) -> Result<crate::case::RegionKey, TargetError> {
        (**self).register(region)
    }
    fn deregister_all(&mut self) {
        (**self).deregister_all()
    }
    fn post_send(&mut self, bytes: &[u8]) -> Result<(), TargetError> {
        (**self).post_send(bytes)
    }
    fn next_event(&mut self, deadline: Deadline) -> TargetEvent {
        (**self).next_event(deadline)
    }
    fn disconnect(&mut self) {
        (**self).disconnect()
    }
    fn take_notes(&mut self) -> Vec<String> {
        (**self).take_notes()
    }
    fn take_events(&mut self) -> Option<Signature> {
        (**self).take_events()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use wire::rpcrdma::{ERR_CHUNK, RPCRDMA_VERSION};

    use super::*;
    use crate::case::{Region, RegionKey};
    use crate::generate::{generate_family_case, Family};

    /// What the scripted responder does with each Send.
    #[derive(Clone, Copy)]
    enum Script {
        /// Answer RDMA_ERROR / ERR_CHUNK, then drop the connection.
        ErrorThenClose,
        /// Never answer anything (probes included).
        Silent,
        /// Answer the case with a reply to an older XID only; answer probes.
        StaleOnly,
        /// Answer the case and the probe.
        AnswerAll,
        /// Answer the probe first and the case after it (a slow execution).
        CaseAfterProbe,
        /// Answer each case only when the next case is sent (slower than any grace).
        AnswerLate,
    }

    struct ScriptedTarget {
        script: Script,
        connected: bool,
        connects: u32,
        events: VecDeque<TargetEvent>,
        /// Waits that ended quiet (each one a deadline or a grace period on a real target).
        quiet_waits: u32,
        /// The case's reply held back until the probe's is taken.
        held: Option<Vec<u8>>,
    }

    impl ScriptedTarget {
        fn new(script: Script) -> Self {
            ScriptedTarget {
                script,
                connected: false,
                connects: 0,
                events: VecDeque::new(),
                quiet_waits: 0,
                held: None,
            }
        }
    }

    fn error_chunk(xid: u32) -> Vec<u8> {
        RawBuilder::new()
            .fixed(xid, RPCRDMA_VERSION, 8, 4)
            .word(ERR_CHUNK)
            .bytes()
    }

    fn reply(xid: u32) -> Vec<u8> {
        RawBuilder::new()
            .fixed(xid, RPCRDMA_VERSION, 8, 0)
            .empty_lists()
            .words(&[xid, 1, 0, 0, 0, 0])
            .bytes()
    }

    impl Target for ScriptedTarget {
        fn name(&self) -> String {
            "scripted".into()
        }
        fn connect(&mut self, _: Option<&[u8]>) -> Result<(), TargetError> {
            self.connected = true;
            self.connects += 1;
            self.events.clear();
            Ok(())
        }
        fn is_connected(&self) -> bool {
            self.connected
        }
        fn register(&mut self, _: &Region) -> Result<RegionKey, TargetError> {
            Ok(RegionKey { handle: 1, base: 0 })
        }
        fn deregister_all(&mut self) {}
        fn post_send(&mut self, bytes: &[u8]) -> Result<(), TargetError> {
            let xid = FixedWords::peek(bytes)
                .xid
                .expect("the executor sends whole headers");
            let probe = xid >= PROBE_XID_BASE;
            match (self.script, probe) {
                (Script::ErrorThenClose, _) => {
                    self.events
                        .push_back(TargetEvent::Message(error_chunk(xid)));
                    self.events.push_back(TargetEvent::Disconnected);
                }
                (Script::Silent, _) => {}
                (Script::StaleOnly, false) => {
                    self.events
                        .push_back(TargetEvent::Message(reply(xid.wrapping_sub(1))));
                }
                (Script::StaleOnly, true) | (Script::AnswerAll, _) => {
                    self.events.push_back(TargetEvent::Message(reply(xid)))
                }
                (Script::CaseAfterProbe, false) => self.held = Some(reply(xid)),
                (Script::AnswerLate, false) => {
                    if let Some(held) = self.held.replace(reply(xid)) {
                        self.events.push_back(TargetEvent::Message(held));
                    }
                }
                (Script::AnswerLate, true) => {
                    self.events.push_back(TargetEvent::Message(reply(xid)))
                }
                (Script::CaseAfterProbe, true) => {
                    self.events.push_back(TargetEvent::Message(reply(xid)));
                    if let Some(held) = self.held.take() {
                        self.events.push_back(TargetEvent::Message(held));
                    }
                }
            }
            Ok(())
        }
        fn next_event(&mut self, _: Deadline) -> TargetEvent {
            let event = self.events.pop_front().unwrap_or(TargetEvent::Quiet);
            if event == TargetEvent::Quiet {
                self.quiet_waits += 1;
            }
            if event == TargetEvent::Disconnected {
                self.connected = false;
            }
            event
        }
        fn disconnect(&mut self) {
            self.connected = false;
        }
    }

    fn run(script: Script, cases: u64) -> (Vec<CaseResult>, u32) {
        let (results, target) = run_target(script, cases);
        (results, target.connects)
    }

    fn run_target(script: Script, cases: u64) -> (Vec<CaseResult>, ScriptedTarget) {
        let mut executor = Executor::new(ScriptedTarget::new(script), Deadline::default());
        let results = (0..cases)
            .map(|i| {
                executor
                    .run_case(&generate_family_case(Family::Valid, 3, i))
                    .unwrap()
            })
            .collect();
        (results, executor.target)
    }

    #[test]
    fn an_answered_case_and_probe_cost_no_wait() {
        let (results, target) = run_target(Script::AnswerAll, 3);
        for result in &results {
            assert_eq!(result.outcome, Observed::Reply);
            assert!(result.alive_after);
            assert_eq!(result.stray_messages, 0);
        }
        assert_eq!(target.quiet_waits, 0, "no deadline or grace waited out");
        assert_eq!(target.connects, 1, "one connection for every case");
    }

    #[test]
    fn an_answer_slower_than_the_grace_is_flagged_on_the_next_case() {
        let (results, _) = run_target(Script::AnswerLate, 3);
        assert_eq!(results[0].outcome, Observed::Drop);
        assert!(!results[0].late_answer);
        for result in &results[1..] {
            assert_eq!(
                result.outcome,
                Observed::Drop,
                "never taken as its own answer"
            );
            assert_eq!(result.stray_messages, 1);
            assert!(result.late_answer, "the previous drop was only slow");
        }
    }

    #[test]
    fn a_case_answered_after_its_probe_is_still_its_answer() {
        let (results, target) = run_target(Script::CaseAfterProbe, 2);
        for result in &results {
            assert_eq!(result.outcome, Observed::Reply);
            assert!(result.alive_after);
        }
        assert_eq!(target.quiet_waits, 0);
    }

    #[test]
    fn answers_are_read_leniently() {
        // Linux echoes the received version: ERR_VERS to a version-2 call says vers = 2.
        let err_vers = RawBuilder::new().fixed(7, 2, 8, 4).err_vers(1, 1).bytes();
        assert_eq!(parse_answer(&err_vers), Some((7, Observed::ErrVers)));
        assert_eq!(parse_answer(&error_chunk(9)), Some((9, Observed::ErrChunk)));
        assert_eq!(parse_answer(&reply(3)), Some((3, Observed::Reply)));
        let unknown_code = RawBuilder::new().fixed(7, 1, 8, 4).word(3).bytes();
        assert_eq!(parse_answer(&unknown_code), None);
        assert_eq!(parse_answer(&[0, 0, 0, 7, 0, 0, 0, 1]), None);
    }

    #[test]
    fn err_chunk_followed_by_a_close_is_its_own_outcome() {
        let (results, connects) = run(Script::ErrorThenClose, 3);
        for result in &results {
            assert_eq!(result.outcome, Observed::ErrChunkThenClose);
            assert!(!result.alive_after);
        }
        assert_eq!(connects, 3, "reconnected before every case");
    }

    #[test]
    fn silence_with_an_unanswered_probe_is_a_hang() {
        let (results, connects) = run(Script::Silent, 2);
        for result in &results {
            assert_eq!(result.outcome, Observed::Hang);
            assert!(!result.alive_after);
        }
        assert_eq!(connects, 2, "a hung connection is replaced");
    }

    #[test]
    fn replies_to_other_xids_are_strays_not_answers() {
        let (results, target) = run_target(Script::StaleOnly, 2);
        for result in &results {
            assert_eq!(result.outcome, Observed::Drop);
            assert_eq!(result.stray_messages, 1);
            assert!(result.alive_after);
        }
        // A drop waits out only the grace after the probe's answer, once per case.
        assert_eq!(target.quiet_waits, 2);
    }
}
