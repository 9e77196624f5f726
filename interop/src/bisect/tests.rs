//! The bisection on a small repository: five commits after a good one, one of them the
//! "mutation" (a file whose presence the scripted test reads as a failing case).

use super::*;

/// A repository: `stock`, two harmless commits, the mutation, two more harmless ones. Returns
/// the directory and the commits in order.
fn history(dir: &Path) -> Vec<String> {
    git(dir, &["init", "-q", "-b", "main"]).unwrap();
    let mut commits = Vec::new();
    let mut commit = |file: &str, text: &str, message: &str| {
        std::fs::write(dir.join(file), text).unwrap();
        git(dir, &["add", file]).unwrap();
        git(dir, &["commit", "-q", "-m", message]).unwrap();
        commits.push(resolve(dir, "HEAD").unwrap());
    };
    commit("nfscache.c", "stock\n", "stock");
    commit("a.txt", "1\n", "harmless one");
    commit("b.txt", "2\n", "harmless two");
    commit(
        "mutation",
        "acked-evict\n",
        "nfsd: evict acked replies (the mutation)",
    );
    commit("c.txt", "3\n", "harmless three");
    commit("d.txt", "4\n", "harmless four");
    commits
}

/// The scripted test: bad while the mutation is in the tree.
fn mutation_is_bad(worktree: &Path, _commit: &str) -> Result<StepVerdict> {
    Ok(if worktree.join("mutation").exists() {
        StepVerdict::Bad
    } else {
        StepVerdict::Good
    })
}

#[test]
fn the_mutation_is_the_first_bad_commit_and_its_revert_passes() {
    let repo = tempfile::tempdir().unwrap();
    let commits = history(repo.path());
    let scratch = tempfile::tempdir().unwrap();
    let worktree = Worktree::add(repo.path(), &scratch.path().join("wt"), &commits[5]).unwrap();
    let mut reported = Vec::new();
    let found = bisect(
        &worktree.dir,
        &commits[0],
        &commits[5],
        &mut mutation_is_bad,
        |s: &Step| reported.push(s.commit.clone()),
    )
    .unwrap();
    assert_eq!(
        found.first_bad,
        Some((
            commits[3].clone(),
            "nfsd: evict acked replies (the mutation)".to_owned()
        ))
    );
    assert!(found.steps.len() <= 3, "{:?}", found.steps);
    assert!(found.confirmed(), "{}", found.summary());
    assert_eq!(reported.len(), found.steps.len() + 1);
    assert!(found
        .summary()
        .starts_with(&format!("first bad commit: {} nfsd: evict", commits[3])));
    // The developer's checkout was never moved.
    assert_eq!(resolve(repo.path(), "HEAD").unwrap(), commits[5]);
    drop(worktree);
    assert!(!scratch.path().join("wt").exists());
    let listed = git(repo.path(), &["worktree", "list"]).unwrap();
    assert_eq!(listed.lines().count(), 1, "{listed}");
}

#[test]
fn a_step_the_harness_cannot_judge_is_skipped_not_guessed() {
    let repo = tempfile::tempdir().unwrap();
    let commits = history(repo.path());
    let scratch = tempfile::tempdir().unwrap();
    let worktree = Worktree::add(repo.path(), &scratch.path().join("wt"), &commits[5]).unwrap();
    // The commit after the mutation cannot be judged: the mutation is still found.
    let skip_three = commits[4].clone();
    let mut test = |worktree: &Path, commit: &str| {
        if commit == skip_three {
            Ok(StepVerdict::Skip)
        } else {
            mutation_is_bad(worktree, commit)
        }
    };
    let found = bisect(
        &worktree.dir,
        &commits[0],
        &commits[5],
        &mut test,
        |_: &Step| {},
    )
    .unwrap();
    assert_eq!(found.first_bad.map(|(c, _)| c), Some(commits[3].clone()));
    assert!(found.steps.iter().any(|s| s.verdict == StepVerdict::Skip));
    // Every commit skipped: git cannot tell, and the bisection says so.
    let mut never = |_: &Path, _: &str| Ok(StepVerdict::Skip);
    let worktree2 = Worktree::add(repo.path(), &scratch.path().join("wt2"), &commits[5]).unwrap();
    let hidden = bisect(
        &worktree2.dir,
        &commits[0],
        &commits[5],
        &mut never,
        |_: &Step| {},
    )
    .unwrap();
    assert_eq!(hidden.first_bad, None);
    assert!(!hidden.confirmed());
    assert!(hidden.summary().contains("not found"));
}

#[test]
fn a_revert_that_does_not_apply_is_reported_not_tested() {
    let repo = tempfile::tempdir().unwrap();
    let mut commits = history(repo.path());
    // A later commit edits the mutation's file: reverting the mutation conflicts.
    std::fs::write(repo.path().join("mutation"), "acked-evict, tuned\n").unwrap();
    git(repo.path(), &["commit", "-q", "-am", "tune the mutation"]).unwrap();
    commits.push(resolve(repo.path(), "HEAD").unwrap());
    let scratch = tempfile::tempdir().unwrap();
    let worktree = Worktree::add(repo.path(), &scratch.path().join("wt"), &commits[6]).unwrap();
    let found = bisect(
        &worktree.dir,
        &commits[0],
        &commits[6],
        &mut mutation_is_bad,
        |_: &Step| {},
    )
    .unwrap();
    assert_eq!(found.first_bad.as_ref().map(|(c, _)| c), Some(&commits[3]));
    assert!(found.revert.is_none());
    assert!(found
        .summary()
        .contains("not verified: the revert does not apply"));
}

#[test]
fn good_must_be_an_ancestor_of_bad() {
    let repo = tempfile::tempdir().unwrap();
    let commits = history(repo.path());
    let scratch = tempfile::tempdir().unwrap();
    let worktree = Worktree::add(repo.path(), &scratch.path().join("wt"), &commits[5]).unwrap();
    let err = bisect(
        &worktree.dir,
        &commits[5],
        &commits[2],
        &mut mutation_is_bad,
        |_: &Step| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("not an ancestor"), "{err}");
    assert_eq!(first_bad_in("x\nabc is the first bad commit\n"), None);
}

#[test]
fn a_commits_verdict_is_read_from_its_runs_of_the_case() {
    use crate::report::{KernelRun, Report};
    use crate::results::{CaseOutcome, ResultLine, Verdict};
    let case = |name: &str, verdict: Verdict, judge: &str| CaseOutcome {
        name: name.into(),
        verdict,
        duration_ms: 1,
        reasons: if verdict == Verdict::Pass {
            vec![]
        } else {
            vec!["srv: verdict=fail".into()]
        },
        results: vec![ResultLine {
            case: name.into(),
            role: "srv".into(),
            verdict: if verdict == Verdict::Pass {
                "pass"
            } else {
                "fail"
            }
            .into(),
            fields: [("judge".to_owned(), judge.to_owned())].into(),
        }],
    };
    let report = |cases: Vec<CaseOutcome>| Report {
        runs: vec![KernelRun {
            kernel: "bisect".into(),
            release: "6.12.117".into(),
            version: String::new(),
            origin: String::new(),
            provenance: Default::default(),
            accel: "tcg".into(),
            suite: "drc".into(),
            wall_ms: 1,
            boot_ms: None,
            cases,
            artifacts: vec![],
            error: None,
            attempt: 1,
            guest_died: None,
            transport: Default::default(),
            retried_after: None,
            gate: None,
        }],
    };
    let setup_failed_but_case_passed = report(vec![
        case("setup", Verdict::Fail, "fail"),
        case("nfsd.after-ack", Verdict::Pass, "pass"),
    ]);
    assert_eq!(
        verdict_of(&setup_failed_but_case_passed, "nfsd.after-ack"),
        StepVerdict::Good
    );
    let executed_twice = report(vec![case("nfsd.after-ack", Verdict::Fail, "fail")]);
    assert_eq!(verdict_of(&executed_twice, "after-ack"), StepVerdict::Bad);
    let count_failed = report(vec![case("nfsd.after-ack", Verdict::Fail, "error")]);
    assert_eq!(
        verdict_of(&count_failed, "nfsd.after-ack"),
        StepVerdict::Skip
    );
    let never_ran = report(vec![case("nfsd.after-ack", Verdict::NotRun, "")]);
    assert_eq!(verdict_of(&never_ran, "nfsd.after-ack"), StepVerdict::Skip);
    assert_eq!(
        verdict_of(&report(vec![]), "nfsd.after-ack"),
        StepVerdict::Skip
    );
    // Two runs (--repeat 2): one failure is enough.
    let flaky = report(vec![
        case("nfsd.after-ack", Verdict::Pass, "pass"),
        case("nfsd.after-ack", Verdict::Fail, "fail"),
    ]);
    assert_eq!(verdict_of(&flaky, "nfsd.after-ack"), StepVerdict::Bad);
}
