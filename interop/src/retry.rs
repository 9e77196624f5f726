//! One retry of what the harness, not the kernel under test, spoiled — and never of a verdict.
//! A case whose capture was incomplete runs once more only when its first attempt passed or failed
//! on the harness alone (a count that failed): a case that failed on a behaviour (a counted double
//! execution, a replay of arguments never executed) stays failed whatever its capture. A kernel ×
//! suite whose guest kernel died runs once more whole only when the death's signature is a listed
//! harness fault (`vm-images/harness-faults.toml`, each with its reason); any other death is the
//! kernel's failure, with its Oops in the report. A retry's files and outcome replace the first
//! attempt's, which are kept under `harness-failed/` and listed with the case; a death that
//! repeats stays red.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use serde::Deserialize;

use crate::report::KernelRun;
use crate::results::{CaseOutcome, ResultLine, Verdict, SKIP_VERDICT};
use crate::suite::Suite;

/// Whether a first attempt may be replaced by a retry: only when it passed, or failed on the
/// harness alone (every failing RESULT line says `judge=error`: the count failed, nothing was
/// judged). `Err` says which verdict the first attempt holds and why it is kept.
pub fn retryable(first: &CaseOutcome) -> Result<(), String> {
    match first.verdict {
        Verdict::Pass => Ok(()),
        Verdict::Fail => {
            let failing: Vec<&ResultLine> = first
                .results
                .iter()
                .filter(|r| r.role != "harness" && r.verdict != "pass" && r.verdict != SKIP_VERDICT)
                .collect();
            let harness_only = !failing.is_empty()
                && failing.len() == first.reasons.len()
                && failing
                    .iter()
                    .all(|r| r.fields.get("judge").is_some_and(|j| j == "error"));
            if harness_only {
                Ok(())
            } else {
                Err(format!(
                    "failed on its behaviour, kept whatever its capture: {}",
                    first.reasons.join("; ")
                ))
            }
        }
        other => Err(format!(
            "{}: not a harness failure a retry may settle: {}",
            other.as_str(),
            first.reasons.join("; ")
        )),
    }
}

/// Split the cases whose capture was incomplete into those a retry may settle and those that
/// keep their first verdict (with why), by [`retryable`] on the run's outcome of each.
pub fn retry_candidates(
    run: &KernelRun,
    incomplete: Vec<HarnessFailure>,
) -> (Vec<HarnessFailure>, Vec<(HarnessFailure, String)>) {
    let mut retry = Vec::new();
    let mut kept = Vec::new();
    for failure in incomplete {
        match run.cases.iter().find(|c| c.name == failure.case) {
            Some(first) => match retryable(first) {
                Ok(()) => retry.push(failure),
                Err(why) => kept.push((failure, why)),
            },
            None => kept.push((failure, "the case has no outcome to retry".to_owned())),
        }
    }
    (retry, kept)
}

/// A guest death the harness may retry: its signature (every string must occur in the death
/// text, the first Oops and the panic line) and why it is the harness's, not the kernel's.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarnessFault {
    pub signature: Vec<String>,
    pub reason: String,
    #[serde(default)]
    pub link: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HarnessFaultsFile {
    #[serde(rename = "fault", default)]
    faults: Vec<HarnessFault>,
}

/// Parse `vm-images/harness-faults.toml`: every fault needs a reason and a signature of
/// non-blank strings (an empty signature would match every death).
pub fn parse_harness_faults(text: &str) -> Result<Vec<HarnessFault>> {
    let file: HarnessFaultsFile = toml::from_str(text).context("parsing harness faults")?;
    for fault in &file.faults {
        anyhow::ensure!(
            !fault.reason.trim().is_empty(),
            "harness fault {:?} has no reason",
            fault.signature
        );
        anyhow::ensure!(
            !fault.signature.is_empty() && fault.signature.iter().all(|s| !s.trim().is_empty()),
            "harness fault {:?} needs a signature of non-blank strings",
            fault.reason
        );
    }
    Ok(file.faults)
}

/// Load the harness faults (a missing file lists none: no death is retried).
pub fn load_harness_faults(path: &Path) -> Result<Vec<HarnessFault>> {
    match fs::read_to_string(path) {
        Ok(text) => parse_harness_faults(&text).with_context(|| format!("in {}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// The listed harness fault whose signature the guest death `death` carries, if any: only
/// such a death may be retried; any other is the kernel under test failing.
pub fn known_harness_fault<'a>(
    death: &str,
    faults: &'a [HarnessFault],
) -> Option<&'a HarnessFault> {
    faults
        .iter()
        .find(|f| f.signature.iter().all(|s| death.contains(s.as_str())))
}

/// A case of one kernel × suite run whose capture could not be compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessFailure {
    pub case: String,
    pub reason: String,
}

/// The run directory of `kernel` × `suite` under `out_root` (as the runner lays it out).
pub fn run_dir(out_root: &Path, kernel: &str, suite: &str) -> PathBuf {
    out_root.join("runs").join(kernel).join(suite)
}

/// The cases of `suite` whose capture in `run_dir` is incomplete or unreadable, by the same
/// rule the snapshot comparison applies ([`crate::snapshots::collect`]).
pub fn harness_failures(run: &KernelRun, suite: &Suite, run_dir: &Path) -> Vec<HarnessFailure> {
    if run.error.is_some() {
        // A run that failed as a whole is reported as such; retrying one case would hide it.
        return Vec::new();
    }
    let mut failures = count_failures(run);
    let cases: Vec<String> = suite.cases.iter().map(|c| c.name.clone()).collect();
    let version = crate::snapshots::KernelVersion {
        name: run.kernel.clone(),
        version: run.version.clone(),
        origin: run.origin.clone(),
    };
    let Ok(snapshots) =
        crate::snapshots::collect(&version, &run.suite, &cases, &run_dir.join("share/out"))
    else {
        return failures;
    };
    for snapshot in snapshots {
        if let Some(reason) = snapshot.harness_failure {
            if !failures.iter().any(|f| f.case == snapshot.case) {
                failures.push(HarnessFailure {
                    case: snapshot.case,
                    reason,
                });
            }
        }
    }
    failures
}

/// The cases of `run` that failed only because the kernel's count failed (every failing
/// RESULT line says `judge=error`: the two counts disagreed (`counts_agree=false`), events were
/// lost, the XID was missing from the trace): nothing was judged, so each is a harness failure
/// to retry, never a verdict on the kernel. One that fails so again stays red.
pub fn count_failures(run: &KernelRun) -> Vec<HarnessFailure> {
    run.cases
        .iter()
        .filter(|case| case.verdict == crate::results::Verdict::Fail && retryable(case).is_ok())
        .map(|case| HarnessFailure {
            case: case.name.clone(),
            reason: format!(
                "the kernel's count failed (judge=error): {}",
                case.reasons.join("; ")
            ),
        })
        .collect()
}

/// Whether `file` (a name in a share's `out/`) belongs to `case` of `cases`: it starts with
/// `<case>.` and not with `<longer>.` for another case that has `<case>.` as its prefix.
pub fn belongs_to(file: &str, case: &str, cases: &[String]) -> bool {
    let own = format!("{case}.");
    file.starts_with(&own)
        && !cases
            .iter()
            .filter(|other| other.as_str() != case && other.starts_with(&own))
            .any(|other| file.starts_with(&format!("{other}.")))
}

/// Move the first attempt's files of `case` from `out` into `kept`, then copy the retry's from
/// `retry_out` into `out`, so that everything after the run (snapshots, acceptance) reads the
/// retry. Returns how many files were adopted.
pub fn adopt_files(
    out: &Path,
    retry_out: &Path,
    kept: &Path,
    case: &str,
    cases: &[String],
) -> Result<usize> {
    fs::create_dir_all(kept).with_context(|| format!("creating {}", kept.display()))?;
    for entry in fs::read_dir(out).with_context(|| format!("reading {}", out.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if belongs_to(&name, case, cases) && entry.file_type()?.is_file() {
            fs::rename(entry.path(), kept.join(&name))
                .with_context(|| format!("keeping {name} of the first attempt"))?;
        }
    }
    let mut adopted = 0;
    for entry in
        fs::read_dir(retry_out).with_context(|| format!("reading {}", retry_out.display()))?
    {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if belongs_to(&name, case, cases) && entry.file_type()?.is_file() {
            fs::copy(entry.path(), out.join(&name))
                .with_context(|| format!("adopting {name} of the retry"))?;
            adopted += 1;
        }
    }
    Ok(adopted)
}

/// Put the retry's outcome of `failure.case` in place of the first attempt's in `run`, with a
/// `harness` result line saying why it was retried and a reason listing the first attempt's
/// verdict. A first attempt that failed on a behaviour is never replaced ([`retryable`]): the
/// retry only confirms. When the retry did not run, the case keeps its first outcome and the line
/// says so (its incomplete capture then still fails the snapshot step as a harness failure).
pub fn adopt_outcome(run: &mut KernelRun, retry: &KernelRun, failure: &HarnessFailure) {
    let Some(slot) = run.cases.iter_mut().find(|c| c.name == failure.case) else {
        return;
    };
    let mut note = retried_note(&failure.case, &failure.reason);
    let first = slot.clone();
    note.fields.insert(
        "first_verdict".to_owned(),
        first.verdict.as_str().to_owned(),
    );
    if let Err(why) = retryable(&first) {
        note.verdict = "retry-refused".to_owned();
        note.fields.insert("kept".to_owned(), why);
        slot.results.push(note);
        return;
    }
    match retry.cases.iter().find(|c| c.name == failure.case) {
        Some(outcome) if retry.error.is_none() => {
            *slot = outcome.clone();
            slot.reasons.push(format!(
                "retried once after a harness failure ({}); first attempt: {}{}",
                failure.reason,
                first.verdict.as_str(),
                if first.reasons.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", first.reasons.join("; "))
                }
            ));
        }
        _ => {
            note.verdict = "retry-failed".to_owned();
            note.fields.insert(
                "retry".to_owned(),
                retry
                    .error
                    .clone()
                    .unwrap_or_else(|| "the case is missing from the retry".to_owned()),
            );
        }
    }
    slot.results.push(note);
}

/// The `harness` result line of a case that ran twice: why its first attempt did not count
/// (JUnit shows it as a flaky rerun).
fn retried_note(case: &str, first_attempt: &str) -> ResultLine {
    ResultLine {
        case: case.to_owned(),
        role: "harness".to_owned(),
        verdict: "retried".to_owned(),
        fields: [("first_attempt".to_owned(), first_attempt.to_owned())]
            .into_iter()
            .collect(),
    }
}

/// Where a whole-run retry's files are: the run's directory, the retry's, and where the first
/// attempt's files are kept.
#[derive(Debug, Clone, Copy)]
pub struct RunPaths<'a> {
    pub dir: &'a Path,
    pub retry_dir: &'a Path,
    pub kept: &'a Path,
}

/// Replace the first attempt of a kernel × suite whose guest died of a listed harness fault
/// (`fault`, [`known_harness_fault`]) by its whole retry: the first
/// attempt's run directory `dir` moves to `kept`, the retry's `retry_dir` takes its place, the
/// retry's artifact paths are rewritten to the new place, and every case carries a `harness`
/// line saying why it ran twice (JUnit shows it as a flaky rerun).
pub fn adopt_run(
    first: &KernelRun,
    mut retry: KernelRun,
    fault: &HarnessFault,
    paths: &RunPaths<'_>,
) -> Result<KernelRun> {
    let RunPaths {
        dir,
        retry_dir,
        kept,
    } = *paths;
    let death = format!(
        "{} (a listed harness fault: {})",
        first
            .guest_died
            .clone()
            .unwrap_or_else(|| "a guest died".to_owned()),
        fault.reason
    );
    if let Some(parent) = kept.parent() {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    if dir.exists() {
        fs::rename(dir, kept)
            .with_context(|| format!("keeping {} as {}", dir.display(), kept.display()))?;
    }
    if retry_dir.exists() {
        fs::rename(retry_dir, dir)
            .with_context(|| format!("moving {} to {}", retry_dir.display(), dir.display()))?;
    }
    let (from, to) = (retry_dir.display().to_string(), dir.display().to_string());
    for artifact in &mut retry.artifacts {
        if let Some(rest) = artifact.path.strip_prefix(&from) {
            artifact.path = format!("{to}{rest}");
        }
    }
    for case in &mut retry.cases {
        for reason in &mut case.reasons {
            *reason = reason.replace(&from, &to);
        }
        let note = retried_note(&case.name, &death);
        case.results.push(note);
    }
    retry.retried_after = Some(format!(
        "first attempt: {death}; its files are in {}",
        kept.display()
    ));
    retry.attempt = first.attempt;
    Ok(retry)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn files_belong_to_their_case_only() {
        let cases = names(&["nfsd.after-ack", "nfsd.after-ack.slow", "nfsd.burst"]);
        assert!(belongs_to("nfsd.after-ack.pcap", "nfsd.after-ack", &cases));
        assert!(belongs_to(
            "nfsd.after-ack.cli.log",
            "nfsd.after-ack",
            &cases
        ));
        assert!(!belongs_to(
            "nfsd.after-ack.slow.pcap",
            "nfsd.after-ack",
            &cases
        ));
        assert!(belongs_to(
            "nfsd.after-ack.slow.pcap",
            "nfsd.after-ack.slow",
            &cases
        ));
        assert!(!belongs_to("nfsd.burst.pcap", "nfsd.after-ack", &cases));
        assert!(!belongs_to(
            "nfsd.after-acked.pcap",
            "nfsd.after-ack",
            &cases
        ));
    }

    #[test]
    fn adopting_moves_the_first_attempt_aside_and_copies_the_retry() {
        let root = std::env::temp_dir().join(format!("rig-retry-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let (out, retry, kept) = (root.join("out"), root.join("retry"), root.join("kept"));
        fs::create_dir_all(&out).unwrap();
        fs::create_dir_all(&retry).unwrap();
        fs::write(out.join("nfsd.after-ack.pcap"), "cut").unwrap();
        fs::write(out.join("nfsd.after-ack.verdict.json"), "first").unwrap();
        fs::write(out.join("nfsd.burst.pcap"), "other").unwrap();
        fs::write(retry.join("nfsd.after-ack.pcap"), "whole").unwrap();
        fs::write(retry.join("nfsd.after-ack.verdict.json"), "second").unwrap();
        fs::write(retry.join("nfsd.burst.pcap"), "not retried").unwrap();
        let cases = names(&["nfsd.after-ack", "nfsd.burst"]);
        let adopted = adopt_files(&out, &retry, &kept, "nfsd.after-ack", &cases).unwrap();
        assert_eq!(adopted, 2);
        assert_eq!(
            fs::read_to_string(out.join("nfsd.after-ack.pcap")).unwrap(),
            "whole"
        );
        assert_eq!(
            fs::read_to_string(kept.join("nfsd.after-ack.pcap")).unwrap(),
            "cut"
        );
        assert_eq!(
            fs::read_to_string(kept.join("nfsd.after-ack.verdict.json")).unwrap(),
            "first"
        );
        assert_eq!(
            fs::read_to_string(out.join("nfsd.burst.pcap")).unwrap(),
            "other"
        );
        assert!(!kept.join("nfsd.burst.pcap").exists());
        fs::remove_dir_all(&root).unwrap();
    }

    fn run_with(case: &str, verdict: crate::results::Verdict) -> KernelRun {
        KernelRun {
            kernel: "linux-6.12".into(),
            release: "6.12".into(),
            version: "6.1.192-3".into(),
            origin: "bookworm-security".into(),
            provenance: Default::default(),
            accel: "tcg".into(),
            suite: "drc".into(),
            wall_ms: 0,
            boot_ms: None,
            cases: vec![crate::results::CaseOutcome {
                name: case.into(),
                verdict,
                duration_ms: 1,
                reasons: Vec::new(),
                results: Vec::new(),
            }],
            artifacts: Vec::new(),
            error: None,
            attempt: 1,
            guest_died: None,
            transport: Default::default(),
            retried_after: None,
            gate: None,
        }
    }

    fn double_fault() -> HarnessFault {
        let root = crate::cache::workspace_root();
        let faults = load_harness_faults(&root.join("vm-images/harness-faults.toml")).unwrap();
        faults
            .into_iter()
            .find(|f| f.reason.starts_with("TCG double fault"))
            .expect("the TCG double fault is a listed harness fault")
    }

    /// What the drc server guest reports when `rig judge` counted a second execution.
    fn double_execution() -> crate::results::CaseOutcome {
        let line = "RESULT case=nfsd.after-ack role=srv verdict=fail kernel=6.12.117 judge=fail \
                    reason=non-idempotent_REMOVE_executed_2_times_for_XID_0x5a3f0012\n";
        let results = crate::results::parse_result_lines(line);
        crate::results::CaseOutcome {
            name: "nfsd.after-ack".into(),
            verdict: crate::results::Verdict::Fail,
            duration_ms: 1,
            reasons: vec![format!(
                "srv: verdict=fail judge=fail kernel=6.12.117 reason={}",
                results[0].fields["reason"]
            )],
            results,
        }
    }

    #[test]
    fn a_counted_double_execution_with_an_incomplete_capture_stays_red() {
        use crate::results::Verdict;
        let failure = HarnessFailure {
            case: "nfsd.after-ack".into(),
            reason: "capture incomplete: no disconnect after the last message".into(),
        };
        let mut first = run_with("nfsd.after-ack", Verdict::Fail);
        first.cases[0] = double_execution();
        // It is not picked for a retry at all ...
        let (retry, kept) = retry_candidates(&first, vec![failure.clone()]);
        assert!(retry.is_empty());
        assert!(kept[0].1.contains("failed on its behaviour"), "{kept:?}");
        // ... and a passing retry handed to it anyway does not overrule it.
        let passing = run_with("nfsd.after-ack", Verdict::Pass);
        adopt_outcome(&mut first, &passing, &failure);
        assert_eq!(first.cases[0].verdict, Verdict::Fail);
        assert!(first.cases[0].reasons[0].contains("executed_2_times"));
        let note = first.cases[0].results.last().unwrap();
        assert_eq!(note.verdict, "retry-refused");
        assert_eq!(note.fields["first_verdict"], "fail");
        let report = crate::report::Report { runs: vec![first] };
        assert!(!report.passed());
    }

    #[test]
    fn counts_that_disagree_make_a_harness_failure_that_is_retried() {
        use crate::results::Verdict;
        // What observe-nfsd.sh reports when `rig judge` exits 2 on counts_agree=false.
        let line = "RESULT case=nfsd.deferred role=srv verdict=fail kernel=6.12.118 judge=error \
                    reason=count_failed:_rig_judge:_error:_the_kernel's_two_counts_disagree \
                    executions_counted=unknown counts_agree=false\n";
        let results = crate::results::parse_result_lines(line);
        let mut run = run_with("nfsd.deferred", Verdict::Fail);
        run.cases[0].reasons = vec![format!(
            "srv: verdict=fail judge=error reason={}",
            results[0].fields["reason"]
        )];
        run.cases[0].results = results;
        let found = count_failures(&run);
        assert_eq!(found.len(), 1);
        assert!(found[0].reason.contains("judge=error"), "{found:?}");
        let (retry, kept) = retry_candidates(&run, found);
        assert_eq!(retry.len(), 1, "{kept:?}");
        // A counted double execution is a verdict, not a harness failure.
        run.cases[0] = double_execution();
        assert!(count_failures(&run).is_empty());
        // Nor is a pass.
        assert!(count_failures(&run_with("nfsd.once", Verdict::Pass)).is_empty());
    }

    #[test]
    fn only_a_pass_or_a_failed_count_may_be_retried() {
        use crate::results::Verdict;
        let mut outcome = double_execution();
        assert!(retryable(&outcome).is_err());
        // The count failed (judge=error) and nothing else: a harness failure a retry may settle.
        outcome.results[0]
            .fields
            .insert("judge".into(), "error".into());
        assert_eq!(retryable(&outcome), Ok(()));
        // ... unless the case also failed otherwise (a script's exit status).
        outcome.reasons.push("cli: exit 1".into());
        assert!(retryable(&outcome).is_err());
        for verdict in [Verdict::Timeout, Verdict::NotRun, Verdict::Known] {
            outcome.verdict = verdict;
            assert!(retryable(&outcome).is_err(), "{verdict:?}");
        }
        let pass = run_with("nfsd.once", Verdict::Pass);
        assert_eq!(retryable(&pass.cases[0]), Ok(()));
    }

    #[test]
    fn only_a_listed_death_is_a_harness_fault() {
        let faults = vec![double_fault()];
        let tcg = "the srv guest's kernel died: Oops: double fault: 0000 [#1] PREEMPT SMP NOPTI \
                   → Kernel panic - not syncing: Fatal exception in interrupt";
        assert!(known_harness_fault(tcg, &faults).is_some());
        // The kernel under test oopsing in nfsd is its failure, not the harness's.
        let nfsd = "the srv guest's kernel died: BUG: kernel NULL pointer dereference, address: \
                    0000000000000008 → Kernel panic - not syncing: Fatal exception";
        assert_eq!(known_harness_fault(nfsd, &faults), None);
        assert_eq!(known_harness_fault(tcg, &[]), None);
        // A fault without a reason or with a blank signature is refused.
        assert!(parse_harness_faults("[[fault]]\nsignature = ['x']\nreason = ' '\n").is_err());
        assert!(parse_harness_faults("[[fault]]\nsignature = []\nreason = 'r'\n").is_err());
        assert!(parse_harness_faults("[[fault]]\nsignature = ['']\nreason = 'r'\n").is_err());
    }

    #[test]
    fn the_retry_outcome_replaces_the_first_with_a_note() {
        use crate::results::Verdict;
        let failure = HarnessFailure {
            case: "nfsd.after-ack".into(),
            reason: "capture incomplete: no disconnect".into(),
        };
        let mut first = run_with("nfsd.after-ack", Verdict::Pass);
        let mut retry = run_with("nfsd.after-ack", Verdict::Fail);
        retry.cases[0].reasons.push("executed twice".into());
        adopt_outcome(&mut first, &retry, &failure);
        assert_eq!(first.cases[0].verdict, Verdict::Fail);
        assert_eq!(first.cases[0].reasons[0], "executed twice");
        // The first attempt is listed with the case.
        assert_eq!(
            first.cases[0].reasons[1],
            "retried once after a harness failure (capture incomplete: no disconnect); first \
             attempt: pass"
        );
        let note = first.cases[0].results.last().unwrap();
        assert_eq!(
            (note.role.as_str(), note.verdict.as_str()),
            ("harness", "retried")
        );
        assert_eq!(
            note.fields["first_attempt"],
            "capture incomplete: no disconnect"
        );

        // A retry that never ran leaves the first outcome, and says so.
        let mut first = run_with("nfsd.after-ack", Verdict::Pass);
        let mut broken = run_with("nfsd.after-ack", Verdict::Pass);
        broken.error = Some("boot timeout".into());
        adopt_outcome(&mut first, &broken, &failure);
        assert_eq!(first.cases[0].verdict, Verdict::Pass);
        let note = first.cases[0].results.last().unwrap();
        assert_eq!(note.verdict, "retry-failed");
        assert_eq!(note.fields["retry"], "boot timeout");
    }

    #[test]
    fn a_run_whose_guest_died_is_replaced_by_its_retry() {
        use crate::results::Verdict;
        let root = std::env::temp_dir().join(format!("rig-adopt-run-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let dir = run_dir(&root, "linux-6.12", "selftest");
        let retry_dir = run_dir(&root.join("retry"), "linux-6.12", "selftest");
        let kept = root.join("harness-failed/linux-6.12/selftest");
        fs::create_dir_all(dir.join("share/out")).unwrap();
        fs::create_dir_all(retry_dir.join("share/out")).unwrap();
        fs::write(dir.join("srv.console"), "Kernel panic").unwrap();
        fs::write(retry_dir.join("srv.console"), "clean").unwrap();
        let mut first = run_with("acked.after-ack", Verdict::Fail);
        first.guest_died = Some("the srv guest's kernel died: Oops: double fault".into());
        first.error = first.guest_died.clone();
        let mut retry = run_with("acked.after-ack", Verdict::Pass);
        retry.artifacts.push(crate::report::Artifact {
            name: "srv.console".into(),
            path: retry_dir.join("srv.console").display().to_string(),
            bytes: 5,
            sha256: String::new(),
        });
        let fault = double_fault();
        let paths = RunPaths {
            dir: &dir,
            retry_dir: &retry_dir,
            kept: &kept,
        };
        let adopted = adopt_run(&first, retry, &fault, &paths).unwrap();
        assert!(adopted.passed());
        assert_eq!(
            fs::read_to_string(dir.join("srv.console")).unwrap(),
            "clean"
        );
        assert_eq!(
            fs::read_to_string(kept.join("srv.console")).unwrap(),
            "Kernel panic"
        );
        assert_eq!(
            adopted.artifacts[0].path,
            dir.join("srv.console").display().to_string()
        );
        let note = adopted.cases[0].results.last().unwrap();
        assert_eq!(
            (note.role.as_str(), note.verdict.as_str()),
            ("harness", "retried")
        );
        assert!(note.fields["first_attempt"].contains("double fault"));
        assert!(adopted
            .retried_after
            .as_deref()
            .is_some_and(|why| why.contains("double fault")
                && why.contains("harness-failed")
                && why.contains("a listed harness fault: TCG double fault")));

        // A retry that died again stays red.
        let dir2 = run_dir(&root, "linux-6.1", "drc");
        let mut again = run_with("nfsd.burst", Verdict::Pass);
        again.error = Some("the srv guest's kernel died: BUG".into());
        again.guest_died = again.error.clone();
        let (none, k2) = (root.join("none"), root.join("k2"));
        let paths = RunPaths {
            dir: &dir2,
            retry_dir: &none,
            kept: &k2,
        };
        let adopted = adopt_run(&first, again, &fault, &paths).unwrap();
        assert!(!adopted.passed());
        fs::remove_dir_all(&root).unwrap();
    }
}
