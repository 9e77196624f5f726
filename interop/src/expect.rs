//! Expected outcomes as data (`vm-images/expectations.toml`): cases a mutant kernel must fail
//! (the gate must catch it) and known failures of real kernels (reported as known, xfstests'
//! expunge lists). Applied to a finished report, so the suites themselves only judge behaviour.
//!
//! Architecture Invariant: an expectation never turns a failure into a pass silently: a caught
//! mutant is `caught`, a known failure `known`, each with its reason in the table and JUnit; a
//! `catch` expectation whose case passes makes the run red ("the gate missed ..."). Every entry
//! names the failure it expects (`failure`, a pattern of the case's failure reasons): the same
//! failure is `caught` or `known`, any other (a harness failure included) stays red; a known case that passes is reported, and on a
//! run that must catch something counted against the gate ("the gate caught N of M expected").

use std::path::Path;

use anyhow::{ensure, Context, Result};
use serde::Deserialize;

use crate::report::Report;
use crate::results::Verdict;
use crate::runs::case_selected;

/// What an expectation says about a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// The case must fail: the kernel carries a bug the gate exists to catch.
    Catch,
    /// The case fails today for a known reason, and with the failure the entry names; a pass is
    /// reported (and counted against the gate of a run that must catch something).
    Known,
}

/// One line of the expectations file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// Kernel name from the matrix, or `*`.
    pub kernel: String,
    pub suite: String,
    pub case: String,
    pub kind: Kind,
    /// Why: the bug and what must show (counted executions, the status of the retransmit).
    pub reason: String,
    /// Where the finding is written up (docs/findings.md#...).
    #[serde(default)]
    pub link: Option<String>,
    /// The failure expected: text that must occur in one of the case's failure reasons (compared
    /// without case, `_` read as a blank since RESULT fields squeeze blanks). Required for
    /// `known`; a `catch` that names one is caught only by that failure.
    #[serde(default)]
    pub failure: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(rename = "expect", default)]
    expectations: Vec<Expectation>,
}

/// Parse the expectations file text.
pub fn parse(text: &str) -> Result<Vec<Expectation>> {
    let file: File = toml::from_str(text).context("parsing expectations")?;
    for e in &file.expectations {
        ensure!(
            !e.reason.trim().is_empty(),
            "expectation {}/{}/{} has no reason",
            e.kernel,
            e.suite,
            e.case
        );
        // A catch that any failure satisfied would count a harness failure (a refused MOUNT, a
        // setup that broke) as the gate catching the mutant.
        ensure!(
            e.failure.as_deref().is_some_and(|f| !f.trim().is_empty()),
            "{} expectation {}/{}/{} names no failure (failure = \"...\"): every entry must say \
             which failure it expects",
            if e.kind == Kind::Known {
                "known"
            } else {
                "catch"
            },
            e.kernel,
            e.suite,
            e.case
        );
    }
    Ok(file.expectations)
}

/// Load `path` (a missing file means no expectations).
pub fn load(path: &Path) -> Result<Vec<Expectation>> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text).with_context(|| format!("in {}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

impl Expectation {
    fn matches(&self, kernel: &str, suite: &str) -> bool {
        (self.kernel == "*" || self.kernel == kernel) && self.suite == suite
    }

    /// Whether `reasons` (a failed case's) show the failure this expectation names; one that
    /// names none accepts any failure (only a `catch` may).
    pub fn failure_matches(&self, reasons: &[String]) -> bool {
        let Some(pattern) = &self.failure else {
            return true;
        };
        let normal = |text: &str| text.replace('_', " ").to_lowercase();
        let pattern = normal(pattern);
        reasons.iter().any(|r| normal(r).contains(&pattern))
    }

    fn why(&self) -> String {
        match &self.link {
            Some(link) => format!("{} ({link})", self.reason),
            None => self.reason.clone(),
        }
    }
}

/// Apply `expectations` to every run of `report` whose kernel and suite they name. `chosen` are
/// the run's `--case` patterns (empty: every case ran): an expected case the run did not choose
/// is not a miss.
pub fn apply(report: &mut Report, expectations: &[Expectation], chosen: &[String]) {
    for run in &mut report.runs {
        if run.error.is_some() {
            // A run that stopped early proves nothing either way; its error already fails it.
            continue;
        }
        // A run something must be caught on (a mutant kernel, a DRC policy the rig models).
        let has_gate = expectations
            .iter()
            .any(|e| e.kind == Kind::Catch && e.matches(&run.kernel, &run.suite));
        for expectation in expectations
            .iter()
            .filter(|e| e.matches(&run.kernel, &run.suite))
        {
            let Some(case) = run.cases.iter_mut().find(|c| c.name == expectation.case) else {
                let was_chosen = chosen.is_empty() || case_selected(&expectation.case, chosen);
                if expectation.kind == Kind::Catch && was_chosen {
                    run.error = Some(format!(
                        "the gate missed {}: case {} did not run ({})",
                        run.kernel,
                        expectation.case,
                        expectation.why()
                    ));
                }
                continue;
            };
            match (expectation.kind, case.verdict) {
                (kind, Verdict::Fail) if !expectation.failure_matches(&case.reasons) => {
                    case.reasons.push(format!(
                        "expected {} failure {:?}, but it failed for another reason: {}",
                        if kind == Kind::Catch {
                            "catch"
                        } else {
                            "known"
                        },
                        expectation.failure.as_deref().unwrap_or_default(),
                        expectation.why()
                    ));
                }
                (Kind::Catch, Verdict::Fail) => {
                    case.verdict = Verdict::Caught;
                    case.reasons
                        .insert(0, format!("caught as expected: {}", expectation.why()));
                }
                (Kind::Catch, Verdict::Pass) => {
                    case.verdict = Verdict::Fail;
                    case.reasons.push(format!(
                        "the gate missed {}: {} passed, it must fail: {}",
                        run.kernel,
                        case.name,
                        expectation.why()
                    ));
                }
                (Kind::Known, Verdict::Fail) => {
                    case.verdict = Verdict::Known;
                    case.reasons
                        .insert(0, format!("known failure: {}", expectation.why()));
                }
                (Kind::Known, Verdict::Pass) => {
                    case.reasons.push(format!(
                        "known failure passed this time ({}): {}",
                        if has_gate {
                            "not caught, counted against the gate"
                        } else {
                            "remove it from vm-images/expectations.toml if it keeps passing"
                        },
                        expectation.why()
                    ));
                }
                // Timeouts, skips and cases that did not run stay what they are.
                _ => {}
            }
        }
        if has_gate {
            run.gate = Some(gate_line(run, expectations));
        }
    }
}

/// "the gate caught N of M expected": of the `catch` and `known` cases of `run` that ran, how many
/// ended caught or known (failed as expected); a known case that passed was not caught. A case
/// skipped on this run (a scenario its transport cannot force) is listed apart, not expected.
fn gate_line(run: &crate::report::KernelRun, expectations: &[Expectation]) -> String {
    let mut expected = 0;
    let mut caught = 0;
    let mut missed = Vec::new();
    let mut skipped = Vec::new();
    for expectation in expectations
        .iter()
        .filter(|e| e.matches(&run.kernel, &run.suite))
    {
        let Some(case) = run.cases.iter().find(|c| c.name == expectation.case) else {
            continue;
        };
        if case.verdict == Verdict::Skip {
            // Not run on this kernel's transport (its skip says why): nothing to catch.
            skipped.push(case.name.as_str());
            continue;
        }
        expected += 1;
        if matches!(case.verdict, Verdict::Caught | Verdict::Known) {
            caught += 1;
        } else {
            missed.push(case.name.as_str());
        }
    }
    let mut line = format!("the gate caught {caught} of {expected} expected");
    if !missed.is_empty() {
        line.push_str(&format!(" (not caught: {})", missed.join(", ")));
    }
    if !skipped.is_empty() {
        line.push_str(&format!("; skipped here: {}", skipped.join(", ")));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::KernelRun;
    use crate::results::CaseOutcome;

    fn run(kernel: &str, cases: &[(&str, Verdict)]) -> KernelRun {
        KernelRun {
            kernel: kernel.into(),
            release: "6.12.117".into(),
            version: "6.1.192-3".into(),
            origin: "bookworm-security".into(),
            provenance: Default::default(),
            accel: "tcg".into(),
            suite: "drc".into(),
            wall_ms: 1,
            boot_ms: None,
            cases: cases
                .iter()
                .map(|(name, verdict)| CaseOutcome {
                    name: (*name).into(),
                    verdict: *verdict,
                    duration_ms: 1,
                    // What the drc server guest says when rig judge counted a re-execution.
                    reasons: if *verdict == Verdict::Fail {
                        vec![RE_EXECUTED.to_owned()]
                    } else {
                        Vec::new()
                    },
                    results: Vec::new(),
                })
                .collect(),
            artifacts: Vec::new(),
            error: None,
            attempt: 1,
            guest_died: None,
            transport: Default::default(),
            retried_after: None,
            gate: None,
        }
    }

    const FILE: &str = r#"
[[expect]]
kernel = "mutant"
suite = "drc"
case = "nfsd.after-ack"
kind = "catch"
reason = "acked-evict re-executes"
failure = "executed 2 times"
[[expect]]
kernel = "*"
suite = "drc"
case = "nfsd.burst"
kind = "known"
reason = "timing"
failure = "non-idempotent LINK executed"
link = "docs/findings.md#burst"
"#;

    const RE_EXECUTED: &str = "srv: verdict=fail judge=fail reason=non-idempotent_LINK_executed_2_times_for_XID_0x5a3f0012";
    /// What a case says when the harness broke before the scenario ran.
    const MOUNT_REFUSED: &str = "cli: verdict=fail error=rig:_MOUNT_over_TCP_at_10.99.0.1:20048:_connect_10.99.0.1:20048:_Connection_refused_(os_error_111)_ step=scenarios";

    #[test]
    fn a_caught_mutant_is_green_and_says_so() {
        let expectations = parse(FILE).unwrap();
        let mut report = Report {
            runs: vec![run("mutant", &[("nfsd.after-ack", Verdict::Fail)])],
        };
        apply(&mut report, &expectations, &[]);
        assert_eq!(report.runs[0].cases[0].verdict, Verdict::Caught);
        assert!(report.passed());
        assert!(report.table().contains("caught as expected"));
    }

    #[test]
    fn a_missed_mutant_turns_the_run_red() {
        let expectations = parse(FILE).unwrap();
        let mut report = Report {
            runs: vec![run("mutant", &[("nfsd.after-ack", Verdict::Pass)])],
        };
        apply(&mut report, &expectations, &[]);
        assert!(!report.passed());
        assert!(report.table().contains("the gate missed mutant"));
        // A mutant whose case never ran is missed too.
        let mut report = Report {
            runs: vec![run("mutant", &[("nfsd.once", Verdict::Pass)])],
        };
        apply(&mut report, &expectations, &[]);
        assert!(!report.passed());
        // ... unless the run chose other cases with --case.
        let mut report = Report {
            runs: vec![run("mutant", &[("nfsd.once", Verdict::Pass)])],
        };
        apply(&mut report, &expectations, &["once".to_owned()]);
        assert!(report.passed());
    }

    #[test]
    fn expectations_bind_to_their_kernel_only() {
        let expectations = parse(FILE).unwrap();
        let mut report = Report {
            runs: vec![run("linux-6.12", &[("nfsd.after-ack", Verdict::Fail)])],
        };
        apply(&mut report, &expectations, &[]);
        assert_eq!(report.runs[0].cases[0].verdict, Verdict::Fail);
        assert!(!report.passed());
    }

    #[test]
    fn known_failures_are_known_and_a_fix_is_reported() {
        let expectations = parse(FILE).unwrap();
        let mut report = Report {
            runs: vec![run(
                "linux-6.1",
                &[("nfsd.burst", Verdict::Fail), ("nfsd.once", Verdict::Pass)],
            )],
        };
        apply(&mut report, &expectations, &[]);
        assert_eq!(report.runs[0].cases[0].verdict, Verdict::Known);
        assert!(report.passed());
        let mut report = Report {
            runs: vec![run("linux-6.1", &[("nfsd.burst", Verdict::Pass)])],
        };
        apply(&mut report, &expectations, &[]);
        assert!(report.runs[0].cases[0].reasons[0].contains("known failure passed this time"));
        assert!(report.passed());
    }

    #[test]
    fn a_failure_other_than_the_one_expected_stays_red() {
        let expectations = parse(FILE).unwrap();
        for (kernel, case, reason) in [
            // A catch met by a harness failure is not the gate catching the mutant.
            ("mutant", "nfsd.after-ack", MOUNT_REFUSED),
            // A known failure failing for another reason is a new failure.
            (
                "linux-6.1",
                "nfsd.burst",
                "srv: verdict=fail judge=error reason=count_failed:_no_svc_process_line",
            ),
        ] {
            let mut report = Report {
                runs: vec![run(kernel, &[(case, Verdict::Fail)])],
            };
            report.runs[0].cases[0].reasons = vec![reason.to_owned()];
            apply(&mut report, &expectations, &[]);
            assert_eq!(report.runs[0].cases[0].verdict, Verdict::Fail, "{case}");
            assert!(!report.passed(), "{case}");
            assert!(
                report.table().contains("failed for another reason"),
                "{}",
                report.table()
            );
        }
    }

    #[test]
    fn a_known_case_that_passes_on_a_gate_run_counts_against_the_gate() {
        let file = format!(
            "{FILE}[[expect]]\nkernel = 'mutant'\nsuite = 'drc'\ncase = 'nfsd.burst'\n\
             kind = 'known'\nreason = 'timing'\nfailure = 'LINK executed'\n"
        );
        let expectations = parse(&file).unwrap();
        let mut report = Report {
            runs: vec![run(
                "mutant",
                &[
                    ("nfsd.after-ack", Verdict::Fail),
                    ("nfsd.burst", Verdict::Pass),
                ],
            )],
        };
        apply(&mut report, &expectations, &[]);
        // The `*` entry and the mutant's own both name nfsd.burst: 3 expected, 1 caught.
        assert_eq!(
            report.runs[0].gate.as_deref(),
            Some("the gate caught 1 of 3 expected (not caught: nfsd.burst, nfsd.burst)")
        );
        assert!(report.runs[0].cases[1].reasons[0].contains("counted against the gate"));
        assert!(report
            .table()
            .contains("mutant drc: the gate caught 1 of 3"));
        // A run without a catch expectation has no gate line.
        let mut plain = Report {
            runs: vec![run("linux-6.1", &[("nfsd.burst", Verdict::Fail)])],
        };
        apply(&mut plain, &expectations, &[]);
        assert_eq!(plain.runs[0].gate, None);
    }

    #[test]
    fn a_catch_case_skipped_on_this_transport_is_not_counted_as_missed() {
        let file = format!(
            "{FILE}[[expect]]\nkernel = 'mutant-siw'\nsuite = 'drc'\ncase = 'nfsd.reply-chunk'\n\
             kind = 'catch'\nreason = 'needs the hold'\nfailure = 'CREATE executed'\n"
        );
        let expectations = parse(&file).unwrap();
        let mut report = Report {
            runs: vec![run(
                "mutant-siw",
                &[
                    ("nfsd.after-ack", Verdict::Fail),
                    ("nfsd.reply-chunk", Verdict::Skip),
                ],
            )],
        };
        apply(&mut report, &expectations, &[]);
        assert_eq!(report.runs[0].cases[1].verdict, Verdict::Skip);
        let gate = report.runs[0].gate.as_deref().unwrap();
        assert!(
            gate.ends_with("; skipped here: nfsd.reply-chunk")
                && !gate.contains("not caught: nfsd.reply"),
            "{gate}"
        );
    }

    #[test]
    fn entries_need_a_reason_and_the_failure_they_expect() {
        assert!(
            parse("[[expect]]\nkernel='a'\nsuite='b'\ncase='c'\nkind='catch'\nreason=' '\n")
                .is_err()
        );
        assert!(
            parse("[[expect]]\nkernel='a'\nsuite='b'\ncase='c'\nkind='maybe'\nreason='r'\n")
                .is_err()
        );
        // Every entry, a catch too, must name the failure it expects.
        for kind in ["known", "catch"] {
            let entry =
                format!("[[expect]]\nkernel='a'\nsuite='b'\ncase='c'\nkind='{kind}'\nreason='r'\n");
            assert!(parse(&entry).is_err(), "{kind}");
            assert!(
                parse(&format!("{entry}failure='executed'\n")).is_ok(),
                "{kind}"
            );
        }
    }

    #[test]
    fn the_committed_expectations_parse_and_name_matrix_kernels() {
        let root = crate::cache::workspace_root();
        let expectations = load(&root.join("vm-images/expectations.toml")).unwrap();
        let matrix = crate::matrix::Matrix::load(&root.join("vm-images/kernels.toml")).unwrap();
        assert!(expectations.iter().any(|e| e.kind == Kind::Catch));
        for e in &expectations {
            assert!(
                e.kernel == "*" || matrix.kernels.iter().any(|k| k.name == e.kernel),
                "{} is not in the matrix",
                e.kernel
            );
        }
        // Every mutant entry of the matrix has at least one case it must fail. An `explicit`
        // patched entry is a test kernel for one finding, judged by its replay (`just findings`
        // reproduces or not), not by a suite's cases.
        for kernel in matrix
            .kernels
            .iter()
            .filter(|k| !k.patches.is_empty() && !k.explicit)
        {
            assert!(
                expectations
                    .iter()
                    .any(|e| e.kernel == kernel.name && e.kind == Kind::Catch),
                "mutant {} has no catch expectation",
                kernel.name
            );
        }
    }
}
