//! The run page: one self-contained `index.html` (inline CSS, no script, no external asset) that
//! renders a run directory's `report.json` and `snapshots.json`: the findings on top, a verdict
//! matrix per suite (case × kernel), then every case with its verdict, reasons, duration,
//! snapshot result, RC-level transport counts and links to its files (logs, verdict, ftrace,
//! pcap, decoded trace, snapshot, the run's dmesg and consoles); changed snapshots carry their
//! diff against the baseline inline.
//!
//! Everything shown comes from the guests or from files they wrote, so every text is escaped,
//! control characters are dropped, each text is bounded, and every link is a percent-encoded
//! path relative to the run directory.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::report::{KernelRun, Report};
use crate::results::Verdict;

/// Bound on one text shown on the page (a reason, a diff).
const MAX_TEXT: usize = 8 * 1024;

/// One case's entry of `snapshots.json`.
#[derive(Debug, Clone, Default)]
pub struct SnapshotEntry {
    pub result: String,
    pub transport: Option<String>,
    pub harness_failure: Option<String>,
    pub timing_dependent: Option<String>,
}

/// `snapshots.json` by (kernel, suite, case, attempt), and its summary line.
#[derive(Debug, Clone, Default)]
pub struct Snapshots {
    pub cases: BTreeMap<(String, String, String, u64), SnapshotEntry>,
    pub summary: Vec<(String, u64)>,
}

impl Snapshots {
    /// Parse `snapshots.json` as `interop-post snapshots` writes it (unknown fields ignored).
    pub fn from_json(value: &Value) -> Self {
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let mut cases = BTreeMap::new();
        for case in value
            .get("cases")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (Some(kernel), Some(suite), Some(name)) = (
                text(case, "kernel"),
                text(case, "suite"),
                text(case, "case"),
            ) else {
                continue;
            };
            let attempt = case.get("attempt").and_then(Value::as_u64).unwrap_or(1);
            cases.insert(
                (kernel, suite, name, attempt),
                SnapshotEntry {
                    result: text(case, "result").unwrap_or_default(),
                    transport: text(case, "transport"),
                    harness_failure: text(case, "harness_failure"),
                    timing_dependent: text(case, "timing_dependent"),
                },
            );
        }
        let summary = value
            .get("summary")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
                    .collect()
            })
            .unwrap_or_default();
        Snapshots { cases, summary }
    }
}

/// Escape `text` for HTML content and attribute values; control characters other than newline
/// and tab are dropped, and the text is cut at `MAX_TEXT` bytes with a note.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_TEXT) + 16);
    for (i, c) in text.char_indices() {
        if i >= MAX_TEXT {
            let _ = write!(out, " [... {} more bytes cut]", text.len() - i);
            break;
        }
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// A relative path as a link target: every byte outside `A-Za-z0-9-._~/` percent-encoded, so no
/// file name can end the attribute or start a scheme (`javascript:` has its `:` encoded).
pub fn href(path: &Path) -> String {
    let mut out = String::new();
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// `runs/<kernel>/<suite>` of `run` under the run directory (`attempt-N/` for repeats), relative.
pub fn run_subdir(run: &KernelRun) -> PathBuf {
    let base = if run.attempt > 1 {
        PathBuf::from(format!("attempt-{}", run.attempt))
    } else {
        PathBuf::new()
    };
    base.join("runs").join(&run.kernel).join(&run.suite)
}

fn verdict_class(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "v-pass",
        Verdict::Fail => "v-fail",
        Verdict::Timeout => "v-timeout",
        Verdict::NotRun => "v-not-run",
        Verdict::Caught => "v-caught",
        Verdict::Known => "v-known",
        Verdict::Skip => "v-skip",
    }
}

/// The anchor of one case's row in the detail table.
fn anchor(run: &KernelRun, case: &str) -> String {
    href(Path::new(&format!(
        "case-{}-{}-{}-{}",
        run.kernel, run.suite, run.attempt, case
    )))
    .replace(['/', '%', '.'], "_")
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}\
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top;text-align:left}\
th{background:#f0f0f0}.v-pass{background:#d6f5d6}.v-fail,.v-timeout{background:#f8c8c8}.v-known{background:#fbeec1}\
.v-caught{background:#cfe2ff}.v-not-run,.v-skip{background:#e4e4e4}.bad{color:#a00;font-weight:bold}.ok{color:#060;font-weight:bold}\
pre{white-space:pre-wrap;margin:0;font-size:12px}.files a{margin-right:.6em}details{margin:.2em 0}\
td.reasons{max-width:40em}li,pre{overflow-wrap:anywhere}.legend span{padding:1px 6px;margin-right:.4em}\
#overview td{white-space:nowrap}#overview small{color:#555}";

/// Render the page of the run whose `report.json` is `report` and `snapshots.json` (if any) is
/// `snapshots`; `run_root` is the run directory (files are looked up there, links are relative
/// to it) and `baseline_root` the interop baselines, for the diffs of changed snapshots.
pub fn render(
    report: &Report,
    snapshots: &Snapshots,
    run_root: &Path,
    baseline_root: Option<&Path>,
    title: &str,
) -> String {
    let mut out = String::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for run in &report.runs {
        for case in &run.cases {
            *counts.entry(case.verdict.as_str()).or_default() += 1;
        }
    }
    let status = if report.passed() {
        "<span class=\"ok\">PASS</span>"
    } else {
        "<span class=\"bad\">FAIL</span>"
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>rpcrdma-rig interop {t}</title><style>{STYLE}</style></head><body>\n\
         <h1>rpcrdma-rig interop run {t}: {status}</h1>\n",
        t = escape(title)
    );
    let summary: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let _ = writeln!(
        out,
        "<p id=\"summary\">{} kernel × suite runs, {} cases: {}.</p>",
        report.runs.len(),
        counts.values().sum::<usize>(),
        escape(&summary.join(", "))
    );
    out.push_str(
        "<p class=\"legend\"><span class=\"v-pass\">pass</span><span class=\"v-fail\">fail</span>\
         <span class=\"v-timeout\">timeout</span><span class=\"v-known\">known failure</span>\
         <span class=\"v-caught\">expected catch (mutant)</span><span class=\"v-not-run\">not run</span>\
         <span class=\"v-skip\">skip (sent nothing)</span></p>\n",
    );
    overview(&mut out, report);
    findings(&mut out, report, snapshots);
    matrix(&mut out, report);
    details(&mut out, report, snapshots, run_root, baseline_root);
    out.push_str("</body></html>\n");
    out
}

/// How bad a verdict is, for the colour of a summed cell: the worst case colours it.
fn severity(verdict: Verdict) -> u8 {
    match verdict {
        Verdict::Fail => 6,
        Verdict::Timeout => 5,
        Verdict::NotRun => 4,
        Verdict::Known => 3,
        Verdict::Caught => 2,
        Verdict::Skip => 1,
        _ => 0,
    }
}

/// The page's first table: kernel × suite, each cell the counts of its verdicts, coloured by the
/// worst (a retried kernel × suite shows its last attempt), so the run's state is seen without
/// scrolling.
fn overview(out: &mut String, report: &Report) {
    let mut kernels: Vec<&KernelRun> = Vec::new();
    let mut suites: Vec<&str> = Vec::new();
    for run in &report.runs {
        if !kernels.iter().any(|k| k.kernel == run.kernel) {
            kernels.push(run);
        }
        if !suites.contains(&run.suite.as_str()) {
            suites.push(&run.suite);
        }
    }
    out.push_str("<table id=\"overview\"><tr><th>kernel</th>");
    for suite in &suites {
        let _ = write!(out, "<th>{}</th>", escape(suite));
    }
    out.push_str("</tr>\n");
    for first in kernels {
        let _ = write!(
            out,
            "<tr><th>{}<br><small>{}</small></th>",
            escape(&first.kernel),
            escape(&first.version_and_release())
        );
        for suite in &suites {
            let last = report
                .runs
                .iter()
                .filter(|r| r.kernel == first.kernel && r.suite == *suite)
                .max_by_key(|r| r.attempt);
            let Some(run) = last else {
                out.push_str("<td>—</td>");
                continue;
            };
            let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
            let mut worst = Verdict::Pass;
            for case in &run.cases {
                *counts.entry(case.verdict.as_str()).or_default() += 1;
                if severity(case.verdict) > severity(worst) {
                    worst = case.verdict;
                }
            }
            let class = if run.error.is_some() {
                "v-fail"
            } else {
                verdict_class(worst)
            };
            let text: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
            let error = if run.error.is_some() {
                " · run error"
            } else {
                ""
            };
            let _ = write!(
                out,
                "<td class=\"sum {class}\" data-kernel=\"{}\" data-suite=\"{}\">{}{error}</td>",
                escape(&run.kernel),
                escape(suite),
                escape(&text.join(" · "))
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

/// A case's reasons: the first in full, the rest (counters, raw RESULT fields) folded away.
fn folded_reasons(reasons: &[String]) -> String {
    match reasons {
        [] => String::new(),
        [only] => escape(only),
        [first, rest @ ..] => format!(
            "{}<details><summary>{} more</summary><pre>{}</pre></details>",
            escape(first),
            rest.len(),
            escape(&rest.join("\n"))
        ),
    }
}

fn finding_item(out: &mut String, run: &KernelRun, case: &crate::results::CaseOutcome) {
    let _ = writeln!(
        out,
        "<li class=\"{}\"><a href=\"#{}\">{} {} {}</a>: {}: {}</li>",
        verdict_class(case.verdict),
        anchor(run, &case.name),
        escape(&run.kernel),
        escape(&run.suite),
        escape(&case.name),
        case.verdict.as_str(),
        folded_reasons(&case.reasons)
    );
}

/// Failures first, each with its reason (the rest folded); then, folded, what the expectations
/// turned green (caught mutants, known failures) and the skips.
fn findings(out: &mut String, report: &Report, snapshots: &Snapshots) {
    out.push_str("<h2>Failures</h2>\n<ul id=\"findings\">\n");
    let mut any = false;
    for run in &report.runs {
        if let Some(error) = &run.error {
            any = true;
            let _ = writeln!(
                out,
                "<li class=\"v-fail\">{} {}: {}: <pre>{}</pre></li>",
                escape(&run.kernel),
                escape(&run.suite),
                if run.kernel_died() {
                    "the kernel under test died"
                } else {
                    "harness error"
                },
                escape(error)
            );
        }
    }
    for wanted in [Verdict::Fail, Verdict::Timeout, Verdict::NotRun] {
        for run in &report.runs {
            for case in run.cases.iter().filter(|c| c.verdict == wanted) {
                any = true;
                finding_item(out, run, case);
            }
        }
    }
    if !any {
        out.push_str("<li>none: every case passed or was expected</li>\n");
    }
    out.push_str("</ul>\n");
    let expected: Vec<(&KernelRun, &crate::results::CaseOutcome)> =
        [Verdict::Caught, Verdict::Known, Verdict::Skip]
            .iter()
            .flat_map(|wanted| {
                report.runs.iter().flat_map(move |run| {
                    run.cases
                        .iter()
                        .filter(move |c| c.verdict == *wanted)
                        .map(move |c| (run, c))
                })
            })
            .collect();
    if !expected.is_empty() {
        let _ = writeln!(
            out,
            "<details id=\"expected\"><summary>{} expected outcomes: caught mutants, known \
             failures, skips</summary>\n<ul id=\"expected-list\">",
            expected.len()
        );
        for (run, case) in expected {
            finding_item(out, run, case);
        }
        out.push_str("</ul></details>\n");
    }
    if !snapshots.summary.is_empty() {
        let line: Vec<String> = snapshots
            .summary
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(
            out,
            "<p id=\"snapshot-summary\">Interop snapshots: {}.</p>",
            escape(&line.join(", "))
        );
    }
}

fn matrix(out: &mut String, report: &Report) {
    let mut suites: Vec<&str> = Vec::new();
    for run in &report.runs {
        if !suites.contains(&run.suite.as_str()) {
            suites.push(&run.suite);
        }
    }
    out.push_str("<h2>Verdict matrix</h2>\n");
    for suite in suites {
        let runs: Vec<&KernelRun> = report.runs.iter().filter(|r| r.suite == suite).collect();
        let mut cases: Vec<&str> = Vec::new();
        for run in &runs {
            for case in &run.cases {
                if !cases.contains(&case.name.as_str()) {
                    cases.push(&case.name);
                }
            }
        }
        let _ = write!(
            out,
            "<h3>{s}</h3>\n<table class=\"matrix\" data-suite=\"{s}\"><tr><th>case</th>",
            s = escape(suite)
        );
        for run in &runs {
            let attempt = if run.attempt > 1 {
                format!(" #{}", run.attempt)
            } else {
                String::new()
            };
            let _ = write!(
                out,
                "<th>{}{}<br><small>{} {}</small></th>",
                escape(&run.kernel),
                attempt,
                escape(&run.version_and_release()),
                escape(&run.accel)
            );
        }
        out.push_str("</tr>\n");
        for case in cases {
            let _ = write!(out, "<tr><th>{}</th>", escape(case));
            for run in &runs {
                match run.cases.iter().find(|c| c.name == case) {
                    Some(c) => {
                        let _ = write!(
                            out,
                            "<td class=\"cell {}\" data-kernel=\"{}\" data-suite=\"{}\" data-case=\"{}\" data-verdict=\"{}\"><a href=\"#{}\">{}</a></td>",
                            verdict_class(c.verdict),
                            escape(&run.kernel),
                            escape(&run.suite),
                            escape(case),
                            c.verdict.as_str(),
                            anchor(run, case),
                            c.verdict.as_str()
                        );
                    }
                    None => out.push_str("<td>—</td>"),
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }
}

fn link(out: &mut String, rel: &Path, label: &str) {
    let _ = write!(
        out,
        "<a href=\"{}\">{}</a>",
        escape(&href(rel)),
        escape(label)
    );
}

fn details(
    out: &mut String,
    report: &Report,
    snapshots: &Snapshots,
    run_root: &Path,
    baseline_root: Option<&Path>,
) {
    out.push_str(
        "<h2>Cases</h2>\n<table id=\"cases\"><tr><th>kernel</th><th>release</th><th>suite</th>\
         <th>case</th><th>verdict</th><th>time</th><th>reasons</th><th>snapshot</th>\
         <th>transport</th><th>files</th></tr>\n",
    );
    for run in &report.runs {
        let sub = run_subdir(run);
        let out_dir = sub.join("share/out");
        let snap_dir = sub.join("snapshots");
        let run_files: Vec<(String, PathBuf)> = ["srv.dmesg", "cli.dmesg", "srv.pcap"]
            .iter()
            .map(|n| (n.to_string(), out_dir.join(n)))
            .chain(
                ["srv.console", "cli.console"]
                    .iter()
                    .map(|n| (n.to_string(), sub.join(n))),
            )
            .filter(|(_, p)| run_root.join(p).is_file())
            .collect();
        for case in &run.cases {
            let key = (
                run.kernel.clone(),
                run.suite.clone(),
                case.name.clone(),
                u64::from(run.attempt),
            );
            let snap = snapshots.cases.get(&key);
            let _ = write!(
                out,
                "<tr id=\"{}\" class=\"case\" data-kernel=\"{}\" data-suite=\"{}\" data-case=\"{}\">\
                 <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{:.1} s</td><td class=\"reasons\">",
                anchor(run, &case.name),
                escape(&run.kernel),
                escape(&run.suite),
                escape(&case.name),
                escape(&run.kernel),
                escape(&run.version_and_release()),
                escape(&run.suite),
                escape(&case.name),
                verdict_class(case.verdict),
                case.verdict.as_str(),
                case.duration_ms as f64 / 1000.0
            );
            for reason in &case.reasons {
                let _ = write!(out, "<pre>{}</pre>", escape(reason));
            }
            for retry in case
                .results
                .iter()
                .filter(|r| r.role == "harness" && r.verdict == "retried")
            {
                let why = retry.fields.get("first_attempt").map_or("", String::as_str);
                let _ = write!(out, "<pre>retried: {}</pre>", escape(why));
            }
            out.push_str("</td><td class=\"snapshot\">");
            if let Some(snap) = snap {
                let _ = write!(out, "{}", escape(&snap.result));
                if let Some(why) = &snap.harness_failure {
                    let _ = write!(out, " <pre>harness failure: {}</pre>", escape(why));
                }
                if let Some(why) = &snap.timing_dependent {
                    let _ = write!(out, " <small>(timing-dependent: {})</small>", escape(why));
                }
                if snap.result == "changed" {
                    if let Some(diff) = snapshot_diff(run, &case.name, run_root, baseline_root) {
                        let _ = write!(
                            out,
                            "<details class=\"diff\"><summary>diff</summary><pre>{}</pre></details>",
                            escape(&diff)
                        );
                    }
                }
            }
            out.push_str("</td><td class=\"transport\">");
            if let Some(t) = snap.and_then(|s| s.transport.as_deref()) {
                let _ = write!(out, "<small>{}</small>", escape(t));
            }
            out.push_str("</td><td class=\"files\">");
            for file in crate::report::case_files_in(&run_root.join(&out_dir), run, &case.name) {
                let Some(name) = file.file_name().map(|n| n.to_string_lossy().into_owned()) else {
                    continue;
                };
                let label = name
                    .strip_prefix(&format!("{}.", case.name))
                    .unwrap_or(&name);
                link(out, &out_dir.join(&name), label);
            }
            for (suffix, label) in [("pcap.trace.txt", "decoded trace"), ("snap", "snapshot")] {
                let rel = snap_dir.join(format!("{}.{suffix}", case.name));
                if run_root.join(&rel).is_file() {
                    link(out, &rel, label);
                }
            }
            for (label, rel) in &run_files {
                link(out, rel, label);
            }
            out.push_str("</td></tr>\n");
        }
        if let Some(error) = &run.error {
            let _ = writeln!(
                out,
                "<tr class=\"case\"><td>{}</td><td>{}</td><td>{}</td><td>harness</td><td class=\"v-fail\">error</td><td>{:.1} s</td><td class=\"reasons\"><pre>{}</pre></td><td></td><td></td><td></td></tr>",
                escape(&run.kernel),
                escape(&run.version_and_release()),
                escape(&run.suite),
                run.wall_ms as f64 / 1000.0,
                escape(error)
            );
        }
    }
    out.push_str("</table>\n");
}

/// The diff of a changed snapshot against its baseline, from the `.snap` the run left.
fn snapshot_diff(
    run: &KernelRun,
    case: &str,
    run_root: &Path,
    baseline_root: Option<&Path>,
) -> Option<String> {
    let root = baseline_root?;
    let path = run_root
        .join(run_subdir(run))
        .join("snapshots")
        .join(format!("{case}.snap"));
    let text = crate::snapshots::read_bounded(&path).ok()?;
    if text.trim().is_empty() {
        return None;
    }
    let snapshot = crate::snapshots::Snapshot {
        kernel: run.kernel.clone(),
        suite: run.suite.clone(),
        case: case.to_owned(),
        attempt: run.attempt,
        text,
        verdicts: Vec::new(),
        transport: None,
        harness_failure: None,
    };
    match crate::snapshots::compare(&snapshot, root).ok()? {
        crate::snapshots::Comparison::Changed { diff, .. } => Some(diff),
        _ => None,
    }
}

/// Read a run directory (`report.json`, and `snapshots.json` when there) and render its page.
/// Browser window a run page's screenshot shows: what a reader sees before scrolling.
pub const SCREENSHOT_SIZE: (u32, u32) = (1280, 800);
/// Longest a headless Chromium may take for one screenshot.
const SCREENSHOT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// A screenshot of the page `page` as a browser first shows it ([`SCREENSHOT_SIZE`]), by
/// headless Chromium (Debian package `chromium`), into `png`. `Ok(false)` when this host has no
/// `chromium` (the page is written either way; the screenshot is for reading a run at a glance).
pub fn screenshot(page: &Path, png: &Path) -> anyhow::Result<bool> {
    use anyhow::{ensure, Context};
    let Some(chromium) = crate::host::find_tool("chromium") else {
        return Ok(false);
    };
    let page = std::fs::canonicalize(page).with_context(|| format!("{}", page.display()))?;
    // A fresh profile beside the picture, removed after: no state shared with a user's browser.
    let profile = png.with_extension("chromium-profile");
    let _ = std::fs::remove_dir_all(&profile);
    let mut command = std::process::Command::new(chromium);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!(
            "--window-size={},{}",
            SCREENSHOT_SIZE.0, SCREENSHOT_SIZE.1
        ))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", href(&page)));
    let output = crate::process::output_with_timeout("chromium", command, SCREENSHOT_TIMEOUT);
    let _ = std::fs::remove_dir_all(&profile);
    let output = output?;
    ensure!(
        output.status.success() && png.is_file(),
        "chromium {}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
            .lines()
            .last()
            .unwrap_or_default()
    );
    Ok(true)
}

pub fn render_run_dir(run_root: &Path, baseline_root: Option<&Path>) -> anyhow::Result<String> {
    use anyhow::Context as _;
    let text = crate::snapshots::read_bounded(&run_root.join("report.json"))?;
    let report: Report = serde_json::from_str(&text)
        .with_context(|| format!("parsing {}", run_root.join("report.json").display()))?;
    let snapshots = match crate::snapshots::read_bounded(&run_root.join("snapshots.json")) {
        Ok(text) => Snapshots::from_json(&serde_json::from_str(&text).unwrap_or(Value::Null)),
        Err(_) => Snapshots::default(),
    };
    let title = run_root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(render(&report, &snapshots, run_root, baseline_root, &title))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_and_href_neutralise_markup() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\"\u{1b}[31m"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;[31m"
        );
        assert_eq!(
            href(Path::new("runs/k/s/share/out/a\" onclick=\"x.log")),
            "runs/k/s/share/out/a%22%20onclick%3D%22x.log"
        );
        assert_eq!(
            href(Path::new("javascript:alert(1)")),
            "javascript%3Aalert%281%29"
        );
        let long = "x".repeat(3 * MAX_TEXT);
        let cut = escape(&long);
        assert!(cut.len() < MAX_TEXT + 64 && cut.ends_with("more bytes cut]"));
    }
}
