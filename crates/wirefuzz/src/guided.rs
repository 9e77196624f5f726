//! Signature feedback over a run, and the guided case stream (issue 16, item 2).
//!
//! [`Feedback`] sits between the case source and the runners: every case's responder events
//! (the simulator's model events, or a live kernel's trace events from the relay) become a
//! [`Signature`]; the [`SignatureTracker`] counts distinct ones over time. Unguided, the case
//! stream is the families' (`generate(seed, i)`, unchanged). Guided, a case whose signature is
//! new joins a bounded corpus, and each next case is, by its own entropy stream
//! (`case_entropy(seed ^ GUIDED_SALT, i)`), either the next family case (the same sequence
//! the unguided run sends, in order) or a structure-aware mutant of corpus entries
//! ([`crate::mutate`]). Given the same events the guided stream is the same, so over the
//! deterministic simulator a guided run replays exactly.
//!
//! No clock and no I/O: the driver passes the elapsed time in and saves corpus files itself.

use std::time::Duration;

use arbitrary::Unstructured;
use serde::{Deserialize, Serialize};

use crate::case::Case;
use crate::mutate::{mutate, MUTANT_FAMILY};
use crate::rng::case_entropy;
use crate::signature::{ListedSignature, Signature, SignatureTracker, TimelinePoint};

/// Corpus entries kept (a full corpus replaces its oldest entry).
pub const MAX_CORPUS: usize = 256;
/// Mixed into the seed for the guided stream's own choices (family or mutant, which parents).
pub const GUIDED_SALT: u64 = 0x6775_6964_6564_2121;
/// One guided case in `FAMILY_SHARE_DEN` is a family case, the rest mutants (once the corpus
/// holds anything).
const FAMILY_SHARE_NUM: u8 = 1;
const FAMILY_SHARE_DEN: u8 = 3;

/// What the feedback saw over a run (the report's `signatures` section).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedbackReport {
    /// Whether mutants of the corpus were sent (`--guided`).
    pub guided: bool,
    /// Seconds between timeline points.
    pub interval_secs: u64,
    /// Cases whose events were collected.
    pub cases_with_events: u64,
    /// Cases whose events could not be collected (relay timeout or error).
    pub cases_without_events: u64,
    /// Milliseconds the run spent waiting for event collection (the driver fills it in for a
    /// live target's trace relay; 0 on the simulator).
    pub event_wait_ms: u64,
    pub distinct_signatures: u64,
    /// More distinct signatures than the tracker remembers were seen (the count stops).
    pub saturated: bool,
    /// Distinct signatures at each interval.
    pub timeline: Vec<TimelinePoint>,
    /// ... and at the end of the run (`secs` rounded down).
    pub end: TimelinePoint,
    pub family_cases: u64,
    pub mutant_cases: u64,
    pub new_from_families: u64,
    pub new_from_mutants: u64,
    pub corpus_entries: usize,
    pub corpus_added: u64,
    /// The first signatures found, with their events.
    pub signatures: Vec<ListedSignature>,
}

/// Per-run signature feedback, and the guided stream when enabled.
#[derive(Debug)]
pub struct Feedback {
    seed: u64,
    guided: bool,
    interval: Duration,
    tracker: SignatureTracker,
    corpus: Vec<Case>,
    corpus_added: u64,
    family_cases: u64,
    mutant_cases: u64,
    new_from_families: u64,
    new_from_mutants: u64,
    without_events: u64,
}

impl Feedback {
    /// Feedback for run `seed`, sampling distinct signatures every `interval`; `guided` also
    /// mutates the corpus.
    pub fn new(seed: u64, guided: bool, interval: Duration) -> Feedback {
        Feedback {
            seed,
            guided,
            interval,
            tracker: SignatureTracker::new(interval),
            corpus: Vec::new(),
            corpus_added: 0,
            family_cases: 0,
            mutant_cases: 0,
            new_from_families: 0,
            new_from_mutants: 0,
            without_events: 0,
        }
    }

    pub fn is_guided(&self) -> bool {
        self.guided
    }

    /// Case `index` of the stream: `family_case()` (the families' next case), or, guided and
    /// with a corpus, a mutant of corpus entries.
    pub fn next_case(
        &mut self,
        index: u64,
        family_case: impl FnOnce() -> Option<Case>,
    ) -> Option<Case> {
        if self.guided && !self.corpus.is_empty() {
            let entropy = case_entropy(self.seed ^ GUIDED_SALT, index);
            let mut u = Unstructured::new(&entropy);
            let family = u.ratio(FAMILY_SHARE_NUM, FAMILY_SHARE_DEN).unwrap_or(true);
            if !family {
                let parent = u.choose_index(self.corpus.len()).unwrap_or(0);
                let other = u.choose_index(self.corpus.len()).unwrap_or(0);
                let (case, _) = mutate(
                    &mut u,
                    &self.corpus[parent],
                    &self.corpus[other],
                    self.seed,
                    index,
                );
                self.mutant_cases += 1;
                return Some(case);
            }
        }
        let case = family_case()?;
        self.family_cases += 1;
        Some(case)
    }

    /// Record `case`'s events (`None`: they could not be collected), `elapsed` into the run.
    /// Returns whether the signature was new (guided: the case joined the corpus).
    pub fn observe(&mut self, case: &Case, events: Option<&Signature>, elapsed: Duration) -> bool {
        let Some(signature) = events else {
            self.without_events += 1;
            self.tracker.advance(elapsed);
            return false;
        };
        let new = self
            .tracker
            .record(case.index, &case.family, signature, elapsed);
        if !new {
            return false;
        }
        if case.family == MUTANT_FAMILY {
            self.new_from_mutants += 1;
        } else {
            self.new_from_families += 1;
        }
        if self.guided {
            if self.corpus.len() < MAX_CORPUS {
                self.corpus.push(case.clone());
            } else {
                let slot = (self.corpus_added % MAX_CORPUS as u64) as usize;
                self.corpus[slot] = case.clone();
            }
            self.corpus_added += 1;
        }
        true
    }

    pub fn distinct(&self) -> u64 {
        self.tracker.distinct()
    }

    /// The report at the end of a run `elapsed` long (with the points due up to `elapsed`).
    pub fn report(&self, elapsed: Duration) -> FeedbackReport {
        let mut timeline = self.tracker.timeline().to_vec();
        // Points due before the end that no case has passed yet, then the end itself.
        let mut tracker_tail = timeline.last().map_or(self.interval, |p| {
            Duration::from_secs(p.secs) + self.interval
        });
        while tracker_tail <= elapsed && timeline.len() < crate::signature::MAX_TIMELINE_POINTS {
            timeline.push(TimelinePoint {
                secs: tracker_tail.as_secs(),
                cases: self.tracker.cases(),
                signatures: self.tracker.distinct(),
            });
            tracker_tail += self.interval;
        }
        let end = TimelinePoint {
            secs: elapsed.as_secs(),
            cases: self.tracker.cases(),
            signatures: self.tracker.distinct(),
        };
        FeedbackReport {
            end,
            guided: self.guided,
            interval_secs: self.interval.as_secs(),
            cases_with_events: self.tracker.cases(),
            cases_without_events: self.without_events,
            event_wait_ms: 0,
            distinct_signatures: self.tracker.distinct(),
            saturated: self.tracker.saturated(),
            timeline,
            family_cases: self.family_cases,
            mutant_cases: self.mutant_cases,
            new_from_families: self.new_from_families,
            new_from_mutants: self.new_from_mutants,
            corpus_entries: self.corpus.len(),
            corpus_added: self.corpus_added,
            signatures: self.tracker.listed(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::{CaseRunner, Executor};
    use crate::generate::generate;
    use crate::sim_target::SimTarget;
    use crate::target::{Deadline, SimServerKind};
    use wire::svcrdma::Profile;

    /// `cases` cases of seed 1 against the simulated linux-2026 responder, one (pretend) second
    /// each, sampled every 500; returns the feedback report and the cases sent.
    fn run(guided: bool, cases: u64) -> (FeedbackReport, Vec<Case>) {
        let target =
            SimTarget::new(SimServerKind::Responder(Profile::Linux2026.model()), 1).unwrap();
        let mut executor = Executor::new(target, Deadline::default());
        let mut feedback = Feedback::new(1, guided, Duration::from_secs(500));
        let mut next_family = 0u64;
        let mut sent = Vec::new();
        for i in 0..cases {
            let case = feedback
                .next_case(i, || {
                    next_family += 1;
                    Some(generate(1, next_family - 1))
                })
                .unwrap();
            let result = executor.run_case(&case).unwrap();
            let events = result
                .events
                .as_ref()
                .expect("the simulator has an event source");
            feedback.observe(&case, Some(events), Duration::from_secs(i + 1));
            sent.push(case);
        }
        (feedback.report(Duration::from_secs(cases)), sent)
    }

    #[test]
    fn unguided_feedback_leaves_the_family_stream_as_it_is() {
        let (report, sent) = run(false, 300);
        for (i, case) in sent.iter().enumerate() {
            assert_eq!(case, &generate(1, i as u64));
        }
        assert_eq!((report.family_cases, report.mutant_cases), (300, 0));
        assert_eq!(report.corpus_entries, 0);
        assert!(report.distinct_signatures > 20, "{report:?}");
        assert_eq!(report.new_from_families, report.distinct_signatures);
        // No interval passed: no timeline points, only the end.
        assert!(report.timeline.is_empty());
        assert_eq!(
            report.end,
            TimelinePoint {
                secs: 300,
                cases: 300,
                signatures: report.distinct_signatures
            }
        );
    }

    #[test]
    fn guided_runs_replay_and_find_more_signatures_than_the_families() {
        let (unguided, _) = run(false, 2000);
        let (guided, sent) = run(true, 2000);
        let (again, sent_again) = run(true, 2000);
        assert_eq!(guided, again, "a guided simulator run replays exactly");
        assert_eq!(sent, sent_again);
        assert!(guided.mutant_cases > 1000, "{}", guided.mutant_cases);
        assert!(guided.new_from_mutants > 0);
        // The family cases of a guided run are the unguided run's first ones, in order.
        let families: Vec<&Case> = sent.iter().filter(|c| c.family != MUTANT_FAMILY).collect();
        for (i, case) in families.iter().enumerate() {
            assert_eq!(**case, generate(1, i as u64));
        }
        assert!(
            guided.distinct_signatures > unguided.distinct_signatures,
            "guided {} vs unguided {}",
            guided.distinct_signatures,
            unguided.distinct_signatures
        );
        assert_eq!(guided.corpus_added, guided.distinct_signatures);
        assert!(guided.corpus_entries <= MAX_CORPUS);
    }

    #[test]
    fn missing_events_are_counted_and_the_timeline_closes_at_the_end() {
        let mut feedback = Feedback::new(1, true, Duration::from_secs(10));
        let case = generate(1, 0);
        feedback.observe(&case, None, Duration::from_secs(3));
        let signature = Signature::from_events(["svc_process vers=3"]);
        assert!(feedback.observe(&case, Some(&signature), Duration::from_secs(12)));
        assert!(!feedback.observe(&case, Some(&signature), Duration::from_secs(13)));
        let report = feedback.report(Duration::from_secs(35));
        assert_eq!(report.cases_without_events, 1);
        assert_eq!(report.cases_with_events, 2);
        let points: Vec<(u64, u64)> = report
            .timeline
            .iter()
            .map(|p| (p.secs, p.signatures))
            .collect();
        assert_eq!(points, [(10, 0), (20, 1), (30, 1)]);
        assert_eq!((report.end.secs, report.end.cases), (35, 2));
        assert_eq!(report.corpus_entries, 1);
    }
}
