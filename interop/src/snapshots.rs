//! Per-scenario interop snapshots: each scenario case of a run (selftest, drc, ...) becomes one
//! stable text file — the client's verdict, the kernel's counter deltas, and the normalised trace
//! of the case's capture — compared with the reviewed baseline under
//! `fixtures/snapshots/interop/<kernel>/<suite>/<case>.snap`; plus the cross-check of kernel nfsd
//! against our server's classic policy, where every divergence must be listed with a reason in
//! `fixtures/interop/expected-differences.toml`.
//!
//! Architecture Invariant: a snapshot holds only what a kernel change could alter; volatile values
//! (times, pids, run prefixes) are dropped here and xids/handles/PSNs by `rig trace show`, so an
//! unchanged kernel gives a byte-identical snapshot.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use serde::Deserialize;
use serde_json::Value;

use crate::process::{GroupChild, WaitOutcome};

/// Files larger than this are not read (guest output is untrusted and bounded).
pub const MAX_INPUT_BYTES: u64 = 4 << 20;
/// A trace longer than this many lines is cut, with a marker line, so one runaway capture cannot
/// make a snapshot unreviewable.
pub const MAX_TRACE_LINES: usize = 5_000;
/// Nesting depth at which verdict JSON is rendered as `<nested>` instead of flattened.
const MAX_JSON_DEPTH: usize = 4;
/// Longest time `rig trace show` may take on one capture.
const TRACE_TIMEOUT: Duration = Duration::from_secs(120);

/// Verdict keys whose values change from run to run without any behaviour changing.
const VOLATILE_KEYS: &[&str] = &[
    "elapsed_ms",
    "duration_ms",
    "wall_ms",
    "started",
    "finished",
    "pid",
    "prefix",
    "run_prefix",
    "server",
    "time",
    // The XID under test: the client draws XIDs from its pid, so it differs run to run.
    "xid",
];

/// What a case left in the share's `out/` directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaseFiles {
    /// `<case>.verdict.json`: the client's verdict (`rig scenarios --format json`).
    pub verdict: Option<PathBuf>,
    /// `<case>.kernel.txt`: `key=value` counter deltas recorded by the server guest.
    pub kernel: Option<PathBuf>,
    /// `<case>.pcap`: the case's RoCEv2 capture.
    pub pcap: Option<PathBuf>,
}

impl CaseFiles {
    /// The files of `case` present in `out`.
    pub fn find(out: &Path, case: &str) -> Self {
        let existing = |suffix: &str| {
            let path = out.join(format!("{case}.{suffix}"));
            path.is_file().then_some(path)
        };
        CaseFiles {
            verdict: existing("verdict.json"),
            kernel: existing("kernel.txt"),
            pcap: existing("pcap"),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.verdict.is_none() && self.kernel.is_none() && self.pcap.is_none()
    }
}

/// Read a text file, refusing anything over [`MAX_INPUT_BYTES`].
pub fn read_bounded(path: &Path) -> Result<String> {
    let bytes = fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    ensure!(
        bytes <= MAX_INPUT_BYTES,
        "{} is {bytes} bytes, over the {MAX_INPUT_BYTES}-byte limit",
        path.display()
    );
    let raw = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(String::from_utf8_lossy(&raw).into_owned())
}

fn render_scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "null".to_owned(),
        other => other.to_string(),
    }
}

fn flatten(prefix: &str, value: &Value, depth: usize, out: &mut BTreeMap<String, String>) {
    match value {
        Value::Object(map) if depth < MAX_JSON_DEPTH => {
            for (key, inner) in map {
                if VOLATILE_KEYS.contains(&key.as_str()) {
                    continue;
                }
                let name = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&name, inner, depth + 1, out);
            }
        }
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            let joined: Vec<String> = items.iter().map(render_scalar).collect();
            out.insert(prefix.to_owned(), format!("[{}]", joined.join(", ")));
        }
        Value::Array(items) if depth < MAX_JSON_DEPTH => {
            for (index, inner) in items.iter().enumerate() {
                flatten(&format!("{prefix}[{index}]"), inner, depth + 1, out);
            }
        }
        Value::Object(_) | Value::Array(_) => {
            out.insert(prefix.to_owned(), "<nested>".to_owned());
        }
        scalar => {
            out.insert(prefix.to_owned(), mask_xids(&render_scalar(scalar)));
        }
    }
}

/// `XID 0x1a2b3c4d` in free text (a judgement's failure reason) → `XID <xid>`: the value is
/// volatile, the sentence is not.
pub fn mask_xids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("XID 0x") {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        let digits = tail[6..]
            .bytes()
            .take_while(u8::is_ascii_hexdigit)
            .count();
        out.push_str("XID <xid>");
        rest = &tail[6 + digits..];
    }
    out.push_str(rest);
    out
}

/// One verdict object as sorted `key: value` lines (nested keys dotted, volatile keys dropped).
pub fn verdict_fields(verdict: &Value) -> BTreeMap<String, String> {
    let mut fields = BTreeMap::new();
    flatten("", verdict, 0, &mut fields);
    fields
}

/// The verdicts in `rig scenarios --format json` output: an array of objects, or one object.
pub fn parse_verdicts(json: &str) -> Result<Vec<BTreeMap<String, String>>> {
    let value: Value = serde_json::from_str(json).context("verdict JSON")?;
    let items = match value {
        Value::Array(items) => items,
        object @ Value::Object(_) => vec![object],
        other => bail!("verdict JSON is neither an object nor a list: {other}"),
    };
    ensure!(
        items.iter().all(Value::is_object),
        "verdict list holds a non-object"
    );
    Ok(items.iter().map(verdict_fields).collect())
}

/// `key=value` lines from the server guest, sorted; other lines are ignored.
pub fn kernel_fields(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.trim().split_once('='))
        .filter(|(key, _)| !key.is_empty() && !key.contains(char::is_whitespace))
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect()
}

/// The snapshot text of one case.
pub fn render(
    kernel: &str,
    suite: &str,
    case: &str,
    verdicts: &[BTreeMap<String, String>],
    kernel_deltas: Option<&BTreeMap<String, String>>,
    trace: Option<&str>,
) -> String {
    let mut text = format!("# interop snapshot: kernel={kernel} suite={suite} case={case}\n");
    for (index, verdict) in verdicts.iter().enumerate() {
        let _ = writeln!(text, "## verdict {}", index + 1);
        for (key, value) in verdict {
            let _ = writeln!(text, "{key}: {value}");
        }
    }
    if let Some(deltas) = kernel_deltas {
        text.push_str("## kernel deltas\n");
        for (key, value) in deltas {
            let _ = writeln!(text, "{key}={value}");
        }
    }
    if let Some(trace) = trace {
        text.push_str("## trace\n");
        let lines: Vec<&str> = trace.lines().collect();
        for line in lines.iter().take(MAX_TRACE_LINES) {
            text.push_str(line);
            text.push('\n');
        }
        if lines.len() > MAX_TRACE_LINES {
            let _ = writeln!(text, "... {} more lines cut", lines.len() - MAX_TRACE_LINES);
        }
    }
    text
}

/// `rig trace show --format text` (normalised) of a capture, run in its own process group with
/// a timeout; stdout goes through a file in `scratch` so a huge trace cannot fill a pipe.
pub fn normalised_trace(rig: &Path, pcap: &Path, scratch: &Path) -> Result<String> {
    fs::create_dir_all(scratch)?;
    let name = pcap.file_name().unwrap_or_default().to_string_lossy();
    let stdout_path = scratch.join(format!("{name}.trace.txt"));
    let stderr_path = scratch.join(format!("{name}.trace.err"));
    let mut command = Command::new(rig);
    command
        .args(["trace", "show", "--format", "text"])
        .arg(pcap)
        .stdin(Stdio::null())
        .stdout(fs::File::create(&stdout_path)?)
        .stderr(fs::File::create(&stderr_path)?);
    let mut child = GroupChild::spawn(&format!("rig trace show {name}"), command)?;
    match child.wait_timeout(TRACE_TIMEOUT)? {
        WaitOutcome::Exited(status) if status.success() => read_bounded(&stdout_path),
        WaitOutcome::Exited(status) => bail!(
            "rig trace show {} failed ({status}): {}",
            pcap.display(),
            crate::process::tail(&stderr_path, 5)
        ),
        WaitOutcome::TimedOut => bail!(
            "rig trace show {} took over {}s",
            pcap.display(),
            TRACE_TIMEOUT.as_secs()
        ),
    }
}

/// One rendered snapshot and where its baseline lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub kernel: String,
    pub suite: String,
    pub case: String,
    pub text: String,
    /// Parsed verdicts, for the nfsd-vs-ours cross-check.
    pub verdicts: Vec<BTreeMap<String, String>>,
}

impl Snapshot {
    /// `<kernel>/<suite>/<case>.snap`, relative to the snapshot root.
    pub fn relative_path(&self) -> PathBuf {
        Path::new(&self.kernel)
            .join(&self.suite)
            .join(format!("{}.snap", self.case))
    }
}

/// Render the snapshot of every case of `cases` that left files in `out`. A capture that
/// `rig trace show` cannot read becomes an `error:` line in the trace section (itself a change
/// the reviewer sees) rather than aborting the other cases.
pub fn collect(
    kernel: &str,
    suite: &str,
    cases: &[String],
    out: &Path,
    rig: Option<&Path>,
    scratch: &Path,
) -> Result<Vec<Snapshot>> {
    let mut snapshots = Vec::new();
    for case in cases {
        let files = CaseFiles::find(out, case);
        if files.is_empty() {
            continue;
        }
        let verdicts = match &files.verdict {
            Some(path) => parse_verdicts(&read_bounded(path)?)
                .with_context(|| format!("case {case}: {}", path.display()))?,
            None => Vec::new(),
        };
        let deltas = match &files.kernel {
            Some(path) => Some(kernel_fields(&read_bounded(path)?)),
            None => None,
        };
        let trace = match (&files.pcap, rig) {
            (Some(pcap), Some(rig)) => Some(
                normalised_trace(rig, pcap, scratch).unwrap_or_else(|e| format!("error: {e:#}")),
            ),
            _ => None,
        };
        snapshots.push(Snapshot {
            kernel: kernel.to_owned(),
            suite: suite.to_owned(),
            case: case.clone(),
            text: render(
                kernel,
                suite,
                case,
                &verdicts,
                deltas.as_ref(),
                trace.as_deref(),
            ),
            verdicts,
        });
    }
    Ok(snapshots)
}

/// How a snapshot compares with its baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Comparison {
    Unchanged,
    /// No baseline yet: accepting it is a reviewed step like any change.
    New,
    /// The unified diff, baseline → this run.
    Changed(String),
}

/// A unified diff (3 lines of context) from `old` to `new`, labelled with `path`.
pub fn unified_diff(old: &str, new: &str, path: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("baseline/{path}"), &format!("run/{path}"))
        .to_string()
}

/// Compare `snapshot` with its baseline under `root`.
pub fn compare(snapshot: &Snapshot, root: &Path) -> Result<Comparison> {
    let path = root.join(snapshot.relative_path());
    if !path.exists() {
        return Ok(Comparison::New);
    }
    let baseline = read_bounded(&path)?;
    if baseline == snapshot.text {
        Ok(Comparison::Unchanged)
    } else {
        Ok(Comparison::Changed(unified_diff(
            &baseline,
            &snapshot.text,
            &snapshot.relative_path().display().to_string(),
        )))
    }
}

/// Write `snapshot` as the new baseline under `root`.
pub fn accept(snapshot: &Snapshot, root: &Path) -> Result<PathBuf> {
    let path = root.join(snapshot.relative_path());
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::write(&path, &snapshot.text).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// One listed divergence between kernel nfsd and our server's classic policy.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedDifference {
    pub scenario: String,
    /// The verdict field that differs (`executions`, `statuses`, `credits_balanced`, ...).
    pub field: String,
    /// Kernels it applies to (empty: every kernel).
    #[serde(default)]
    pub kernels: Vec<String>,
    /// Why the difference is expected. Required: an unexplained entry is rejected.
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedDifferences {
    /// Verdict fields compared between nfsd and our classic policy.
    pub compared_fields: Vec<String>,
    #[serde(default, rename = "difference")]
    pub differences: Vec<ExpectedDifference>,
    /// Scenarios whose outcome depends on timing the guests cannot control (which duplicate
    /// meets its original in progress): their snapshot diffs and divergences are printed but do
    /// not fail the check. Each entry needs a reason.
    #[serde(default)]
    pub timing_dependent: Vec<TimingDependent>,
}

/// A scenario whose observed outcome legitimately varies from run to run.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingDependent {
    pub scenario: String,
    pub reason: String,
}

/// The catalogue scenario of a case named `<label>.<scenario>` (the whole name otherwise).
pub fn scenario_of_case(case: &str) -> &str {
    case.split_once('.').map_or(case, |(_, scenario)| scenario)
}

impl ExpectedDifferences {
    pub fn parse(text: &str) -> Result<Self> {
        let parsed: ExpectedDifferences =
            toml::from_str(text).context("parsing expected differences")?;
        ensure!(
            !parsed.compared_fields.is_empty(),
            "compared_fields must name at least one verdict field"
        );
        for entry in &parsed.timing_dependent {
            ensure!(
                !entry.reason.trim().is_empty(),
                "timing-dependent scenario {} has no reason",
                entry.scenario
            );
        }
        for entry in &parsed.differences {
            ensure!(
                !entry.reason.trim().is_empty(),
                "difference {}/{} has no reason",
                entry.scenario,
                entry.field
            );
            ensure!(
                parsed.compared_fields.contains(&entry.field),
                "difference {}/{}: field is not in compared_fields",
                entry.scenario,
                entry.field
            );
        }
        Ok(parsed)
    }

    /// Why `scenario`'s outcome may vary between runs, if it is listed as timing-dependent.
    pub fn timing_reason(&self, scenario: &str) -> Option<&str> {
        self.timing_dependent
            .iter()
            .find(|t| t.scenario == scenario)
            .map(|t| t.reason.as_str())
    }

    /// The listed reason for this divergence, if any (a timing-dependent scenario's reason
    /// covers all its fields).
    pub fn reason(&self, kernel: &str, scenario: &str, field: &str) -> Option<&str> {
        if let Some(reason) = self.timing_reason(scenario) {
            return Some(reason);
        }
        self.differences
            .iter()
            .find(|d| {
                d.scenario == scenario
                    && d.field == field
                    && (d.kernels.is_empty() || d.kernels.iter().any(|k| k == kernel))
            })
            .map(|d| d.reason.as_str())
    }
}

/// A field on which nfsd and our classic policy disagree for one scenario on one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    pub kernel: String,
    pub scenario: String,
    pub field: String,
    pub nfsd: String,
    pub ours: String,
    /// The reason from expected-differences.toml; `None` makes the divergence a failure.
    pub expected: Option<String>,
}

/// Compare the drc suite's `nfsd.<scenario>` verdicts with the selftest suite's
/// `classic.<scenario>` verdicts of the same kernel, field by field.
pub fn divergences(
    kernel: &str,
    nfsd: &[Snapshot],
    ours: &[Snapshot],
    expected: &ExpectedDifferences,
) -> Vec<Divergence> {
    let scenario_of = |snapshot: &Snapshot, prefix: &str| {
        snapshot
            .case
            .strip_prefix(prefix)
            .map(str::to_owned)
            .filter(|_| snapshot.kernel == kernel)
    };
    let ours_by_scenario: BTreeMap<String, &Snapshot> = ours
        .iter()
        .filter_map(|s| Some((scenario_of(s, "classic.")?, s)))
        .collect();
    let mut found = Vec::new();
    for snapshot in nfsd {
        let Some(scenario) = scenario_of(snapshot, "nfsd.") else {
            continue;
        };
        let Some(our_snapshot) = ours_by_scenario.get(&scenario) else {
            continue;
        };
        let (Some(theirs), Some(mine)) = (snapshot.verdicts.first(), our_snapshot.verdicts.first())
        else {
            continue;
        };
        for field in &expected.compared_fields {
            let missing = "<absent>".to_owned();
            let (nfsd_value, our_value) = (
                theirs.get(field).unwrap_or(&missing),
                mine.get(field).unwrap_or(&missing),
            );
            if nfsd_value != our_value {
                found.push(Divergence {
                    kernel: kernel.to_owned(),
                    scenario: scenario.clone(),
                    field: field.clone(),
                    nfsd: nfsd_value.clone(),
                    ours: our_value.clone(),
                    expected: expected.reason(kernel, &scenario, field).map(str::to_owned),
                });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERDICT: &str = r#"[
  {
    "scenario": "after-ack",
    "policy": "acked",
    "procedure": "REMOVE",
    "transmissions": 2,
    "executions": 2,
    "replies_identical": false,
    "statuses": ["NFS3_OK", "NFS3ERR_NOENT"],
    "credits": {"granted": 8, "returned": 8},
    "elapsed_ms": 1234,
    "note": "victim present: false"
  }
]"#;

    fn snapshot(kernel: &str, case: &str, json: &str) -> Snapshot {
        let verdicts = parse_verdicts(json).unwrap();
        Snapshot {
            kernel: kernel.into(),
            suite: "x".into(),
            case: case.into(),
            text: render(kernel, "x", case, &verdicts, None, None),
            verdicts,
        }
    }

    #[test]
    fn verdicts_flatten_sorted_without_volatile_keys() {
        let verdicts = parse_verdicts(VERDICT).unwrap();
        assert_eq!(verdicts.len(), 1);
        let fields = &verdicts[0];
        assert_eq!(fields["executions"], "2");
        assert_eq!(fields["statuses"], "[NFS3_OK, NFS3ERR_NOENT]");
        assert_eq!(fields["credits.granted"], "8");
        assert!(!fields.contains_key("elapsed_ms"));
        let text = render("linux-6.1", "drc", "nfsd.after-ack", &verdicts, None, None);
        let keys: Vec<&str> = text
            .lines()
            .skip(2)
            .map(|l| l.split(':').next().unwrap())
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        // A changed elapsed time alone does not change the snapshot.
        let slower = parse_verdicts(&VERDICT.replace("1234", "99")).unwrap();
        assert_eq!(
            text,
            render("linux-6.1", "drc", "nfsd.after-ack", &slower, None, None)
        );
    }

    #[test]
    fn xids_in_reasons_are_masked() {
        assert_eq!(
            mask_xids("REMOVE executed 2 times for XID 0x5a3f0012 with 1 argument set"),
            "REMOVE executed 2 times for XID <xid> with 1 argument set"
        );
        assert_eq!(mask_xids("no xid here"), "no xid here");
        assert_eq!(mask_xids("XID 0x"), "XID <xid>");
    }

    #[test]
    fn malformed_verdicts_are_errors() {
        assert!(parse_verdicts("{").is_err());
        assert!(parse_verdicts("42").is_err());
        assert!(parse_verdicts("[1, 2]").is_err());
        assert_eq!(parse_verdicts("{\"a\": 1}").unwrap()[0]["a"], "1");
    }

    #[test]
    fn deep_json_is_bounded() {
        let deep = format!("{}1{}", "{\"a\":".repeat(20), "}".repeat(20));
        let fields = &parse_verdicts(&deep).unwrap()[0];
        assert_eq!(fields.len(), 1);
        assert_eq!(fields["a.a.a.a"], "<nested>");
    }

    #[test]
    fn kernel_deltas_and_trace_sections() {
        let deltas = kernel_fields("cache_hits=1\nnoise line\nrc_misses=2\n bad key=3\n");
        assert_eq!(deltas.len(), 2);
        let trace: String = (0..MAX_TRACE_LINES + 7)
            .map(|i| format!("l{i}\n"))
            .collect();
        let text = render("k", "drc", "c", &[], Some(&deltas), Some(&trace));
        assert!(text.contains("## kernel deltas\ncache_hits=1\nrc_misses=2\n## trace\nl0\n"));
        assert!(text.ends_with("... 7 more lines cut\n"));
    }

    #[test]
    fn compare_accept_round_trip_and_diff() {
        let dir = tempfile::tempdir().unwrap();
        let first = snapshot("linux-6.1", "nfsd.after-ack", VERDICT);
        assert_eq!(compare(&first, dir.path()).unwrap(), Comparison::New);
        let written = accept(&first, dir.path()).unwrap();
        assert!(written.ends_with("linux-6.1/x/nfsd.after-ack.snap"));
        assert_eq!(compare(&first, dir.path()).unwrap(), Comparison::Unchanged);
        let changed = snapshot(
            "linux-6.1",
            "nfsd.after-ack",
            &VERDICT.replace("\"executions\": 2", "\"executions\": 1"),
        );
        match compare(&changed, dir.path()).unwrap() {
            Comparison::Changed(diff) => {
                assert!(diff.contains("-executions: 2\n+executions: 1\n"), "{diff}");
                assert!(diff.contains("baseline/linux-6.1/x/nfsd.after-ack.snap"));
            }
            other => panic!("expected a change, got {other:?}"),
        }
    }

    #[test]
    fn collect_reads_case_files_and_skips_cases_without_any() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("nfsd.once.verdict.json"), VERDICT).unwrap();
        fs::write(dir.path().join("nfsd.once.kernel.txt"), "cache_misses=2\n").unwrap();
        let cases = vec!["setup".to_owned(), "nfsd.once".to_owned()];
        let snaps = collect("k", "drc", &cases, dir.path(), None, dir.path()).unwrap();
        assert_eq!(snaps.len(), 1);
        assert_eq!(snaps[0].case, "nfsd.once");
        assert!(snaps[0].text.contains("## kernel deltas\ncache_misses=2\n"));
        fs::write(dir.path().join("nfsd.once.verdict.json"), "not json").unwrap();
        assert!(collect("k", "drc", &cases, dir.path(), None, dir.path()).is_err());
    }

    #[test]
    fn oversized_inputs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.verdict.json");
        let file = fs::File::create(&big).unwrap();
        file.set_len(MAX_INPUT_BYTES + 1).unwrap();
        assert!(read_bounded(&big).is_err());
    }

    const EXPECTED: &str = r#"
compared_fields = ["executions", "statuses"]
[[difference]]
scenario = "after-ack"
field = "executions"
kernels = ["linux-6.1"]
reason = "test reason"
"#;

    #[test]
    fn divergences_need_a_listed_reason() {
        let expected = ExpectedDifferences::parse(EXPECTED).unwrap();
        let nfsd = vec![snapshot("linux-6.1", "nfsd.after-ack", VERDICT)];
        let ours = vec![snapshot(
            "linux-6.1",
            "classic.after-ack",
            &VERDICT
                .replace("\"executions\": 2", "\"executions\": 1")
                .replace("NFS3ERR_NOENT", "NFS3_OK"),
        )];
        let found = divergences("linux-6.1", &nfsd, &ours, &expected);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].field, "executions");
        assert_eq!(found[0].expected.as_deref(), Some("test reason"));
        assert_eq!(found[1].field, "statuses");
        assert_eq!(found[1].expected, None);
        // The listed reason is limited to its kernels.
        let other_kernel: Vec<Snapshot> = nfsd
            .iter()
            .chain(&ours)
            .map(|s| Snapshot {
                kernel: "linux-6.12".into(),
                ..s.clone()
            })
            .collect();
        let (n, o) = other_kernel.split_at(1);
        let found = divergences("linux-6.12", n, o, &expected);
        assert!(found.iter().all(|d| d.expected.is_none()));
        // Identical verdicts: nothing to explain.
        assert!(divergences("linux-6.1", &nfsd, &nfsd_as_ours(&nfsd), &expected).is_empty());
    }

    fn nfsd_as_ours(nfsd: &[Snapshot]) -> Vec<Snapshot> {
        nfsd.iter()
            .map(|s| Snapshot {
                case: s.case.replace("nfsd.", "classic."),
                ..s.clone()
            })
            .collect()
    }

    #[test]
    fn timing_dependent_scenarios_explain_every_field() {
        let text =
            format!("{EXPECTED}\n[[timing_dependent]]\nscenario = \"burst\"\nreason = \"race\"\n");
        let expected = ExpectedDifferences::parse(&text).unwrap();
        assert_eq!(expected.timing_reason("burst"), Some("race"));
        assert_eq!(
            expected.reason("linux-7.x", "burst", "statuses"),
            Some("race")
        );
        assert_eq!(expected.reason("linux-7.x", "once", "statuses"), None);
        assert_eq!(scenario_of_case("nfsd.burst"), "burst");
        assert_eq!(scenario_of_case("acked-mark.after-ack"), "after-ack");
        assert_eq!(scenario_of_case("setup"), "setup");
        assert!(ExpectedDifferences::parse(&text.replace("\"race\"", "\"\"")).is_err());
    }

    #[test]
    fn unexplained_or_unknown_entries_are_rejected() {
        assert!(ExpectedDifferences::parse(&EXPECTED.replace("test reason", " ")).is_err());
        assert!(ExpectedDifferences::parse(
            &EXPECTED.replace("field = \"executions\"", "field = \"drc\"")
        )
        .is_err());
        assert!(ExpectedDifferences::parse("compared_fields = []").is_err());
    }

    #[test]
    fn committed_expected_differences_parse() {
        let path =
            crate::cache::workspace_root().join("fixtures/interop/expected-differences.toml");
        let parsed = ExpectedDifferences::parse(&fs::read_to_string(path).unwrap()).unwrap();
        assert!(parsed.compared_fields.iter().any(|f| f == "executions"));
    }
}
