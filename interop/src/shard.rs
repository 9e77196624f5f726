//! The matrix split across CI runners: `--shard I/N` runs the I-th of N deterministic shares of
//! the kernel × suite pairs, and `interop-post merge` puts the shards' run directories back
//! together into one report, JUnit file and page (the snapshot check already reads several run
//! directories: `interop-post snapshots --out A --out B ...`).
//!
//! The share is by position in the plan (kernels in matrix order, suites in the order given),
//! round-robin, so every pair is in exactly one shard and shards differ by at most one pair,
//! whatever N. A shard builds only the kernels its pairs need.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{bail, ensure, Context, Result};

use crate::report::Report;

/// `I/N`: the I-th (1-based) of N shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// Most shards a run may be split into.
pub const MAX_SHARDS: usize = 64;

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?}: expected I/N, e.g. 2/3"))?;
        let parse = |s: &str| {
            s.trim()
                .parse::<usize>()
                .map_err(|e| format!("{text:?}: {e}"))
        };
        let (index, count) = (parse(index)?, parse(count)?);
        if count == 0 || count > MAX_SHARDS || index == 0 || index > count {
            return Err(format!("{text:?}: I/N needs 1 <= I <= N <= {MAX_SHARDS}"));
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// This shard's share of `pairs` (in plan order): every N-th, starting at the I-th.
    pub fn select<T: Clone>(&self, pairs: &[T]) -> Vec<T> {
        pairs
            .iter()
            .enumerate()
            .filter(|(position, _)| position % self.count == self.index - 1)
            .map(|(_, pair)| pair.clone())
            .collect()
    }
}

/// The reports of the shards' run directories as one: every run once (a kernel × suite ×
/// attempt in two shards is an error: the shards overlapped).
pub fn merge_reports(dirs: &[PathBuf]) -> Result<Report> {
    ensure!(!dirs.is_empty(), "merge: no run directory given");
    let mut merged = Report { runs: Vec::new() };
    for dir in dirs {
        let path = dir.join("report.json");
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("merge: {}", path.display()))?;
        let report: Report =
            serde_json::from_str(&text).with_context(|| format!("merge: {}", path.display()))?;
        for run in report.runs {
            if merged
                .runs
                .iter()
                .any(|r| r.kernel == run.kernel && r.suite == run.suite && r.attempt == run.attempt)
            {
                bail!(
                    "merge: {} {} (attempt {}) is in two run directories; the shards overlap",
                    run.kernel,
                    run.suite,
                    run.attempt
                );
            }
            merged.runs.push(run);
        }
    }
    Ok(merged)
}

/// Lay the merged run directory out: its report and JUnit file, and under `runs/` a link to
/// each shard's `runs/<kernel>/<suite>` directory (the page links into them).
pub fn write_merged(dirs: &[PathBuf], out: &Path) -> Result<Report> {
    let report = merge_reports(dirs)?;
    std::fs::create_dir_all(out.join("runs"))?;
    for dir in dirs {
        let runs = dir.join("runs");
        let Ok(kernels) = std::fs::read_dir(&runs) else {
            continue;
        };
        for kernel in kernels.flatten() {
            let kernel_out = out.join("runs").join(kernel.file_name());
            std::fs::create_dir_all(&kernel_out)?;
            for suite in std::fs::read_dir(kernel.path())?.flatten() {
                let link = kernel_out.join(suite.file_name());
                if link.exists() {
                    continue;
                }
                let target = std::fs::canonicalize(suite.path())?;
                std::os::unix::fs::symlink(&target, &link)
                    .with_context(|| format!("linking {}", link.display()))?;
            }
        }
    }
    std::fs::write(out.join("report.json"), report.to_json())?;
    std::fs::write(out.join("junit.xml"), report.junit())?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_plan_evenly_whatever_n() {
        let pairs: Vec<(usize, usize)> = (0..7).flat_map(|k| (0..4).map(move |s| (k, s))).collect();
        for count in 1..=10 {
            let mut all = Vec::new();
            let mut sizes = Vec::new();
            for index in 1..=count {
                let share = Shard { index, count }.select(&pairs);
                sizes.push(share.len());
                all.extend(share);
            }
            all.sort();
            assert_eq!(all, pairs, "{count} shards cover every pair once");
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(max - min <= 1, "{count} shards: {sizes:?}");
        }
        // Deterministic: the same shard of the same plan is the same pairs.
        let shard: Shard = "2/3".parse().unwrap();
        assert_eq!(shard.select(&pairs), shard.select(&pairs));
        assert_eq!(shard.to_string(), "2/3");
    }

    #[test]
    fn bad_shards_are_refused_with_the_rule() {
        for bad in ["0/3", "4/3", "1/0", "x/2", "3", "1/65"] {
            let err = bad.parse::<Shard>().unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
    }

    fn report_with(runs: &[(&str, &str, u32)]) -> String {
        let runs: Vec<String> = runs
            .iter()
            .map(|(kernel, suite, attempt)| {
                format!(
                    r#"{{"kernel": "{kernel}", "release": "r", "accel": "tcg", "suite": "{suite}",
                       "attempt": {attempt}, "cases": [], "artifacts": [], "wall_ms": 1}}"#
                )
            })
            .collect();
        format!(r#"{{"runs": [{}]}}"#, runs.join(","))
    }

    #[test]
    fn merged_shards_are_every_run_once_and_overlap_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        for (path, runs) in [
            (
                &a,
                vec![("linux-6.1", "smoke", 1), ("linux-6.12", "drc", 1)],
            ),
            (&b, vec![("linux-6.1", "drc", 1)]),
        ] {
            std::fs::create_dir_all(path.join("runs/linux-6.1/smoke")).unwrap();
            std::fs::write(path.join("report.json"), report_with(&runs)).unwrap();
        }
        let out = dir.path().join("merged");
        let report = write_merged(&[a.clone(), b.clone()], &out).unwrap();
        assert_eq!(report.runs.len(), 3);
        assert!(out.join("report.json").is_file() && out.join("junit.xml").is_file());
        assert!(out.join("runs/linux-6.1/smoke").is_dir());
        // The same run in two shards: refused.
        std::fs::write(
            b.join("report.json"),
            report_with(&[("linux-6.1", "smoke", 1)]),
        )
        .unwrap();
        let err = merge_reports(&[a, b]).unwrap_err().to_string();
        assert!(err.contains("the shards overlap"), "{err}");
    }
}
