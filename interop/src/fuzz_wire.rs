//! `just fuzz-wire` on the host: the wire-fuzz suite on each kernel, one kernel at a time, each
//! into its own output directory (`RIG_INTEROP_OUT`, so other suites' runs are not blocked),
//! then per kernel, under `target/interop/wire-fuzz/<kernel>/`:
//!
//! - `report.json`: `rig fuzz-wire`'s report (cases, outcome histogram per target, divergences)
//!   plus `kernel`, `kernel_log_hits` and the first [`MAX_KERNEL_LOG_LINES`] hit lines;
//! - `summary.txt`: its text summary and the hit count; `corpus/` and `trace-events.txt` when the
//!   guided mode left them;
//!
//! and on a kernel-watch hit `target/interop/findings/<kernel>-<seed>-<index>/` with
//! `console.log`, `kmsg.log`, `case-log.jsonl`, `finding.json` and `reproducer.jsonl` (the last
//! logged case: the first suspect). A run fails on a hit or on a divergence no known-divergences
//! entry explains, as `rig fuzz-wire` fails on the host.
//!
//! The reports are JSON read and written with serde here (the guest's `rig fuzz-wire` writes
//! them); the guest script only starts the fuzzer and copies files.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;

/// Kernel-watch hit lines kept in a report.
pub const MAX_KERNEL_LOG_LINES: usize = 100;
/// Largest guest file read here (reports, hit lists, case logs are far smaller).
const MAX_GUEST_FILE: u64 = 64 << 20;

/// How `just fuzz-wire` runs (each field also settable from the environment, as the recipe's
/// `WIRE_FUZZ_*` variables always were).
#[derive(Debug, Clone, clap::Args)]
pub struct FuzzWireArgs {
    /// Seconds of fuzzing per kernel.
    pub seconds: u64,
    /// Seed of the case stream.
    pub seed: u64,
    /// Kernels from vm-images/kernels.toml, one after another.
    #[arg(required = true)]
    pub kernels: Vec<String>,
    /// Replay this one case file on a fresh boot of each kernel instead of fuzzing: does a
    /// finding reproduce from that case alone? (Writes `<kernel>-replay/` directories.)
    #[arg(long, env = "WIRE_FUZZ_REPLAY_FILE")]
    pub replay: Option<PathBuf>,
    /// With --replay: send the case this many times on the one boot (a finding that lives in
    /// a race; `rig fuzz-wire --repeat`, at most 10000).
    #[arg(
        long,
        env = "WIRE_FUZZ_REPLAY_REPEAT",
        default_value_t = 1,
        requires = "replay"
    )]
    pub replay_repeat: u32,
    /// Case families left out (space-separated), to fuzz past a known crash.
    #[arg(long, env = "WIRE_FUZZ_SKIP_FAMILIES", default_value = "")]
    pub skip_families: String,
    /// Do not stop at a kernel-watch hit.
    #[arg(long, env = "WIRE_FUZZ_KEEP_GOING", value_parser = flag_value, default_value = "0", num_args = 0..=1, default_missing_value = "1")]
    pub keep_going: bool,
    /// Guided: corpus mutants besides the families; reports distinct kernel-event signatures
    /// over time and keeps `<kernel>/corpus/`.
    #[arg(long, env = "WIRE_FUZZ_GUIDED", value_parser = flag_value, default_value = "0", num_args = 0..=1, default_missing_value = "1")]
    pub guided: bool,
    /// Per-case answer timeout in the guest, milliseconds.
    #[arg(long, env = "WIRE_FUZZ_TIMEOUT_MS", default_value_t = 1000)]
    pub timeout_ms: u64,
    /// Extra `interop run` arguments (after `--`).
    #[arg(last = true)]
    pub run_args: Vec<String>,
}

/// `1`/`true`/`yes` or `0`/`false`/`no`/empty, as the environment variables were written.
fn flag_value(text: &str) -> Result<bool, String> {
    match text.trim() {
        "1" | "true" | "yes" => Ok(true),
        "" | "0" | "false" | "no" => Ok(false),
        other => Err(format!("{other:?} is not 0 or 1")),
    }
}

/// The env-file lines of a replay: the shared case, sent `repeat` times.
pub fn replay_env_lines(repeat: u32) -> String {
    format!("WIRE_FUZZ_REPLAY=/rig/etc/replay.json\nWIRE_FUZZ_REPLAY_REPEAT={repeat}\n")
}

impl FuzzWireArgs {
    /// The guest's `etc/wire-fuzz.env` (read by vm-images/suites/wire-fuzz/fuzz-client.sh).
    fn env_file(&self) -> String {
        let mut text = format!(
            "WIRE_FUZZ_SECONDS={}\nWIRE_FUZZ_SEED={}\nWIRE_FUZZ_TIMEOUT_MS={}\n\
             WIRE_FUZZ_SKIP_FAMILIES=\"{}\"\nWIRE_FUZZ_GUIDED={}\nWIRE_FUZZ_KEEP_GOING={}\n",
            self.seconds,
            self.seed,
            self.timeout_ms,
            self.skip_families.replace(['"', '\\', '$', '`', '\n'], " "),
            u8::from(self.guided),
            u8::from(self.keep_going),
        );
        if self.replay.is_some() {
            text.push_str(&replay_env_lines(self.replay_repeat));
        }
        text
    }

    /// The output directory of `kernel` (a replay keeps its own, so the run it replays stays).
    fn kernel_dir(&self, base: &Path, kernel: &str) -> PathBuf {
        match self.replay {
            Some(_) => base.join(format!("{kernel}-replay")),
            None => base.join(kernel),
        }
    }
}

/// `finding.json` of a kernel-watch hit.
#[derive(Debug, Serialize)]
struct FindingRecord<'a> {
    kernel: &'a str,
    seed: u64,
    index: Option<u64>,
    line: &'a str,
    target: &'static str,
}

/// What one kernel's run left.
#[derive(Debug, Default)]
struct KernelOutcome {
    unknown_divergences: u64,
    kernel_log_hits: Option<usize>,
}

/// Run `just fuzz-wire`; `Ok(false)` when a kernel-watch hit or an unknown divergence (or a
/// failed run) makes it red.
pub fn run(args: &FuzzWireArgs) -> Result<bool> {
    let base = crate::cache::resolve_workspace_path(Path::new("target/interop/wire-fuzz"));
    let findings = crate::cache::resolve_workspace_path(Path::new("target/interop/findings"));
    fs::create_dir_all(&base)?;
    fs::create_dir_all(&findings)?;
    let env_file = base.join("wire-fuzz.env");
    fs::write(&env_file, args.env_file())?;
    let mut green = true;
    for kernel in &args.kernels {
        let out = args.kernel_dir(&base, kernel);
        let _ = fs::remove_dir_all(&out);
        fs::create_dir_all(&out)?;
        println!(
            "== wire-fuzz on {kernel}: {}s, seed {}",
            args.seconds, args.seed
        );
        let mut command = suite_run(kernel, &out, &env_file, args.replay.as_deref())?;
        command.args(&args.run_args);
        // The run prints its own progress; it stops its guests however it ends.
        let status = command.status().context("starting interop run")?;
        if !status.success() {
            green = false;
        }
        let outcome = collect(args, kernel, &out, &findings)?;
        if outcome.unknown_divergences > 0 {
            println!(
                "{kernel}: {} new divergence(s), see {}",
                outcome.unknown_divergences,
                share_dir(&out, kernel).join("divergences").display()
            );
            green = false;
        }
        if outcome.kernel_log_hits.is_some_and(|n| n > 0) {
            green = false;
        }
    }
    println!(
        "== wire-fuzz summary (seed {}, {}s per kernel)",
        args.seed, args.seconds
    );
    for kernel in &args.kernels {
        println!("{}", summary_line(kernel, &args.kernel_dir(&base, kernel)));
    }
    Ok(green)
}

/// `interop run` of the wire-fuzz suite on `kernel` alone into `out` (its own
/// `RIG_INTEROP_OUT`), with the guest settings `env_file` and, for a replay, the one `case`.
pub fn suite_run(
    kernel: &str,
    out: &Path,
    env_file: &Path,
    case: Option<&Path>,
) -> Result<Command> {
    let mut command = Command::new(std::env::current_exe().context("locating interop")?);
    command
        .current_dir(crate::cache::workspace_root())
        .env("RIG_INTEROP_OUT", out)
        .args([
            "run",
            "--suite",
            "wire-fuzz",
            "--kernel",
            kernel,
            "--jobs",
            "1",
        ])
        .arg("--share-file")
        .arg(format!("{}:etc/wire-fuzz.env", env_file.display()));
    if let Some(case) = case {
        command
            .arg("--share-file")
            .arg(format!("{}:etc/replay.json", case.display()));
    }
    Ok(command)
}

/// The run directory of `kernel`'s wire-fuzz suite (`last` links to this run).
fn run_dir(out: &Path, kernel: &str) -> PathBuf {
    out.join("last/runs").join(kernel).join("wire-fuzz")
}

fn share_dir(out: &Path, kernel: &str) -> PathBuf {
    run_dir(out, kernel).join("share/out")
}

fn read_text(path: &Path) -> Option<String> {
    let size = fs::metadata(path).ok()?.len();
    (size <= MAX_GUEST_FILE)
        .then(|| fs::read_to_string(path).ok())
        .flatten()
}

/// Copy what the guest left into `out`, extend the report, write the summary and, on a
/// kernel-watch hit, the finding directory.
fn collect(
    args: &FuzzWireArgs,
    kernel: &str,
    out: &Path,
    findings: &Path,
) -> Result<KernelOutcome> {
    let run = run_dir(out, kernel);
    let share = share_dir(out, kernel);
    // Kernel-event feedback: the cases that found a new signature, and the events enabled.
    if share.join("corpus").is_dir() {
        copy_dir(&share.join("corpus"), &out.join("corpus"))?;
    }
    if share.join("trace-events.txt").is_file() {
        fs::copy(share.join("trace-events.txt"), out.join("trace-events.txt"))?;
    }
    let hits: Option<Vec<String>> =
        read_text(&share.join("kernel-watch.hits")).map(|t| t.lines().map(str::to_owned).collect());
    // Lines of known findings over this transport (fixtures/findings/findings.toml): reported,
    // not a hit; the run went on past them.
    let known: Vec<String> = read_text(&share.join("kernel-watch.known"))
        .map(|t| t.lines().map(str::to_owned).collect())
        .unwrap_or_default();
    let mut outcome = KernelOutcome {
        kernel_log_hits: hits.as_ref().map(Vec::len),
        ..KernelOutcome::default()
    };
    let report_text = read_text(&share.join("wire-fuzz.report.json"));
    if let Some(text) = report_text {
        let mut report: Value = serde_json::from_str(&text).context("the guest's report.json")?;
        outcome.unknown_divergences = report
            .get("unknown_divergences")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if let Value::Object(fields) = &mut report {
            fields.insert("kernel".into(), kernel.into());
            fields.insert(
                "kernel_log_hits".into(),
                outcome.kernel_log_hits.map_or(Value::Null, Value::from),
            );
            let lines: Vec<&String> = hits.iter().flatten().take(MAX_KERNEL_LOG_LINES).collect();
            fields.insert("kernel_log_lines".into(), serde_json::to_value(lines)?);
            fields.insert("kernel_log_known".into(), known.len().into());
            let lines: Vec<&String> = known.iter().take(MAX_KERNEL_LOG_LINES).collect();
            fields.insert(
                "kernel_log_known_lines".into(),
                serde_json::to_value(lines)?,
            );
        }
        fs::write(
            out.join("report.json"),
            serde_json::to_string_pretty(&report)? + "\n",
        )?;
    }
    let mut summary = read_text(&share.join("wire-fuzz.summary.txt"))
        .unwrap_or_else(|| format!("no fuzz-wire summary (see {})\n", run.display()));
    if !summary.ends_with('\n') {
        summary.push('\n');
    }
    if !known.is_empty() {
        summary.push_str(&format!(
            "kernel_log_known {} (known findings of this transport): {}\n",
            known.len(),
            known[0]
        ));
    }
    summary.push_str(&format!(
        "kernel_log_hits {}\n",
        outcome
            .kernel_log_hits
            .map_or("unknown".to_owned(), |n| n.to_string())
    ));
    fs::write(out.join("summary.txt"), &summary)?;
    print!("{summary}");
    if let Some(first) = hits.as_ref().and_then(|h| h.first()) {
        let dir = write_finding(args, kernel, first, &run, &share, findings)?;
        println!("KERNEL-LOG HIT on {kernel}: {}", dir.display());
    }
    Ok(outcome)
}

/// The last line of the guest's case log: the case sent just before the hit.
fn last_case(case_log: &Path) -> Option<String> {
    let file = fs::File::open(case_log).ok()?;
    BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter(|l| !l.trim().is_empty())
        .last()
}

fn write_finding(
    args: &FuzzWireArgs,
    kernel: &str,
    first_hit: &str,
    run: &Path,
    share: &Path,
    findings: &Path,
) -> Result<PathBuf> {
    let case_log = share.join("wire-fuzz.case-log.jsonl");
    let last = last_case(&case_log).unwrap_or_default();
    // A keep-going run did not stop at the hit: its last case is no suspect.
    let index = (!args.keep_going)
        .then(|| serde_json::from_str::<Value>(&last).ok())
        .flatten()
        .and_then(|case| case.get("index").and_then(Value::as_u64));
    let tag = if args.keep_going {
        "keep-going".to_owned()
    } else {
        index.map_or("unknown".to_owned(), |i| i.to_string())
    };
    let replay = if args.replay.is_some() { "-replay" } else { "" };
    let dir = findings.join(format!("{kernel}-{}-{tag}{replay}", args.seed));
    fs::create_dir_all(&dir)?;
    for (from, to) in [
        (run.join("srv.console"), "console.log"),
        (share.join("kmsg.log"), "kmsg.log"),
        (case_log.clone(), "case-log.jsonl"),
    ] {
        if from.is_file() {
            fs::copy(&from, dir.join(to))?;
        }
    }
    fs::write(dir.join("reproducer.jsonl"), format!("{last}\n"))?;
    let record = FindingRecord {
        kernel,
        seed: args.seed,
        index,
        line: first_hit,
        target: "nfsd:20049",
    };
    fs::write(
        dir.join("finding.json"),
        serde_json::to_string(&record)? + "\n",
    )?;
    Ok(dir)
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()))?;
        } else {
            fs::copy(&path, to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// `<kernel>: cases_sent=N cases_per_sec=R unknown_divergences=D kernel_log_hits H`.
fn summary_line(kernel: &str, out: &Path) -> String {
    let Some(report) = read_text(&out.join("report.json"))
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
    else {
        return format!("{kernel}: no report");
    };
    let field = |key: &str| report.get(key).map_or("?".to_owned(), |v| v.to_string());
    let hits = read_text(&out.join("summary.txt"))
        .and_then(|s| s.lines().last().map(str::to_owned))
        .unwrap_or_default();
    format!(
        "{kernel}: cases_sent={} cases_per_sec={} unknown_divergences={} {hits}",
        field("cases_sent"),
        field("cases_per_sec"),
        field("unknown_divergences")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(replay: Option<&str>, keep_going: bool) -> FuzzWireArgs {
        FuzzWireArgs {
            seconds: 60,
            seed: 7,
            kernels: vec!["linux-6.12".into()],
            replay: replay.map(PathBuf::from),
            replay_repeat: 40,
            skip_families: "read-overlap \"$(x)".into(),
            keep_going,
            guided: true,
            timeout_ms: 1000,
            run_args: Vec::new(),
        }
    }

    #[test]
    fn the_guest_env_file_says_every_setting_and_cannot_be_escaped() {
        let env = args(Some("case.json"), false).env_file();
        assert_eq!(
            env,
            "WIRE_FUZZ_SECONDS=60\nWIRE_FUZZ_SEED=7\nWIRE_FUZZ_TIMEOUT_MS=1000\n\
             WIRE_FUZZ_SKIP_FAMILIES=\"read-overlap   (x)\"\nWIRE_FUZZ_GUIDED=1\n\
             WIRE_FUZZ_KEEP_GOING=0\nWIRE_FUZZ_REPLAY=/rig/etc/replay.json\n\
             WIRE_FUZZ_REPLAY_REPEAT=40\n"
        );
        assert!(!args(None, false).env_file().contains("REPLAY"));
        assert_eq!(flag_value("1"), Ok(true));
        assert_eq!(flag_value(""), Ok(false));
        assert!(flag_value("maybe").is_err());
    }

    /// A guest share as the wire-fuzz suite leaves it after a kernel-watch hit.
    fn guest_share(out: &Path) -> PathBuf {
        let share = share_dir(out, "linux-6.12");
        fs::create_dir_all(share.join("corpus")).unwrap();
        fs::write(share.join("corpus/case-1.json"), "{}").unwrap();
        fs::write(
            share.join("wire-fuzz.report.json"),
            r#"{"cases_sent": 12, "cases_per_sec": 3.5, "unknown_divergences": 1}"#,
        )
        .unwrap();
        fs::write(share.join("wire-fuzz.summary.txt"), "cases 12\n").unwrap();
        fs::write(
            share.join("kernel-watch.hits"),
            "BUG: unable to handle page fault \"x\"\nCall Trace:\n",
        )
        .unwrap();
        fs::write(
            share.join("wire-fuzz.case-log.jsonl"),
            "{\"index\": 24}\n{\"index\": 25, \"xid\": 1}\n",
        )
        .unwrap();
        fs::write(share.join("kmsg.log"), "kmsg").unwrap();
        fs::write(run_dir(out, "linux-6.12").join("srv.console"), "console").unwrap();
        share
    }

    #[test]
    fn a_hit_becomes_a_finding_and_the_report_carries_the_kernel_log() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("wire-fuzz/linux-6.12");
        let findings = dir.path().join("findings");
        guest_share(&out);
        let outcome = collect(&args(None, false), "linux-6.12", &out, &findings).unwrap();
        assert_eq!(outcome.unknown_divergences, 1);
        assert_eq!(outcome.kernel_log_hits, Some(2));
        let report: Value =
            serde_json::from_str(&fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
        assert_eq!(report["kernel"], "linux-6.12");
        assert_eq!(report["kernel_log_hits"], 2);
        assert_eq!(report["kernel_log_lines"][1], "Call Trace:");
        assert_eq!(report["cases_sent"], 12);
        assert!(out.join("corpus/case-1.json").is_file());
        let finding = findings.join("linux-6.12-7-25");
        let record: Value =
            serde_json::from_str(&fs::read_to_string(finding.join("finding.json")).unwrap())
                .unwrap();
        assert_eq!(record["index"], 25);
        assert_eq!(record["line"], "BUG: unable to handle page fault \"x\"");
        assert_eq!(
            fs::read_to_string(finding.join("reproducer.jsonl")).unwrap(),
            "{\"index\": 25, \"xid\": 1}\n"
        );
        assert_eq!(
            fs::read_to_string(finding.join("console.log")).unwrap(),
            "console"
        );
        assert!(finding.join("case-log.jsonl").is_file());
        assert_eq!(
            fs::read_to_string(out.join("summary.txt")).unwrap(),
            "cases 12\nkernel_log_hits 2\n"
        );
        assert_eq!(
            summary_line("linux-6.12", &out),
            "linux-6.12: cases_sent=12 cases_per_sec=3.5 unknown_divergences=1 kernel_log_hits 2"
        );
    }

    #[test]
    fn a_keep_going_run_names_no_suspect_and_a_clean_run_no_finding() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("wire-fuzz/linux-6.12");
        let findings = dir.path().join("findings");
        guest_share(&out);
        collect(&args(None, true), "linux-6.12", &out, &findings).unwrap();
        let finding = findings.join("linux-6.12-7-keep-going");
        let record: Value =
            serde_json::from_str(&fs::read_to_string(finding.join("finding.json")).unwrap())
                .unwrap();
        assert_eq!(record["index"], Value::Null);
        // Without hits: no finding directory, the hit count 0.
        let clean = dir.path().join("clean/linux-6.12");
        let share = guest_share(&clean);
        fs::write(share.join("kernel-watch.hits"), "").unwrap();
        let outcome = collect(
            &args(None, false),
            "linux-6.12",
            &clean,
            &dir.path().join("f2"),
        )
        .unwrap();
        assert_eq!(outcome.kernel_log_hits, Some(0));
        assert!(
            !dir.path().join("f2").exists()
                || fs::read_dir(dir.path().join("f2"))
                    .unwrap()
                    .next()
                    .is_none()
        );
        // No guest report at all.
        assert_eq!(
            summary_line("linux-7.x", &dir.path().join("none")),
            "linux-7.x: no report"
        );
    }

    #[test]
    fn a_known_findings_line_is_reported_apart_and_is_no_hit() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("wire-fuzz/linux-6.12-siw");
        let share = share_dir(&out, "linux-6.12-siw");
        fs::create_dir_all(&share).unwrap();
        fs::write(
            share.join("wire-fuzz.report.json"),
            r#"{"cases_sent": 2500, "cases_per_sec": 14.0, "unknown_divergences": 0}"#,
        )
        .unwrap();
        fs::write(share.join("wire-fuzz.summary.txt"), "cases 2500\n").unwrap();
        fs::write(share.join("kernel-watch.hits"), "").unwrap();
        let line = "WARNING: CPU: 0 PID: 218 at drivers/infiniband/core/verbs.c:2104 \
                    ib_destroy_qp_user+0x14c/0x180";
        fs::write(share.join("kernel-watch.known"), format!("{line}\n")).unwrap();
        let findings = dir.path().join("findings");
        let outcome = collect(&args(None, false), "linux-6.12-siw", &out, &findings).unwrap();
        assert_eq!(outcome.kernel_log_hits, Some(0));
        assert!(!findings.exists() || fs::read_dir(&findings).unwrap().next().is_none());
        let report: Value =
            serde_json::from_str(&fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
        assert_eq!(report["kernel_log_known"], 1);
        assert_eq!(report["kernel_log_known_lines"][0], line);
        let summary = fs::read_to_string(out.join("summary.txt")).unwrap();
        assert!(
            summary.contains("kernel_log_known 1 (known findings"),
            "{summary}"
        );
        assert!(summary.ends_with("kernel_log_hits 0\n"), "{summary}");
    }
}
