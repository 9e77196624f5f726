//! Per-scenario interop snapshots: each scenario case of a run (selftest, drc, ...) becomes one
//! stable text file — the client's verdict, the kernel's counter deltas, and the normalised trace
//! of the case's capture — compared with the reviewed baseline under
//! `fixtures/snapshots/interop/<kernel>/<suite>/<case>.snap`; plus the cross-check of kernel nfsd
//! against our server's classic policy, where every divergence must be listed with a reason in
//! `fixtures/interop/expected-differences.toml`.
//!
//! The trace is the trace crate's render at `rig trace show`'s default level (decoded here, as a
//! library: typed events and status, no CLI text read back): the RPC-over-RDMA exchange only; the RC
//! transport's own recovery (PSN duplicates, NAKs, RNR retries) varies with host load and is
//! reported beside the snapshot as counts, never compared. A capture that does not hold the
//! whole exchange (cut before the disconnect, packets lost for good) makes the case a harness
//! failure ([`Comparison::HarnessFailure`]), not a snapshot change. A timing-dependent scenario
//! (listed in expected-differences.toml) records a set of alternative outcomes ([`Baseline`]); a
//! run passes when it reproduces one of them.
//!
//! Architecture Invariant: a snapshot holds only what a kernel change could alter; volatile values
//! (times, pids, run prefixes) are dropped here and xids/handles/PSNs and RC-level transport
//! events by the trace render, so an unchanged kernel gives a byte-identical snapshot (or, for a
//! timing-dependent scenario, one of its recorded outcomes).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use serde::Deserialize;
use serde_json::Value;
use trace::render::{self, Style};
use trace::{CaptureStatus, Level, TransportCounts};

/// Files larger than this are not read (guest output is untrusted and bounded).
pub const MAX_INPUT_BYTES: u64 = 4 << 20;
/// A trace longer than this many lines is cut, with a marker line, so one runaway capture cannot
/// make a snapshot unreviewable.
pub const MAX_TRACE_LINES: usize = 5_000;
/// Nesting depth at which verdict JSON is rendered as `<nested>` instead of flattened.
const MAX_JSON_DEPTH: usize = 4;

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

pub use trace::render::canonical_order;

pub use trace::render::mask_run_prefixes;

/// `XID 0x1a2b3c4d` in free text (a judgement's failure reason) → `XID <xid>`: the value is
/// volatile, the sentence is not.
pub fn mask_xids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("XID 0x") {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        let digits = tail[6..].bytes().take_while(u8::is_ascii_hexdigit).count();
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

/// A matrix kernel as a snapshot header names it: its name, Debian version and origin.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KernelVersion {
    /// `linux-6.1`.
    pub name: String,
    /// `6.1.192-3` (empty when the run did not say: runs before versions were reported).
    pub version: String,
    /// `bookworm-security`, `source linux-source-6.12 + drc-mutants`.
    pub origin: String,
}

impl KernelVersion {
    /// A kernel known by name only.
    pub fn named(name: &str) -> Self {
        KernelVersion {
            name: name.to_owned(),
            ..KernelVersion::default()
        }
    }

    /// ` version=6.1.192-3 (bookworm-security)` for the header (nothing when unknown).
    fn header_words(&self) -> String {
        match (self.version.as_str(), self.origin.as_str()) {
            ("", _) => String::new(),
            (version, "") => format!(" version={version}"),
            (version, origin) => format!(" version={version} ({origin})"),
        }
    }
}

/// The version the baseline of `snapshot` under `root` was recorded on, if it says.
pub fn recorded_version(snapshot: &Snapshot, root: &Path) -> Result<Option<String>> {
    Ok(read_baseline(&root.join(snapshot.relative_path()))?
        .and_then(|baseline| header_version(&baseline.header).map(str::to_owned)))
}

/// The Debian version a snapshot or baseline header names (`version=6.1.192-3`), if any.
pub fn header_version(header: &str) -> Option<&str> {
    header
        .split_whitespace()
        .find_map(|word| word.strip_prefix("version="))
        .filter(|v| !v.is_empty())
}

/// `key=value` lines from the server guest, sorted; other lines are ignored.
pub fn kernel_fields(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.trim().split_once('='))
        .filter(|(key, _)| !key.is_empty() && !key.contains(char::is_whitespace))
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect()
}

/// The snapshot text of one case. The header names the kernel's version and origin (`version=`
/// [`KernelVersion`]); only the body below it is compared, so a new version of a line with the
/// same behaviour is an unchanged snapshot, reported as a new version.
pub fn render(
    kernel: &KernelVersion,
    suite: &str,
    case: &str,
    verdicts: &[BTreeMap<String, String>],
    kernel_deltas: Option<&BTreeMap<String, String>>,
    trace: Option<&str>,
) -> String {
    let mut text = format!(
        "# interop snapshot: kernel={} suite={suite} case={case}{}\n",
        kernel.name,
        kernel.header_words()
    );
    for (index, verdict) in verdicts.iter().enumerate() {
        let _ = writeln!(text, "## verdict {}", index + 1);
        for (key, value) in verdict {
            let _ = writeln!(text, "{key}: {}", mask_run_prefixes(value));
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
        let kept: Vec<&str> = lines.iter().take(MAX_TRACE_LINES).copied().collect();
        for line in canonical_order(&kept) {
            text.push_str(&mask_run_prefixes(line));
            text.push('\n');
        }
        if lines.len() > MAX_TRACE_LINES {
            let _ = writeln!(text, "... {} more lines cut", lines.len() - MAX_TRACE_LINES);
        }
    }
    text
}

/// Most alternative outcomes one baseline file may record.
pub const MAX_OUTCOMES: usize = 32;
/// The trace section of a baseline outcome whose capture was incomplete when it was recorded.
pub const TRACE_NOT_RECORDED: &str = "## trace: not recorded";
/// Largest capture the harness decodes: `rig trace show`'s own limit (a case's capture is a few
/// KB to a few MB).
const MAX_CAPTURE_BYTES: u64 = 1 << 30;

/// A case's capture as `rig trace show` renders it by default (normalised, the gating exchange
/// level), split into what a snapshot compares and what it only reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceOutput {
    /// One line per exchange event: calls, replies, retransmits, DRC replays, chunk movements,
    /// CM. Compared.
    pub lines: String,
    /// RC-level transport counts (duplicates, NAKs, ...): host load, not behaviour.
    pub transport: TransportCounts,
    /// Whether the capture holds its whole exchange (no disconnect after the last message,
    /// PSNs never captured, a truncated file: incomplete).
    pub capture: CaptureStatus,
}

impl TraceOutput {
    /// The trace of `trace` as the snapshot sees it: the same render `rig trace show` prints.
    pub fn of(trace: &trace::Trace) -> Self {
        let rendered = render::render(trace, Style::Normalised, Level::Exchange);
        TraceOutput {
            lines: rendered.lines,
            transport: rendered.transport,
            capture: rendered.capture,
        }
    }
}

/// Decode the capture at `pcap` with the trace crate, in this process: typed events and
/// status, no text read back. The trace crate is bounded and linear on hostile input (its
/// fuzz target and `tests/hostile.rs`), and the file is refused above [`MAX_CAPTURE_BYTES`].
pub fn trace_output(pcap: &Path) -> Result<TraceOutput> {
    let size = fs::metadata(pcap)
        .with_context(|| format!("{}", pcap.display()))?
        .len();
    if size > MAX_CAPTURE_BYTES {
        bail!(
            "{}: {size} bytes, over the {MAX_CAPTURE_BYTES}-byte capture limit",
            pcap.display()
        );
    }
    let bytes = fs::read(pcap).with_context(|| format!("{}", pcap.display()))?;
    let options = trace::Options {
        check_icrc: true,
        drop_payloads: true,
        ..Default::default()
    };
    let decoded = trace::trace_capture(&bytes, &options)
        .with_context(|| format!("decoding the capture {}", pcap.display()))?;
    Ok(TraceOutput::of(&decoded))
}

/// Whether the capture of a case holds its whole exchange; for the runner, which may retry a
/// case whose capture is incomplete (a harness failure, not a result).
pub fn capture_status(pcap: &Path) -> Result<CaptureStatus> {
    Ok(trace_output(pcap)?.capture)
}

/// Connections the client made, by its verdicts' `connects` fields (`None` when none says).
fn expected_connections(verdicts: &[BTreeMap<String, String>]) -> Option<u64> {
    let counts: Vec<u64> = verdicts
        .iter()
        .filter_map(|v| v.get("connects")?.parse().ok())
        .collect();
    (!counts.is_empty()).then(|| counts.iter().sum())
}

/// Why a case's capture cannot be compared (a harness failure of the case), if it cannot:
/// the trace judged it incomplete, or it holds fewer connection requests (CM REQs, or MPA
/// Requests over iWARP) than the client's verdicts report connections.
pub fn capture_problem(
    verdicts: &[BTreeMap<String, String>],
    trace: &TraceOutput,
) -> Option<String> {
    if let CaptureStatus::Incomplete(reasons) = &trace.capture {
        let reasons: Vec<String> = reasons.iter().map(ToString::to_string).collect();
        return Some(format!("capture incomplete: {}", reasons.join("; ")));
    }
    let captured = trace
        .lines
        .lines()
        // A connection request: the CM REQ over RoCE, the MPA Request over iWARP.
        .filter(|l| matches!(l.split(' ').nth(2), Some("CM_REQ" | "MPA_REQ")))
        .count() as u64;
    match expected_connections(verdicts) {
        Some(expected) if captured < expected => Some(format!(
            "capture incomplete: {captured} connection requests captured, the client made \
             {expected} connections"
        )),
        _ => None,
    }
}

/// One rendered snapshot and where its baseline lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub kernel: String,
    pub suite: String,
    pub case: String,
    /// Which repetition of the run (`interop run --repeat`) it came from, from 1.
    pub attempt: u32,
    /// The compared text: header, verdicts, kernel deltas, the trace at the gating level.
    pub text: String,
    /// Parsed verdicts, for the nfsd-vs-ours cross-check.
    pub verdicts: Vec<BTreeMap<String, String>>,
    /// The capture's RC-level transport counts: reported, never compared.
    pub transport: Option<String>,
    /// Set when the case cannot be compared (its capture is incomplete, the trace crate
    /// failed): a harness failure of the case, to retry, not a snapshot change.
    pub harness_failure: Option<String>,
}

impl Snapshot {
    /// `<kernel>/<suite>/<case>.snap`, relative to the snapshot root.
    pub fn relative_path(&self) -> PathBuf {
        Path::new(&self.kernel)
            .join(&self.suite)
            .join(format!("{}.snap", self.case))
    }

    /// Whether `pattern` (a `*`/`?` glob) names this case: its name (`nfsd.burst`), its
    /// scenario (`burst`), or its path without `.snap` (`linux-6.1/drc/nfsd.*`).
    pub fn matches(&self, pattern: &str) -> bool {
        let path = format!("{}/{}/{}", self.kernel, self.suite, self.case);
        crate::runs::case_selected(&self.case, &[pattern.to_owned()])
            || crate::runs::glob_match(pattern, &path)
    }
}

/// Render the snapshot of every case of `cases` that left files in `out`. A capture that is
/// incomplete, or that the trace crate cannot read, makes the case a harness failure (reported,
/// not compared) rather than aborting the other cases.
pub fn collect(
    kernel: &KernelVersion,
    suite: &str,
    cases: &[String],
    out: &Path,
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
        let (trace, harness_failure) = match &files.pcap {
            Some(pcap) => match trace_output(pcap) {
                Ok(trace) => {
                    let problem = capture_problem(&verdicts, &trace);
                    (Some(trace), problem)
                }
                Err(e) => (None, Some(format!("{e:#}"))),
            },
            _ => (None, None),
        };
        snapshots.push(Snapshot {
            kernel: kernel.name.clone(),
            suite: suite.to_owned(),
            case: case.clone(),
            attempt: 1,
            text: render(
                kernel,
                suite,
                case,
                &verdicts,
                deltas.as_ref(),
                trace.as_ref().map(|t| t.lines.as_str()),
            ),
            verdicts,
            transport: trace.as_ref().map(|t| t.transport.to_string()),
            harness_failure,
        });
    }
    Ok(snapshots)
}

/// Why a baseline file cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BaselineError {
    /// The first line is not `# interop snapshot: ...`.
    NoHeader,
    /// An `### outcome` line whose run count is not a number.
    BadOutcomeMarker { line: usize, text: String },
    /// Outcome markers, but other text before the first one.
    TextBeforeOutcome { line: usize },
    /// More than [`MAX_OUTCOMES`] outcomes.
    TooManyOutcomes { count: usize },
    /// A recorded outcome (1-based) with a `## verdict` section that has no `judgement:` line:
    /// the format from before judgements, which no run renders, so it could never match and
    /// would only count among the recorded outcomes.
    NoJudgement { outcome: usize, verdict: String },
}

impl std::fmt::Display for BaselineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BaselineError::NoHeader => f.write_str("first line is not `# interop snapshot: ...`"),
            BaselineError::BadOutcomeMarker { line, text } => {
                write!(f, "line {line}: bad outcome marker {text:?}")
            }
            BaselineError::TextBeforeOutcome { line } => {
                write!(f, "line {line}: text before the first `### outcome` marker")
            }
            BaselineError::TooManyOutcomes { count } => {
                write!(f, "{count} outcomes, over the limit of {MAX_OUTCOMES}")
            }
            BaselineError::NoJudgement { outcome, verdict } => write!(
                f,
                "outcome {outcome}: `{verdict}` has no judgement line (the format before \
                 judgements; no run reproduces it: remove the outcome or re-record it)"
            ),
        }
    }
}

impl std::error::Error for BaselineError {}

/// One recorded outcome of a case: the compared text below the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Runs that produced it (counted for timing-dependent scenarios, 1 otherwise).
    pub runs: u32,
    pub body: String,
}

/// The first `## verdict` section of an outcome body without a `judgement:` line (every verdict
/// a run renders has one: `crates/rdma`'s Verdict always serialises it).
fn verdict_without_judgement(body: &str) -> Option<&str> {
    let mut open: Option<&str> = None;
    for line in body.lines() {
        if line.starts_with("## ") {
            if open.is_some() {
                return open;
            }
            open = line.starts_with("## verdict ").then_some(line);
        } else if line.starts_with("judgement: ") {
            open = None;
        }
    }
    open
}

/// The part of a snapshot body before its trace section (verdicts, kernel deltas).
fn without_trace(body: &str) -> &str {
    let mut at = 0;
    for line in body.split_inclusive('\n') {
        if line.starts_with("## trace") {
            return &body[..at];
        }
        at += line.len();
    }
    body
}

impl Outcome {
    /// Whether the trace of this outcome was left out (its capture was incomplete).
    pub fn trace_missing(&self) -> bool {
        self.body.lines().any(|l| l.starts_with(TRACE_NOT_RECORDED))
    }
}

/// A baseline file: the header, whether the scenario is timing-dependent (and why), and one or
/// more outcomes, any of which a run may reproduce.
///
/// ```text
/// # interop snapshot: kernel=linux-6.1 suite=drc case=nfsd.burst
/// # timing-dependent: <reason from expected-differences.toml>
/// # single-run baseline: ...        (derived: written when only one run was recorded)
/// ### outcome 1 (runs: 1)
/// ## verdict 1
/// ...
/// ```
///
/// A scenario that is not timing-dependent has one outcome and no markers: the header, then the
/// body, as a run renders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Baseline {
    pub header: String,
    pub timing: Option<String>,
    pub outcomes: Vec<Outcome>,
}

const TIMING_PREFIX: &str = "# timing-dependent: ";
const OUTCOME_PREFIX: &str = "### outcome ";

/// `# interop snapshot: ...` and the body below it.
fn split_header(text: &str) -> (&str, &str) {
    match text.split_once('\n') {
        Some((header, body)) => (header, body),
        None => (text, ""),
    }
}

impl Baseline {
    pub fn parse(text: &str) -> Result<Self, BaselineError> {
        let (header, rest) = split_header(text);
        if !header.starts_with("# interop snapshot:") {
            return Err(BaselineError::NoHeader);
        }
        let mut timing = None;
        let mut outcomes: Vec<Outcome> = Vec::new();
        let mut plain = String::new();
        let mut in_meta = true;
        for (index, line) in rest.split_inclusive('\n').enumerate() {
            let number = index + 2;
            if in_meta && line.starts_with("# ") {
                if let Some(reason) = line.trim_end().strip_prefix(TIMING_PREFIX) {
                    timing = Some(reason.to_owned());
                }
                continue;
            }
            in_meta = false;
            if let Some(marker) = line.trim_end().strip_prefix(OUTCOME_PREFIX) {
                let runs = marker
                    .split_once("(runs: ")
                    .and_then(|(_, r)| r.strip_suffix(')'))
                    .and_then(|r| r.parse().ok())
                    .ok_or_else(|| BaselineError::BadOutcomeMarker {
                        line: number,
                        text: line.trim_end().to_owned(),
                    })?;
                if !plain.is_empty() {
                    return Err(BaselineError::TextBeforeOutcome { line: number });
                }
                if outcomes.len() >= MAX_OUTCOMES {
                    return Err(BaselineError::TooManyOutcomes {
                        count: outcomes.len() + 1,
                    });
                }
                outcomes.push(Outcome {
                    runs,
                    body: String::new(),
                });
            } else if let Some(last) = outcomes.last_mut() {
                last.body.push_str(line);
            } else {
                plain.push_str(line);
            }
        }
        if outcomes.is_empty() {
            outcomes.push(Outcome {
                runs: 1,
                body: plain,
            });
        }
        for (index, outcome) in outcomes.iter().enumerate() {
            if let Some(verdict) = verdict_without_judgement(&outcome.body) {
                return Err(BaselineError::NoJudgement {
                    outcome: index + 1,
                    verdict: verdict.to_owned(),
                });
            }
        }
        Ok(Baseline {
            header: header.to_owned(),
            timing,
            outcomes,
        })
    }

    /// Runs recorded over all outcomes.
    pub fn runs(&self) -> u32 {
        self.outcomes.iter().map(|o| o.runs).sum()
    }

    /// Header and one outcome's body: what a run reproducing it renders.
    pub fn outcome_text(&self, index: usize) -> String {
        let body = self.outcomes.get(index).map_or("", |o| o.body.as_str());
        format!("{}\n{body}", self.header)
    }

    pub fn to_text(&self) -> String {
        let mut text = format!("{}\n", self.header);
        let marked = self.timing.is_some() || self.outcomes.len() > 1;
        if let Some(reason) = &self.timing {
            let _ = writeln!(text, "{TIMING_PREFIX}{reason}");
            if self.runs() <= 1 {
                text.push_str(
                    "# single-run baseline: recorded from one run of a timing-dependent \
                     scenario; its other legitimate outcomes are not recorded yet (run it \
                     with --repeat and accept each outcome with interop-post snapshots \
                     --accept CASE)\n",
                );
            } else {
                let _ = writeln!(
                    text,
                    "# recorded: {} outcomes from {} runs",
                    self.outcomes.len(),
                    self.runs()
                );
            }
        }
        for (index, outcome) in self.outcomes.iter().enumerate() {
            if marked {
                let _ = writeln!(
                    text,
                    "{OUTCOME_PREFIX}{} (runs: {})",
                    index + 1,
                    outcome.runs
                );
            }
            text.push_str(&outcome.body);
        }
        text
    }
}

/// How a snapshot compares with its baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Comparison {
    /// Reproduces recorded outcome `outcome` (1-based) of `of`.
    Unchanged { outcome: usize, of: usize },
    /// No baseline yet: accepting it is a reviewed step like any change.
    New,
    /// Verdicts and kernel deltas reproduce outcome `outcome`, whose trace was not recorded
    /// (its capture was incomplete): this run's complete trace still has to be accepted.
    TraceNotRecorded { outcome: usize },
    /// Reproduces none of the `of` recorded outcomes; the unified diff is against the closest
    /// one, `closest` (1-based).
    Changed {
        diff: String,
        closest: usize,
        of: usize,
    },
    /// Not compared: the case's capture cannot be judged (a harness failure, to retry).
    HarnessFailure(String),
    /// Timing-dependent: no recorded outcome reproduced word for word, but the scenario's
    /// behaviour ([`behaviour_of`]) is that of recorded outcome `outcome` of `of`: the duplicate
    /// was answered in a way not recorded yet (dropped where it was replayed, say), while what
    /// was sent, executed and judged is the same.
    SameBehaviour { outcome: usize, of: usize },
}

/// Verdict keys that say how a timing-dependent scenario's duplicates were answered (replayed,
/// dropped, or still in flight at the disconnect), not what was executed or judged.
const ANSWER_KEYS: &[&str] = &[
    "statuses",
    "note",
    "unanswered",
    "replies",
    "inference",
    "replies_identical",
    "credits_balanced",
];

/// Kernel delta keys that hold whatever the timing: executions counted by the kernel (and
/// whether its two counts agree), per-procedure execution counters, new kernel log lines, calls
/// refused. DRC hit/drop/replay counters follow the timing and are left out.
fn stable_kernel_key(key: &str) -> bool {
    matches!(
        key,
        "executions_counted" | "counts_agree" | "dmesg_new" | "rpc_badcalls"
    ) || key.starts_with("proc3_")
}

/// The behaviour a timing-dependent scenario gates on, from a snapshot body: its verdicts
/// without [`ANSWER_KEYS`] (executions, their basis, the judgement and its failure stay), the
/// stable kernel deltas, and the trace's client and connection lines (what the client sent and
/// when it connected; the server's replies, `DUP_REPLY`s and Read-chunk pulls follow the
/// timing). A kernel that executes a duplicate twice still changes it: executions, judgement
/// and failure are in it.
pub fn behaviour_of(body: &str) -> String {
    project(body)
}

/// Verdict keys that carry the execution count and what follows from it: never dropped by a
/// comparison, and never excused in the nfsd-vs-classic cross-check by a timing reason.
const EXECUTION_KEYS: &[&str] = &["executions", "failure", "judgement"];

fn project(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut section = "";
    for line in body.lines() {
        if line.starts_with("## ") {
            section = if line.starts_with("## verdict") {
                "verdict"
            } else if line == "## kernel deltas" {
                "kernel"
            } else if line == "## trace" {
                "trace"
            } else {
                ""
            };
        } else {
            let keep = match section {
                "verdict" => {
                    let key = line.split(':').next().unwrap_or("");
                    !ANSWER_KEYS.contains(&key)
                }
                "kernel" => stable_kernel_key(line.split('=').next().unwrap_or("")),
                "trace" => {
                    let mut words = line.split(' ').skip(1);
                    let side = words.next();
                    let what = words.next().unwrap_or("");
                    // Connection lines: CM over RoCE, MPA and TCP's close over iWARP.
                    side == Some("C") || ["CM_", "MPA_", "TCP_"].iter().any(|p| what.starts_with(p))
                }
                _ => true,
            };
            if !keep {
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// [`compare`] for a timing-dependent scenario: a snapshot that reproduces no recorded outcome
/// word for word is still unchanged in behaviour ([`Comparison::SameBehaviour`]) when its
/// [`behaviour_of`] equals a recorded outcome's.
pub fn compare_timing_dependent(snapshot: &Snapshot, root: &Path) -> Result<Comparison> {
    compare_projected(snapshot, root, behaviour_of)
}

fn compare_projected(
    snapshot: &Snapshot,
    root: &Path,
    projection: fn(&str) -> String,
) -> Result<Comparison> {
    compare_with(snapshot, root, Some(projection))
}

/// A unified diff (3 lines of context) from `old` to `new`, labelled with `path`.
pub fn unified_diff(old: &str, new: &str, path: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("baseline/{path}"), &format!("run/{path}"))
        .to_string()
}

fn read_baseline(path: &Path) -> Result<Option<Baseline>> {
    if !path.exists() {
        return Ok(None);
    }
    let text = read_bounded(path)?;
    Baseline::parse(&text)
        .map(Some)
        .with_context(|| format!("baseline {}", path.display()))
}

/// Compare `snapshot` with its baseline under `root`: unchanged when it reproduces any recorded
/// outcome.
pub fn compare(snapshot: &Snapshot, root: &Path) -> Result<Comparison> {
    compare_with(snapshot, root, None)
}

/// The comparison, with the baseline read once: word for word, then a recorded outcome whose
/// trace is missing, then (with `projection`) a recorded outcome of the same projection, and
/// only then the diff against the closest outcome.
fn compare_with(
    snapshot: &Snapshot,
    root: &Path,
    projection: Option<fn(&str) -> String>,
) -> Result<Comparison> {
    if let Some(reason) = &snapshot.harness_failure {
        return Ok(Comparison::HarnessFailure(reason.clone()));
    }
    let Some(baseline) = read_baseline(&root.join(snapshot.relative_path()))? else {
        return Ok(Comparison::New);
    };
    let (_, body) = split_header(&snapshot.text);
    let of = baseline.outcomes.len();
    if let Some(index) = baseline.outcomes.iter().position(|o| o.body == body) {
        return Ok(Comparison::Unchanged {
            outcome: index + 1,
            of,
        });
    }
    if let Some(index) = baseline
        .outcomes
        .iter()
        .position(|o| o.trace_missing() && without_trace(&o.body) == without_trace(body))
    {
        return Ok(Comparison::TraceNotRecorded { outcome: index + 1 });
    }
    if let Some(project) = projection {
        let behaviour = project(body);
        if let Some(index) = baseline
            .outcomes
            .iter()
            .position(|o| project(&o.body) == behaviour)
        {
            return Ok(Comparison::SameBehaviour {
                outcome: index + 1,
                of,
            });
        }
    }
    let closest = (0..of)
        .max_by(|&a, &b| {
            let ratio = |i: usize| {
                similar::TextDiff::from_lines(baseline.outcomes[i].body.as_str(), body).ratio()
            };
            ratio(a).total_cmp(&ratio(b)).then(b.cmp(&a))
        })
        .unwrap_or(0);
    let mut label = snapshot.relative_path().display().to_string();
    if of > 1 {
        label.push_str(&format!(" (outcome {} of {of})", closest + 1));
    }
    Ok(Comparison::Changed {
        diff: unified_diff(&baseline.outcome_text(closest), &snapshot.text, &label),
        closest: closest + 1,
        of,
    })
}

/// What accepting a snapshot did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accepted {
    /// The baseline now holds this run's outcome only.
    Written(PathBuf),
    /// Timing-dependent: the run reproduced outcome `outcome`, now counted `runs` times (or
    /// completed its trace, which had not been recorded).
    Counted {
        path: PathBuf,
        outcome: usize,
        runs: u32,
    },
    /// Timing-dependent: a new alternative outcome, number `outcome`.
    Added { path: PathBuf, outcome: usize },
    /// Not accepted: the case's capture cannot be judged.
    Refused(String),
}

/// Record `snapshot` in its baseline under `root`. A scenario that is not timing-dependent
/// (`timing` is `None`) gets this run's outcome as its only one; a timing-dependent one keeps
/// its recorded outcomes and counts this run in the one it reproduces, or adds it as a new
/// alternative. A harness failure is never accepted.
pub fn accept(snapshot: &Snapshot, root: &Path, timing: Option<&str>) -> Result<Accepted> {
    if let Some(reason) = &snapshot.harness_failure {
        return Ok(Accepted::Refused(reason.clone()));
    }
    let path = root.join(snapshot.relative_path());
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    let (header, body) = split_header(&snapshot.text);
    let this_run = Outcome {
        runs: 1,
        body: body.to_owned(),
    };
    let (baseline, accepted) = match (timing, read_baseline(&path)?) {
        (Some(reason), Some(mut baseline)) => {
            baseline.header = header.to_owned();
            baseline.timing = Some(reason.to_owned());
            let same = baseline
                .outcomes
                .iter()
                .position(|o| o.body == body)
                .or_else(|| {
                    baseline.outcomes.iter().position(|o| {
                        o.trace_missing() && without_trace(&o.body) == without_trace(body)
                    })
                });
            let accepted = match same {
                Some(index) => {
                    let outcome = &mut baseline.outcomes[index];
                    outcome.runs = outcome.runs.saturating_add(1);
                    outcome.body = body.to_owned();
                    Accepted::Counted {
                        path: path.clone(),
                        outcome: index + 1,
                        runs: outcome.runs,
                    }
                }
                None => {
                    ensure!(
                        baseline.outcomes.len() < MAX_OUTCOMES,
                        "{}: already {MAX_OUTCOMES} outcomes",
                        path.display()
                    );
                    baseline.outcomes.push(this_run);
                    Accepted::Added {
                        path: path.clone(),
                        outcome: baseline.outcomes.len(),
                    }
                }
            };
            (baseline, accepted)
        }
        (timing, _) => (
            Baseline {
                header: header.to_owned(),
                timing: timing.map(str::to_owned),
                outcomes: vec![this_run],
            },
            Accepted::Written(path.clone()),
        ),
    };
    fs::write(&path, baseline.to_text()).with_context(|| format!("writing {}", path.display()))?;
    Ok(accepted)
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
    /// meets its original in progress): their baselines hold a set of recorded outcomes
    /// ([`Baseline`]), any of which a run may reproduce; their nfsd-vs-ours divergences are
    /// printed but do not fail the check. Each entry needs a reason.
    #[serde(default)]
    pub timing_dependent: Vec<TimingDependent>,
}

/// A scenario whose observed outcome legitimately varies from run to run.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingDependent {
    pub scenario: String,
    pub reason: String,
    /// Only on these kernels (empty: on every kernel).
    #[serde(default)]
    pub kernels: Vec<String>,
    // No mode drops the executions or the judgement: an execution count that follows the
    // timing is recorded as several outcomes, each with its count and judgement (the former
    // `executions_vary = true` is refused as an unknown field).
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

    /// Why `scenario`'s outcome may vary between runs on `kernel`, if it is listed as
    /// timing-dependent there.
    pub fn timing_reason(&self, kernel: &str, scenario: &str) -> Option<&str> {
        self.timing_dependent
            .iter()
            .find(|t| {
                t.scenario == scenario
                    && (t.kernels.is_empty() || t.kernels.iter().any(|k| k == kernel))
            })
            .map(|t| t.reason.as_str())
    }

    /// The timing reason for a case on `kernel`: an entry naming its scenario (`burst`, every
    /// label) or the case itself (`acked.in-ack-window`: timing-dependent only under that DRC
    /// policy), for every kernel or listing this one.
    pub fn timing_reason_for_case(&self, kernel: &str, case: &str) -> Option<&str> {
        self.timing_reason(kernel, case)
            .or_else(|| self.timing_reason(kernel, scenario_of_case(case)))
    }

    /// The listed reason for this divergence, if any. A timing-dependent scenario's reason
    /// covers how its duplicates were answered, never its executions or judgement
    /// ([`EXECUTION_KEYS`]): nfsd and classic executing a call a different number of times is
    /// a divergence unless a `[[difference]]` names it.
    pub fn reason(&self, kernel: &str, scenario: &str, field: &str) -> Option<&str> {
        // Either side's timing explains the pair: an entry for the scenario, or for the case of
        // the drc suite (`nfsd.burst`) or of the selftest suite (`classic.burst`).
        let timing = self
            .timing_reason_for_case(kernel, &format!("nfsd.{scenario}"))
            .or_else(|| self.timing_reason_for_case(kernel, &format!("classic.{scenario}")));
        if let Some(reason) = timing {
            if !EXECUTION_KEYS.contains(&field) {
                return Some(reason);
            }
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
    "judgement": "pass",
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
            attempt: 1,
            text: render(
                &KernelVersion::named(kernel),
                "x",
                case,
                &verdicts,
                None,
                None,
            ),
            verdicts,
            transport: None,
            harness_failure: None,
        }
    }

    /// A run's snapshot reproducing `text` (a baseline outcome's header and body).
    fn run_of(text: &str) -> Snapshot {
        Snapshot {
            kernel: "linux-6.1".into(),
            suite: "drc".into(),
            case: "nfsd.burst".into(),
            attempt: 1,
            text: text.into(),
            verdicts: Vec::new(),
            transport: None,
            harness_failure: None,
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
        let text = render(
            &KernelVersion::named("linux-6.1"),
            "drc",
            "nfsd.after-ack",
            &verdicts,
            None,
            None,
        );
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
            render(
                &KernelVersion::named("linux-6.1"),
                "drc",
                "nfsd.after-ack",
                &slower,
                None,
                None
            )
        );
    }

    #[test]
    fn concurrent_interleavings_render_the_same() {
        let one = [
            "c1 C CM_REQ port=20049",
            "c1 C RDMA_MSG x2 cr=8 NFS3 MKDIR call",
            "c1 C RDMA_MSG x3 cr=8 NFS3 MKDIR call",
            "c1 S RDMA_MSG x2 cr=64 NFS3 MKDIR reply NFS3_OK",
            "c1 S RDMA_READ h2+0 len=8192",
            "c1 S RDMA_READ h1+0 len=8192",
            "c1 S RDMA_MSG x3 cr=64 NFS3 MKDIR reply NFS3_OK",
            "c1 C CM_DREQ",
        ];
        let two = [
            "c1 C CM_REQ port=20049",
            "c1 C RDMA_MSG x2 cr=8 NFS3 MKDIR call",
            "c1 S RDMA_READ h1+0 len=8192",
            "c1 S RDMA_MSG x2 cr=64 NFS3 MKDIR reply NFS3_OK",
            "c1 C RDMA_MSG x3 cr=8 NFS3 MKDIR call",
            "c1 S RDMA_MSG x3 cr=64 NFS3 MKDIR reply NFS3_OK",
            "c1 S RDMA_READ h2+0 len=8192",
            "c1 C CM_DREQ",
        ];
        assert_eq!(canonical_order(&one), canonical_order(&two));
        // A retransmit and its DRC replay stay after the original, a missing reply still shows.
        let with_dup = [
            "c1 C RDMA_MSG x4 cr=8 NFS3 REMOVE call",
            "c1 S RDMA_MSG x4 cr=64 NFS3 REMOVE reply NFS3_OK",
            "c1 C RDMA_MSG x4 cr=8 NFS3 REMOVE call RETRANSMIT",
            "c1 S RDMA_MSG x4 cr=64 NFS3 REMOVE reply NFS3ERR_NOENT DUP_REPLY",
        ];
        assert_eq!(
            canonical_order(&with_dup),
            [with_dup[0], with_dup[2], with_dup[1], with_dup[3]]
        );
        assert_ne!(canonical_order(&one), canonical_order(&one[..6]));
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
        let text = render(
            &KernelVersion::named("k"),
            "drc",
            "c",
            &[],
            Some(&deltas),
            Some(&trace),
        );
        assert!(text.contains("## kernel deltas\ncache_hits=1\nrc_misses=2\n## trace\nl0\n"));
        assert!(text.ends_with("... 7 more lines cut\n"));
    }

    fn timing_snapshot(executions: u32, statuses: &str, trace: &str) -> Snapshot {
        let json = format!(
            r#"[{{"scenario": "before-execution", "procedure": "REMOVE", "transmissions": 2,
                "executions": {executions}, "executions_basis": "counted",
                "judgement": "{judgement}", "statuses": [{statuses}],
                "replies": {replies}, "unanswered": {unanswered}, "credits_balanced": {balanced},
                "note": "second reply within the timeout: {balanced}"}}]"#,
            judgement = if executions > 1 { "fail" } else { "pass" },
            replies = statuses.matches("NFS3").count(),
            unanswered = 2 - statuses.matches("NFS3").count(),
            balanced = statuses.matches("NFS3").count() == 2,
        );
        let verdicts = parse_verdicts(&json).unwrap();
        let deltas = kernel_fields(&format!(
            "executions_counted={executions}\ndrc_replays={}\ndrc_drops={}\nproc3_remove={executions}\n",
            u32::from(statuses.matches("NFS3").count() == 2),
            u32::from(statuses.matches("NFS3").count() == 1),
        ));
        Snapshot {
            kernel: "linux-6.12".into(),
            suite: "drc".into(),
            case: "nfsd.before-execution".into(),
            attempt: 1,
            text: render(
                &KernelVersion::named("linux-6.12"),
                "drc",
                "nfsd.before-execution",
                &verdicts,
                Some(&deltas),
                Some(trace),
            ),
            verdicts,
            transport: None,
            harness_failure: None,
        }
    }

    #[test]
    fn a_timing_dependent_answer_not_recorded_yet_is_the_same_behaviour() {
        const CALLS: &str =
            "c1 C RDMA_MSG x3 NFS3 REMOVE call\nc1 C RDMA_MSG x3 NFS3 REMOVE call RETRANSMIT\n";
        let replayed = timing_snapshot(
            1,
            r#""NFS3_OK", "NFS3_OK""#,
            &format!("{CALLS}c1 S RDMA_MSG x3 REMOVE reply NFS3_OK\nc1 S RDMA_MSG x3 REMOVE reply NFS3_OK DUP_REPLY\nc1 C CM_DREQ\n"),
        );
        let dropped = timing_snapshot(
            1,
            r#""NFS3_OK""#,
            &format!("{CALLS}c1 S RDMA_MSG x3 REMOVE reply NFS3_OK\nc1 C CM_DREQ\n"),
        );
        let executed_twice = timing_snapshot(
            2,
            r#""NFS3_OK", "NFS3ERR_NOENT""#,
            &format!("{CALLS}c1 S RDMA_MSG x3 REMOVE reply NFS3_OK\nc1 S RDMA_MSG x3 REMOVE reply NFS3ERR_NOENT\nc1 C CM_DREQ\n"),
        );
        let dir = tempfile::tempdir().unwrap();
        accept(
            &replayed,
            dir.path(),
            Some("in-progress duplicates dropped or replayed"),
        )
        .unwrap();
        // Word for word, the dropped duplicate is a change; in behaviour it is the same.
        assert!(matches!(
            compare(&dropped, dir.path()).unwrap(),
            Comparison::Changed { .. }
        ));
        assert_eq!(
            compare_timing_dependent(&dropped, dir.path()).unwrap(),
            Comparison::SameBehaviour { outcome: 1, of: 1 }
        );
        assert_eq!(
            compare_timing_dependent(&replayed, dir.path()).unwrap(),
            Comparison::Unchanged { outcome: 1, of: 1 }
        );
        // A second execution is a change of behaviour, whatever the timing.
        match compare_timing_dependent(&executed_twice, dir.path()).unwrap() {
            Comparison::Changed { diff, .. } => {
                assert!(diff.contains("+executions: 2"), "{diff}");
            }
            other => panic!("expected a change, got {other:?}"),
        }
        // What the behaviour keeps: executions, judgement, counted executions, calls, CM.
        let behaviour = behaviour_of(split_header(&dropped.text).1);
        assert!(behaviour.contains("executions: 1\n"), "{behaviour}");
        assert!(behaviour.contains("judgement: pass\n"), "{behaviour}");
        assert!(behaviour.contains("executions_counted=1\n"), "{behaviour}");
        assert!(behaviour.contains("proc3_remove=1\n"), "{behaviour}");
        assert!(
            behaviour.contains("REMOVE call RETRANSMIT\n"),
            "{behaviour}"
        );
        assert!(behaviour.contains("c1 C CM_DREQ\n"), "{behaviour}");
        for gone in [
            "statuses",
            "unanswered",
            "drc_drops",
            "reply NFS3_OK",
            "note:",
        ] {
            assert!(!behaviour.contains(gone), "{gone} in {behaviour}");
        }
    }

    #[test]
    fn compare_accept_round_trip_and_diff() {
        let dir = tempfile::tempdir().unwrap();
        let first = snapshot("linux-6.1", "nfsd.after-ack", VERDICT);
        assert_eq!(compare(&first, dir.path()).unwrap(), Comparison::New);
        let written = accept(&first, dir.path(), None).unwrap();
        let Accepted::Written(path) = written else {
            panic!("{written:?}")
        };
        assert!(path.ends_with("linux-6.1/x/nfsd.after-ack.snap"));
        // Not timing-dependent: the file is the run's text, no markers.
        assert_eq!(fs::read_to_string(&path).unwrap(), first.text);
        assert_eq!(
            compare(&first, dir.path()).unwrap(),
            Comparison::Unchanged { outcome: 1, of: 1 }
        );
        let changed = snapshot(
            "linux-6.1",
            "nfsd.after-ack",
            &VERDICT.replace("\"executions\": 2", "\"executions\": 1"),
        );
        match compare(&changed, dir.path()).unwrap() {
            Comparison::Changed { diff, closest, of } => {
                assert_eq!((closest, of), (1, 1));
                assert!(diff.contains("-executions: 2\n+executions: 1\n"), "{diff}");
                assert!(diff.contains("baseline/linux-6.1/x/nfsd.after-ack.snap"));
            }
            other => panic!("expected a change, got {other:?}"),
        }
    }

    #[test]
    fn timing_dependent_baselines_record_alternative_outcomes() {
        let dir = tempfile::tempdir().unwrap();
        let reason = Some("race");
        let two = snapshot("linux-6.1", "nfsd.burst", VERDICT);
        let one = snapshot(
            "linux-6.1",
            "nfsd.burst",
            &VERDICT.replace("\"executions\": 2", "\"executions\": 1"),
        );
        let path = match accept(&two, dir.path(), reason).unwrap() {
            Accepted::Written(path) => path,
            other => panic!("{other:?}"),
        };
        let text = fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("\n# timing-dependent: race\n# single-run baseline: "),
            "{text}"
        );
        assert!(
            text.contains("\n### outcome 1 (runs: 1)\n## verdict 1\n"),
            "{text}"
        );
        assert_eq!(
            compare(&two, dir.path()).unwrap(),
            Comparison::Unchanged { outcome: 1, of: 1 }
        );
        // The other outcome is a change until it is accepted as an alternative.
        assert!(matches!(
            compare(&one, dir.path()).unwrap(),
            Comparison::Changed {
                closest: 1,
                of: 1,
                ..
            }
        ));
        assert_eq!(
            accept(&one, dir.path(), reason).unwrap(),
            Accepted::Added {
                path: path.clone(),
                outcome: 2
            }
        );
        assert_eq!(
            compare(&one, dir.path()).unwrap(),
            Comparison::Unchanged { outcome: 2, of: 2 }
        );
        assert_eq!(
            compare(&two, dir.path()).unwrap(),
            Comparison::Unchanged { outcome: 1, of: 2 }
        );
        assert_eq!(
            accept(&two, dir.path(), reason).unwrap(),
            Accepted::Counted {
                path: path.clone(),
                outcome: 1,
                runs: 2
            }
        );
        let text = fs::read_to_string(&path).unwrap();
        assert!(!text.contains("single-run"), "{text}");
        assert!(text.contains("# recorded: 2 outcomes from 3 runs\n### outcome 1 (runs: 2)\n"));
        let baseline = Baseline::parse(&text).unwrap();
        assert_eq!(baseline.to_text(), text);
        assert_eq!(baseline.outcomes.len(), 2);
        // A third behaviour is red, diffed against the closest outcome.
        let three = snapshot(
            "linux-6.1",
            "nfsd.burst",
            &VERDICT.replace("\"executions\": 2", "\"executions\": 3"),
        );
        match compare(&three, dir.path()).unwrap() {
            Comparison::Changed { diff, closest, of } => {
                assert_eq!(of, 2);
                assert!(
                    diff.contains(&format!("(outcome {closest} of 2)")),
                    "{diff}"
                );
                assert!(diff.contains("+executions: 3\n"), "{diff}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_incomplete_capture_is_a_harness_failure_never_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let mut cut = snapshot("linux-6.1", "nfsd.once", VERDICT);
        cut.harness_failure = Some("capture incomplete: no disconnect".into());
        assert_eq!(
            compare(&cut, dir.path()).unwrap(),
            Comparison::HarnessFailure("capture incomplete: no disconnect".into())
        );
        assert!(matches!(
            accept(&cut, dir.path(), None).unwrap(),
            Accepted::Refused(_)
        ));
        assert!(!dir.path().join(cut.relative_path()).exists());
    }

    /// A committed capture and the reviewed `rig trace show` text of it (the trace crate's insta
    /// snapshot: the event lines, then `transport:` and `capture:`).
    fn fixture(name: &str) -> (PathBuf, String) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let pcap = root.join("fixtures/pcap").join(format!("{name}.pcap"));
        let snap = root.join(format!(
            "crates/trace/tests/snapshots/snapshots__{name}.snap"
        ));
        let text = fs::read_to_string(&snap).unwrap();
        // The insta header ends at its second `---` line.
        let body = text.splitn(3, "---\n").nth(2).unwrap().to_owned();
        (pcap, body)
    }

    #[test]
    fn a_capture_is_decoded_in_process_into_what_rig_trace_show_prints() {
        for name in ["nfs3-linux-6.1", "nfs41-linux-7.x"] {
            let (pcap, shown) = fixture(name);
            let out = trace_output(&pcap).unwrap();
            let shown_lines: String = shown
                .lines()
                .filter(|l| !l.starts_with("transport: ") && !l.starts_with("capture: "))
                .map(|l| format!("{l}\n"))
                .collect();
            assert_eq!(out.lines, shown_lines, "{name}");
            assert!(
                shown.contains(&format!("transport: {}\n", out.transport)),
                "{name}"
            );
            assert!(
                shown.ends_with(&format!("capture: {}\n", out.capture)),
                "{name}"
            );
        }
    }

    #[test]
    fn an_incomplete_or_unreadable_capture_is_a_capture_problem() {
        // The 6.1 NFSv3 capture stops before its last connection's disconnect.
        let (pcap, _) = fixture("nfs3-linux-6.1");
        let cut = trace_output(&pcap).unwrap();
        assert!(!cut.capture.is_complete());
        assert_eq!(
            capture_problem(&[], &cut).as_deref(),
            Some("capture incomplete: no disconnect after the last message on 1 of 1 connections")
        );
        // A complete capture with fewer connection requests than the client made.
        let (pcap, shown) = fixture("nfs3-linux-7.2");
        let whole = trace_output(&pcap).unwrap();
        assert!(whole.capture.is_complete());
        let requests = shown.lines().filter(|l| l.contains(" CM_REQ")).count();
        let fewer = parse_verdicts(&format!(r#"{{"connects": {requests}}}"#)).unwrap();
        assert_eq!(capture_problem(&fewer, &whole), None);
        let more = parse_verdicts(&format!(r#"{{"connects": {}}}"#, requests + 1)).unwrap();
        assert_eq!(
            capture_problem(&more, &whole),
            Some(format!(
                "capture incomplete: {requests} connection requests captured, the client made {} \
                 connections",
                requests + 1
            ))
        );
        // Not a capture at all: an error, which collect turns into a harness failure.
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pcap");
        fs::write(&junk, b"not a capture").unwrap();
        assert!(trace_output(&junk).is_err());
    }

    #[test]
    fn over_iwarp_mpa_requests_are_the_connection_requests() {
        // The siw NFSv3 fixture: one NFS/RDMA connection, opened by an MPA Request.
        let pcap =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/pcap/siw-nfs3-linux-6.12.pcap");
        let whole = trace_output(&pcap).unwrap();
        assert!(whole.capture.is_complete());
        let one = parse_verdicts(r#"{"connects": 1}"#).unwrap();
        assert_eq!(capture_problem(&one, &whole), None);
        let two = parse_verdicts(r#"{"connects": 2}"#).unwrap();
        assert_eq!(
            capture_problem(&two, &whole).as_deref(),
            Some(
                "capture incomplete: 1 connection requests captured, the client made 2 connections"
            )
        );
    }

    #[test]
    fn collect_turns_an_incomplete_capture_into_a_harness_failure() {
        let dir = tempfile::tempdir().unwrap();
        let (whole, shown) = fixture("nfs3-linux-7.2");
        let (cut, _) = fixture("nfs3-linux-6.1");
        let requests = shown.lines().filter(|l| l.contains(" CM_REQ")).count();
        let verdict = format!(r#"{{"judgement": "pass", "connects": {requests}}}"#);
        for (case, pcap) in [("nfsd.once", &whole), ("nfsd.cut", &cut)] {
            fs::write(dir.path().join(format!("{case}.verdict.json")), &verdict).unwrap();
            fs::copy(pcap, dir.path().join(format!("{case}.pcap"))).unwrap();
        }
        let cases = vec!["nfsd.once".to_owned(), "nfsd.cut".to_owned()];
        let snaps = collect(&KernelVersion::named("k"), "drc", &cases, dir.path()).unwrap();
        assert_eq!(snaps[0].harness_failure, None);
        assert!(
            snaps[0].text.contains("## trace\nc1 C CM_REQ"),
            "{}",
            snaps[0].text
        );
        assert!(snaps[0]
            .transport
            .as_deref()
            .is_some_and(|t| t.starts_with("duplicates=0 naks=0")));
        assert_eq!(
            snaps[1].harness_failure.as_deref(),
            Some("capture incomplete: no disconnect after the last message on 1 of 1 connections")
        );
    }

    #[test]
    fn case_globs_match_name_scenario_or_path() {
        let s = run_of("# interop snapshot: kernel=linux-6.1 suite=drc case=nfsd.burst\n");
        for pattern in [
            "nfsd.burst",
            "burst",
            "nfsd.*",
            "linux-6.1/drc/*",
            "*/drc/nfsd.b*",
        ] {
            assert!(s.matches(pattern), "{pattern}");
        }
        for pattern in ["acked.burst", "linux-7.x/*", "burst-x"] {
            assert!(!s.matches(pattern), "{pattern}");
        }
    }

    #[test]
    fn malformed_baselines_are_typed_errors() {
        assert_eq!(Baseline::parse("no header"), Err(BaselineError::NoHeader));
        let h = "# interop snapshot: kernel=k suite=s case=c\n";
        assert!(matches!(
            Baseline::parse(&format!("{h}### outcome 1 (runs: x)\n")),
            Err(BaselineError::BadOutcomeMarker { line: 2, .. })
        ));
        assert_eq!(
            Baseline::parse(&format!("{h}## verdict 1\n### outcome 1 (runs: 1)\n")),
            Err(BaselineError::TextBeforeOutcome { line: 3 })
        );
        let many: String = (0..=MAX_OUTCOMES)
            .map(|i| format!("### outcome {i} (runs: 1)\n"))
            .collect();
        assert!(matches!(
            Baseline::parse(&format!("{h}{many}")),
            Err(BaselineError::TooManyOutcomes { .. })
        ));
        // The format before judgements is refused, whichever outcome holds it.
        let judged = "## verdict 1\nexecutions: 1\njudgement: pass\n";
        let unjudged = "## verdict 1\nexecutions: 1\n## trace\nc1 C CM_REQ\n";
        assert!(Baseline::parse(&format!("{h}{judged}")).is_ok());
        assert_eq!(
            Baseline::parse(&format!(
                "{h}### outcome 1 (runs: 1)\n{judged}### outcome 2 (runs: 1)\n{unjudged}"
            )),
            Err(BaselineError::NoJudgement {
                outcome: 2,
                verdict: "## verdict 1".into()
            })
        );
    }

    fn committed_root() -> PathBuf {
        crate::cache::workspace_root().join("fixtures/snapshots/interop")
    }

    fn committed_baselines() -> Vec<(PathBuf, String)> {
        let mut files = Vec::new();
        let mut dirs = vec![committed_root()];
        while let Some(dir) = dirs.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "snap") {
                    let text = fs::read_to_string(&path).unwrap();
                    files.push((path, text));
                }
            }
        }
        files.sort();
        files
    }

    #[test]
    fn committed_baselines_hold_the_gating_level_only() {
        let expected = ExpectedDifferences::parse(
            &fs::read_to_string(
                crate::cache::workspace_root().join("fixtures/interop/expected-differences.toml"),
            )
            .unwrap(),
        )
        .unwrap();
        let files = committed_baselines();
        // 3 Debian kernels x (60 selftest + 22 drc + 5 v41) + 3 mutant kernels x 22 drc, then
        // the siw lanes: 3 source builds x (60 selftest + 22 drc + 5 v41) + the acked-evict
        // mutant's 22 (drc: 21 scenarios and premise.send-completion).
        assert_eq!(
            files.len(),
            3 * (60 + 22 + 5) + 3 * 22 + 3 * (60 + 22 + 5) + 22
        );
        let (mut timing, mut single) = (0, 0);
        for (path, text) in &files {
            let baseline = Baseline::parse(text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
            // Canonical: what accept would write.
            assert_eq!(&baseline.to_text(), text, "{path:?}");
            // No RC-level transport event is a line at the gating level.
            for line in text.lines() {
                assert!(!line.contains(" ! "), "{path:?}: {line}");
            }
            let case = path.file_stem().unwrap().to_string_lossy().into_owned();
            let kernel = path
                .parent()
                .and_then(|suite| suite.parent())
                .and_then(|kernel| kernel.file_name())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            match expected.timing_reason_for_case(&kernel, &case) {
                Some(reason) => {
                    timing += 1;
                    assert_eq!(baseline.timing.as_deref(), Some(reason), "{path:?}");
                    if baseline.runs() == 1 {
                        single += 1;
                        assert!(text.contains("\n# single-run baseline: "), "{path:?}");
                    }
                }
                None => {
                    assert_eq!(baseline.timing, None, "{path:?}");
                    assert_eq!(baseline.outcomes.len(), 1, "{path:?}");
                }
            }
        }
        // The in-progress cases on the inprog-doit mutant (its two executions race after the
        // thaw) and v41-replay-in-progress (3 kernels x 2 transports, the opt-in v41 suite). The
        // in-progress scenarios hold the server's execution (rig serve --control, or the export
        // frozen by rig hold-export beside nfsd); acked reply-chunk and changed-args-same-xid
        // are forced by the relay's hold of the reply's RC ACK; acked in-ack-window and
        // after-reconnect let the ACK settle as after-ack does.
        assert_eq!(timing, 3 + 3 * 2);
        assert!(single <= timing);
    }

    /// A committed baseline's outcome, as a run reproducing it would render it.
    fn committed_run(relative: &str) -> Snapshot {
        let text = fs::read_to_string(committed_root().join(relative)).unwrap();
        let baseline = Baseline::parse(&text).unwrap();
        let (kernel, rest) = relative.split_once('/').unwrap();
        let (suite, file) = rest.split_once('/').unwrap();
        Snapshot {
            kernel: kernel.into(),
            suite: suite.into(),
            case: file.trim_end_matches(".snap").into(),
            ..run_of(&baseline.outcome_text(0))
        }
    }

    #[test]
    fn deliberate_behaviour_changes_against_committed_baselines_are_red_and_readable() {
        let root = committed_root();
        for relative in [
            "linux-6.12/drc/nfsd.after-ack.snap",
            "linux-6.1/selftest/classic.after-ack.snap",
        ] {
            let same = committed_run(relative);
            assert!(
                matches!(
                    compare(&same, &root).unwrap(),
                    Comparison::Unchanged { outcome: 1, .. }
                ),
                "{relative}"
            );
            // A verdict's executions 1 -> 2.
            let twice = Snapshot {
                text: same
                    .text
                    .replacen("\nexecutions: 1\n", "\nexecutions: 2\n", 1),
                ..same.clone()
            };
            assert_ne!(twice.text, same.text, "{relative}");
            match compare(&twice, &root).unwrap() {
                Comparison::Changed { diff, .. } => {
                    assert!(
                        diff.contains("\n-executions: 1\n+executions: 2\n"),
                        "{diff}"
                    );
                    assert!(diff.contains(&format!("--- baseline/{relative}")), "{diff}");
                    assert_eq!(changed_lines(&diff), 2, "{diff}");
                }
                other => panic!("{relative}: {other:?}"),
            }
            // The DRC replay missing from the trace.
            let dup = same
                .text
                .lines()
                .find(|l| l.ends_with(" DUP_REPLY"))
                .unwrap()
                .to_owned();
            let no_replay = Snapshot {
                text: same.text.replacen(&format!("{dup}\n"), "", 1),
                ..same.clone()
            };
            match compare(&no_replay, &root).unwrap() {
                Comparison::Changed { diff, .. } => {
                    assert!(diff.contains(&format!("\n-{dup}\n")), "{diff}");
                    assert_eq!(changed_lines(&diff), 1, "{diff}");
                }
                other => panic!("{relative}: {other:?}"),
            }
        }
    }

    fn changed_lines(diff: &str) -> usize {
        diff.lines()
            .filter(|l| l.starts_with(['+', '-']) && !l.starts_with("+++") && !l.starts_with("---"))
            .count()
    }

    #[test]
    fn a_timing_dependent_committed_baseline_passes_only_its_recorded_outcome() {
        let root = committed_root();
        let relative = "linux-7.x/drc/nfsd.burst.snap";
        let same = committed_run(relative);
        assert!(matches!(
            compare(&same, &root).unwrap(),
            Comparison::Unchanged { outcome: 1, .. }
        ));
        // An outcome none of the recorded ones has (a fifth transmission) is red until accepted.
        let other = Snapshot {
            text: same
                .text
                .replacen("\ntransmissions: 4\n", "\ntransmissions: 5\n", 1),
            ..same.clone()
        };
        assert_ne!(other.text, same.text);
        assert!(matches!(
            compare(&other, &root).unwrap(),
            Comparison::Changed { .. }
        ));
    }

    #[test]
    fn a_baseline_without_a_recorded_trace_still_needs_this_runs_trace() {
        // No committed baseline lacks its trace any more, so one is made from a committed
        // baseline whose trace section is replaced by the marker, in a root of its own.
        let relative = "linux-6.1/drc/nfsd.burst.snap";
        let run = committed_run(relative);
        let committed = fs::read_to_string(committed_root().join(relative)).unwrap();
        let trace_at = committed
            .find("\n## trace\n")
            .expect("the committed baseline has a trace section");
        assert_eq!(
            Baseline::parse(&committed).unwrap().outcomes.len(),
            1,
            "{relative} must hold one outcome for this test"
        );
        let untraced = format!("{}\n{TRACE_NOT_RECORDED}\n", &committed[..trace_at]);
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, &untraced).unwrap();
        assert!(read_baseline(&path).unwrap().unwrap().outcomes[0].trace_missing());
        assert_eq!(
            compare(&run, root.path()).unwrap(),
            Comparison::TraceNotRecorded { outcome: 1 }
        );
        let changed = Snapshot {
            text: run
                .text
                .replacen("\nexecutions: 1\n", "\nexecutions: 2\n", 1),
            ..run.clone()
        };
        assert_ne!(changed.text, run.text, "the run records executions: 1");
        assert!(matches!(
            compare(&changed, root.path()).unwrap(),
            Comparison::Changed { .. }
        ));
    }

    #[test]
    fn collect_reads_case_files_and_skips_cases_without_any() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("nfsd.once.verdict.json"), VERDICT).unwrap();
        fs::write(dir.path().join("nfsd.once.kernel.txt"), "cache_misses=2\n").unwrap();
        let cases = vec!["setup".to_owned(), "nfsd.once".to_owned()];
        let snaps = collect(&KernelVersion::named("k"), "drc", &cases, dir.path()).unwrap();
        assert_eq!(snaps.len(), 1);
        assert_eq!(snaps[0].case, "nfsd.once");
        assert!(snaps[0].text.contains("## kernel deltas\ncache_misses=2\n"));
        fs::write(dir.path().join("nfsd.once.verdict.json"), "not json").unwrap();
        assert!(collect(&KernelVersion::named("k"), "drc", &cases, dir.path()).is_err());
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
    fn timing_explains_how_duplicates_were_answered_never_executions_or_judgement() {
        let text =
            format!("{EXPECTED}\n[[timing_dependent]]\nscenario = \"burst\"\nreason = \"race\"\n");
        let expected = ExpectedDifferences::parse(&text).unwrap();
        assert_eq!(expected.timing_reason("linux-7.x", "burst"), Some("race"));
        assert_eq!(
            expected.reason("linux-7.x", "burst", "statuses"),
            Some("race")
        );
        for field in ["executions", "judgement", "failure"] {
            assert_eq!(
                expected.reason("linux-7.x", "burst", field),
                None,
                "{field}"
            );
        }
        // nfsd executing the burst once and classic twice is an unexplained divergence.
        let burst = VERDICT.replace("after-ack", "burst");
        let nfsd = vec![snapshot(
            "linux-7.x",
            "nfsd.burst",
            &burst.replace("\"executions\": 2", "\"executions\": 1"),
        )];
        let ours = vec![snapshot("linux-7.x", "classic.burst", &burst)];
        let found = divergences("linux-7.x", &nfsd, &ours, &expected);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].field.as_str(), found[0].expected.as_deref()),
            ("executions", None)
        );
        // No comparison mode drops the executions: the old opt-out is refused.
        assert!(ExpectedDifferences::parse(&format!("{text}executions_vary = true\n")).is_err());
        assert_eq!(expected.reason("linux-7.x", "once", "statuses"), None);
        // Timing on the kernel's side only (our server's execution held, nfsd's not) still
        // explains how the pair answered duplicates; another policy's timing does not.
        let nfsd_only = format!(
            "{EXPECTED}\n[[timing_dependent]]\nscenario = \"nfsd.burst\"\nreason = \"nfsd races\"\n\
             [[timing_dependent]]\nscenario = \"acked.once\"\nreason = \"acked races\"\n"
        );
        let nfsd_only = ExpectedDifferences::parse(&nfsd_only).unwrap();
        assert_eq!(
            nfsd_only.reason("linux-7.x", "burst", "statuses"),
            Some("nfsd races")
        );
        assert_eq!(nfsd_only.reason("linux-7.x", "burst", "executions"), None);
        assert_eq!(nfsd_only.reason("linux-7.x", "once", "statuses"), None);
        // An entry for some kernels holds only there.
        let one_kernel = format!(
            "{EXPECTED}\n[[timing_dependent]]\nscenario = \"nfsd.burst\"\nkernels = [\"mutant\"]\n\
             reason = \"after the thaw\"\n"
        );
        let one_kernel = ExpectedDifferences::parse(&one_kernel).unwrap();
        assert_eq!(
            one_kernel.timing_reason_for_case("mutant", "nfsd.burst"),
            Some("after the thaw")
        );
        assert_eq!(
            one_kernel.timing_reason_for_case("linux-6.1", "nfsd.burst"),
            None
        );
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
