//! Run reports: the summary table on stdout, `report.json`, and `junit.xml`.

use std::fmt::Write as _;

use serde::Serialize;

use crate::results::{CaseOutcome, Verdict};

/// A file the run produced (pcap, dmesg, logs), with its checksum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Artifact {
    pub name: String,
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// One suite on one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelRun {
    pub kernel: String,
    /// `uname -r` inside the guest (or from the module tree when the guest never booted).
    pub release: String,
    /// `kvm` or `tcg`.
    pub accel: String,
    pub suite: String,
    pub wall_ms: u64,
    /// Time from starting qemu until both guest drivers started.
    pub boot_ms: Option<u64>,
    pub cases: Vec<CaseOutcome>,
    pub artifacts: Vec<Artifact>,
    /// A harness-level failure (boot timeout, qemu crash) that stopped the run.
    pub error: Option<String>,
    /// Which repetition this is (`--repeat`), from 1.
    pub attempt: u32,
}

impl KernelRun {
    pub fn passed(&self) -> bool {
        self.error.is_none()
            && !self.cases.is_empty()
            && self.cases.iter().all(|c| c.verdict.is_ok())
    }
}

/// The whole report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    pub runs: Vec<KernelRun>,
}

impl Report {
    pub fn passed(&self) -> bool {
        !self.runs.is_empty() && self.runs.iter().all(KernelRun::passed)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// Summary table: one row per kernel × suite × case, then the failure reasons.
    pub fn table(&self) -> String {
        let mut out = String::new();
        // Columns as wide as their longest value (kernel and case names vary a lot).
        let kw = self
            .runs
            .iter()
            .map(|r| r.kernel.len())
            .max()
            .unwrap_or(0)
            .max(6);
        let cw = self
            .runs
            .iter()
            .flat_map(|r| r.cases.iter().map(|c| c.name.len()))
            .max()
            .unwrap_or(0)
            .max(7);
        let _ = writeln!(
            out,
            "{:<kw$} {:<22} {:<5} {:<8} {:<cw$} {:<8} {:>8}",
            "kernel", "release", "accel", "suite", "case", "verdict", "time"
        );
        let mut reasons = Vec::new();
        for run in &self.runs {
            for case in &run.cases {
                let _ = writeln!(
                    out,
                    "{:<kw$} {:<22} {:<5} {:<8} {:<cw$} {:<8} {:>7.1}s",
                    run.kernel,
                    run.release,
                    run.accel,
                    run.suite,
                    case.name,
                    case.verdict.as_str(),
                    case.duration_ms as f64 / 1000.0
                );
                for reason in &case.reasons {
                    reasons.push(format!(
                        "{} {} {}: {reason}",
                        run.kernel, run.suite, case.name
                    ));
                }
            }
            let status = if run.passed() { "PASS" } else { "FAIL" };
            let _ = writeln!(
                out,
                "{:<kw$} {:<22} {:<5} {:<8} {:<cw$} {:<8} {:>7.1}s",
                run.kernel,
                run.release,
                run.accel,
                run.suite,
                "(total)",
                status,
                run.wall_ms as f64 / 1000.0
            );
            if let Some(error) = &run.error {
                reasons.push(format!("{} {}: {error}", run.kernel, run.suite));
            }
        }
        for reason in reasons {
            let _ = writeln!(out, "  - {reason}");
        }
        out
    }

    /// `--repeat`: per kernel × suite × case, how many attempts passed, and the distribution of
    /// the outcomes the client reported (statuses, replies) — timing-dependent scenarios differ.
    pub fn repeat_summary(&self) -> String {
        use std::collections::BTreeMap;
        type Key = (String, String, String);
        let mut tally: BTreeMap<Key, (usize, usize, BTreeMap<String, usize>)> = BTreeMap::new();
        for run in &self.runs {
            for case in &run.cases {
                let entry = tally
                    .entry((run.kernel.clone(), run.suite.clone(), case.name.clone()))
                    .or_default();
                entry.1 += 1;
                if case.verdict.is_ok() {
                    entry.0 += 1;
                }
                let outcome: Vec<String> = case
                    .results
                    .iter()
                    .filter(|r| r.role == "cli")
                    .flat_map(|r| {
                        ["statuses", "replies", "executions"]
                            .iter()
                            .filter_map(|k| r.fields.get(*k).map(|v| format!("{k}={v}")))
                            .collect::<Vec<_>>()
                    })
                    .collect();
                if !outcome.is_empty() {
                    *entry.2.entry(outcome.join(" ")).or_default() += 1;
                }
            }
        }
        let mut out = String::from("repeat summary (passed/attempts, outcomes seen):\n");
        for ((kernel, suite, case), (passed, total, outcomes)) in tally {
            let _ = writeln!(out, "  {kernel} {suite} {case}: {passed}/{total}");
            if outcomes.len() > 1 {
                for (outcome, count) in outcomes {
                    let _ = writeln!(out, "      {count}x {outcome}");
                }
            }
        }
        out
    }

    /// JUnit XML: a testsuite per kernel × suite, a testcase per case.
    pub fn junit(&self) -> String {
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
        for run in &self.runs {
            let failures = run.cases.iter().filter(|c| !c.verdict.is_ok()).count()
                + usize::from(run.error.is_some());
            let _ = writeln!(
                out,
                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" time=\"{:.3}\">",
                xml_escape(&format!("{}.{}", run.kernel, run.suite)),
                run.cases.len() + usize::from(run.error.is_some()),
                run.wall_ms as f64 / 1000.0
            );
            let _ = writeln!(
                out,
                "    <properties><property name=\"release\" value=\"{}\"/><property name=\"accel\" value=\"{}\"/></properties>",
                xml_escape(&run.release),
                xml_escape(&run.accel)
            );
            for case in &run.cases {
                let _ = write!(
                    out,
                    "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                    xml_escape(&format!("{}.{}", run.kernel, run.suite)),
                    xml_escape(&case.name),
                    case.duration_ms as f64 / 1000.0
                );
                if case.verdict == Verdict::Pass {
                    out.push_str("/>\n");
                } else if case.verdict.is_ok() {
                    // Caught mutants and known failures: green, with the reason kept readable.
                    let _ = writeln!(
                        out,
                        ">\n      <system-out>{}: {}</system-out>\n    </testcase>",
                        case.verdict.as_str(),
                        xml_escape(&case.reasons.join("\n"))
                    );
                } else {
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                        case.verdict.as_str(),
                        xml_escape(&case.reasons.join("\n"))
                    );
                }
            }
            if let Some(error) = &run.error {
                let _ = writeln!(
                    out,
                    "    <testcase classname=\"{}\" name=\"harness\"><error message=\"harness\">{}</error></testcase>",
                    xml_escape(&format!("{}.{}", run.kernel, run.suite)),
                    xml_escape(error)
                );
            }
            out.push_str("  </testsuite>\n");
        }
        out.push_str("</testsuites>\n");
        out
    }
}

/// Escape text for XML attributes and content; drop control characters XML 1.0 forbids.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::ResultLine;

    fn outcome(name: &str, verdict: Verdict, reasons: &[&str]) -> CaseOutcome {
        CaseOutcome {
            name: name.into(),
            verdict,
            duration_ms: 1500,
            reasons: reasons.iter().map(|s| s.to_string()).collect(),
            results: vec![ResultLine {
                case: name.into(),
                role: "cli".into(),
                verdict: verdict.as_str().into(),
                fields: [("md5_read".to_string(), "aa".to_string())].into(),
            }],
        }
    }

    fn run(kernel: &str, cases: Vec<CaseOutcome>) -> KernelRun {
        KernelRun {
            kernel: kernel.into(),
            release: "6.1.0-50-amd64".into(),
            accel: "tcg".into(),
            suite: "smoke".into(),
            wall_ms: 30_000,
            boot_ms: Some(4_000),
            cases,
            artifacts: vec![],
            error: None,
            attempt: 1,
        }
    }

    #[test]
    fn report_passes_only_when_every_case_passes() {
        let good = Report {
            runs: vec![run("linux-6.1", vec![outcome("nfs3", Verdict::Pass, &[])])],
        };
        assert!(good.passed());
        let bad = Report {
            runs: vec![
                run("linux-6.1", vec![outcome("nfs3", Verdict::Pass, &[])]),
                run(
                    "linux-7.x",
                    vec![outcome("nfs3", Verdict::Timeout, &["cli: killed"])],
                ),
            ],
        };
        assert!(!bad.passed());
        assert!(!Report::default().passed());
        let mut errored = run("linux-6.1", vec![outcome("nfs3", Verdict::Pass, &[])]);
        errored.error = Some("boot timed out".into());
        assert!(!errored.passed());
    }

    #[test]
    fn table_rows_and_reasons() {
        let report = Report {
            runs: vec![run(
                "linux-6.1",
                vec![
                    outcome("rping", Verdict::Pass, &[]),
                    outcome("nfs3", Verdict::Fail, &["md5 differs"]),
                ],
            )],
        };
        let table = report.table();
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("kernel"));
        assert!(
            lines[1].contains("rping") && lines[1].contains("pass") && lines[1].ends_with("1.5s")
        );
        assert!(lines[2].contains("nfs3") && lines[2].contains("fail"));
        assert!(
            lines[3].contains("(total)")
                && lines[3].contains("FAIL")
                && lines[3].ends_with("30.0s")
        );
        assert_eq!(lines[4], "  - linux-6.1 smoke nfs3: md5 differs");
    }

    #[test]
    fn junit_counts_failures_and_escapes() {
        let report = Report {
            runs: vec![run(
                "linux-6.1",
                vec![
                    outcome("rping", Verdict::Pass, &[]),
                    outcome("nfs3", Verdict::Fail, &["<bad> & \"worse\"\u{1}"]),
                ],
            )],
        };
        let xml = report.junit();
        assert!(xml.contains(
            "<testsuite name=\"linux-6.1.smoke\" tests=\"2\" failures=\"1\" time=\"30.000\">"
        ));
        assert!(
            xml.contains("<testcase classname=\"linux-6.1.smoke\" name=\"rping\" time=\"1.500\"/>")
        );
        assert!(xml.contains("&lt;bad&gt; &amp; &quot;worse&quot;</failure>"));
        assert!(!xml.contains('\u{1}'));
    }

    #[test]
    fn json_carries_release_accel_and_checksums() {
        let report = Report {
            runs: vec![run("linux-6.1", vec![outcome("nfs3", Verdict::Pass, &[])])],
        };
        let value: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        let first = &value["runs"][0];
        assert_eq!(first["release"], "6.1.0-50-amd64");
        assert_eq!(first["accel"], "tcg");
        assert_eq!(first["cases"][0]["verdict"], "pass");
        assert_eq!(first["cases"][0]["results"][0]["fields"]["md5_read"], "aa");
    }
}
