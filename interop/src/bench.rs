//! `just bench-interop` post-processing: the bench-interop suite's RESULT lines (one per target
//! per workload, both targets measured back to back in the same run over the same rxe link) as
//! pairs with the ratio ours / nfsd.

use std::fmt::Write as _;

use serde_json::Value;

/// The metrics compared, with the direction that is better (for the reader of the table).
pub const METRICS: &[(&str, &str)] = &[
    ("calls_per_sec", "higher is better"),
    ("p50_us", "lower is better"),
    ("p99_us", "lower is better"),
    ("mib_per_sec", "higher is better"),
];

/// One metric of one workload on one kernel: our server and kernel nfsd side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchPair {
    pub kernel: String,
    pub workload: String,
    pub metric: String,
    pub ours: f64,
    pub nfsd: f64,
}

impl BenchPair {
    /// ours / nfsd; `None` when nfsd's value is zero (no meaningful ratio).
    pub fn ratio(&self) -> Option<f64> {
        (self.nfsd != 0.0).then(|| self.ours / self.nfsd)
    }
}

fn metric(fields: &Value, name: &str) -> Option<f64> {
    fields
        .get(name)?
        .as_str()?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}

/// Pairs from a `report.json` value: runs of suite `bench-interop`, RESULT lines with
/// `target=rig` and `target=nfsd` in the same case. Unpaired or unparsable values are skipped.
pub fn pairs(report: &Value) -> Vec<BenchPair> {
    let mut found = Vec::new();
    let runs = report.get("runs").and_then(Value::as_array);
    for run in runs.into_iter().flatten() {
        if run.get("suite").and_then(Value::as_str) != Some("bench-interop") {
            continue;
        }
        let kernel = run.get("kernel").and_then(Value::as_str).unwrap_or("?");
        for case in run
            .get("cases")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let workload = case.get("name").and_then(Value::as_str).unwrap_or("?");
            let results: Vec<&Value> = case
                .get("results")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|r| r.get("verdict").and_then(Value::as_str) == Some("pass"))
                .filter_map(|r| r.get("fields"))
                .collect();
            let of_target = |target: &str| {
                results
                    .iter()
                    .find(|f| f.get("target").and_then(Value::as_str) == Some(target))
                    .copied()
            };
            let (Some(ours), Some(nfsd)) = (of_target("rig"), of_target("nfsd")) else {
                continue;
            };
            for (name, _) in METRICS {
                if let (Some(o), Some(n)) = (metric(ours, name), metric(nfsd, name)) {
                    found.push(BenchPair {
                        kernel: kernel.to_owned(),
                        workload: workload.to_owned(),
                        metric: (*name).to_owned(),
                        ours: o,
                        nfsd: n,
                    });
                }
            }
        }
    }
    found
}

/// The table `just bench-interop` prints.
pub fn table(pairs: &[BenchPair]) -> String {
    let mut text = format!(
        "{:<12} {:<10} {:<14} {:>14} {:>14} {:>8}\n",
        "kernel", "workload", "metric", "rig serve", "kernel nfsd", "ratio"
    );
    for pair in pairs {
        let ratio = pair
            .ratio()
            .map(|r| format!("{r:.2}"))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            text,
            "{:<12} {:<10} {:<14} {:>14.1} {:>14.1} {:>8}",
            pair.kernel, pair.workload, pair.metric, pair.ours, pair.nfsd, ratio
        );
    }
    text.push_str("ratio = rig serve / kernel nfsd; ");
    text.push_str(
        &METRICS
            .iter()
            .map(|(m, better)| format!("{m}: {better}"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Value {
        serde_json::json!({"runs": [
            {"kernel": "linux-6.1", "suite": "bench-interop", "cases": [
                {"name": "null", "results": [
                    {"verdict": "pass", "fields": {"target": "rig", "calls_per_sec": "2000", "p50_us": "400"}},
                    {"verdict": "pass", "fields": {"target": "nfsd", "calls_per_sec": "4000", "p50_us": "250"}}
                ]},
                {"name": "read-4k", "results": [
                    {"verdict": "pass", "fields": {"target": "rig", "mib_per_sec": "10"}},
                    {"verdict": "fail", "fields": {"target": "nfsd", "mib_per_sec": "20"}}
                ]}
            ]},
            {"kernel": "linux-6.1", "suite": "smoke", "cases": []}
        ]})
    }

    #[test]
    fn pairs_come_from_passing_lines_of_both_targets() {
        let found = pairs(&report());
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].metric, "calls_per_sec");
        assert_eq!(found[0].ratio(), Some(0.5));
        assert_eq!(found[1].metric, "p50_us");
        assert_eq!(found[1].ratio(), Some(1.6));
    }

    #[test]
    fn zero_and_garbage_values_give_no_ratio() {
        let pair = BenchPair {
            kernel: "k".into(),
            workload: "null".into(),
            metric: "calls_per_sec".into(),
            ours: 1.0,
            nfsd: 0.0,
        };
        assert_eq!(pair.ratio(), None);
        assert!(table(&[pair]).contains(" -\n"));
        let garbage = serde_json::json!({"target": "rig", "calls_per_sec": "NaN"});
        assert_eq!(metric(&garbage, "calls_per_sec"), None);
        assert!(pairs(&serde_json::json!({"runs": 3})).is_empty());
    }

    #[test]
    fn table_lists_each_pair_with_its_ratio() {
        let text = table(&pairs(&report()));
        assert!(text.contains("linux-6.1    null       calls_per_sec"));
        assert!(text.contains("0.50\n"));
        assert!(text.contains("1.60\n"));
    }
}
