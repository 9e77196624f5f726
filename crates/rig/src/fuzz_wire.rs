//! `rig fuzz-wire`: send generated (or replayed) malformed RPC-over-RDMA calls to a target,
//! optionally differentially against a second one, and report outcomes and divergences.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use wirefuzz::case::Case;
use wirefuzz::differential::{self, KnownDivergences, Report, RunOptions};
use wirefuzz::executor::{open_runner, CaseResult};
use wirefuzz::generate::{generate, generate_family_case, Family};
use wirefuzz::target::{Deadline, TargetSpec};

use crate::input::read_text;
use crate::{out, outln};

/// Most generated cases drawn and skipped (`--skip-family`) while looking for the next one.
const MAX_SKIPPED_DRAWS: u32 = 100_000;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Target: sim:linux-6.1, sim:linux-2026, sim:POLICY[@PROFILE] (classic, acked, acked-mark),
    /// model:PROFILE, or ADDR:PORT (rdma_cm to a live responder; inside the interop guests).
    #[arg(long)]
    target: String,
    /// Second target for a differential run (same case stream, outcomes compared).
    #[arg(long)]
    against: Option<String>,
    /// Case stream seed: case i of seed S is always the same bytes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of cases to send.
    #[arg(long, default_value_t = 1000)]
    cases: u64,
    /// Stop after this many seconds even if fewer cases were sent.
    #[arg(long)]
    time: Option<u64>,
    /// Only generate cases of this mutation family (see --list-families).
    #[arg(long)]
    family: Option<String>,
    /// Replay one case file instead of generating cases.
    #[arg(long)]
    replay: Option<PathBuf>,
    /// Write the JSON report here.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Case log: every case is appended (one JSON line) before it is sent.
    #[arg(long, default_value = "target/wire-fuzz/case-log.jsonl")]
    log: PathBuf,
    /// Where new divergences are saved (case file + outcomes).
    #[arg(long, default_value = "target/wire-fuzz/divergences")]
    save_divergences: PathBuf,
    /// Known divergences (JSON), matched against what the run finds.
    #[arg(long, default_value = "fixtures/wire-fuzz/known-divergences.json")]
    known: PathBuf,
    /// Per-event deadline for real targets, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    timeout_ms: u64,
    /// Leave out generated cases of this family (repeatable; case indices keep their place in
    /// the stream, so a case file still replays): e.g. a family that crashes the kernel under
    /// test, to fuzz the rest of it past a known finding.
    #[arg(long)]
    skip_family: Vec<String>,
    /// Stop before the next case once this file exists (the interop server guest's kernel
    /// watch touches it on a WARN/BUG/Oops/KASAN line, so the case log ends at the suspect).
    #[arg(long)]
    stop_file: Option<PathBuf>,
    /// Write the generated case files to this directory instead of sending them.
    #[arg(long)]
    dump: Option<PathBuf>,
    /// List the mutation families and exit.
    #[arg(long)]
    list_families: bool,
    /// Print every case's outcome and the targets' notes (simulator trace, model rule);
    /// always on with --replay.
    #[arg(long)]
    traces: bool,
}

pub fn run(args: Args) -> Result<u8> {
    if args.list_families {
        for family in Family::ALL {
            outln!("{}", family.name())?;
        }
        return Ok(0);
    }
    let family = match &args.family {
        Some(name) => Some(
            Family::from_name(name)
                .with_context(|| format!("unknown family {name:?} (see --list-families)"))?,
        ),
        None => None,
    };
    let replayed = match &args.replay {
        Some(path) => Some(read_case(path)?),
        None => None,
    };
    let mut skipped = Vec::with_capacity(args.skip_family.len());
    for name in &args.skip_family {
        let family = Family::from_name(name)
            .with_context(|| format!("unknown family {name:?} (see --list-families)"))?;
        skipped.push(family.name().to_string());
    }
    let seed = args.seed;
    let stop_file = args.stop_file.clone();
    // The generator index runs ahead of the sent count when families are skipped.
    let mut next_index = 0u64;
    let mut next_case = move |i: u64| -> Option<Case> {
        if stop_file.as_deref().is_some_and(Path::exists) {
            eprintln!("fuzz-wire: stop file present, stopping before case {i}");
            return None;
        }
        match (&replayed, family) {
            (Some(case), _) => (i == 0).then(|| case.clone()),
            (None, Some(family)) => Some(generate_family_case(family, seed, i)),
            (None, None) => {
                // Bounded: skipping every family but one still finds one within a few hundred
                // draws; give up (end the run) rather than loop forever.
                for _ in 0..MAX_SKIPPED_DRAWS {
                    let case = generate(seed, next_index);
                    next_index += 1;
                    if !skipped.contains(&case.family) {
                        return Some(case);
                    }
                }
                None
            }
        }
    };
    if let Some(dir) = &args.dump {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for i in 0..args.cases {
            let Some(case) = next_case(i) else { break };
            let path = dir.join(format!("{}-{:06}.json", case.family, case.index));
            std::fs::write(&path, case.to_json() + "\n")
                .with_context(|| format!("writing {}", path.display()))?;
        }
        return Ok(0);
    }

    let deadline = Deadline {
        wall: Duration::from_millis(args.timeout_ms),
        ..Deadline::default()
    };
    let spec_a = TargetSpec::parse(&args.target)?;
    let spec_b = args.against.as_deref().map(TargetSpec::parse).transpose()?;
    if let Some(parent) = args.log.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let log =
        File::create(&args.log).with_context(|| format!("creating {}", args.log.display()))?;
    let mut runner_a = open_runner(&spec_a, seed, deadline, Some(Box::new(BufWriter::new(log))))?;
    let mut runner_b = spec_b
        .as_ref()
        .map(|spec| open_runner(spec, seed, deadline, None))
        .transpose()?;
    let known = read_known(&args.known)?;
    let options = RunOptions {
        seed,
        cases: if args.replay.is_some() { 1 } else { args.cases },
        time: args.time.map(Duration::from_secs),
        save_dir: Some(args.save_divergences.clone()),
    };
    let traces = args.traces || args.replay.is_some();
    // The observer cannot fail: the first write error is kept, later traces are not written,
    // and the error ends the command once the run is over.
    let mut write_error = None;
    let report = differential::run_observed(
        &options,
        next_case,
        runner_a.as_mut(),
        runner_b.as_deref_mut(),
        &known,
        |case, a, b| {
            if traces && write_error.is_none() {
                write_error = out!("{}", case_trace(case, a, b)).err();
            }
        },
    )?;
    // The report file first: a closed standard output must not lose it.
    if let Some(path) = &args.report {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(e) = write_error {
        return Err(e);
    }
    out!("{}", summary(&report))?;
    Ok(u8::from(report.unknown_divergences > 0))
}

fn read_case(path: &Path) -> Result<Case> {
    let text = read_text(
        path,
        wirefuzz::case::MAX_CASE_FILE_BYTES as u64,
        "case file",
    )?;
    Case::from_json(&text).with_context(|| path.display().to_string())
}

/// Largest known-divergences file read (the committed one is a few KiB).
const MAX_KNOWN_FILE_BYTES: u64 = 16 << 20;

fn read_known(path: &Path) -> Result<KnownDivergences> {
    if !path.exists() {
        return Ok(KnownDivergences::default());
    }
    let text = read_text(path, MAX_KNOWN_FILE_BYTES, "known divergences")?;
    KnownDivergences::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// One case's outcomes and notes, for `--traces`.
fn case_trace(case: &Case, a: &CaseResult, b: Option<&CaseResult>) -> String {
    let mut out = format!(
        "case {} {} (aims at {}, {} bytes): {}{}\n",
        case.index,
        case.family,
        case.target_rule,
        case.bytes.len(),
        a.outcome,
        b.map_or(String::new(), |b| format!(" vs {}", b.outcome))
    );
    for note in a.notes.iter().chain(b.iter().flat_map(|b| &b.notes)) {
        out.push_str("    ");
        out.push_str(note);
        out.push('\n');
    }
    out
}

/// The human summary: cases and rate, outcome histogram per target, divergences.
fn summary(report: &Report) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line(format!(
        "seed {}: {} cases in {:.2}s ({:.0} cases/s)",
        report.seed, report.cases_sent, report.elapsed_secs, report.cases_per_sec
    ));
    for target in &report.targets {
        let histogram: Vec<String> = target
            .outcomes
            .iter()
            .map(|(outcome, n)| format!("{outcome}={n}"))
            .collect();
        line(format!(
            "{:<22} {}  liveness-failures={} late-answers={}",
            target.target,
            histogram.join(" "),
            target.liveness_failures,
            target.late_answers
        ));
    }
    for d in &report.divergences {
        line(format!(
            "divergence {:<28} {}={} {}={} x{} (first: seed {} index {}) {}",
            d.rule,
            d.a_target,
            d.a,
            d.b_target,
            d.b,
            d.count,
            d.first_seed,
            d.first_index,
            d.known
                .as_deref()
                .map_or("NEW".to_string(), |reason| format!("known: {reason}"))
        ));
    }
    for u in &report.unconfirmed {
        line(format!(
            "unconfirmed {:<27} {}/{} in the stream, both {} on fresh connections x{} (first: seed {} index {})",
            u.rule, u.a, u.b, u.rerun, u.count, u.first_seed, u.first_index
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    type Cli = crate::test_cli::Cli<Args>;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rig-fuzz-wire-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn fixture(name: &str) -> String {
        format!(
            "{}/../../fixtures/wire-fuzz/{name}",
            env!("CARGO_MANIFEST_DIR")
        )
    }

    #[test]
    fn replays_a_case_file_and_writes_the_report() {
        let dir = scratch("replay");
        let report = dir.join("report.json");
        let log = dir.join("log.jsonl");
        let case = fixture("cases/write-segcount-zero-000000.json");
        let known = fixture("known-divergences.json");
        let cli = Cli::parse_from([
            "rig",
            "--target",
            "sim:linux-6.1",
            "--against",
            "model:linux-6.1",
            "--replay",
            &case,
            "--known",
            &known,
            "--report",
            report.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
            "--save-divergences",
            dir.join("div").to_str().unwrap(),
        ]);
        assert_eq!(run(cli.args).unwrap(), 0, "the divergence is a known one");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert_eq!(json["cases_sent"], 1);
        assert_eq!(json["targets"][0]["outcomes"]["err-chunk"], 1);
        assert_eq!(json["targets"][1]["outcomes"]["reply"], 1);
        assert_eq!(json["divergences"][0]["rule"], "write-segcount-zero");
        assert!(json["divergences"][0]["known"].is_string());
        // The case log holds the replayed case twice: sent in the stream, then again on a fresh
        // connection to confirm the divergence.
        let logged = std::fs::read_to_string(&log).unwrap();
        let replayed = Case::from_json(&std::fs::read_to_string(&case).unwrap()).unwrap();
        let lines: Vec<&str> = logged.lines().collect();
        assert_eq!(lines.len(), 2, "{logged}");
        for line in lines {
            assert_eq!(Case::from_json(line).unwrap(), replayed);
        }
        assert_eq!(json["unconfirmed"].as_array().map(Vec::len), Some(0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn new_divergences_fail_the_run() {
        let dir = scratch("new");
        let cli = Cli::parse_from([
            "rig",
            "--target",
            "model:linux-6.1",
            "--against",
            "model:linux-2026",
            "--family",
            "write-segcount-zero",
            "--cases",
            "5",
            "--known",
            dir.join("none.json").to_str().unwrap(),
            "--log",
            dir.join("log.jsonl").to_str().unwrap(),
            "--save-divergences",
            dir.join("div").to_str().unwrap(),
        ]);
        assert_eq!(run(cli.args).unwrap(), 1);
        assert!(dir
            .join("div/write-segcount-zero--reply--err-chunk.case.json")
            .exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn skipped_families_are_left_out_and_indices_keep_their_place() {
        let dir = scratch("skip");
        let report = dir.join("report.json");
        let log = dir.join("log.jsonl");
        let cli = Cli::parse_from([
            "rig",
            "--target",
            "sim:linux-2026",
            "--cases",
            "60",
            "--skip-family",
            "valid",
            "--skip-family",
            "read-overlap",
            "--log",
            log.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
            "--known",
            &fixture("known-divergences.json"),
        ]);
        assert_eq!(run(cli.args).unwrap(), 0);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert_eq!(json["cases_sent"].as_u64(), Some(60));
        let by_family = json["targets"][0]["by_family"].as_object().unwrap();
        assert!(!by_family.contains_key("valid") && !by_family.contains_key("read-overlap"));
        // Every logged case is the generator's case at its own index, so it replays as is.
        let logged = std::fs::read_to_string(&log).unwrap();
        let mut last_index = None;
        for line in logged.lines() {
            let case: Case = Case::from_json(line).unwrap();
            assert_eq!(case.to_json(), generate(1, case.index).to_json());
            assert!(last_index.is_none_or(|last| case.index > last));
            last_index = Some(case.index);
        }
        assert!(last_index.unwrap() >= 60, "skipped indices were drawn past");
        let cli = Cli::parse_from(["rig", "--target", "sim:classic", "--skip-family", "nope"]);
        let err = run(cli.args).unwrap_err().to_string();
        assert!(err.contains("unknown family \"nope\""), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_stop_file_ends_the_run_before_the_next_case() {
        let dir = scratch("stop");
        let report = dir.join("report.json");
        let stop = dir.join("stop");
        let run_with_stop_file = || {
            let cli = Cli::parse_from([
                "rig",
                "--target",
                "sim:linux-2026",
                "--cases",
                "7",
                "--log",
                dir.join("log.jsonl").to_str().unwrap(),
                "--stop-file",
                stop.to_str().unwrap(),
                "--report",
                report.to_str().unwrap(),
                "--known",
                &fixture("known-divergences.json"),
            ]);
            assert_eq!(run(cli.args).unwrap(), 0);
            let json: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
            json["cases_sent"].as_u64().unwrap()
        };
        assert_eq!(run_with_stop_file(), 7, "no stop file: every case runs");
        std::fs::write(&stop, "WARNING: CPU: 0 PID: 1 at net/sunrpc\n").unwrap();
        assert_eq!(run_with_stop_file(), 0, "stop file: nothing more is sent");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_rdma_target_refuses_a_host_without_rdma() {
        let dir = scratch("rdma");
        let cli = Cli::parse_from([
            "rig",
            "--target",
            "10.0.2.15:20049",
            "--log",
            dir.join("log.jsonl").to_str().unwrap(),
        ]);
        let err = run(cli.args).unwrap_err().to_string();
        // rig builds the rdma target; this host has no RDMA device, so opening it fails and
        // names where it runs instead of sending anything.
        assert!(err.contains("rdma target 10.0.2.15:20049"), "{err}");
        assert!(err.contains("interop guests"), "{err}");
        let cli = Cli::parse_from(["rig", "--target", "sim:lru"]);
        assert!(run(cli.args)
            .unwrap_err()
            .to_string()
            .contains("bad target spec"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
