//! Runs that are kept, and runs that are chosen: each `interop run` gets its own directory
//! `target/interop/runs/<timestamp>-<id>/` (report, JUnit, per-case logs, dmesg, pcaps),
//! `target/interop/last` points at the newest, old runs are pruned by count; `--case` globs pick
//! the cases of a suite (its `always` cases — setup, server start/stop — run regardless).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{ensure, Context, Result};

use crate::suite::Suite;

/// Glob match with `*` (any run) and `?` (one character); no other metacharacters.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // Iterative matcher with one backtrack point: linear in practice, never recursive.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Whether `case` is chosen by `patterns`: a pattern matches the whole name (`nfsd.after-ack`)
/// or the scenario after the first dot (`after-ack` picks it in every suite).
pub fn case_selected(case: &str, patterns: &[String]) -> bool {
    let scenario = case.split_once('.').map_or(case, |(_, s)| s);
    patterns
        .iter()
        .any(|p| glob_match(p, case) || glob_match(p, scenario))
}

/// `suite` reduced to the cases `patterns` choose plus its `always` cases; `None` when no case of
/// its own is chosen (the suite is then not run at all).
pub fn select_cases(suite: &Suite, patterns: &[String]) -> Option<Suite> {
    if patterns.is_empty() {
        return Some(suite.clone());
    }
    let mut chosen = suite.clone();
    chosen
        .cases
        .retain(|c| c.always || case_selected(&c.name, patterns));
    chosen.cases.iter().any(|c| !c.always).then_some(chosen)
}

/// A fresh run directory under `runs_root`, created exclusively, named `<UTC time>-<id>`.
pub fn create_run_dir(runs_root: &Path) -> Result<PathBuf> {
    fs::create_dir_all(runs_root).with_context(|| format!("creating {}", runs_root.display()))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let stamp = utc_stamp(now.as_secs());
    for attempt in 0..100u32 {
        let id = format!(
            "{:06x}",
            (now.subsec_nanos() ^ std::process::id().rotate_left(8) ^ attempt.wrapping_mul(0x9e37))
                & 0xff_ffff
        );
        let dir = runs_root.join(format!("{stamp}-{id}"));
        match fs::create_dir(&dir) {
            Ok(()) => {
                use std::os::unix::fs::PermissionsExt;
                fs::set_permissions(&dir, fs::Permissions::from_mode(0o755))?;
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
        }
    }
    anyhow::bail!(
        "could not create a fresh run directory in {}",
        runs_root.display()
    )
}

/// `YYYYMMDDTHHMMSSZ` for seconds since the epoch (civil-from-days, proleptic Gregorian).
pub fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Point `<out_root>/last` at `run_dir` (replacing an older link atomically).
pub fn link_last(out_root: &Path, run_dir: &Path) -> Result<()> {
    let last = out_root.join("last");
    let temp = out_root.join(".last.new");
    let _ = fs::remove_file(&temp);
    let target = run_dir.strip_prefix(out_root).unwrap_or(run_dir);
    std::os::unix::fs::symlink(target, &temp)?;
    fs::rename(&temp, &last).with_context(|| format!("updating {}", last.display()))
}

/// Remove the oldest run directories so that at most `keep` remain (names sort by time).
/// Returns the directories removed.
pub fn prune_runs(runs_root: &Path, keep: usize) -> Result<Vec<PathBuf>> {
    ensure!(keep >= 1, "--keep-runs must be at least 1");
    let mut dirs: Vec<PathBuf> = match fs::read_dir(runs_root) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.is_dir()
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.len() > 17 && n.as_bytes()[8] == b'T')
            })
            .collect(),
        Err(_) => return Ok(Vec::new()),
    };
    dirs.sort();
    let excess = dirs.len().saturating_sub(keep);
    let removed: Vec<PathBuf> = dirs.into_iter().take(excess).collect();
    for dir in &removed {
        fs::remove_dir_all(dir).with_context(|| format!("pruning {}", dir.display()))?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        assert!(glob_match("after-ack", "after-ack"));
        assert!(!glob_match("after-ack", "after-ack-late"));
        assert!(glob_match("after-*", "after-ack-late"));
        assert!(glob_match("*ack*", "in-ack-window"));
        assert!(glob_match("nfsd.?urst", "nfsd.burst"));
        assert!(!glob_match("*.once", "nfsd.once.2"));
        assert!(glob_match("*", ""));
    }

    #[test]
    fn a_scenario_pattern_picks_it_in_every_suite() {
        let patterns = vec!["after-ack".to_owned()];
        assert!(case_selected("nfsd.after-ack", &patterns));
        assert!(case_selected("acked.after-ack", &patterns));
        assert!(!case_selected("nfsd.after-ack-late", &patterns));
        assert!(case_selected("nfsd.once", &["nfsd.once".to_owned()]));
    }

    #[test]
    fn selection_keeps_always_cases_and_drops_empty_suites() {
        let suite = Suite::parse(
            r#"
name = "drc"
boot_timeout_secs = 60
[[case]]
name = "setup"
server = "s.sh"
timeout_secs = 10
always = true
[[case]]
name = "nfsd.once"
client = "c.sh"
timeout_secs = 10
[[case]]
name = "nfsd.after-ack"
client = "c.sh"
timeout_secs = 10
"#,
        )
        .unwrap();
        let chosen = select_cases(&suite, &["after-ack".to_owned()]).unwrap();
        let names: Vec<&str> = chosen.cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["setup", "nfsd.after-ack"]);
        assert!(select_cases(&suite, &["no-such".to_owned()]).is_none());
        assert_eq!(select_cases(&suite, &[]).unwrap().cases.len(), 3);
    }

    #[test]
    fn run_dirs_are_fresh_linked_and_pruned() {
        let root = tempfile::tempdir().unwrap();
        let runs = root.path().join("runs");
        let first = create_run_dir(&runs).unwrap();
        let second = create_run_dir(&runs).unwrap();
        assert_ne!(first, second);
        link_last(root.path(), &second).unwrap();
        assert_eq!(
            fs::canonicalize(root.path().join("last")).unwrap(),
            fs::canonicalize(&second).unwrap()
        );
        for _ in 0..3 {
            create_run_dir(&runs).unwrap();
        }
        let removed = prune_runs(&runs, 2).unwrap();
        assert_eq!(removed.len(), 3);
        assert_eq!(fs::read_dir(&runs).unwrap().count(), 2);
    }

    #[test]
    fn stamps_are_utc_calendar_times() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(1_796_083_200), "20261201T000000Z");
        assert_eq!(utc_stamp(951_782_400 + 3_661), "20000229T010101Z");
    }
}
