//! The executor, differential runner and minimiser against simulated targets.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::rc::Rc;
use std::time::Duration;

use wire::skeleton::FixedWords;
use wire::svcrdma::Profile;
use wirefuzz::case::{Case, Observed, Region, RegionKey};
use wirefuzz::differential::{
    self, KnownDivergences, NewDivergence, RunDriver, RunOptions, Unclocked,
};
use wirefuzz::executor::{CaseRunner, Executor, ModelRunner};
use wirefuzz::generate::{generate, generate_family_case, Family, XID_BASE};
use wirefuzz::minimise::minimise;
use wirefuzz::sim_target::SimTarget;
use wirefuzz::target::{Deadline, SimServerKind, Target, TargetError, TargetEvent};

const SEED: u64 = 11;

fn sim(kind: SimServerKind) -> Executor<SimTarget> {
    Executor::new(SimTarget::new(kind, SEED).unwrap(), Deadline::default())
}

fn bare(profile: Profile) -> Executor<SimTarget> {
    sim(SimServerKind::Responder(profile.model()))
}

fn server(policy: &str) -> Executor<SimTarget> {
    sim(SimServerKind::Server {
        policy: policy.to_string(),
        profile: Profile::Linux2026.model(),
    })
}

fn known_divergences() -> KnownDivergences {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/wire-fuzz/known-divergences.json"
    );
    KnownDivergences::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Families whose outcome the header model cannot predict (memory, reply size, no XID).
fn model_blind(case: &Case) -> bool {
    matches!(
        case.family.as_str(),
        "handle-unregistered"
            | "offset-outside-region"
            | "reply-chunk-too-small"
            | "write-chunk-too-small"
    ) || (case.family == "short-header" && case.bytes.len() < 4)
}

#[test]
fn outcome_histogram_against_the_simulated_responder_is_non_trivial() {
    let mut runner = bare(Profile::Linux2026);
    let mut histogram: BTreeMap<Observed, u32> = BTreeMap::new();
    for index in 0..600 {
        let result = runner.run_case(&generate(SEED, index)).unwrap();
        *histogram.entry(result.outcome).or_default() += 1;
        let survives = matches!(
            result.outcome,
            Observed::Reply | Observed::ErrVers | Observed::ErrChunk | Observed::Drop
        );
        assert_eq!(result.alive_after, survives, "case {index}: {result:?}");
    }
    for outcome in [
        Observed::Reply,
        Observed::ErrVers,
        Observed::ErrChunk,
        Observed::Drop,
        Observed::Disconnect,
    ] {
        assert!(
            histogram.get(&outcome).copied().unwrap_or(0) >= 10,
            "{histogram:?}"
        );
    }
    assert_eq!(histogram.get(&Observed::Hang), None, "{histogram:?}");
    assert!(
        runner.reconnects() >= 20,
        "reconnects after every disconnect"
    );
}

#[test]
fn the_simulated_responder_answers_as_the_model_predicts_where_the_model_can_know() {
    for profile in Profile::ALL {
        let mut runner = bare(profile);
        let mut model = ModelRunner {
            model: profile.model(),
        };
        let mut compared = 0;
        for index in 0..400 {
            let case = generate(SEED, index);
            let live = runner.run_case(&case).unwrap();
            let predicted = model.run_case(&case).unwrap();
            if model_blind(&case) {
                continue;
            }
            let known = known_divergences();
            let seen = differential::Seen {
                a_target: &runner.name(),
                a: live.outcome,
                b_target: &model.name(),
                b: predicted.outcome,
                family: &case.family,
                rule: &case.target_rule,
            };
            if live.outcome != predicted.outcome {
                assert!(
                    known.reason(&seen).is_some(),
                    "{profile} case {index} ({}, {}): sim {} vs model {}",
                    case.family,
                    case.target_rule,
                    live.outcome,
                    predicted.outcome
                );
            } else {
                compared += 1;
            }
        }
        assert!(compared > 250, "{profile}: {compared}");
    }
}

#[test]
fn memory_faults_disconnect_and_the_executor_reconnects() {
    let mut runner = server("classic");
    for index in 0..20 {
        let bad = generate_family_case(Family::HandleUnregistered, SEED, index);
        assert_eq!(runner.run_case(&bad).unwrap().outcome, Observed::Disconnect);
        let good = generate_family_case(Family::Valid, SEED, index);
        let result = runner.run_case(&good).unwrap();
        assert_eq!(result.outcome, Observed::Reply, "{}", good.base);
        assert!(result.alive_after);
    }
    assert_eq!(runner.reconnects(), 20);
}

#[test]
fn reply_and_write_chunks_too_small_for_the_server_reply_get_err_chunk() {
    let mut runner = server("acked");
    for family in [Family::ReplyChunkTooSmall, Family::WriteChunkTooSmall] {
        for index in 0..10 {
            let case = generate_family_case(family, SEED, index);
            let result = runner.run_case(&case).unwrap();
            assert_eq!(result.outcome, Observed::ErrChunk, "{}", family.name());
            assert!(result.alive_after);
        }
    }
    // With room to spare the same calls are answered.
    for base in 0..10 {
        let case = generate_family_case(Family::Valid, SEED + 1, base);
        assert_eq!(runner.run_case(&case).unwrap().outcome, Observed::Reply);
    }
}

#[test]
fn private_data_variants_all_connect_and_get_replies() {
    let mut runner = server("acked-mark");
    let mut lengths = BTreeSet::new();
    for index in 0..40 {
        let case = generate_family_case(Family::PrivateData, SEED, index);
        lengths.insert(case.private_data.as_ref().map_or(0, Vec::len));
        let result = runner.run_case(&case).unwrap();
        assert_eq!(result.outcome, Observed::Reply, "{:?}", case.private_data);
    }
    assert!(lengths.contains(&8) && lengths.contains(&56) && lengths.iter().any(|&l| l < 8));
    assert!(
        runner.reconnects() >= 30,
        "each new private data is a new connection"
    );
}

#[test]
fn replaying_a_saved_case_gives_the_same_outcome() {
    let mut stream = server("classic");
    for index in 0..150 {
        let case = generate(SEED, index);
        let in_stream = stream.run_case(&case).unwrap().outcome;
        let saved = case.to_json();
        let replayed = Case::from_json(&saved).unwrap();
        let mut fresh = server("classic");
        assert_eq!(
            fresh.run_case(&replayed).unwrap().outcome,
            in_stream,
            "case {index} ({})",
            case.family
        );
    }
}

/// A `Write` that several owners can read back.
#[derive(Clone, Default)]
struct SharedLog(Rc<RefCell<Vec<u8>>>);

impl Write for SharedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Checks, at every Send of a fuzz case, that the case is already in the log.
struct LogCheckingTarget {
    inner: SimTarget,
    log: SharedLog,
    sends_checked: u32,
}

impl Target for LogCheckingTarget {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn connect(&mut self, private_data: Option<&[u8]>) -> Result<(), TargetError> {
        self.inner.connect(private_data)
    }
    fn is_connected(&self) -> bool {
        self.inner.is_connected()
    }
    fn register(&mut self, region: &Region) -> Result<RegionKey, TargetError> {
        self.inner.register(region)
    }
    fn deregister_all(&mut self) {
        self.inner.deregister_all()
    }
    fn post_send(&mut self, bytes: &[u8]) -> Result<(), TargetError> {
        let xid = FixedWords::peek(bytes).xid;
        if let Some(xid) = xid.filter(|xid| xid >> 24 == XID_BASE >> 24) {
            let log = String::from_utf8(self.log.0.borrow().clone()).unwrap();
            let last = log.lines().last().expect("logged before the first Send");
            assert_eq!(Case::from_json(last).unwrap().xid, xid);
            self.sends_checked += 1;
        }
        self.inner.post_send(bytes)
    }
    fn next_event(&mut self, deadline: Deadline) -> TargetEvent {
        self.inner.next_event(deadline)
    }
    fn disconnect(&mut self) {
        self.inner.disconnect()
    }
}

#[test]
fn every_case_is_logged_before_it_is_sent() {
    let log = SharedLog::default();
    let target = LogCheckingTarget {
        inner: SimTarget::new(
            SimServerKind::Server {
                policy: "classic".into(),
                profile: Profile::Linux2026.model(),
            },
            SEED,
        )
        .unwrap(),
        log: log.clone(),
        sends_checked: 0,
    };
    let mut runner = Executor::new(target, Deadline::default()).with_log(Box::new(log.clone()));
    let cases: Vec<Case> = (0..120).map(|i| generate(SEED, i)).collect();
    for case in &cases {
        runner.run_case(case).unwrap();
    }
    let text = String::from_utf8(log.0.borrow().clone()).unwrap();
    let logged: Vec<Case> = text.lines().map(|l| Case::from_json(l).unwrap()).collect();
    assert_eq!(logged, cases);
    // Cases whose first byte is not the XID prefix (short headers) are not checked here.
    assert!(runner.target().sends_checked >= 110);
}

#[test]
fn minimiser_shrinks_a_planted_failing_sequence_on_a_sim_target() {
    // Planted failure: "a disconnect, and later an ERR_VERS" on one simulated server.
    let fails = |cases: &[Case]| {
        let mut runner = server("classic");
        let outcomes: Vec<Observed> = cases
            .iter()
            .map(|c| runner.run_case(c).unwrap().outcome)
            .collect();
        let first_disconnect = outcomes.iter().position(|&o| o == Observed::Disconnect);
        first_disconnect.is_some_and(|at| outcomes[at..].contains(&Observed::ErrVers))
    };
    let sequence: Vec<Case> = (0..60).map(|i| generate(SEED, i)).collect();
    assert!(fails(&sequence), "the planted failure is in the sequence");
    let out = minimise(&sequence, 500, fails);
    assert!(!out.exhausted);
    assert_eq!(
        out.items.len(),
        2,
        "{:?}",
        out.items.iter().map(|c| &c.family).collect::<Vec<_>>()
    );
    assert!(fails(&out.items));
    assert_eq!(out.items[1].family, "version");
    // 1-minimal: neither case alone fails.
    assert!(!fails(&out.items[..1]) && !fails(&out.items[1..]));
}

/// Keeps each new divergence's case as the JSON a driver would write, by file stem.
#[derive(Default)]
struct KeptCases {
    cases: BTreeMap<String, String>,
}

impl RunDriver for KeptCases {
    fn elapsed(&self) -> Duration {
        Duration::ZERO
    }

    fn keep_divergence(&mut self, d: &NewDivergence) -> Result<Option<String>, TargetError> {
        let stem = d.stem();
        assert!(self.cases.insert(stem.clone(), d.case.to_json()).is_none());
        Ok(Some(stem))
    }
}

#[test]
fn differential_run_finds_only_known_divergences_and_saves_them() {
    let options = RunOptions {
        seed: SEED,
        cases: 800,
        time: None,
    };
    let mut kept = KeptCases::default();
    let mut a = bare(Profile::Linux6_1);
    let mut b = ModelRunner {
        model: Profile::Linux6_1.model(),
    };
    let report = differential::run(
        &options,
        |i| Some(generate(SEED, i)),
        &mut a,
        Some(&mut b),
        &known_divergences(),
        &mut kept,
    )
    .unwrap();
    assert_eq!(report.cases_sent, 800);
    assert_eq!(report.targets.len(), 2);
    assert_eq!(report.targets[0].cases, 800);
    assert_eq!(report.unknown_divergences, 0, "{:#?}", report.divergences);
    // linux-6.1 accepts zero segcounts; the engine refuses them: a known divergence.
    let zero = report
        .divergences
        .iter()
        .find(|d| d.rule == "write-segcount-zero")
        .expect("write-segcount-zero divergence");
    assert_eq!((zero.a, zero.b), (Observed::ErrChunk, Observed::Reply));
    // Deduplicated by (rule, outcome pair), each saved once and replayable.
    let keys: BTreeSet<_> = report
        .divergences
        .iter()
        .map(|d| (&d.rule, d.a, d.b))
        .collect();
    assert_eq!(keys.len(), report.divergences.len());
    assert_eq!(kept.cases.len(), report.divergences.len());
    for d in &report.divergences {
        let stem = d.case_file.as_ref().unwrap();
        let case = Case::from_json(&kept.cases[stem]).unwrap();
        assert_eq!(case, generate(SEED, d.first_index));
        assert_eq!(case.target_rule, d.rule);
        assert_eq!(
            bare(Profile::Linux6_1).run_case(&case).unwrap().outcome,
            d.a
        );
    }

    // Without the known list, the same divergences are all new.
    let mut a = bare(Profile::Linux6_1);
    let report = differential::run(
        &options,
        |i| Some(generate(SEED, i)),
        &mut a,
        Some(&mut b),
        &KnownDivergences::default(),
        &mut Unclocked,
    )
    .unwrap();
    assert_eq!(report.unknown_divergences, report.divergences.len());
    assert!(report.unknown_divergences >= 5);
}

#[test]
fn promoted_fixtures_replay_as_recorded() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/wire-fuzz/cases"
    );
    let mut families = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let case = Case::from_json(&text).unwrap();
        // The file is what the generator makes for (seed, index): nothing drifted.
        let regenerated = generate_family_case(
            Family::from_name(&case.family).unwrap(),
            case.seed,
            case.index,
        );
        assert_eq!(case, regenerated, "{}", path.display());
        assert_eq!(
            text.trim_end(),
            case.to_json(),
            "{}: stored expectations drifted",
            path.display()
        );
        let predicted = ModelRunner {
            model: Profile::Linux2026.model(),
        }
        .run_case(&case)
        .unwrap();
        let live = bare(Profile::Linux2026).run_case(&case).unwrap();
        if !model_blind(&case) {
            assert_eq!(live.outcome, predicted.outcome, "{}", path.display());
        }
        families.insert(case.family);
    }
    assert_eq!(
        families.len(),
        Family::ALL.len(),
        "one promoted case per family"
    );
}

#[test]
fn results_carry_the_targets_notes_for_triage() {
    let case = generate_family_case(Family::ReadLengthHuge, SEED, 0);
    let live = bare(Profile::Linux6_1).run_case(&case).unwrap();
    assert_eq!(live.outcome, Observed::Disconnect);
    let rejected = format!("srv reject xid={:#x} read-pages-overrun", case.xid);
    assert!(live.notes.contains(&rejected), "{:#?}", live.notes);
    let predicted = ModelRunner {
        model: Profile::Linux6_1.model(),
    }
    .run_case(&case)
    .unwrap();
    assert_eq!(predicted.outcome, Observed::ErrChunkThenClose);
    assert!(predicted.notes[0].contains("svc_rdma_build_read_segment"));
    // Notes belong to one case: the next case's notes do not repeat them.
    let mut runner = bare(Profile::Linux6_1);
    runner.run_case(&case).unwrap();
    let next = runner
        .run_case(&generate_family_case(Family::Valid, SEED, 1))
        .unwrap();
    assert!(!next.notes.contains(&rejected), "{:#?}", next.notes);
}

#[test]
fn the_reference_server_judges_headers_with_the_chosen_profile() {
    let spec = wirefuzz::TargetSpec::parse("sim:classic@linux-6.1").unwrap();
    let wirefuzz::TargetSpec::Sim(kind) = spec else {
        panic!("a sim spec");
    };
    let mut old = sim(kind);
    let mut new = server("classic");
    for index in 0..10 {
        let case = generate_family_case(Family::ReadLengthHuge, SEED, index);
        // linux-6.1: the Read sink overruns (ERR_CHUNK, then close; the simulator flushes the
        // ERR_CHUNK); linux-2026: refused at decode time, connection kept.
        assert_eq!(old.run_case(&case).unwrap().outcome, Observed::Disconnect);
        assert_eq!(new.run_case(&case).unwrap().outcome, Observed::ErrChunk);
    }
}
