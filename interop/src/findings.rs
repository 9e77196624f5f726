//! `interop findings`: every kernel finding (fixtures/findings/findings.toml) replayed alone on a
//! fresh boot of the current version of each kernel line, and its fix looked up in the Debian
//! changelog of the package that ran, so a row says "reproduces on X; fixed in Y" from evidence.
//!
//! The replay is the wire-fuzz suite in replay mode (`rig fuzz-wire --replay`, one case against
//! nfsd and `rig serve`, the server guest's kernel watch on): the same path the finding was
//! found on, so a replay that stops reproducing means the kernel changed, not the harness.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cache::workspace_root;
use crate::known::{KnownProblem, FINDINGS_FILE};
use crate::matrix::Transport;
use crate::snapshots::read_bounded;

/// One entry of fixtures/findings/findings.toml.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingSpec {
    /// Short name (`read-overlap-oops`), used in paths and reports.
    pub name: String,
    pub title: String,
    /// A `rig fuzz-wire --replay` case file, relative to the workspace.
    pub reproducer: String,
    /// A kernel-watch hit containing this text is the finding reproducing.
    pub signature: String,
    /// The fix's commit subject, as the Debian changelog lists it (none known: absent).
    #[serde(default)]
    pub fix_subject: Option<String>,
    /// `finding` (a known fault) or `probe` (valid input whose answer we want).
    #[serde(default = "default_kind")]
    pub kind: String,
    /// The code path, with file:line in the tested source, as analysed (copied into REPORT.md).
    #[serde(default)]
    pub root_cause: Option<String>,
    /// The soft-RDMA provider the finding lives on: its replay runs on that provider's lane of
    /// each kernel line (`linux-6.12` for rxe, `linux-6.12-siw` for siw).
    #[serde(default)]
    pub transport: Transport,
    /// An unfixed fault every run over `transport` may meet (`kind = "finding"` only): a
    /// kernel-log line holding `signature` on such a lane is this finding, reported as known
    /// (the dmesg check's verdict `known`, the wire-fuzz watch's `kernel-watch.known`), not a
    /// new problem, and the wire-fuzz run goes on past it. Any other line stays red.
    #[serde(default)]
    pub known: bool,
    /// The kernel-log kind of a known finding's line (`WARN`, `BUG`, ...; `kernel_log::Kind`
    /// names): a line is this finding only if it is reported as that kind *and* holds
    /// `signature`, so a different fault in the same function (a KASAN report, an Oops) is not.
    #[serde(default)]
    pub log_kind: Option<String>,
    /// How many times a replay sends the reproducer on its one boot (a fault that lives in a
    /// race needs many tries; 1 to [`MAX_REPLAY_REPEAT`]).
    #[serde(default = "one")]
    pub replay_repeat: u32,
}

fn one() -> u32 {
    1
}

/// The most sends of one reproducer per replay (`rig fuzz-wire --repeat` allows 10000).
pub const MAX_REPLAY_REPEAT: u32 = 2000;

/// The shortest signature a `known` finding may have: it must name the fault, not a class.
const MIN_KNOWN_SIGNATURE: usize = 12;

fn default_kind() -> String {
    "finding".to_owned()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FindingsFile {
    finding: Vec<FindingSpec>,
}

/// Names safe in paths.
fn is_plain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && !name.starts_with(['.', '-'])
}

/// Parse and check the findings file: plain names, relative reproducer paths inside the tree,
/// a non-empty signature, a known kind.
pub fn parse_findings(text: &str) -> Result<Vec<FindingSpec>> {
    let file: FindingsFile = toml::from_str(text).context("parsing findings.toml")?;
    for finding in &file.finding {
        ensure!(
            is_plain(&finding.name),
            "bad finding name {:?}",
            finding.name
        );
        ensure!(
            !finding.reproducer.starts_with('/') && !finding.reproducer.contains(".."),
            "finding {}: reproducer {:?} must be a path inside the workspace",
            finding.name,
            finding.reproducer
        );
        ensure!(
            !finding.signature.trim().is_empty(),
            "finding {}: empty signature",
            finding.name
        );
        ensure!(
            matches!(finding.kind.as_str(), "finding" | "probe"),
            "finding {}: kind {:?} is neither finding nor probe",
            finding.name,
            finding.kind
        );
        if finding.known {
            check_known_signature(finding)?;
        }
        ensure!(
            (1..=MAX_REPLAY_REPEAT).contains(&finding.replay_repeat),
            "finding {}: replay_repeat {} is not within 1..={MAX_REPLAY_REPEAT}",
            finding.name,
            finding.replay_repeat
        );
    }
    Ok(file.finding)
}

/// A `known` finding's signature must single out one fault: long enough, one line, and not
/// itself a kernel-log marker (`WARNING: CPU:` would make every WARN known).
fn check_known_signature(finding: &FindingSpec) -> Result<()> {
    let signature = finding.signature.as_str();
    ensure!(
        finding.kind == "finding",
        "finding {}: only a finding (not a probe) can be known",
        finding.name
    );
    ensure!(
        signature.trim().len() >= MIN_KNOWN_SIGNATURE && !signature.contains('\n'),
        "finding {}: a known finding's signature must be one line of at least \
         {MIN_KNOWN_SIGNATURE} characters, naming the fault (got {signature:?})",
        finding.name
    );
    ensure!(
        finding
            .log_kind
            .as_deref()
            .and_then(kernel_log::Kind::from_name)
            .is_some(),
        "finding {}: a known finding names the kernel-log kind of its line (log_kind = \"WARN\", \
         \"BUG\", ...; got {:?})",
        finding.name,
        finding.log_kind
    );
    let as_marker = [
        kernel_log::Reader::DmesgCheck,
        kernel_log::Reader::WireFuzzWatch,
    ]
    .into_iter()
    .find_map(|reader| kernel_log::classify(signature, reader));
    ensure!(
        as_marker.is_none(),
        "finding {}: signature {signature:?} is itself a kernel-log marker ({}); it would make \
         every such line known",
        finding.name,
        as_marker.map_or("", kernel_log::Kind::name)
    );
    Ok(())
}

/// The project's findings file (fixtures/findings/findings.toml), parsed and checked.
pub fn load_findings() -> Result<Vec<FindingSpec>> {
    let path = workspace_root().join(FINDINGS_FILE);
    parse_findings(&read_bounded(&path).with_context(|| format!("reading {}", path.display()))?)
}

/// The known findings of runs over `transport`.
pub fn known_problems(findings: &[FindingSpec], transport: Transport) -> Vec<KnownProblem> {
    findings
        .iter()
        .filter(|f| f.known && f.transport == transport)
        .filter_map(|f| {
            // parse_findings checked it: a known finding names its kind.
            let kind = f
                .log_kind
                .as_deref()
                .and_then(kernel_log::Kind::from_name)?;
            Some(KnownProblem {
                finding: f.name.clone(),
                kind,
                signature: f.signature.clone(),
            })
        })
        .collect()
}

/// The lanes a finding over `transport` is replayed on by default: one per kernel line, the
/// matrix entry that runs that line's current kernel over `transport` as it is (no patches,
/// fragments, command-line switches, pinned older binary, suite restriction or `explicit`).
pub fn line_lanes(matrix: &crate::matrix::Matrix, transport: Transport) -> Vec<String> {
    matrix
        .kernels
        .iter()
        .filter(|k| {
            k.transport == transport
                && k.patches.is_empty()
                && k.fragments.is_empty()
                && k.cmdline.is_empty()
                && k.binary_version.is_none()
                && k.suites.is_empty()
                && !k.explicit
        })
        .map(|k| k.name.clone())
        .collect()
}

/// What one replay on one kernel showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplayOutcome {
    pub finding: String,
    pub kernel: String,
    /// The kernel's Debian version and origin, and its `uname -r`.
    pub version: String,
    pub origin: String,
    pub release: String,
    /// Kernel-watch hits containing the finding's signature.
    pub matching_hits: Vec<String>,
    /// Every kernel-watch hit (first lines).
    pub hits: Vec<String>,
    /// What nfsd answered to the case (`reply`, `err-chunk`, `close`...), from the fuzzer's
    /// report; `None` when the run left no report (the kernel died before it was written).
    pub nfsd_answer: Option<String>,
    /// The replay run could not be judged (no report and no hit): a harness failure.
    pub harness_failure: Option<String>,
}

impl ReplayOutcome {
    pub fn reproduced(&self) -> bool {
        !self.matching_hits.is_empty()
    }

    /// `reproduces` / `no: nfsd answered err-chunk` / `not judged: ...`, for reports.
    pub fn summary(&self) -> String {
        if self.reproduced() {
            format!("reproduces ({})", first_words(&self.matching_hits[0], 16))
        } else if let Some(why) = &self.harness_failure {
            format!("not judged: {why}")
        } else {
            let other = if self.hits.is_empty() {
                String::new()
            } else {
                format!(
                    "; other kernel-log hits: {}",
                    first_words(&self.hits[0], 12)
                )
            };
            format!(
                "no: nfsd answered {}{other}",
                self.nfsd_answer.as_deref().unwrap_or("nothing")
            )
        }
    }
}

/// The first `n` words of a log line, without its timestamp prefix.
fn first_words(line: &str, n: usize) -> String {
    let line = line
        .split_once("] ")
        .map_or(line, |(_, rest)| rest)
        .trim_start_matches(|c: char| c.is_ascii_digit() || "T:,.+-".contains(c))
        .trim();
    line.split_whitespace()
        .take(n)
        .collect::<Vec<_>>()
        .join(" ")
}

/// nfsd's answer in a wire-fuzz report: the outcome keys the `nfsd` target counted.
pub fn nfsd_answer(report: &Value) -> Option<String> {
    let targets = report.get("targets")?.as_array()?;
    let nfsd = targets
        .iter()
        .find(|t| {
            t.get("target")
                .and_then(Value::as_str)
                .is_some_and(|name| name.contains("20049") || name.contains("nfsd"))
        })
        .or_else(|| targets.first())?;
    let outcomes = nfsd.get("outcomes")?.as_object()?;
    let seen: Vec<&str> = outcomes
        .iter()
        .filter(|(_, count)| count.as_u64().is_some_and(|c| c > 0))
        .map(|(outcome, _)| outcome.as_str())
        .collect();
    (!seen.is_empty()).then(|| seen.join(", "))
}

/// Read the replay's files under `share_out` (the wire-fuzz run's `share/out`).
pub fn read_replay(
    finding: &FindingSpec,
    kernel: &str,
    share_out: &Path,
) -> Result<(Vec<String>, Option<String>)> {
    // A known finding's lines go to kernel-watch.known (the watch goes on past them): a replay
    // judges both.
    let hits: Vec<String> = ["kernel-watch.hits", "kernel-watch.known"]
        .iter()
        .filter_map(|name| fs::read_to_string(share_out.join(name)).ok())
        .flat_map(|text| text.lines().map(str::to_owned).collect::<Vec<_>>())
        .take(100)
        .collect();
    let report = share_out.join("wire-fuzz.report.json");
    let answer = if report.is_file() {
        let value: Value = serde_json::from_str(&read_bounded(&report)?)
            .with_context(|| format!("{kernel} {}: {}", finding.name, report.display()))?;
        nfsd_answer(&value)
    } else {
        None
    };
    Ok((hits, answer))
}

/// The `run` entries of an interop report.json: (kernel, version, origin, release).
fn run_identity(report: &Value, kernel: &str) -> (String, String, String) {
    let run = report
        .get("runs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|r| r.get("kernel").and_then(Value::as_str) == Some(kernel));
    let text = |key: &str| {
        run.and_then(|r| r.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    (text("version"), text("origin"), text("release"))
}

/// The wire-fuzz settings of a replay (what `just fuzz-wire` writes for a run), the case sent
/// `repeat` times.
fn replay_env(repeat: u32) -> String {
    "WIRE_FUZZ_SECONDS=0\nWIRE_FUZZ_SEED=0\nWIRE_FUZZ_TIMEOUT_MS=1000\n\
     WIRE_FUZZ_SKIP_FAMILIES=\"\"\nWIRE_FUZZ_GUIDED=0\nWIRE_FUZZ_KEEP_GOING=0\n"
        .to_owned()
        + &crate::fuzz_wire::replay_env_lines(repeat)
}

/// A replay of one case on a fresh boot takes about two minutes under TCG; a hung guest is
/// stopped by the run's own timeouts long before this.
const REPLAY_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// Replay `finding` on `kernel`: `interop run --suite wire-fuzz` with the case shared as
/// etc/replay.json, in its own output directory under `out`.
pub fn replay(finding: &FindingSpec, kernel: &str, out: &Path) -> Result<ReplayOutcome> {
    let root = workspace_root();
    let case = root.join(&finding.reproducer);
    ensure!(
        case.is_file(),
        "finding {}: no reproducer {}",
        finding.name,
        case.display()
    );
    let dir = out.join(&finding.name).join(kernel);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    let env_file = dir.join("wire-fuzz.env");
    fs::write(&env_file, replay_env(finding.replay_repeat))?;
    let command = crate::fuzz_wire::suite_run(kernel, &dir, &env_file, Some(&case))?;
    let output =
        crate::process::output_with_timeout("interop run (replay)", command, REPLAY_TIMEOUT)?;
    let mut log = output.stdout;
    log.extend_from_slice(&output.stderr);
    fs::write(dir.join("replay.log"), &log)?;
    let run_dir = dir.join("last/runs").join(kernel).join("wire-fuzz");
    let report: Value = read_bounded(&dir.join("last/report.json"))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    let (version, origin, release) = run_identity(&report, kernel);
    let (hits, nfsd_answer) = read_replay(finding, kernel, &run_dir.join("share/out"))?;
    let matching_hits: Vec<String> = hits
        .iter()
        .filter(|line| line.contains(&finding.signature))
        .cloned()
        .collect();
    let harness_failure = (hits.is_empty() && nfsd_answer.is_none()).then(|| {
        format!(
            "the replay left neither a fuzzer report nor a kernel-log hit (exit {}; see {})",
            output.status,
            dir.join("replay.log").display()
        )
    });
    Ok(ReplayOutcome {
        finding: finding.name.clone(),
        kernel: kernel.to_owned(),
        version,
        origin,
        release,
        matching_hits,
        hits,
        nfsd_answer,
        harness_failure,
    })
}

/// A fix found in a kernel package's Debian changelog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FixStatus {
    pub finding: String,
    pub kernel: String,
    /// `fixed in 6.1.191-1 (bookworm-security, 2026-11-02): <line>` or why not known.
    pub text: String,
}

/// The `.deb` files of the kernel `version` already in the image cache (the packages a run
/// downloaded), those holding the image first.
fn cached_kernel_debs(version: &str) -> Vec<PathBuf> {
    let debs = crate::cache::cache_root().join("debs");
    let mut found: Vec<PathBuf> = fs::read_dir(&debs)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with("linux-")
                && !name.starts_with("linux-source")
                && name.contains(&format!("_{version}_"))
        })
        .collect();
    found.sort_by_key(|p| !p.to_string_lossy().contains("linux-image-"));
    found
}

/// The Debian changelog of the kernel package `version` (the linux source package's, which the
/// binary packages carry; a 7.x package points to its `linux-base-*` package, fetched then).
pub fn kernel_changelog(
    version: &str,
    builder: &mut crate::images::Builder<'_>,
) -> Result<crate::changelog::Changelog> {
    use crate::changelog::{parse_changelog_file, ChangelogError};
    let debs = cached_kernel_debs(version);
    ensure!(
        !debs.is_empty(),
        "no package of kernel {version} in the image cache (run the kernel first)"
    );
    let mut last_error = None;
    for deb in &debs {
        match parse_changelog_file(deb) {
            Ok(changelog) => return Ok(changelog),
            Err(ChangelogError::ChangelogInOtherPackage { target, .. }) => {
                let other = builder.fetch_package(&target, version)?;
                return parse_changelog_file(&other)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", other.display()));
            }
            Err(e) => last_error = Some(format!("{}: {e}", deb.display())),
        }
    }
    anyhow::bail!(
        "kernel {version}: no changelog in its packages ({})",
        last_error.unwrap_or_default()
    )
}

/// What `changelog` (of the kernel `version` that ran) says about the fix for `subject`.
pub fn fix_text(changelog: &crate::changelog::Changelog, subject: &str, version: &str) -> String {
    match changelog.first_version_listing(subject) {
        Some(fix) => {
            let cves: Vec<&str> = fix
                .cves
                .iter()
                .chain(&fix.enclosing_cves)
                .map(String::as_str)
                .collect();
            let cves = if cves.is_empty() {
                "no CVE on the line".to_owned()
            } else {
                cves.join(", ")
            };
            let upstream = fix
                .upstream_stable
                .as_deref()
                .map(|u| format!(", upstream {u}"))
                .unwrap_or_default();
            if fix.is_in(version) {
                format!(
                    "fixed in {} ({}, {}{upstream}): \"{}\" ({cves})",
                    fix.version,
                    fix.distribution,
                    fix.date,
                    fix.line.trim_start_matches(['-', '*', '+', ' '])
                )
            } else {
                format!("listed only after {version}: {} ({cves})", fix.version)
            }
        }
        None => format!("\"{subject}\" is not in {version}'s changelog"),
    }
}

/// The fix status of every replay whose finding names its fix subject.
pub fn fix_statuses(
    findings: &[FindingSpec],
    outcomes: &[ReplayOutcome],
) -> Result<Vec<FixStatus>> {
    let progress = crate::progress::Progress::default();
    let mut builder = crate::images::Builder::new(&progress)?;
    let mut statuses = Vec::new();
    for outcome in outcomes {
        let Some(finding) = findings.iter().find(|f| f.name == outcome.finding) else {
            continue;
        };
        let text = match (&finding.fix_subject, outcome.version.as_str()) {
            (None, _) => "no fix known".to_owned(),
            (Some(_), "") => "version unknown (the run did not say)".to_owned(),
            (Some(subject), version) => match kernel_changelog(version, &mut builder) {
                Ok(changelog) => fix_text(&changelog, subject, version),
                Err(e) => format!("changelog not read: {e:#}"),
            },
        };
        statuses.push(FixStatus {
            finding: finding.name.clone(),
            kernel: outcome.kernel.clone(),
            text,
        });
    }
    Ok(statuses)
}

/// The findings status as Markdown: one table per finding, a row per kernel line.
pub fn render_markdown(
    findings: &[FindingSpec],
    outcomes: &[ReplayOutcome],
    fixes: &[FixStatus],
) -> String {
    let mut text = String::from(
        "# Findings replayed on the current kernel of each line (`just findings`)\n\n",
    );
    for finding in findings {
        let _ = writeln!(
            text,
            "## {} ({})\n\n{}\n",
            finding.name, finding.kind, finding.title
        );
        let _ = writeln!(text, "Reproducer: `{}`\n", finding.reproducer);
        text.push_str(
            "| kernel | version | release | replay | fix in this version's changelog |\n",
        );
        text.push_str("|---|---|---|---|---|\n");
        for outcome in outcomes.iter().filter(|o| o.finding == finding.name) {
            let fix = fixes
                .iter()
                .find(|f| f.finding == finding.name && f.kernel == outcome.kernel)
                .map_or("-", |f| f.text.as_str());
            let version = match outcome.origin.as_str() {
                "" => outcome.version.clone(),
                origin => format!("{} ({origin})", outcome.version),
            };
            let _ = writeln!(
                text,
                "| {} | {} | `{}` | {} | {} |",
                outcome.kernel,
                version,
                outcome.release,
                outcome.summary().replace('|', "\\|"),
                fix.replace('|', "\\|")
            );
        }
        text.push('\n');
    }
    text
}

/// Kernel-log lines of a replay: the first line holding the finding's signature and the
/// `after` lines that follow it (the report's dmesg excerpt), timestamps kept.
pub fn kmsg_excerpt(kmsg: &str, signature: &str, after: usize) -> Option<String> {
    let lines: Vec<&str> = kmsg.lines().collect();
    let at = lines.iter().position(|l| l.contains(signature))?;
    let start = at.saturating_sub(1);
    let end = (at + 1 + after).min(lines.len());
    Some(lines[start..end].join("\n"))
}

/// `rig decode --format text` of a case file's Send (its placeholder handles and offsets as
/// they are: the decode does not depend on them).
fn decoded_send(case: &Path, rig: &Path, scratch: &Path) -> Result<String> {
    let value: Value = serde_json::from_str(&read_bounded(case)?)
        .with_context(|| format!("{}: not JSON", case.display()))?;
    let hex = value
        .get("bytes")
        .and_then(Value::as_str)
        .with_context(|| format!("{}: no bytes", case.display()))?;
    let file = scratch.join("send.hex");
    fs::write(&file, hex)?;
    let mut command = Command::new(rig);
    command
        .args(["decode", "--hex", "--format", "text"])
        .arg(&file);
    let output =
        crate::process::output_with_timeout("rig decode", command, Duration::from_secs(30))?;
    Ok(String::from_utf8_lossy(&output.stdout)
        .trim_end()
        .to_owned())
}

/// REPORT.md of one finding, for linux-nfs / linux-rdma: the kernels it was replayed on (version,
/// origin, release, result, fix), the one-command reproducer, the decoded Send, the kernel log of
/// the first kernel it reproduced on, and the analysed code path.
pub fn render_report(
    finding: &FindingSpec,
    outcomes: &[ReplayOutcome],
    fixes: &[FixStatus],
    decoded: &str,
    kmsg: Option<(&str, &str)>,
) -> String {
    let mut text = format!("# svcrdma: {}\n\n", finding.title);
    let _ = writeln!(
        text,
        "Generated by rpcrdma-rig (`just findings`) from the replay of `{}` alone on a fresh boot \
         of each kernel below (two qemu guests, {}; the case is sent{}, then rerun on a \
         fresh connection).\n",
        finding.reproducer,
        match finding.transport {
            Transport::Rxe => "soft-RoCE (rdma_rxe)",
            Transport::Siw => "soft-iWARP (siw)",
        },
        match finding.replay_repeat {
            1 => String::new(),
            n => format!(" {n} times in a row (the fault lives in a race)"),
        }
    );
    text.push_str("## Kernels\n\n| kernel | Debian version (origin) | release | result | fix in its changelog |\n|---|---|---|---|---|\n");
    for outcome in outcomes.iter().filter(|o| o.finding == finding.name) {
        let fix = fixes
            .iter()
            .find(|f| f.finding == finding.name && f.kernel == outcome.kernel)
            .map_or("-", |f| f.text.as_str());
        let _ = writeln!(
            text,
            "| {} | {} ({}) | `{}` | {} | {} |",
            outcome.kernel,
            outcome.version,
            outcome.origin,
            outcome.release,
            outcome.summary().replace('|', "\\|"),
            fix.replace('|', "\\|")
        );
    }
    let kernel = outcomes
        .iter()
        .find(|o| o.finding == finding.name && o.reproduced())
        .or_else(|| outcomes.iter().find(|o| o.finding == finding.name))
        .map_or("linux-6.12", |o| o.kernel.as_str());
    let _ = writeln!(
        text,
        "\n## Reproduce\n\n```\njust findings --finding {} --kernel {kernel}\n```\n\n\
         From any RDMA peer of an nfsd listening on 20049: `rig fuzz-wire --replay {} --target \
         SERVER:20049` (the case file holds the Send, the client memory its chunks point at, and \
         where the handles and offsets go).\n",
        finding.name, finding.reproducer
    );
    let _ = writeln!(
        text,
        "## The Send (`rig decode --format text`)\n\n```\n{decoded}\n```\n"
    );
    if let Some((kernel, excerpt)) = kmsg {
        let _ = writeln!(text, "## Kernel log ({kernel})\n\n```\n{excerpt}\n```\n");
    }
    if let Some(cause) = &finding.root_cause {
        let _ = writeln!(text, "## Code path\n\n{}\n", cause.trim());
    }
    text
}

/// Write `<out>/<finding>/REPORT.md` for every finding; returns the paths.
pub fn write_reports(
    findings: &[FindingSpec],
    outcomes: &[ReplayOutcome],
    fixes: &[FixStatus],
    out: &Path,
) -> Result<Vec<PathBuf>> {
    let root = workspace_root();
    let rig = root.join("target/release/rig");
    let mut written = Vec::new();
    for finding in findings {
        let dir = out.join(&finding.name);
        fs::create_dir_all(&dir)?;
        let decoded = decoded_send(&root.join(&finding.reproducer), &rig, &dir)
            .unwrap_or_else(|e| format!("(not decoded: {e:#})"));
        let kmsg = outcomes
            .iter()
            .filter(|o| o.finding == finding.name && o.reproduced())
            .find_map(|o| {
                let path = dir
                    .join(&o.kernel)
                    .join("last/runs")
                    .join(&o.kernel)
                    .join("wire-fuzz/share/out/kmsg.log");
                let text = read_bounded(&path).ok()?;
                Some((
                    o.kernel.clone(),
                    kmsg_excerpt(&text, &finding.signature, 30)?,
                ))
            });
        let report = render_report(
            finding,
            outcomes,
            fixes,
            &decoded,
            kmsg.as_ref().map(|(k, e)| (k.as_str(), e.as_str())),
        );
        let path = dir.join("REPORT.md");
        fs::write(&path, report)?;
        written.push(path);
    }
    Ok(written)
}

/// Where `just findings` writes: target/interop/findings-replay.
pub fn output_root() -> PathBuf {
    workspace_root().join("target/interop/findings-replay")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::known::{kernel_watch_known_file, known_problem};

    #[test]
    fn the_project_findings_file_parses_and_names_existing_reproducers() {
        let text =
            fs::read_to_string(workspace_root().join("fixtures/findings/findings.toml")).unwrap();
        let findings = parse_findings(&text).unwrap();
        assert!(findings.len() >= 5);
        for finding in &findings {
            assert!(
                workspace_root().join(&finding.reproducer).is_file(),
                "{}",
                finding.reproducer
            );
            let case = fs::read_to_string(workspace_root().join(&finding.reproducer)).unwrap();
            assert!(
                case.contains("rpcrdma-rig wire-fuzz case v1"),
                "{} is not a case file",
                finding.reproducer
            );
        }
        assert!(findings.iter().any(|f| f.kind == "probe"));
    }

    #[test]
    fn a_fix_is_named_with_its_version_pocket_and_cve_from_the_changelog() {
        let text =
            fs::read_to_string(workspace_root().join(
                "interop/tests/data/changelog/linux-image-6.1.0-57-amd64_6.1.192-3.changelog",
            ))
            .unwrap();
        let changelog = crate::changelog::Changelog::parse(&text).unwrap();
        let fixed = fix_text(
            &changelog,
            "svcrdma: validate Read chunk positions",
            "6.1.192-3",
        );
        assert!(
            fixed.starts_with("fixed in 6.1.192-1 (bookworm-security, "),
            "{fixed}"
        );
        assert!(fixed.contains("CVE-2026-89526"), "{fixed}");
        let later = fix_text(
            &changelog,
            "svcrdma: validate Read chunk positions",
            "6.1.176-1",
        );
        assert!(
            later.starts_with("listed only after 6.1.176-1: 6.1.192-1"),
            "{later}"
        );
        let absent = fix_text(&changelog, "svcrdma: no such commit", "6.1.192-3");
        assert!(
            absent.contains("is not in 6.1.192-3's changelog"),
            "{absent}"
        );
    }

    #[test]
    fn a_report_carries_kernels_reproducer_send_log_and_code_path() {
        let kmsg = "boot\n------------[ cut here ]------------\nBUG: unable to handle page fault for address: ff\nRIP: x\nCall Trace:\nlater\n";
        let excerpt = kmsg_excerpt(kmsg, &spec().signature, 2).unwrap();
        assert_eq!(
            excerpt,
            "------------[ cut here ]------------\nBUG: unable to handle page fault for address: ff\nRIP: x\nCall Trace:"
        );
        assert_eq!(kmsg_excerpt(kmsg, "WARNING", 2), None);
        let outcome = ReplayOutcome {
            finding: spec().name,
            kernel: "linux-6.1.176".into(),
            version: "6.1.176-1".into(),
            origin: "bookworm".into(),
            release: "6.1.0-50-amd64".into(),
            matching_hits: vec!["BUG: unable to handle page fault".into()],
            hits: vec!["BUG: unable to handle page fault".into()],
            nfsd_answer: None,
            harness_failure: None,
        };
        let fix = FixStatus {
            finding: spec().name,
            kernel: "linux-6.1.176".into(),
            text: "listed only after 6.1.176-1: 6.1.192-1 (CVE-2026-89526)".into(),
        };
        let report = render_report(
            &spec(),
            &[outcome],
            &[fix],
            "rpcrdma xid=0x1",
            Some(("linux-6.1.176", &excerpt)),
        );
        for needle in [
            "| linux-6.1.176 | 6.1.176-1 (bookworm) | `6.1.0-50-amd64` | reproduces",
            "listed only after 6.1.176-1",
            "just findings --finding read-overlap-oops --kernel linux-6.1.176",
            "rpcrdma xid=0x1",
            "## Kernel log (linux-6.1.176)",
            "## Code path\n\nsvc_rdma_rw.c:882",
        ] {
            assert!(report.contains(needle), "{needle:?} not in\n{report}");
        }
    }

    #[test]
    fn bad_entries_are_refused() {
        let entry = |name: &str, reproducer: &str, kind: &str| {
            format!(
                "[[finding]]\nname = \"{name}\"\ntitle = \"t\"\nreproducer = \"{reproducer}\"\n\
                 signature = \"BUG\"\nkind = \"{kind}\"\n"
            )
        };
        assert!(parse_findings(&entry("ok", "fixtures/x.json", "finding")).is_ok());
        assert!(parse_findings(&entry("a/b", "fixtures/x.json", "finding")).is_err());
        assert!(parse_findings(&entry("ok", "/etc/passwd", "finding")).is_err());
        assert!(parse_findings(&entry("ok", "fixtures/../../x", "finding")).is_err());
        assert!(parse_findings(&entry("ok", "fixtures/x.json", "guess")).is_err());
    }

    fn spec() -> FindingSpec {
        FindingSpec {
            name: "read-overlap-oops".into(),
            title: "t".into(),
            reproducer: "r.json".into(),
            signature: "BUG: unable to handle page fault".into(),
            fix_subject: None,
            kind: "finding".into(),
            root_cause: Some("svc_rdma_rw.c:882".into()),
            transport: Transport::Rxe,
            known: false,
            log_kind: None,
            replay_repeat: 1,
        }
    }

    #[test]
    fn a_known_finding_must_name_one_fault() {
        let entry = |signature: &str, kind: &str| {
            format!(
                "[[finding]]\nname = \"k\"\ntitle = \"t\"\nreproducer = \"fixtures/x.json\"\n\
                 signature = \"{signature}\"\nkind = \"{kind}\"\ntransport = \"siw\"\nknown = true\n\
                 log_kind = \"WARN\"\n"
            )
        };
        let ok = parse_findings(&entry("ib_destroy_qp_user+", "finding")).unwrap();
        assert!(ok[0].known);
        assert_eq!(ok[0].transport, Transport::Siw);
        // A marker (every WARN), too short, or a probe: refused.
        for (signature, kind) in [
            ("WARNING: CPU:", "finding"),
            ("kernel BUG at lib", "finding"),
            ("verbs.c", "finding"),
            ("ib_destroy_qp_user+", "probe"),
        ] {
            assert!(
                parse_findings(&entry(signature, kind)).is_err(),
                "{signature:?} {kind}"
            );
        }
        // The project's known findings: each over its own transport only, and the guest file.
        let findings = load_findings().unwrap();
        let siw = known_problems(&findings, Transport::Siw);
        assert!(siw.iter().any(|k| k.finding == "siw-mrs-used-warn"));
        assert!(known_problems(&findings, Transport::Rxe)
            .iter()
            .all(|k| k.finding != "siw-mrs-used-warn"));
        let line = "WARNING: drivers/infiniband/core/verbs.c:2160 at ib_destroy_qp_user+0x14c/0x180, CPU#0: nfsd/218";
        assert_eq!(
            known_problem(line, &siw).map(|k| k.finding.as_str()),
            Some("siw-mrs-used-warn")
        );
        assert_eq!(
            known_problem("WARNING: CPU: 0 PID: 1 at x.c:1 f+0x1/0x2", &siw),
            None
        );
        // Another kind of report in the same function is not this finding.
        let kasan = "BUG: KASAN: use-after-free in ib_destroy_qp_user+0x14c/0x180";
        assert_eq!(known_problem(kasan, &siw), None);
        assert_eq!(
            known_problem("Call Trace: ib_destroy_qp_user+0x14c/0x180", &siw),
            None
        );
        let file = kernel_watch_known_file(&siw);
        let (pattern, signature) = file.lines().next().unwrap().split_once('\t').unwrap();
        assert!(
            pattern.contains("WARNING: CPU:") && !pattern.contains("BUG"),
            "{pattern}"
        );
        assert_eq!(signature, "ib_destroy_qp_user+");
        // A known finding without a kind, or with an unknown one, is refused.
        let no_kind = entry("ib_destroy_qp_user+", "finding").replace("log_kind = \"WARN\"\n", "");
        assert!(parse_findings(&no_kind).is_err());
        let bad_kind = entry("ib_destroy_qp_user+", "finding").replace("\"WARN\"", "\"warning\"");
        assert!(parse_findings(&bad_kind).is_err());
    }

    /// The guest watch of vm-images/suites/wire-fuzz/setup-server.sh, run by `sh` on `lines`
    /// instead of `dmesg --follow-new`: (hits, stop, known) as it leaves them.
    fn guest_watch(lines: &[&str], known_file: &str) -> (String, String, String) {
        let script = std::fs::read_to_string(
            workspace_root().join("vm-images/suites/wire-fuzz/setup-server.sh"),
        )
        .unwrap();
        let body = script
            .split_once("setsid sh -c '")
            .and_then(|(_, rest)| rest.split_once("  done'"))
            .map(|(body, _)| format!("{body}  done"))
            .expect("the watch's sh -c script");
        let follow = "dmesg --follow-new --time-format iso 2>&1 | ";
        assert!(body.contains(follow), "the watch reads dmesg --follow-new");
        let body = body.replace(follow, "");
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        fs::write(path("known.txt"), known_file).unwrap();
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&body)
            .arg("kernel-watch")
            .arg(dir.path())
            .arg(kernel_log::grep_pattern(kernel_log::Reader::WireFuzzWatch))
            .args([path("hits"), path("stop"), path("known.txt"), path("known")])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write as _;
            let mut stdin = child.stdin.take().unwrap();
            for line in lines {
                writeln!(stdin, "{line}").unwrap();
            }
        }
        assert!(child.wait().unwrap().success());
        let read = |name: &str| fs::read_to_string(path(name)).unwrap_or_default();
        (read("hits"), read("stop"), read("known"))
    }

    #[test]
    fn the_guest_watch_sets_aside_exactly_the_known_findings_lines() {
        let findings = load_findings().unwrap();
        let siw = kernel_watch_known_file(&known_problems(&findings, Transport::Siw));
        let warn_612 = "WARNING: CPU: 0 PID: 218 at drivers/infiniband/core/verbs.c:2104 \
                        ib_destroy_qp_user+0x14c/0x180";
        let warn_7x = "WARNING: drivers/infiniband/core/verbs.c:2160 at \
                       ib_destroy_qp_user+0x153/0x190, CPU#0: nfsd/218";
        let kasan = "BUG: KASAN: use-after-free in ib_destroy_qp_user+0x1/0x2";
        let other = "WARNING: CPU: 0 PID: 218 at net/x.c:1 other+0x1/0x2";
        let lines = ["siw: got TERMINATE", warn_612, warn_7x, kasan, other];
        let (hits, stop, known) = guest_watch(&lines, &siw);
        assert_eq!(known, format!("{warn_612}\n{warn_7x}\n"));
        assert_eq!(hits, format!("{kasan}\n{other}\n"));
        assert_eq!(stop, format!("{kasan}\n"));
        // Over rxe (no known finding: an empty file is not shared) every WARN is a hit.
        let (hits, stop, known) = guest_watch(&lines[..2], "");
        assert_eq!(
            (hits.as_str(), known.as_str()),
            (format!("{warn_612}\n").as_str(), "")
        );
        assert_eq!(stop, format!("{warn_612}\n"));
    }

    #[test]
    fn a_known_finding_of_the_runs_transport_is_known_and_nothing_else_is() {
        use crate::results::{dmesg_outcome, scan_kernel_log, Verdict};
        let path = crate::cache::workspace_root()
            .join("fixtures/wire-fuzz/findings/siw-mrs-used-warn/linux-6.12-siw-kmsg.log");
        let kmsg = std::fs::read_to_string(&path).unwrap();
        let problems = scan_kernel_log(&kmsg, "srv.dmesg");
        // The cut mark and the WARNING line.
        assert_eq!(problems.len(), 2, "{problems:?}");
        let findings = load_findings().unwrap();
        let siw = known_problems(&findings, Transport::Siw);
        let outcome = dmesg_outcome(&problems, 2, &siw);
        assert_eq!(outcome.verdict, Verdict::Known, "{:?}", outcome.reasons);
        assert_eq!(outcome.reasons.len(), 2);
        assert!(outcome
            .reasons
            .iter()
            .all(|r| r.starts_with("known finding siw-mrs-used-warn")));
        // The same lines over rxe: no known finding there.
        let rxe = known_problems(&findings, Transport::Rxe);
        assert_eq!(dmesg_outcome(&problems, 2, &rxe).verdict, Verdict::Fail);
        // Another WARN beside it stays red, named first; the known one is still listed.
        let mut more = kmsg.clone();
        more.push_str(
            "2026-12-05T17:11:54,000000+00:00 ------------[ cut here ]------------\n\
             2026-12-05T17:11:54,000100+00:00 WARNING: CPU: 1 PID: 219 at \
             net/sunrpc/xprtrdma/svc_rdma_rw.c:186 svc_rdma_cc_release+0x1/0x2\n",
        );
        let outcome = dmesg_outcome(&scan_kernel_log(&more, "srv.dmesg"), 2, &siw);
        assert_eq!(outcome.verdict, Verdict::Fail);
        assert!(
            outcome.reasons[0].contains("[ cut here ]"),
            "{:?}",
            outcome.reasons
        );
        assert!(outcome.reasons[1].contains("svc_rdma_cc_release"));
        assert!(outcome.reasons[2].starts_with("known finding siw-mrs-used-warn"));
        // A cut mark not followed by a known WARNING is not known.
        let lone = "[ 1.0] ------------[ cut here ]------------\n[ 1.1] something\n\
                    [ 1.2] something else\n[ 1.3] WARNING: CPU: 0 PID: 1 at x.c:1 \
                    ib_destroy_qp_user+0x1/0x2\n";
        let outcome = dmesg_outcome(&scan_kernel_log(lone, "srv.dmesg"), 2, &siw);
        assert_eq!(outcome.verdict, Verdict::Fail, "{:?}", outcome.reasons);
    }

    #[test]
    fn a_finding_replays_on_the_lines_of_its_transport() {
        let matrix =
            crate::matrix::Matrix::load(&workspace_root().join("vm-images/kernels.toml")).unwrap();
        assert_eq!(
            line_lanes(&matrix, Transport::Rxe),
            ["linux-6.1", "linux-6.12", "linux-7.x"]
        );
        assert_eq!(
            line_lanes(&matrix, Transport::Siw),
            ["linux-6.1-siw", "linux-6.12-siw", "linux-7.x-siw"]
        );
    }

    #[test]
    fn a_replay_reproduces_only_on_its_signature() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("kernel-watch.hits"),
            "[   14.7] BUG: unable to handle page fault for address: ff1317a8c3d7df00\n",
        )
        .unwrap();
        fs::write(
            dir.path().join("wire-fuzz.report.json"),
            r#"{"targets":[{"target":"10.0.2.1:20049","outcomes":{"close":1,"reply":0}},
                {"target":"10.0.2.1:20050","outcomes":{"err-chunk":1}}]}"#,
        )
        .unwrap();
        let (hits, answer) = read_replay(&spec(), "linux-6.1", dir.path()).unwrap();
        assert_eq!(answer.as_deref(), Some("close"));
        let outcome = ReplayOutcome {
            finding: "read-overlap-oops".into(),
            kernel: "linux-6.1".into(),
            version: "6.1.192-3".into(),
            origin: "bookworm-security".into(),
            release: "6.1.0-57-amd64".into(),
            matching_hits: hits
                .iter()
                .filter(|l| l.contains(&spec().signature))
                .cloned()
                .collect(),
            hits: hits.clone(),
            nfsd_answer: answer,
            harness_failure: None,
        };
        assert!(outcome.reproduced());
        assert!(
            outcome
                .summary()
                .starts_with("reproduces (BUG: unable to handle"),
            "{}",
            outcome.summary()
        );
        let quiet = ReplayOutcome {
            matching_hits: Vec::new(),
            hits: Vec::new(),
            ..outcome.clone()
        };
        assert_eq!(quiet.summary(), "no: nfsd answered close");
        let markdown = render_markdown(&[spec()], &[outcome, quiet], &[]);
        assert!(markdown.contains(
            "| linux-6.1 | 6.1.192-3 (bookworm-security) | `6.1.0-57-amd64` | reproduces"
        ));
    }
}
