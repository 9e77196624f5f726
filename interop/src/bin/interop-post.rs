//! `interop-post`: after `interop run`, per-scenario snapshot comparison (`snapshots`), its
//! reviewed acceptance case by case (`snapshots --accept CASE-GLOB`), the bench-interop
//! pairs (`bench`) and the run page (`html`; `snapshots` writes it as `index.html` too). Reads the last run's `target/interop/last/report.json` and per-run share
//! directories; writes `snapshots.json` (every case's result, matched outcome, capture problem
//! and RC-level transport counts) beside that report.
//!
//! Exit status of `snapshots`: 0 when every case reproduces a recorded outcome; 1 on a change,
//! a new snapshot, a trace still to record or an unlisted nfsd-vs-ours divergence; 2 when the
//! only problems are harness failures (incomplete captures: retry those cases) or this program
//! failed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use serde_json::{json, Value};

use interop::cache::{last_run_root, workspace_root};
use interop::images::vm_images_dir;
use interop::snapshots::{
    accept, collect, compare, compare_timing_dependent, divergences, header_version, read_bounded,
    recorded_version, Accepted, Comparison, ExpectedDifferences, KernelVersion, Snapshot,
};
use interop::suite::Suite;

#[derive(Parser)]
#[command(about = "rpcrdma-rig VM harness post-processing: interop snapshots, bench pairs")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compare the last run's per-scenario snapshots with fixtures/snapshots/interop; print each
    /// diff and each harness failure; exit 1 on a change, a new snapshot or an unlisted
    /// nfsd-vs-ours divergence, 2 when only harness failures (incomplete captures) remain.
    Snapshots {
        /// After printing the diffs, record the snapshots of the cases these globs name (case
        /// `nfsd.burst`, scenario `burst`, or path `linux-6.1/drc/nfsd.*`) in the baseline: a
        /// timing-dependent scenario gains the outcome as an alternative, any other scenario
        /// gets it as its only one. Harness failures are never accepted.
        #[arg(long, value_name = "CASE-GLOB", num_args = 1..)]
        accept: Vec<String>,
        /// Output directories of runs (each with report.json and runs/); repeatable, so suites
        /// run in separate invocations are compared together. Default: target/interop/last.
        #[arg(long = "out")]
        outs: Vec<PathBuf>,
    },
    /// Print the bench-interop pairs (rig serve vs kernel nfsd) and their ratios.
    Bench,
    /// Render a run directory (report.json, snapshots.json) as one self-contained HTML page:
    /// findings, verdict matrix, every case with reasons, times, snapshot diffs, transport
    /// counts and links to its files. `interop-post snapshots` writes it as index.html already.
    Html {
        /// The run directory. Default: target/interop/last.
        #[arg(long)]
        run: Option<PathBuf>,
        /// Where to write the page. Default: index.html in the run directory; elsewhere, links
        /// point into the run directory by absolute file URL.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Write a run directory's report.json as KCIDB v5 JSON (what `interop run --kcidb` writes;
    /// also for a merged sharded run).
    Kcidb {
        /// The run directory. Default: target/interop/last.
        #[arg(long)]
        run: Option<PathBuf>,
        /// Where to write it.
        #[arg(long)]
        output: PathBuf,
    },
    /// Put the run directories of a sharded run (`interop run --shard I/N`) together into one:
    /// report.json, junit.xml, the page, and `runs/` linking each shard's kernel × suite
    /// directories; exit 1 when a merged run failed. Check their snapshots together with
    /// `interop-post snapshots --out A --out B ...`.
    Merge {
        /// The merged run directory to write.
        #[arg(long)]
        into: PathBuf,
        /// The shards' run directories.
        #[arg(required = true)]
        runs: Vec<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Snapshots { accept, outs } => {
            let outs = if outs.is_empty() {
                vec![last_run_root()]
            } else {
                outs
            };
            snapshots(&accept, &outs)
        }
        Command::Bench => bench().map(|ok| if ok { 0 } else { 1 }),
        Command::Merge { into, runs } => merge(&into, &runs),
        Command::Kcidb { run, output } => kcidb(&run.unwrap_or_else(last_run_root), &output),
        Command::Html { run, output } => {
            let run = run.unwrap_or_else(last_run_root);
            let output = output.unwrap_or_else(|| run.join("index.html"));
            write_page(&run, &output).map(|page| {
                println!("run page: {}", page.display());
                0
            })
        }
    };
    interop::process::kill_all_groups();
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("interop-post: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// `interop-post kcidb`: the run directory's report as KCIDB v5 JSON.
fn kcidb(run: &Path, output: &Path) -> Result<u8> {
    let path = run.join("report.json");
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    let report: interop::report::Report =
        serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
    // `last` is a link: the run is named by the directory it points to.
    let run_id = std::fs::canonicalize(run)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "run".to_owned());
    let json = serde_json::to_string_pretty(&interop::kcidb::kcidb(&report, &run_id))?;
    std::fs::write(output, json + "\n").with_context(|| format!("writing {}", output.display()))?;
    println!(
        "KCIDB v5: {} tests of {} kernel × suite runs into {}",
        report.runs.iter().map(|r| r.cases.len()).sum::<usize>(),
        report.runs.len(),
        output.display()
    );
    Ok(0)
}

/// `interop-post merge`: the shards' run directories as one run directory.
fn merge(into: &Path, runs: &[PathBuf]) -> Result<u8> {
    let report = interop::shard::write_merged(runs, into)?;
    print!("{}", report.table());
    println!(
        "merged {} run directories: {} kernel × suite runs into {}",
        runs.len(),
        report.runs.len(),
        into.display()
    );
    let page = write_page(into, &into.join("index.html"))?;
    println!("run page: {}", page.display());
    Ok(if report.passed() { 0 } else { 1 })
}

/// Render the run page of `run` into `output`; returns the path written.
fn write_page(run: &Path, output: &Path) -> Result<PathBuf> {
    let run =
        std::fs::canonicalize(run).with_context(|| format!("run directory {}", run.display()))?;
    let mut page = interop::html::render_run_dir(&run, Some(&snapshot_root()))?;
    let beside = output
        .parent()
        .and_then(|p| {
            std::fs::canonicalize(if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            })
            .ok()
        })
        .is_some_and(|p| p == run);
    if !beside {
        // Links are relative to the run directory: anchor them there.
        let base = format!("<base href=\"file://{}/\">", interop::html::href(&run));
        page = page.replacen(
            "<meta charset=\"utf-8\">",
            &format!("<meta charset=\"utf-8\">{base}"),
            1,
        );
    }
    std::fs::write(output, page).with_context(|| format!("writing {}", output.display()))?;
    // Its first screen as a picture beside it (index.png), when this host has Chromium.
    let png = output.with_extension("png");
    match interop::html::screenshot(output, &png) {
        Ok(true) => println!("run page screenshot: {}", png.display()),
        Ok(false) => {
            println!("run page: no screenshot (no chromium on this host; Debian package chromium)")
        }
        Err(err) => eprintln!(
            "interop-post: no screenshot of {}: {err:#}",
            output.display()
        ),
    }
    Ok(output.to_path_buf())
}

fn last_report(out: &Path) -> Result<Value> {
    let path = out.join("report.json");
    let text = read_bounded(&path).context("no report of a previous `interop run`")?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

fn snapshot_root() -> PathBuf {
    workspace_root().join("fixtures/snapshots/interop")
}

/// Every snapshot the runs in the report under `out` produced (for suites still on disk), one
/// per case and attempt (`interop run --repeat` keeps attempt N's files in `attempt-N/`).
fn run_snapshots(out: &Path) -> Result<Vec<Snapshot>> {
    let report = last_report(out)?;
    let mut all = Vec::new();
    for run in report
        .get("runs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(kernel), Some(suite_name)) = (
            run.get("kernel").and_then(Value::as_str),
            run.get("suite").and_then(Value::as_str),
        ) else {
            continue;
        };
        let attempt = run
            .get("attempt")
            .and_then(Value::as_u64)
            .and_then(|a| u32::try_from(a).ok())
            .unwrap_or(1)
            .max(1);
        let suite_file = vm_images_dir()
            .join("suites")
            .join(format!("{suite_name}.toml"));
        let Ok(suite) = Suite::load(&suite_file) else {
            continue;
        };
        let cases: Vec<String> = suite.cases.iter().map(|c| c.name.clone()).collect();
        let attempt_root = if attempt > 1 {
            out.join(format!("attempt-{attempt}"))
        } else {
            out.to_path_buf()
        };
        let run_dir = attempt_root.join("runs").join(kernel).join(suite_name);
        let text_of = |key: &str| {
            run.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let version = KernelVersion {
            name: kernel.to_owned(),
            version: text_of("version"),
            origin: text_of("origin"),
        };
        let mut snapshots = collect(&version, suite_name, &cases, &run_dir.join("share/out"))?;
        for snapshot in &mut snapshots {
            snapshot.attempt = attempt;
            // The rendered file next to the run, for review before acceptance, and what was
            // not compared beside it.
            let dir = run_dir.join("snapshots");
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join(format!("{}.snap", snapshot.case)), &snapshot.text)?;
            let mut side = String::new();
            if let Some(counts) = &snapshot.transport {
                side.push_str(&format!("transport: {counts}\n"));
            }
            if let Some(reason) = &snapshot.harness_failure {
                side.push_str(&format!("harness failure: {reason}\n"));
            }
            std::fs::write(dir.join(format!("{}.not-compared", snapshot.case)), side)?;
        }
        all.extend(snapshots);
    }
    Ok(all)
}

/// `<kernel>/<suite>/<case>.snap`, with the attempt when there were several.
fn label(snapshot: &Snapshot) -> String {
    let path = snapshot.relative_path().display().to_string();
    if snapshot.attempt > 1 {
        format!("{path} [attempt {}]", snapshot.attempt)
    } else {
        path
    }
}

/// One compared snapshot: the snapshot, its result, the outcome it reproduced of how many, and
/// its timing-dependence reason.
type SnapshotEntry<'a> = (
    &'a Snapshot,
    &'a str,
    Option<usize>,
    Option<usize>,
    Option<&'a str>,
);

/// Per kernel whose run names a version other than the one its baselines were recorded on: one
/// line saying so and how many of its snapshots kept their behaviour (only a behaviour change
/// is a changed snapshot; the version alone never is).
fn version_changes(entries: &[SnapshotEntry<'_>], root: &Path) -> Result<Vec<String>> {
    // kernel -> (run version, recorded versions, unchanged, compared)
    let mut per_kernel: std::collections::BTreeMap<&str, (String, Vec<String>, usize, usize)> =
        std::collections::BTreeMap::new();
    for (snapshot, result, ..) in entries {
        // A case without a baseline has no recorded version to differ from.
        if *result == "new" {
            continue;
        }
        let (header, _) = snapshot
            .text
            .split_once('\n')
            .unwrap_or((&snapshot.text, ""));
        let Some(version) = header_version(header) else {
            continue;
        };
        let recorded =
            recorded_version(snapshot, root)?.unwrap_or_else(|| "an unrecorded version".into());
        let row = per_kernel
            .entry(snapshot.kernel.as_str())
            .or_insert_with(|| (version.to_owned(), Vec::new(), 0, 0));
        if recorded != version && !row.1.contains(&recorded) {
            row.1.push(recorded.clone());
        }
        if matches!(
            *result,
            "unchanged" | "same-behaviour" | "changed" | "trace-not-recorded"
        ) {
            row.3 += 1;
            if *result != "changed" {
                row.2 += 1;
            }
        }
    }
    Ok(per_kernel
        .into_iter()
        .filter(|(_, (_, recorded, ..))| !recorded.is_empty())
        .map(|(kernel, (version, recorded, kept, compared))| {
            format!(
                "new version {kernel} {version}: baselines recorded on {}; behaviour unchanged \
                 in {kept} of {compared} compared snapshots",
                recorded.join(", ")
            )
        })
        .collect())
}

/// Whether a `duplicates=0 naks=1 ...` line counts anything.
fn counts_something(counts: &str) -> bool {
    counts
        .split(' ')
        .filter_map(|kv| kv.split_once('='))
        .any(|(_, v)| v != "0")
}

fn snapshots(accept_globs: &[String], outs: &[PathBuf]) -> Result<u8> {
    let mut snapshots = Vec::new();
    for out in outs {
        snapshots.extend(run_snapshots(out)?);
    }
    let expected = ExpectedDifferences::parse(&read_bounded(
        &workspace_root().join("fixtures/interop/expected-differences.toml"),
    )?)?;
    let root = snapshot_root();
    let (mut unchanged, mut alternatives, mut changed, mut new, mut untraced, mut harness) =
        (0, 0, 0, 0, 0, 0);
    let mut unbaselined = 0;
    // Timing-dependent snapshots that matched a recorded outcome in behaviour only.
    let mut variants = 0;
    let mut entries = Vec::new();
    for snapshot in &snapshots {
        let timing = expected.timing_reason_for_case(&snapshot.kernel, &snapshot.case);
        let path = label(snapshot);
        let comparison = if timing.is_some() {
            compare_timing_dependent(snapshot, &root)?
        } else {
            compare(snapshot, &root)?
        };
        let (result, outcome, of) = match &comparison {
            Comparison::Unchanged { outcome, of } => {
                unchanged += 1;
                if timing.is_some() || *of > 1 {
                    alternatives += 1;
                    println!(
                        "timing-dependent {path}: reproduces recorded outcome {outcome} of {of}"
                    );
                }
                ("unchanged", Some(*outcome), Some(*of))
            }
            Comparison::New if !root.join(&snapshot.kernel).is_dir() => {
                // A kernel with no baselines at all (a developer's --kernel-src/--kernel-image
                // build): its cases were judged on behaviour; there is nothing to diff against.
                unbaselined += 1;
                println!(
                    "no baseline for kernel {}: {path} written for review, not compared",
                    snapshot.kernel
                );
                ("no-baseline", None, None)
            }
            Comparison::New => {
                new += 1;
                println!(
                    "new snapshot {path} ({} lines)",
                    snapshot.text.lines().count()
                );
                ("new", None, None)
            }
            Comparison::TraceNotRecorded { outcome } => {
                untraced += 1;
                println!(
                    "trace not recorded {path}: verdicts and counters reproduce outcome {outcome}, \
                     whose capture was incomplete when it was recorded; record this run's \
                     complete trace with --accept {}",
                    snapshot.case
                );
                ("trace-not-recorded", Some(*outcome), None)
            }
            Comparison::Changed { diff, closest, of } => {
                changed += 1;
                let closest_note = if *of > 1 {
                    format!(" (diff against the closest, outcome {closest})")
                } else {
                    String::new()
                };
                println!(
                    "changed {path}: reproduces none of its {of} recorded outcome(s){closest_note}"
                );
                if let Some(reason) = timing {
                    println!(
                        "  timing-dependent ({reason}): if this outcome is legitimate, record it \
                         with --accept {}",
                        snapshot.case
                    );
                }
                print!("{diff}");
                ("changed", Some(*closest), Some(*of))
            }
            Comparison::SameBehaviour { outcome, of } => {
                unchanged += 1;
                alternatives += 1;
                variants += 1;
                println!(
                    "timing-dependent {path}: same behaviour as recorded outcome {outcome} of \
                     {of} (executions, judgement, calls); its duplicates were answered in a way \
                     not recorded yet: record it with --accept {}",
                    snapshot.case
                );
                ("same-behaviour", Some(*outcome), Some(*of))
            }
            Comparison::HarnessFailure(reason) => {
                harness += 1;
                println!("harness failure {path}: {reason} (not compared: retry the case)");
                ("harness-failure", None, None)
            }
        };
        entries.push((snapshot, result, outcome, of, timing));
    }
    let mut noisy: Vec<(String, &str)> = snapshots
        .iter()
        .filter_map(|s| Some((label(s), s.transport.as_deref()?)))
        .filter(|(_, counts)| counts_something(counts))
        .collect();
    noisy.sort();
    if !noisy.is_empty() {
        println!("transport (RC-level recovery, not compared):");
        for (path, counts) in &noisy {
            println!("  {path}: {counts}");
        }
    }
    let mut kernels: Vec<&str> = snapshots.iter().map(|s| s.kernel.as_str()).collect();
    kernels.sort_unstable();
    kernels.dedup();
    for line in version_changes(&entries, &root)? {
        println!("{line}");
    }
    let of_suite = |name: &str| -> Vec<Snapshot> {
        snapshots
            .iter()
            .filter(|s| s.suite == name && s.attempt == 1)
            .cloned()
            .collect()
    };
    let (nfsd, ours) = (of_suite("drc"), of_suite("selftest"));
    let mut unexplained = 0;
    for kernel in kernels {
        for d in divergences(kernel, &nfsd, &ours, &expected) {
            let why = d.expected.as_deref().unwrap_or("NOT LISTED");
            if d.expected.is_none() {
                unexplained += 1;
            }
            println!(
                "divergence {} {} {}: nfsd={} ours(classic)={} — {why}",
                d.kernel, d.scenario, d.field, d.nfsd, d.ours
            );
        }
    }
    println!(
        "snapshots: {} compared, {unchanged} unchanged ({alternatives} timing-dependent, each \
         reproducing a recorded outcome, {variants} of them in behaviour only), {changed} changed, {new} new, {untraced} with a trace \
         still to record, {harness} harness failures (incomplete captures, not compared); \
         {unexplained} unlisted nfsd-vs-ours divergences; {unbaselined} of kernels without \
         baselines (judged by their case verdicts only)",
        snapshots.len()
    );
    let mut accepted_cases = Vec::new();
    let mut json_entries = Vec::new();
    for (snapshot, result, outcome, of, timing) in &entries {
        let mut accepted = Value::Null;
        if accept_globs.iter().any(|g| snapshot.matches(g)) {
            let done = accept(snapshot, &root, *timing)?;
            let path = label(snapshot);
            accepted = match &done {
                Accepted::Written(_) => {
                    println!("accepted {path}: written as its only outcome");
                    json!("written")
                }
                Accepted::Counted { outcome, runs, .. } => {
                    println!("accepted {path}: outcome {outcome}, now seen in {runs} runs");
                    json!("counted")
                }
                Accepted::Added { outcome, .. } => {
                    println!("accepted {path}: new alternative outcome {outcome}");
                    json!("added")
                }
                Accepted::Refused(reason) => {
                    println!("not accepted {path}: {reason}");
                    json!("refused")
                }
            };
            if !matches!(done, Accepted::Refused(_)) {
                accepted_cases.push(snapshot.relative_path());
            }
        }
        json_entries.push(json!({
            "kernel": snapshot.kernel,
            "suite": snapshot.suite,
            "case": snapshot.case,
            "attempt": snapshot.attempt,
            "result": result,
            "outcome": outcome,
            "outcomes": of,
            "timing_dependent": timing,
            "harness_failure": snapshot.harness_failure,
            "transport": snapshot.transport,
            "accepted": accepted,
        }));
    }
    if !accept_globs.is_empty() {
        println!(
            "accepted {} snapshots into {}: review with `git diff {}` and commit",
            accepted_cases.len(),
            root.display(),
            root.display()
        );
    }
    if let Some(out) = outs.first() {
        let report = json!({
            "summary": {
                "compared": snapshots.len(),
                "unchanged": unchanged,
                "timing_dependent_unchanged": alternatives,
                "timing_dependent_same_behaviour": variants,
                "changed": changed,
                "new": new,
                "no_baseline": unbaselined,
                "trace_not_recorded": untraced,
                "harness_failures": harness,
                "unlisted_divergences": unexplained,
            },
            "cases": json_entries,
        });
        let path = out.join("snapshots.json");
        std::fs::write(&path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
        // The run page beside report.json, now that the snapshot results are in.
        for out in outs {
            match write_page(out, &out.join("index.html")) {
                Ok(page) => println!("run page: {}", page.display()),
                Err(err) => eprintln!("interop-post: no run page for {}: {err:#}", out.display()),
            }
        }
    }
    // Cases accepted now are resolved; the others still fail the check.
    let unresolved = entries
        .iter()
        .filter(|(s, result, ..)| {
            matches!(*result, "changed" | "new" | "trace-not-recorded")
                && !accepted_cases.contains(&s.relative_path())
        })
        .count();
    if unresolved > 0 {
        println!("accept after review, case by case: just snapshots-interop CASE-GLOB...");
    }
    Ok(if unresolved > 0 || unexplained > 0 {
        1
    } else if harness > 0 {
        2
    } else {
        0
    })
}

fn bench() -> Result<bool> {
    let pairs = interop::bench::pairs(&last_report(&last_run_root())?);
    if pairs.is_empty() {
        println!("no bench-interop pairs in the last report (did both targets pass?)");
        return Ok(false);
    }
    print!("{}", interop::bench::table(&pairs));
    Ok(true)
}
