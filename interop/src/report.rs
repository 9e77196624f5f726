//! Run reports: the summary table on stdout, `report.json`, and `junit.xml` (through
//! `quick-junit`: failures vs harness errors, skipped known/not-run cases, case files in
//! `system-out`).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::results::{CaseOutcome, Verdict};

/// A file the run produced (pcap, dmesg, logs), with its checksum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    pub name: String,
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// Where a kernel came from, as data (KCIDB's checkout and build: `crate::kcidb`); `origin`
/// says the same in words for the table and the page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// What the kernel was made from: Debian's binary packages (`linux-image-...`), a Debian
    /// source package and its version (`linux-source-6.12 6.12.117-1`), a developer's tree
    /// (`--kernel-src` path) or image (`--kernel-image` path).
    #[serde(default)]
    pub source: String,
    /// The HEAD commit of a `--kernel-src` git tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Patch series applied in order: committed series by name, mailbox series as reports name
    /// them (`mbox::SeriesName::describe`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<String>,
    /// KCIDB's patchset hash over every patch file applied, in order (empty: none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub patchset_hash: String,
    /// The Message-ID of the first mailbox series applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The configuration: `debian` (Debian's own), `rig` plus its fragments, `prebuilt`.
    #[serde(default)]
    pub config: String,
    /// The compiler of a source build (`gcc --version`'s first line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler: Option<String>,
    /// The kernel's cache key: its inputs' identity.
    #[serde(default)]
    pub key: String,
}

/// One suite on one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelRun {
    pub kernel: String,
    /// `uname -r` inside the guest (or from the module tree when the guest never booted).
    pub release: String,
    /// The kernel's Debian version (`6.1.192-3`): `uname -r` does not say it (`6.1.0-57-amd64`).
    #[serde(default)]
    pub version: String,
    /// Where the kernel came from: its pocket (`bookworm-security`) or its build.
    #[serde(default)]
    pub origin: String,
    /// The same as data.
    #[serde(default)]
    pub provenance: Provenance,
    /// `kvm` or `tcg`.
    pub accel: String,
    /// The soft-RDMA provider the guests ran over (`rxe`, `siw`).
    #[serde(default)]
    pub transport: crate::matrix::Transport,
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
    /// A guest's kernel died (panicked) during the run: how, from its console.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_died: Option<String>,
    /// This run is the retry of a first attempt whose guest died: why, and where the first
    /// attempt's files are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retried_after: Option<String>,
    /// On a run that vm-images/expectations.toml says must catch something (a mutant kernel or
    /// DRC policy): "the gate caught N of M expected", counting a `known` case that passed as
    /// not caught.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
}

impl KernelRun {
    /// `6.1.192-3 (bookworm-security) 6.1.0-57-amd64`: version, origin and release together.
    pub fn version_and_release(&self) -> String {
        if self.version.is_empty() || self.version == self.release {
            self.release.clone()
        } else {
            format!("{} {}", self.version_and_origin(), self.release)
        }
    }

    /// `6.1.192-3 (bookworm-security)`: how reports name the kernel's version.
    pub fn version_and_origin(&self) -> String {
        match (self.version.as_str(), self.origin.as_str()) {
            ("", _) => "-".to_owned(),
            (version, "") => version.to_owned(),
            (version, origin) => format!("{version} ({origin})"),
        }
    }

    /// Whether the run stopped because a guest's kernel died — the kernel under test failing,
    /// reported as its failure, not the harness's (a listed harness fault is retried first and
    /// only a second death stays).
    pub fn kernel_died(&self) -> bool {
        self.guest_died.is_some()
    }

    pub fn passed(&self) -> bool {
        self.error.is_none()
            && !self.cases.is_empty()
            && self.cases.iter().all(|c| c.verdict.is_ok())
    }
}

/// The whole report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub runs: Vec<KernelRun>,
}

impl Report {
    pub fn passed(&self) -> bool {
        !self.runs.is_empty() && self.runs.iter().all(KernelRun::passed)
    }

    /// `report.json`: the runs, and the summary's counts by verdict (a skip is counted apart
    /// from a pass). Reading it back ignores the summary, which is derived.
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct WithSummary<'a> {
            runs: &'a [KernelRun],
            summary: std::collections::BTreeMap<&'static str, usize>,
        }
        serde_json::to_string_pretty(&WithSummary {
            runs: &self.runs,
            summary: self.counts(),
        })
        .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// How many cases of every run ended with each verdict (only verdicts that occur).
    pub fn counts(&self) -> std::collections::BTreeMap<&'static str, usize> {
        let mut counts = std::collections::BTreeMap::new();
        for case in self.runs.iter().flat_map(|run| &run.cases) {
            *counts.entry(case.verdict.as_str()).or_default() += 1;
        }
        counts
    }

    /// The summary line under the table: `summary: 12 pass, 3 skip, 1 fail (16 cases)`.
    pub fn summary_line(&self) -> String {
        let counts = self.counts();
        let parts: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
        format!(
            "summary: {} ({} cases)",
            if parts.is_empty() {
                "no case ran".to_owned()
            } else {
                parts.join(", ")
            },
            counts.values().sum::<usize>()
        )
    }

    /// Summary table: one row per kernel × suite × case, then the failure reasons. Columns are
    /// as wide as their longest value (comfy-table), times right-aligned.
    pub fn table(&self) -> String {
        use comfy_table::{presets::NOTHING, Cell, CellAlignment, ContentArrangement, Table};
        let mut table = Table::new();
        table
            .load_preset(NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header([
                "kernel", "version", "release", "accel", "suite", "case", "verdict", "time",
            ]);
        let seconds = |ms: u64| Cell::new(format!("{:.1}s", ms as f64 / 1000.0));
        let mut reasons = Vec::new();
        for run in &self.runs {
            for case in &run.cases {
                table.add_row(vec![
                    Cell::new(&run.kernel),
                    Cell::new(run.version_and_origin()),
                    Cell::new(&run.release),
                    Cell::new(&run.accel),
                    Cell::new(&run.suite),
                    Cell::new(&case.name),
                    Cell::new(case.verdict.as_str()),
                    seconds(case.duration_ms),
                ]);
                for reason in &case.reasons {
                    reasons.push(format!(
                        "{} {} {}: {reason}",
                        run.kernel, run.suite, case.name
                    ));
                }
            }
            table.add_row(vec![
                Cell::new(&run.kernel),
                Cell::new(run.version_and_origin()),
                Cell::new(&run.release),
                Cell::new(&run.accel),
                Cell::new(&run.suite),
                Cell::new("(total)"),
                Cell::new(if run.passed() { "PASS" } else { "FAIL" }),
                seconds(run.wall_ms),
            ]);
            if let Some(error) = &run.error {
                reasons.push(format!("{} {}: {error}", run.kernel, run.suite));
            }
            if let Some(why) = &run.retried_after {
                reasons.push(format!("{} {}: retried once, {why}", run.kernel, run.suite));
            }
            if let Some(gate) = &run.gate {
                reasons.push(format!("{} {}: {gate}", run.kernel, run.suite));
            }
        }
        if let Some(time) = table.column_mut(7) {
            time.set_cell_alignment(CellAlignment::Right);
        }
        let mut out = String::new();
        for line in table.lines() {
            // The NOTHING preset pads each cell by one space: the margin and the row's tail go.
            let _ = writeln!(
                out,
                "{}",
                line.strip_prefix(' ').unwrap_or(&line).trim_end()
            );
        }
        for reason in reasons {
            let _ = writeln!(out, "  - {reason}");
        }
        let _ = writeln!(out, "{}", self.summary_line());
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

    /// JUnit XML through `quick-junit`: a testsuite per kernel × suite (attempt), a testcase per
    /// case. A failed or timed-out case is a `failure`; a harness error of the run (boot timeout,
    /// qemu crash) an `error` testcase named `harness`; `known`, `not-run` and `skip` are
    /// `skipped` with the reason; `caught` passes with a note. A case the harness retried (incomplete capture)
    /// carries its first attempt as a flaky run. Each case's `system-out` lists its files
    /// (`share/out/<case>.*`) and the run's dmesg, console and pcap paths.
    pub fn junit(&self) -> String {
        let mut report = quick_junit::Report::new("rpcrdma-rig interop");
        let mut total = std::time::Duration::ZERO;
        for run in &self.runs {
            let suite = junit_suite(run);
            total += std::time::Duration::from_millis(run.wall_ms);
            report.add_test_suite(suite);
        }
        report.set_time(total);
        report
            .to_string()
            .unwrap_or_else(|e| format!("<?xml version=\"1.0\"?>\n<!-- junit: {e} -->\n"))
    }
}

/// Bound on a reason text or a system-out taken into the JUnit file (guest output is untrusted).
const MAX_JUNIT_TEXT: usize = 16 * 1024;
/// Bound on the files listed for one case.
const MAX_CASE_FILES: usize = 64;

/// `text` cut to `MAX_JUNIT_TEXT` bytes on a character boundary, with a note when cut.
fn bounded(text: &str) -> String {
    if text.len() <= MAX_JUNIT_TEXT {
        return text.to_owned();
    }
    let mut end = MAX_JUNIT_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[... {} more bytes cut]",
        &text[..end],
        text.len() - end
    )
}

/// The directory of the run's per-case files (`runs/<kernel>/<suite>/share/out`), found from
/// the artifacts the run recorded (their paths carry the attempt directory).
pub fn out_dir(run: &KernelRun) -> Option<std::path::PathBuf> {
    run.artifacts.iter().find_map(|a| {
        let path = std::path::Path::new(&a.path);
        let dir = path.parent()?;
        dir.ends_with("share/out").then(|| dir.to_path_buf())
    })
}

/// The files of `case` in the run's out directory (see [`case_files_in`]).
pub fn case_files(run: &KernelRun, case: &str) -> Vec<std::path::PathBuf> {
    out_dir(run).map_or_else(Vec::new, |dir| case_files_in(&dir, run, case))
}

/// The files of `case` in `dir`: `<case>.*`, less those of another case whose name extends this
/// one's (`nfsd` vs `nfsd.after-ack`); sorted, at most `MAX_CASE_FILES`.
pub fn case_files_in(
    dir: &std::path::Path,
    run: &KernelRun,
    case: &str,
) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let prefix = format!("{case}.");
    let longer: Vec<String> = run
        .cases
        .iter()
        .filter(|c| c.name.len() > case.len() && c.name.starts_with(&prefix))
        .map(|c| format!("{}.", c.name))
        .collect();
    let mut files: Vec<std::path::PathBuf> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            (name.starts_with(&prefix) && !longer.iter().any(|l| name.starts_with(l.as_str())))
                .then(|| e.path())
        })
        .collect();
    files.sort();
    files.truncate(MAX_CASE_FILES);
    files
}

fn junit_suite(run: &KernelRun) -> quick_junit::TestSuite {
    use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestRerun, TestSuite};
    use std::time::Duration;

    let classname = format!("{}.{}", run.kernel, run.suite);
    let name = if run.attempt > 1 {
        format!("{classname}.attempt-{}", run.attempt)
    } else {
        classname.clone()
    };
    let mut suite = TestSuite::new(name);
    suite.set_time(Duration::from_millis(run.wall_ms));
    suite.add_property(("kernel", run.kernel.as_str()));
    suite.add_property(("release", run.release.as_str()));
    suite.add_property(("version", run.version.as_str()));
    suite.add_property(("origin", run.origin.as_str()));
    suite.add_property(("accel", run.accel.as_str()));
    suite.add_property(("transport", run.transport.as_str()));
    suite.add_property(("suite", run.suite.as_str()));
    suite.add_property(("attempt", run.attempt.to_string().as_str()));
    if let Some(boot) = run.boot_ms {
        suite.add_property(("boot_ms", boot.to_string().as_str()));
    }
    if let Some(gate) = &run.gate {
        suite.add_property(("gate", gate.as_str()));
    }
    // The run-wide logs every case shares: dmesg, consoles, the suite's pcap.
    let shared: Vec<String> = run
        .artifacts
        .iter()
        .map(|a| format!("{}: {}", a.name, a.path))
        .collect();
    if !shared.is_empty() {
        suite.set_system_out(bounded(&shared.join("\n")));
    }
    for case in &run.cases {
        let reasons = bounded(&case.reasons.join("\n"));
        let mut status = match case.verdict {
            Verdict::Pass | Verdict::Caught => TestCaseStatus::success(),
            Verdict::Known | Verdict::NotRun | Verdict::Skip => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(format!(
                    "{}: {}",
                    case.verdict.as_str(),
                    first_line(&reasons)
                ));
                s.set_description(reasons.clone());
                s
            }
            Verdict::Fail | Verdict::Timeout => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(first_line(&reasons));
                s.set_type(case.verdict.as_str());
                s.set_description(reasons.clone());
                s
            }
        };
        for retry in case
            .results
            .iter()
            .filter(|r| r.role == "harness" && r.verdict == "retried")
        {
            let why = retry
                .fields
                .get("first_attempt")
                .map_or("harness failure", String::as_str);
            let mut rerun = TestRerun::new(NonSuccessKind::Error);
            rerun.set_type("harness");
            rerun.set_message(bounded(why));
            status.add_rerun(rerun);
        }
        let mut testcase = TestCase::new(case.name.as_str(), status);
        testcase.set_classname(classname.as_str());
        testcase.set_time(Duration::from_millis(case.duration_ms));
        let mut out = Vec::new();
        if case.verdict == Verdict::Caught {
            out.push(format!("caught: {reasons}"));
        }
        for file in case_files(run, &case.name) {
            out.push(format!("file: {}", file.display()));
        }
        out.extend(
            run.artifacts
                .iter()
                .map(|a| format!("{}: {}", a.name, a.path)),
        );
        if !out.is_empty() {
            testcase.set_system_out(bounded(&out.join("\n")));
        }
        suite.add_test_case(testcase);
    }
    if let Some(error) = &run.error {
        // A guest kernel's death is the kernel's failure (JUnit `failure`, the Oops as its
        // text); anything else that stopped the run is the harness's (`error`).
        let (kind, name) = if run.kernel_died() {
            (NonSuccessKind::Failure, "kernel-died")
        } else {
            (NonSuccessKind::Error, "harness")
        };
        let mut status = TestCaseStatus::non_success(kind);
        let error = bounded(error);
        status.set_message(first_line(&error));
        status.set_type(name);
        status.set_description(error.as_str());
        let mut testcase = TestCase::new(name, status);
        testcase.set_classname(classname.as_str());
        suite.add_test_case(testcase);
    }
    suite
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_owned()
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
            version: "6.1.192-3".into(),
            origin: "bookworm-security".into(),
            provenance: Default::default(),
            accel: "tcg".into(),
            suite: "smoke".into(),
            wall_ms: 30_000,
            boot_ms: Some(4_000),
            cases,
            artifacts: vec![],
            error: None,
            attempt: 1,
            guest_died: None,
            transport: Default::default(),
            retried_after: None,
            gate: None,
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
    fn a_server_guest_oops_is_the_kernels_failure_and_turns_the_run_red() {
        // What the runner records when the server guest's kernel (the kernel under test) dies
        // of something vm-images/harness-faults.toml does not list: no retry, and the Oops is
        // the run's failure in every rendering.
        let oops = "the srv guest's kernel died: BUG: kernel NULL pointer dereference, address: \
                    0000000000000008 → Kernel panic - not syncing: Fatal exception";
        let mut died = run(
            "linux-6.12",
            vec![outcome("nfsd.after-ack", Verdict::Pass, &[])],
        );
        died.guest_died = Some(oops.into());
        died.error = Some(oops.into());
        assert!(died.kernel_died());
        let report = Report { runs: vec![died] };
        assert!(!report.passed(), "a dead kernel under test is red");
        let xml = report.junit();
        let root = parse(&xml);
        let suites = root.child("testsuites").unwrap();
        assert_eq!(
            (suites.attr("failures"), suites.attr("errors")),
            ("1", "0"),
            "{xml}"
        );
        assert!(xml.contains("kernel-died") && xml.contains("NULL pointer dereference"));
        let table = report.table();
        assert!(table.contains("FAIL"), "{table}");
        assert!(
            table.contains("  - linux-6.12 smoke: the srv guest's kernel died: BUG"),
            "{table}"
        );
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

        // Columns line up whatever the name lengths (a 34-character case name once pushed its
        // row's verdict out of the column).
        let mut long = run(
            "linux-6.12-acked-evict",
            vec![outcome(
                "acked-mark.retransmit-over-credit-limit",
                Verdict::Pass,
                &[],
            )],
        );
        long.suite = "selftest".into();
        let report = Report {
            runs: vec![report.runs[0].clone(), long],
        };
        let table = report.table();
        let rows: Vec<&str> = table.lines().take(6).collect();
        let verdict_at: Vec<usize> = rows
            .iter()
            .map(|row| {
                ["verdict", "pass", "fail", "FAIL", "PASS"]
                    .iter()
                    .filter_map(|word| row.find(&format!(" {word} ")))
                    .min()
                    .unwrap()
            })
            .collect();
        assert!(verdict_at.iter().all(|&at| at == verdict_at[0]), "{table}");
        let ends: Vec<usize> = rows.iter().map(|row| row.len()).collect();
        assert!(ends.iter().all(|&end| end == ends[0]), "{table}");
    }

    /// A parsed JUnit element: name, attributes, text, children.
    #[derive(Debug, Default)]
    struct Element {
        name: String,
        attrs: std::collections::BTreeMap<String, String>,
        text: String,
        children: Vec<Element>,
    }

    impl Element {
        fn attr(&self, key: &str) -> &str {
            self.attrs.get(key).map_or("", String::as_str)
        }
        fn child(&self, name: &str) -> Option<&Element> {
            self.children.iter().find(|c| c.name == name)
        }
        fn all(&self, name: &str) -> Vec<&Element> {
            self.children.iter().filter(|c| c.name == name).collect()
        }
    }

    /// Parse XML back with quick-xml into a tree (a malformed document fails the test).
    fn parse(xml: &str) -> Element {
        use quick_xml::events::{BytesStart, Event};
        fn open(e: &BytesStart) -> Element {
            Element {
                name: String::from_utf8(e.name().as_ref().to_vec()).unwrap(),
                attrs: e
                    .attributes()
                    .map(|a| {
                        let a = a.unwrap();
                        (
                            String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                                .unwrap()
                                .into_owned(),
                        )
                    })
                    .collect(),
                ..Element::default()
            }
        }
        let mut reader = quick_xml::Reader::from_str(xml);
        let mut stack = vec![Element::default()];
        loop {
            match reader.read_event().expect("well-formed XML") {
                Event::Start(e) => stack.push(open(&e)),
                Event::Empty(e) => stack.last_mut().unwrap().children.push(open(&e)),
                Event::End(_) => {
                    let done = stack.pop().unwrap();
                    stack.last_mut().unwrap().children.push(done);
                }
                Event::Text(t) => stack
                    .last_mut()
                    .unwrap()
                    .text
                    .push_str(&t.decode().unwrap()),
                Event::GeneralRef(r) => {
                    let name = r.decode().unwrap();
                    let c = match name.as_ref() {
                        "lt" => "<",
                        "gt" => ">",
                        "amp" => "&",
                        "quot" => "\"",
                        "apos" => "'",
                        other => panic!("unexpected entity {other}"),
                    };
                    stack.last_mut().unwrap().text.push_str(c);
                }
                Event::Eof => break,
                _ => {}
            }
        }
        assert_eq!(stack.len(), 1, "unbalanced XML");
        stack.pop().unwrap()
    }

    fn artifact(name: &str, path: &std::path::Path) -> Artifact {
        Artifact {
            name: name.into(),
            path: path.display().to_string(),
            bytes: 1,
            sha256: "00".into(),
        }
    }

    #[test]
    fn junit_structure_failures_errors_skipped_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("runs/linux-6.1/drc/share/out");
        std::fs::create_dir_all(&out).unwrap();
        for file in [
            "srv.dmesg",
            "nfsd.after-ack.pcap",
            "nfsd.after-ack.cli.log",
            "nfsd.after-ack-late.pcap",
            "nfsd.burst.verdict.json",
        ] {
            std::fs::write(out.join(file), "x").unwrap();
        }
        let mut retried = outcome("nfsd.burst", Verdict::Pass, &[]);
        retried.results.push(ResultLine {
            case: "nfsd.burst".into(),
            role: "harness".into(),
            verdict: "retried".into(),
            fields: [("first_attempt".to_string(), "capture cut".to_string())].into(),
        });
        let mut drc = run(
            "linux-6.1",
            vec![
                outcome(
                    "nfsd.after-ack",
                    Verdict::Fail,
                    &["<bad> & \"worse\"\u{1}", "2nd"],
                ),
                outcome(
                    "nfsd.after-ack-late",
                    Verdict::Known,
                    &["timing (finding 4)"],
                ),
                outcome("nfsd.once", Verdict::NotRun, &["setup failed"]),
                outcome(
                    "nfsd.passive-first",
                    Verdict::Skip,
                    &["cli: skipped: needs the simulator"],
                ),
                outcome("nfsd.in-ack-window", Verdict::Caught, &["mutant caught"]),
                outcome("nfsd.timeout", Verdict::Timeout, &["cli: killed"]),
                retried,
            ],
        );
        drc.suite = "drc".into();
        drc.artifacts = vec![artifact("srv.dmesg", &out.join("srv.dmesg"))];
        let mut broken = run("linux-7.x", vec![outcome("rping", Verdict::Pass, &[])]);
        broken.error = Some("boot timed out\nconsole: ...".into());
        broken.wall_ms = 2_500;
        let report = Report {
            runs: vec![drc, broken],
        };
        let xml = report.junit();
        assert!(!xml.contains('\u{1}'), "control characters are dropped");
        let root = parse(&xml);
        let suites = root.child("testsuites").expect("a testsuites root");
        assert_eq!(suites.attr("tests"), "9");
        assert_eq!(suites.attr("failures"), "2");
        assert_eq!(suites.attr("errors"), "1");
        assert_eq!(suites.attr("time"), "32.500");
        let all = suites.all("testsuite");
        assert_eq!(all.len(), 2);
        let drc = all[0];
        assert_eq!(drc.attr("name"), "linux-6.1.drc");
        assert_eq!(
            (
                drc.attr("tests"),
                drc.attr("failures"),
                drc.attr("errors"),
                drc.attr("skipped")
            ),
            ("7", "2", "0", "3")
        );
        assert_eq!(drc.attr("time"), "30.000");
        let props: Vec<(&str, &str)> = drc
            .child("properties")
            .unwrap()
            .all("property")
            .iter()
            .map(|p| (p.attr("name"), p.attr("value")))
            .collect();
        assert!(props.contains(&("release", "6.1.0-50-amd64")));
        assert!(props.contains(&("accel", "tcg")));
        let case = |name: &str| {
            *drc.all("testcase")
                .iter()
                .find(|c| c.attr("name") == name)
                .unwrap_or_else(|| panic!("no testcase {name}"))
        };
        // A failed case: a failure with the reason, escaped and parsed back intact.
        let failed = case("nfsd.after-ack");
        assert_eq!(failed.attr("classname"), "linux-6.1.drc");
        assert_eq!(failed.attr("time"), "1.500");
        let failure = failed.child("failure").expect("failure element");
        assert_eq!(failure.attr("message"), "<bad> & \"worse\"");
        assert_eq!(failure.attr("type"), "fail");
        assert_eq!(failure.text, "<bad> & \"worse\"\n2nd");
        // Its files, not those of the case whose name extends it, and the run's dmesg.
        let system_out = &failed.child("system-out").unwrap().text;
        let lines: Vec<&str> = system_out.lines().collect();
        assert_eq!(
            lines,
            vec![
                format!("file: {}", out.join("nfsd.after-ack.cli.log").display()),
                format!("file: {}", out.join("nfsd.after-ack.pcap").display()),
                format!("srv.dmesg: {}", out.join("srv.dmesg").display()),
            ]
        );
        assert_eq!(
            case("nfsd.timeout").child("failure").unwrap().attr("type"),
            "timeout"
        );
        // Known and not-run: skipped with the reason.
        let known = case("nfsd.after-ack-late").child("skipped").unwrap();
        assert_eq!(known.attr("message"), "known: timing (finding 4)");
        assert!(case("nfsd.after-ack-late").child("failure").is_none());
        let not_run = case("nfsd.once").child("skipped").unwrap();
        assert_eq!(not_run.attr("message"), "not-run: setup failed");
        let skip = case("nfsd.passive-first").child("skipped").unwrap();
        assert_eq!(
            skip.attr("message"),
            "skip: cli: skipped: needs the simulator"
        );
        // Caught: a pass with a note.
        let caught = case("nfsd.in-ack-window");
        assert!(caught.child("failure").is_none() && caught.child("skipped").is_none());
        assert!(caught
            .child("system-out")
            .unwrap()
            .text
            .starts_with("caught: mutant caught"));
        // The retried case: passed, its first attempt a flaky run.
        let flaky = case("nfsd.burst").child("flakyError").expect("flaky rerun");
        assert_eq!(flaky.attr("message"), "capture cut");
        assert!(case("nfsd.burst").child("failure").is_none());
        // A harness error of a run is an error testcase, not a failure.
        let broken = all[1];
        assert_eq!((broken.attr("errors"), broken.attr("failures")), ("1", "0"));
        assert_eq!(broken.attr("time"), "2.500");
        let harness = broken
            .all("testcase")
            .into_iter()
            .find(|c| c.attr("name") == "harness")
            .unwrap();
        let error = harness.child("error").unwrap();
        assert_eq!(error.attr("message"), "boot timed out");
        assert_eq!(error.attr("type"), "harness");
    }

    #[test]
    fn junit_bounds_untrusted_text() {
        let huge = "é".repeat(100_000);
        let report = Report {
            runs: vec![run(
                "linux-6.1",
                vec![outcome("nfs3", Verdict::Fail, &[huge.as_str()])],
            )],
        };
        let xml = report.junit();
        assert!(xml.len() < 3 * MAX_JUNIT_TEXT + 4096, "{} bytes", xml.len());
        let root = parse(&xml);
        let failure = root
            .child("testsuites")
            .unwrap()
            .child("testsuite")
            .unwrap()
            .child("testcase")
            .unwrap()
            .child("failure")
            .unwrap();
        assert!(failure.text.ends_with("more bytes cut]"));
    }

    #[test]
    fn skips_are_counted_apart_from_passes_in_table_and_json() {
        let report = Report {
            runs: vec![run(
                "linux-6.12",
                vec![
                    outcome("nfsd.once", Verdict::Pass, &[]),
                    outcome("nfsd.passive-first", Verdict::Skip, &["cli: skipped: sim"]),
                    outcome("nfsd.burst", Verdict::Skip, &["cli: skipped: sim"]),
                ],
            )],
        };
        assert!(report.passed());
        let table = report.table();
        assert!(
            table.ends_with("summary: 1 pass, 2 skip (3 cases)\n"),
            "{table}"
        );
        assert!(table.contains("  - linux-6.12 smoke nfsd.burst: cli: skipped: sim"));
        let value: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(value["summary"]["skip"], 2);
        assert_eq!(value["summary"]["pass"], 1);
        assert_eq!(value["runs"][0]["cases"][1]["verdict"], "skip");
        let back: Report = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(back, report);
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
