//! `just interop bisect`: which commit of a developer's tree turned a case red. `git bisect` runs
//! in a worktree of its own (the developer's checkout is never touched); each step builds that
//! commit (cached by commit, compiled through ccache) and runs the case; a step whose runs fail
//! on the harness alone is skipped, never judged. The first bad commit is then verified as
//! KernelCI verifies a culprit: reverted on top of the bad revision, the case must pass again.
//!
//! The git work is here; how a commit is tested is the caller's ([`StepTest`]), so the search
//! is tested on a small repository with a scripted test.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

/// Most steps a bisection takes (2^64 commits would need 64).
pub const MAX_STEPS: usize = 64;
const GIT_TIMEOUT: Duration = Duration::from_secs(600);

/// What one commit's runs said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepVerdict {
    /// Every run of the case passed.
    Good,
    /// A run failed on the kernel's behaviour.
    Bad,
    /// The harness could not tell (a count that failed, a case that never ran): `git bisect skip`.
    Skip,
}

impl StepVerdict {
    fn git_word(self) -> &'static str {
        match self {
            StepVerdict::Good => "good",
            StepVerdict::Bad => "bad",
            StepVerdict::Skip => "skip",
        }
    }
}

/// One tested commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub commit: String,
    pub subject: String,
    pub verdict: StepVerdict,
    pub took: Duration,
}

/// How a commit is tested: build the worktree as it is checked out and run the case.
pub trait StepTest {
    fn test(&mut self, worktree: &Path, commit: &str) -> Result<StepVerdict>;
}

impl<F: FnMut(&Path, &str) -> Result<StepVerdict>> StepTest for F {
    fn test(&mut self, worktree: &Path, commit: &str) -> Result<StepVerdict> {
        self(worktree, commit)
    }
}

/// What a bisection found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bisection {
    pub steps: Vec<Step>,
    /// The first bad commit and its subject; `None` when skipped commits hide it.
    pub first_bad: Option<(String, String)>,
    /// The case on BAD with the first bad commit reverted: `None` when not verified (no culprit,
    /// or the revert does not apply), else the step.
    pub revert: Option<Step>,
    /// Why the revert was not tested, when it was not.
    pub revert_note: Option<String>,
}

/// `git bisect good|bad|skip|start`: its output, also when git stops because only skipped
/// commits are left (it exits 2 and says so).
fn git_bisect(dir: &Path, args: &[&str]) -> Result<String> {
    match git(dir, args) {
        Ok(out) => Ok(out),
        Err(e) if e.to_string().contains(ONLY_SKIPPED) => Ok(e.to_string()),
        Err(e) => Err(e),
    }
}

/// What `git bisect` says when skipped commits hide the first bad one.
const ONLY_SKIPPED: &str = "only 'skip'ped commits left";

fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        .args(args)
        // A revert commits: name the committer, whatever the host's git config says.
        .env("GIT_AUTHOR_NAME", "rpcrdma-rig bisect")
        .env("GIT_AUTHOR_EMAIL", "rig@localhost")
        .env("GIT_COMMITTER_NAME", "rpcrdma-rig bisect")
        .env("GIT_COMMITTER_EMAIL", "rig@localhost");
    let output = crate::process::output_with_timeout(
        &format!("git {}", args.join(" ")),
        command,
        GIT_TIMEOUT,
    )?;
    ensure!(
        output.status.success(),
        "git {} in {}: {}{}",
        args.join(" "),
        dir.display(),
        String::from_utf8_lossy(&output.stderr).trim(),
        String::from_utf8_lossy(&output.stdout).trim()
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The full hash of `rev` in `tree`.
pub fn resolve(tree: &Path, rev: &str) -> Result<String> {
    Ok(git(
        tree,
        &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
    )?
    .trim()
    .to_owned())
}

fn subject(dir: &Path, commit: &str) -> Result<String> {
    Ok(git(dir, &["log", "-1", "--format=%s", commit])?
        .trim()
        .to_owned())
}

/// A detached worktree of `tree` at `rev` in `dir`, removed (with its administrative files in
/// the developer's repository) when dropped.
pub struct Worktree {
    tree: PathBuf,
    pub dir: PathBuf,
}

impl Worktree {
    pub fn add(tree: &Path, dir: &Path, rev: &str) -> Result<Worktree> {
        if dir.exists() {
            // A worktree left by an interrupted bisection.
            let _ = git(
                tree,
                &["worktree", "remove", "--force", &dir.display().to_string()],
            );
            let _ = std::fs::remove_dir_all(dir);
        }
        let _ = git(tree, &["worktree", "prune"]);
        git(
            tree,
            &[
                "worktree",
                "add",
                "--detach",
                &dir.display().to_string(),
                rev,
            ],
        )
        .context("adding the bisection's worktree")?;
        Ok(Worktree {
            tree: tree.to_path_buf(),
            dir: dir.to_path_buf(),
        })
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        let _ = git(&self.dir, &["bisect", "reset"]);
        let _ = git(
            &self.tree,
            &[
                "worktree",
                "remove",
                "--force",
                &self.dir.display().to_string(),
            ],
        );
    }
}

/// The commit `git bisect` reported as the first bad one, if its output says so.
fn first_bad_in(output: &str) -> Option<String> {
    output.lines().find_map(|line| {
        let (hash, rest) = line.split_once(' ')?;
        (rest.trim() == "is the first bad commit"
            && hash.len() == 40
            && hash.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| hash.to_owned())
    })
}

/// Test the commit checked out in `worktree` (a bisection step, or the revert check).
fn test_head(worktree: &Path, test: &mut dyn StepTest) -> Result<Step> {
    let commit = resolve(worktree, "HEAD")?;
    let started = Instant::now();
    let verdict = test.test(worktree, &commit)?;
    Ok(Step {
        subject: subject(worktree, &commit)?,
        commit,
        verdict,
        took: started.elapsed(),
    })
}

/// Bisect between `good` and `bad` (full hashes) in `worktree`, testing each commit git checks
/// out with `test`; then revert the first bad commit on top of `bad` and test that.
pub fn bisect(
    worktree: &Path,
    good: &str,
    bad: &str,
    test: &mut dyn StepTest,
    mut report: impl FnMut(&Step),
) -> Result<Bisection> {
    ensure!(good != bad, "--good and --bad are the same commit");
    let is_ancestor = git(worktree, &["merge-base", "--is-ancestor", good, bad]).is_ok();
    ensure!(
        is_ancestor,
        "--good {good} is not an ancestor of --bad {bad}"
    );
    let mut output = git_bisect(worktree, &["bisect", "start", bad, good])?;
    let mut steps = Vec::new();
    let mut first_bad = None;
    for _ in 0..MAX_STEPS {
        if let Some(hash) = first_bad_in(&output) {
            first_bad = Some((hash.clone(), subject(worktree, &hash)?));
            break;
        }
        if output.contains(ONLY_SKIPPED) {
            break;
        }
        let step = test_head(worktree, test)?;
        report(&step);
        let verdict = step.verdict;
        steps.push(step);
        output = git_bisect(worktree, &["bisect", verdict.git_word()])?;
    }
    if first_bad.is_none() && steps.len() >= MAX_STEPS {
        bail!("no first bad commit after {MAX_STEPS} steps");
    }
    git(worktree, &["bisect", "reset", bad])?;
    let mut bisection = Bisection {
        steps,
        first_bad,
        revert: None,
        revert_note: None,
    };
    let Some((culprit, _)) = bisection.first_bad.clone() else {
        bisection.revert_note = Some("skipped commits hide the first bad one".to_owned());
        return Ok(bisection);
    };
    // KernelCI's check: the culprit reverted on top of BAD must make the case pass again.
    if let Err(e) = git(worktree, &["revert", "--no-edit", &culprit]) {
        let _ = git(worktree, &["revert", "--abort"]);
        bisection.revert_note = Some(format!("the revert does not apply on --bad: {e:#}"));
        return Ok(bisection);
    }
    let step = test_head(worktree, test)?;
    report(&step);
    bisection.revert = Some(step);
    Ok(bisection)
}

/// A commit's verdict from its run: bad when a run of the case failed on the kernel's
/// behaviour (or timed out), good when every run of it passed, else skip (it never ran, it
/// failed on the harness alone — a count that failed — or it was skipped).
pub fn verdict_of(report: &crate::report::Report, case: &str) -> StepVerdict {
    use crate::results::Verdict;
    let patterns = [case.to_owned()];
    let runs: Vec<&crate::results::CaseOutcome> = report
        .runs
        .iter()
        .flat_map(|run| &run.cases)
        .filter(|c| crate::runs::case_selected(&c.name, &patterns))
        .collect();
    let harness_only = |c: &crate::results::CaseOutcome| {
        c.verdict == Verdict::Fail && crate::retry::retryable(c).is_ok()
    };
    if runs.iter().any(|c| {
        matches!(
            c.verdict,
            Verdict::Fail | Verdict::Timeout | Verdict::Caught | Verdict::Known
        ) && !harness_only(c)
    }) {
        StepVerdict::Bad
    } else if !runs.is_empty() && runs.iter().all(|c| c.verdict == Verdict::Pass) {
        StepVerdict::Good
    } else {
        StepVerdict::Skip
    }
}

impl Bisection {
    /// Whether the culprit was found and its revert made the case pass.
    pub fn confirmed(&self) -> bool {
        self.first_bad.is_some()
            && self
                .revert
                .as_ref()
                .is_some_and(|r| r.verdict == StepVerdict::Good)
    }

    /// The closing lines: `first bad commit: <sha> <subject>`, then the revert's verdict.
    pub fn summary(&self) -> String {
        let mut out = match &self.first_bad {
            Some((hash, subject)) => format!("first bad commit: {hash} {subject}\n"),
            None => "first bad commit: not found (skipped commits hide it)\n".to_owned(),
        };
        match (&self.revert, &self.revert_note) {
            (Some(step), _) if step.verdict == StepVerdict::Good => out.push_str(&format!(
                "confirmed: with it reverted on --bad ({}), the case passes\n",
                &step.commit[..12.min(step.commit.len())]
            )),
            (Some(step), _) => out.push_str(&format!(
                "not confirmed: with it reverted on --bad ({}), the case is still {}\n",
                &step.commit[..12.min(step.commit.len())],
                step.verdict.git_word()
            )),
            (None, Some(note)) => out.push_str(&format!("not verified: {note}\n")),
            (None, None) => {}
        }
        let total: Duration = self
            .steps
            .iter()
            .chain(self.revert.as_ref())
            .map(|s| s.took)
            .sum();
        out.push_str(&format!(
            "{} bisection steps and {} revert check, {:.0} s in all\n",
            self.steps.len(),
            usize::from(self.revert.is_some()),
            total.as_secs_f64()
        ));
        out
    }
}

#[cfg(test)]
mod tests;
