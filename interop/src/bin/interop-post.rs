//! `interop-post`: after `interop run`, per-scenario snapshot comparison (`snapshots`), its
//! reviewed acceptance (`snapshots --accept`), and the bench-interop pairs (`bench`). Reads the
//! last run's `target/interop/report.json` and per-run share directories.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use serde_json::Value;

use interop::cache::{last_run_root, workspace_root};
use interop::images::vm_images_dir;
use interop::snapshots::{
    accept, collect, compare, divergences, read_bounded, scenario_of_case, Comparison,
    ExpectedDifferences, Snapshot,
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
    /// diff; exit 1 on a change, a new snapshot or an unlisted nfsd-vs-ours divergence.
    Snapshots {
        /// After printing the diffs, write this run's snapshots as the new baseline.
        #[arg(long)]
        accept: bool,
        /// The rig binary that renders captures (`rig trace show --format text`).
        #[arg(long, default_value = "target/release/rig")]
        rig: PathBuf,
        /// Output directories of runs (each with report.json and runs/); repeatable, so suites
        /// run in separate invocations are compared together. Default: target/interop/last.
        #[arg(long = "out")]
        outs: Vec<PathBuf>,
    },
    /// Print the bench-interop pairs (rig serve vs kernel nfsd) and their ratios.
    Bench,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Snapshots { accept, rig, outs } => {
            let outs = if outs.is_empty() {
                vec![last_run_root()]
            } else {
                outs
            };
            snapshots(accept, &rig, &outs)
        }
        Command::Bench => bench(),
    };
    interop::process::kill_all_groups();
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("interop-post: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn last_report(out: &Path) -> Result<Value> {
    let path = out.join("report.json");
    let text = read_bounded(&path).context("no report of a previous `interop run`")?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

fn snapshot_root() -> PathBuf {
    workspace_root().join("fixtures/snapshots/interop")
}

/// Every snapshot the runs in the report under `out` produced (for suites still on disk).
fn run_snapshots(out: &Path, rig: &Path) -> Result<Vec<Snapshot>> {
    let report = last_report(out)?;
    let rig = if rig.is_absolute() {
        rig.to_path_buf()
    } else {
        workspace_root().join(rig)
    };
    let rig = rig.is_file().then_some(rig);
    if rig.is_none() {
        eprintln!("interop-post: no rig binary: traces left out of the snapshots");
    }
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
        let suite_file = vm_images_dir()
            .join("suites")
            .join(format!("{suite_name}.toml"));
        let Ok(suite) = Suite::load(&suite_file) else {
            continue;
        };
        let cases: Vec<String> = suite.cases.iter().map(|c| c.name.clone()).collect();
        let run_dir = out.join("runs").join(kernel).join(suite_name);
        let snapshots = collect(
            kernel,
            suite_name,
            &cases,
            &run_dir.join("share/out"),
            rig.as_deref(),
            &run_dir.join("snapshots"),
        )?;
        for snapshot in &snapshots {
            // The rendered file next to the run, for review before acceptance.
            let path = run_dir
                .join("snapshots")
                .join(format!("{}.snap", snapshot.case));
            std::fs::create_dir_all(run_dir.join("snapshots"))?;
            std::fs::write(&path, &snapshot.text)?;
        }
        all.extend(snapshots);
    }
    Ok(all)
}

fn snapshots(accept_all: bool, rig: &Path, outs: &[PathBuf]) -> Result<bool> {
    let mut snapshots = Vec::new();
    for out in outs {
        snapshots.extend(run_snapshots(out, rig)?);
    }
    let expected = ExpectedDifferences::parse(&read_bounded(
        &workspace_root().join("fixtures/interop/expected-differences.toml"),
    )?)?;
    let root = snapshot_root();
    let (mut unchanged, mut changed, mut new, mut varied) = (0, 0, 0, 0);
    for snapshot in &snapshots {
        match compare(snapshot, &root)? {
            Comparison::Unchanged => unchanged += 1,
            Comparison::New => {
                new += 1;
                println!(
                    "new snapshot {} ({} lines)",
                    snapshot.relative_path().display(),
                    snapshot.text.lines().count()
                );
            }
            Comparison::Changed(diff) => {
                match expected.timing_reason(scenario_of_case(&snapshot.case)) {
                    Some(reason) => {
                        varied += 1;
                        println!("timing-dependent (not failing: {reason}):");
                    }
                    None => changed += 1,
                }
                print!("{diff}");
            }
        }
    }
    let mut kernels: Vec<&str> = snapshots.iter().map(|s| s.kernel.as_str()).collect();
    kernels.sort_unstable();
    kernels.dedup();
    let of_suite = |name: &str| -> Vec<Snapshot> {
        snapshots
            .iter()
            .filter(|s| s.suite == name)
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
        "snapshots: {} compared, {unchanged} unchanged, {changed} changed, {varied} timing-dependent changes, {new} new; {unexplained} unlisted nfsd-vs-ours divergences",
        snapshots.len()
    );
    if accept_all {
        for snapshot in &snapshots {
            accept(snapshot, &root)?;
        }
        println!(
            "accepted {} snapshots into {}: review with `git diff {}` and commit",
            snapshots.len(),
            root.display(),
            root.display()
        );
        return Ok(unexplained == 0);
    }
    if changed + new > 0 {
        println!("accept after review: just snapshots-interop");
    }
    Ok(changed == 0 && new == 0 && unexplained == 0)
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
