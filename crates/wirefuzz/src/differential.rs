//! Runs a case stream against one runner, or two side by side (differential): outcome
//! histograms per target, and every divergence deduplicated by (target rule, outcome pair),
//! saved with its case file and matched against the known-divergences file.
//!
//! A divergence is confirmed before it counts: both runners run the case again, each on a fresh
//! connection. What the stream saw on a live connection can belong to the case before (a close
//! nfsd deferred past that case's ERR_CHUNK and its liveness probe lands on the next case);
//! reproduced alone, such a pair agrees and is reported as unconfirmed, not as a divergence.
//! A confirmed divergence is keyed by the outcomes of the rerun, which saw the case alone.
//!
//! Sans-IO like the rest of the crate: the time and the saving of a new divergence's files come
//! from the caller's [`RunDriver`].

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::case::{Case, Observed};
use crate::executor::{CaseResult, CaseRunner};
use crate::target::TargetError;

/// Most entries read from a known-divergences file.
const MAX_KNOWN: usize = 1024;
/// Largest known-divergences file read.
const MAX_KNOWN_FILE_BYTES: usize = 1 << 20;

/// One documented divergence: targets (optional; exact names or one-`*` patterns), the
/// case's target rule, the two outcomes, and why it is expected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownDivergence {
    #[serde(default)]
    pub a_target: Option<String>,
    #[serde(default)]
    pub b_target: Option<String>,
    /// Case family, if the reason only holds for one.
    #[serde(default)]
    pub family: Option<String>,
    pub rule: String,
    pub a: Observed,
    pub b: Observed,
    pub reason: String,
}

/// The known-divergences file (`fixtures/wire-fuzz/known-divergences.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownDivergences {
    pub divergences: Vec<KnownDivergence>,
}

impl KnownDivergences {
    pub fn parse(text: &str) -> Result<KnownDivergences, String> {
        if text.len() > MAX_KNOWN_FILE_BYTES {
            return Err("known-divergences file too large".into());
        }
        let known: KnownDivergences = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if known.divergences.len() > MAX_KNOWN {
            return Err(format!("more than {MAX_KNOWN} known divergences"));
        }
        Ok(known)
    }

    /// The reason a divergence is expected, if it is. Entries match in either direction
    /// (`--target A --against B` or the other way round).
    pub fn reason(&self, seen: &Seen<'_>) -> Option<&str> {
        let matches =
            |k: &KnownDivergence, a_target: &str, a: Observed, b_target: &str, b: Observed| {
                k.rule == seen.rule
                    && k.a == a
                    && k.b == b
                    && k.a_target
                        .as_deref()
                        .is_none_or(|t| target_matches(t, a_target))
                    && k.b_target
                        .as_deref()
                        .is_none_or(|t| target_matches(t, b_target))
                    && k.family.as_deref().is_none_or(|f| f == seen.family)
            };
        self.divergences
            .iter()
            .find(|k| {
                matches(k, seen.a_target, seen.a, seen.b_target, seen.b)
                    || matches(k, seen.b_target, seen.b, seen.a_target, seen.a)
            })
            .map(|k| k.reason.as_str())
    }
}

/// `pattern` is a target name, or a name with one `*` standing for any text (`sim:*`,
/// `sim:*linux-6.1`).
fn target_matches(pattern: &str, target: &str) -> bool {
    match pattern.split_once('*') {
        Some((prefix, suffix)) => {
            target.len() >= prefix.len() + suffix.len()
                && target.starts_with(prefix)
                && target.ends_with(suffix)
        }
        None => pattern == target,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A runner that answers the stream with one outcome and a rerun with another.
    struct Scripted {
        name: &'static str,
        stream: Observed,
        rerun: Observed,
        reruns: u32,
    }

    impl Scripted {
        fn result(&self, case: &Case, outcome: Observed) -> CaseResult {
            CaseResult {
                index: case.index,
                family: case.family.clone(),
                target_rule: case.target_rule.clone(),
                outcome,
                alive_after: true,
                stray_messages: 0,
                late_answer: false,
                notes: Vec::new(),
                events: None,
            }
        }
    }

    impl CaseRunner for Scripted {
        fn name(&self) -> String {
            self.name.into()
        }
        fn run_case(&mut self, case: &Case) -> Result<CaseResult, TargetError> {
            Ok(self.result(case, self.stream))
        }
        fn rerun_on_fresh_connection(&mut self, case: &Case) -> Result<CaseResult, TargetError> {
            self.reruns += 1;
            Ok(self.result(case, self.rerun))
        }
    }

    fn one_case(index: u64) -> Option<Case> {
        (index == 0).then(|| Case {
            seed: 7,
            index,
            family: "accepted".into(),
            base: "null".into(),
            target_rule: "accepted".into(),
            xid: 1,
            private_data: None,
            regions: Vec::new(),
            relocations: Vec::new(),
            bytes: vec![0; 28],
        })
    }

    fn scripted(name: &'static str, stream: Observed, rerun: Observed) -> Scripted {
        Scripted {
            name,
            stream,
            rerun,
            reruns: 0,
        }
    }

    /// One case through `a` and `b`, no known divergences.
    fn run_one(a: &mut Scripted, b: &mut Scripted) -> Report {
        let options = RunOptions {
            seed: 7,
            cases: 10,
            ..RunOptions::default()
        };
        run(
            &options,
            one_case,
            a,
            Some(b),
            &KnownDivergences::default(),
            &mut Unclocked,
        )
        .unwrap()
    }

    #[test]
    fn a_divergence_the_fresh_connections_do_not_reproduce_is_unconfirmed() {
        // nfsd's deferred close landing on the next case: a disconnect in the stream, a reply
        // when the case is sent alone.
        let mut nfsd = scripted("nfsd", Observed::Disconnect, Observed::Reply);
        let mut ours = scripted("rig-serve", Observed::Reply, Observed::Reply);
        let report = run_one(&mut nfsd, &mut ours);
        assert_eq!((nfsd.reruns, ours.reruns), (1, 1));
        assert!(report.divergences.is_empty(), "{:?}", report.divergences);
        assert_eq!(report.unknown_divergences, 0);
        assert_eq!(report.unconfirmed.len(), 1);
        let u = &report.unconfirmed[0];
        assert_eq!(
            (u.a, u.b, u.rerun),
            (Observed::Disconnect, Observed::Reply, Observed::Reply)
        );
        // The stream's outcome still counts in the histogram: the report shows what happened.
        assert_eq!(report.targets[0].outcomes[&Observed::Disconnect], 1);
    }

    #[test]
    fn a_confirmed_divergence_is_keyed_by_what_the_reruns_saw() {
        let mut nfsd = scripted("nfsd", Observed::Disconnect, Observed::ErrChunkThenClose);
        let mut ours = scripted("rig-serve", Observed::ErrChunk, Observed::ErrChunk);
        let report = run_one(&mut nfsd, &mut ours);
        assert!(report.unconfirmed.is_empty());
        assert_eq!(report.unknown_divergences, 1);
        let d = &report.divergences[0];
        assert_eq!(
            (d.a, d.b),
            (Observed::ErrChunkThenClose, Observed::ErrChunk)
        );
    }

    #[test]
    fn agreeing_runners_are_not_rerun() {
        let mut a = scripted("a", Observed::Reply, Observed::Drop);
        let mut b = scripted("b", Observed::Reply, Observed::Reply);
        let report = run_one(&mut a, &mut b);
        assert_eq!((a.reruns, b.reruns), (0, 0));
        assert!(report.divergences.is_empty() && report.unconfirmed.is_empty());
    }

    #[test]
    fn target_patterns() {
        assert!(target_matches("sim:*", "sim:classic"));
        assert!(target_matches("sim:*linux-6.1", "sim:linux-6.1"));
        assert!(target_matches("sim:*linux-6.1", "sim:acked@linux-6.1"));
        assert!(!target_matches("sim:*linux-6.1", "sim:linux-2026"));
        assert!(!target_matches("sim:*linux-6.1", "model:linux-6.1"));
        assert!(!target_matches("sim:*:*", "sim:"));
        assert!(target_matches("model:linux-6.1", "model:linux-6.1"));
        assert!(!target_matches("model:linux-6.1", "model:linux-6.1x"));
    }
}

/// One observed divergence, as looked up in [`KnownDivergences::reason`].
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    pub a_target: &'a str,
    pub a: Observed,
    pub b_target: &'a str,
    pub b: Observed,
    pub family: &'a str,
    pub rule: &'a str,
}

/// Outcome counts for one target.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetStats {
    pub target: String,
    pub cases: u64,
    pub outcomes: BTreeMap<Observed, u64>,
    /// Outcome counts per family.
    pub by_family: BTreeMap<String, BTreeMap<Observed, u64>>,
    /// Cases after which the connection was up but the NULL probe went unanswered.
    pub liveness_failures: u64,
    /// Drops that were answers slower than the executor's grace (the answer came during the
    /// next case): each one is a drop outcome that should have been a reply or an error.
    pub late_answers: u64,
}

impl TargetStats {
    fn record(&mut self, result: &CaseResult) {
        self.cases += 1;
        *self.outcomes.entry(result.outcome).or_default() += 1;
        *self
            .by_family
            .entry(result.family.clone())
            .or_default()
            .entry(result.outcome)
            .or_default() += 1;
        let went_down = matches!(
            result.outcome,
            Observed::Disconnect | Observed::ErrChunkThenClose | Observed::Hang
        );
        if !result.alive_after && !went_down {
            self.liveness_failures += 1;
        }
        self.late_answers += u64::from(result.late_answer);
    }
}

/// One deduplicated divergence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Divergence {
    pub rule: String,
    pub family: String,
    pub a_target: String,
    pub a: Observed,
    pub b_target: String,
    pub b: Observed,
    pub count: u64,
    pub first_seed: u64,
    pub first_index: u64,
    /// Where the first case was saved (replay it with `rig fuzz-wire --replay`).
    pub case_file: Option<String>,
    /// Why it is expected, from the known-divergences file; `None` = new.
    pub known: Option<String>,
}

/// A divergence of the stream that the reruns on fresh connections did not reproduce (the two
/// runners agreed there), deduplicated like [`Divergence`] by (rule, outcome pair).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unconfirmed {
    pub rule: String,
    pub family: String,
    /// Outcomes in the stream.
    pub a: Observed,
    pub b: Observed,
    /// What both gave on fresh connections.
    pub rerun: Observed,
    pub count: u64,
    pub first_seed: u64,
    pub first_index: u64,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub seed: u64,
    pub cases_sent: u64,
    pub elapsed_secs: f64,
    pub cases_per_sec: f64,
    pub targets: Vec<TargetStats>,
    pub divergences: Vec<Divergence>,
    pub unknown_divergences: usize,
    /// Stream divergences the reruns on fresh connections did not reproduce.
    pub unconfirmed: Vec<Unconfirmed>,
    /// Kernel-event signatures over the run (`--signatures`, `--guided`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signatures: Option<crate::guided::FeedbackReport>,
}

/// Run options.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub seed: u64,
    /// Stop after this many cases.
    pub cases: u64,
    /// Stop once this much time has passed (checked between cases).
    pub time: Option<Duration>,
}

/// A confirmed divergence seen for the first time, for the driver to keep.
#[derive(Debug, Clone, Copy)]
pub struct NewDivergence<'a> {
    pub case: &'a Case,
    pub a_target: &'a str,
    pub a: Observed,
    pub b_target: &'a str,
    pub b: Observed,
}

impl NewDivergence<'_> {
    /// `<rule>--<a>--<b>`: the file stem of its case and outcomes.
    pub fn stem(&self) -> String {
        format!(
            "{}--{}--{}",
            self.case.target_rule,
            self.a.name(),
            self.b.name()
        )
        .replace('+', "-then-")
    }

    /// The `.outcomes.json` text: rule, family, seed, index and each target's outcome.
    pub fn outcomes_json(&self) -> String {
        let outcomes = serde_json::json!({
            "rule": self.case.target_rule,
            "family": self.case.family,
            "seed": self.case.seed,
            "index": self.case.index,
            "a": { "target": self.a_target, "outcome": self.a },
            "b": { "target": self.b_target, "outcome": self.b },
        });
        serde_json::to_string_pretty(&outcomes).unwrap_or_default() + "\n"
    }
}

/// What a run needs from the program driving it: the time and somewhere to keep divergences.
pub trait RunDriver {
    /// Time since the run started.
    fn elapsed(&self) -> Duration;
    /// Keep a new divergence (as it is found, so a run that dies later keeps it); returns
    /// where its replayable case went, if anywhere.
    fn keep_divergence(
        &mut self,
        divergence: &NewDivergence,
    ) -> Result<Option<String>, TargetError>;
}

/// A driver without a clock that keeps nothing: a run bounded by case count only (tests,
/// replays).
#[derive(Debug, Default)]
pub struct Unclocked;

impl RunDriver for Unclocked {
    fn elapsed(&self) -> Duration {
        Duration::ZERO
    }

    fn keep_divergence(&mut self, _: &NewDivergence) -> Result<Option<String>, TargetError> {
        Ok(None)
    }
}

/// Run `cases` (called with 0, 1, 2, ... until it returns `None` or a limit is hit) against
/// `a`, and against `b` too when given.
pub fn run(
    options: &RunOptions,
    cases: impl FnMut(u64) -> Option<Case>,
    a: &mut dyn CaseRunner,
    b: Option<&mut (dyn CaseRunner + '_)>,
    known: &KnownDivergences,
    driver: &mut dyn RunDriver,
) -> Result<Report, TargetError> {
    run_observed(options, cases, a, b, known, driver, |_, _, _| {})
}

/// [`run`], calling `observe` with every case and its result(s) (for `--traces`).
pub fn run_observed(
    options: &RunOptions,
    mut cases: impl FnMut(u64) -> Option<Case>,
    a: &mut dyn CaseRunner,
    mut b: Option<&mut (dyn CaseRunner + '_)>,
    known: &KnownDivergences,
    driver: &mut dyn RunDriver,
    mut observe: impl FnMut(&Case, &CaseResult, Option<&CaseResult>),
) -> Result<Report, TargetError> {
    let mut stats_a = TargetStats {
        target: a.name(),
        ..TargetStats::default()
    };
    let mut stats_b = b.as_ref().map(|b| TargetStats {
        target: b.name(),
        ..TargetStats::default()
    });
    let mut divergences: BTreeMap<(String, Observed, Observed), Divergence> = BTreeMap::new();
    let mut unconfirmed: BTreeMap<(String, Observed, Observed), Unconfirmed> = BTreeMap::new();
    let mut sent = 0u64;
    while sent < options.cases {
        if options.time.is_some_and(|limit| driver.elapsed() >= limit) {
            break;
        }
        let Some(case) = cases(sent) else { break };
        let result_a = a.run_case(&case)?;
        stats_a.record(&result_a);
        let Some((b, stats_b)) = b.as_deref_mut().zip(stats_b.as_mut()) else {
            observe(&case, &result_a, None);
            sent += 1;
            continue;
        };
        let result_b = b.run_case(&case)?;
        stats_b.record(&result_b);
        observe(&case, &result_a, Some(&result_b));
        if result_a.outcome != result_b.outcome {
            let rerun_a = a.rerun_on_fresh_connection(&case)?;
            let rerun_b = b.rerun_on_fresh_connection(&case)?;
            if rerun_a.outcome == rerun_b.outcome {
                let key = (case.target_rule.clone(), result_a.outcome, result_b.outcome);
                unconfirmed
                    .entry(key)
                    .and_modify(|u| u.count += 1)
                    .or_insert_with(|| Unconfirmed {
                        rule: case.target_rule.clone(),
                        family: case.family.clone(),
                        a: result_a.outcome,
                        b: result_b.outcome,
                        rerun: rerun_a.outcome,
                        count: 1,
                        first_seed: case.seed,
                        first_index: case.index,
                    });
                sent += 1;
                continue;
            }
            let (result_a, result_b) = (rerun_a, rerun_b);
            let key = (case.target_rule.clone(), result_a.outcome, result_b.outcome);
            if let Some(d) = divergences.get_mut(&key) {
                d.count += 1;
            } else {
                let case_file = driver.keep_divergence(&NewDivergence {
                    case: &case,
                    a_target: &stats_a.target,
                    a: result_a.outcome,
                    b_target: &stats_b.target,
                    b: result_b.outcome,
                })?;
                let known = known
                    .reason(&Seen {
                        a_target: &stats_a.target,
                        a: result_a.outcome,
                        b_target: &stats_b.target,
                        b: result_b.outcome,
                        family: &case.family,
                        rule: &case.target_rule,
                    })
                    .map(str::to_string);
                divergences.insert(
                    key,
                    Divergence {
                        rule: case.target_rule.clone(),
                        family: case.family.clone(),
                        a_target: stats_a.target.clone(),
                        a: result_a.outcome,
                        b_target: stats_b.target.clone(),
                        b: result_b.outcome,
                        count: 1,
                        first_seed: case.seed,
                        first_index: case.index,
                        case_file,
                        known,
                    },
                );
            }
        }
        sent += 1;
    }
    let elapsed = driver.elapsed().as_secs_f64();
    let divergences: Vec<Divergence> = divergences.into_values().collect();
    Ok(Report {
        seed: options.seed,
        cases_sent: sent,
        elapsed_secs: elapsed,
        cases_per_sec: if elapsed > 0.0 {
            sent as f64 / elapsed
        } else {
            0.0
        },
        targets: std::iter::once(stats_a).chain(stats_b).collect(),
        unknown_divergences: divergences.iter().filter(|d| d.known.is_none()).count(),
        divergences,
        unconfirmed: unconfirmed.into_values().collect(),
        signatures: None,
    })
}
