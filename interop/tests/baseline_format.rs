//! Every recorded outcome of every committed interop baseline is in the format a run renders
//! today: each `## verdict` section carries a `judgement:` line (the guest's re-judged verdict,
//! which `crates/rdma`'s Verdict always serialises). An outcome recorded before judgements
//! existed can never be reproduced by a run, yet it would count in its file's
//! "# recorded: N outcomes" header and offer a closest diff that can never close; 36 such
//! outcomes were removed (issue 33), and this keeps them from coming back.

use std::path::{Path, PathBuf};

use interop::snapshots::Baseline;

fn committed_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/snapshots/interop")
}

fn committed_baselines() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    let mut dirs = vec![committed_root()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "snap") {
                let text = std::fs::read_to_string(&path).unwrap();
                files.push((path, text));
            }
        }
    }
    files.sort();
    files
}

/// The `## verdict N` sections of one outcome's body that have no `judgement:` line.
fn verdicts_without_judgement(body: &str) -> Vec<String> {
    let mut missing = Vec::new();
    let mut current: Option<(&str, bool)> = None;
    for line in body.lines() {
        if line.starts_with("## ") {
            if let Some((name, false)) = current {
                missing.push(name.to_owned());
            }
            current = line.starts_with("## verdict ").then_some((line, false));
        } else if let Some((_, seen)) = current.as_mut() {
            *seen |= line.starts_with("judgement: ");
        }
    }
    if let Some((name, false)) = current {
        missing.push(name.to_owned());
    }
    missing
}

#[test]
fn every_recorded_outcome_has_a_judgement_in_each_verdict() {
    let files = committed_baselines();
    // The walk found the baselines (a moved directory would otherwise pass by checking nothing).
    assert!(files.len() > 200, "{} baselines found", files.len());
    let mut old = Vec::new();
    let mut outcomes = 0;
    for (path, text) in &files {
        let baseline = Baseline::parse(text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        for (index, outcome) in baseline.outcomes.iter().enumerate() {
            outcomes += 1;
            for verdict in verdicts_without_judgement(&outcome.body) {
                old.push(format!(
                    "{}: outcome {}: {verdict} has no judgement",
                    path.strip_prefix(committed_root())
                        .unwrap_or(path)
                        .display(),
                    index + 1
                ));
            }
        }
    }
    assert!(
        old.is_empty(),
        "{} old-format verdicts in {outcomes} recorded outcomes (no run reproduces them; remove \
         the outcome or re-record it with interop-post snapshots --accept):\n{}",
        old.len(),
        old.join("\n")
    );
}

#[test]
fn the_format_check_sees_a_verdict_without_judgement() {
    let body = "## verdict 1\nexecutions: 1\njudgement: pass\n## verdict 2\nexecutions: 1\n\
                ## trace\nc1 C CM_REQ\n";
    assert_eq!(verdicts_without_judgement(body), ["## verdict 2"]);
    assert!(verdicts_without_judgement("## verdict 1\njudgement: fail\n").is_empty());
}
