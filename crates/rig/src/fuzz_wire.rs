//! `rig fuzz-wire`: send generated (or replayed) malformed RPC-over-RDMA calls to a target,
//! optionally differentially against a second one, and report outcomes and divergences.

use std::cell::RefCell;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use wirefuzz::case::Case;
use wirefuzz::differential::{
    self, KnownDivergences, NewDivergence, Report, RunDriver, RunOptions,
};
use wirefuzz::executor::{open_runner, CaseResult};
use wirefuzz::generate::{generate, generate_family_case, Family};
use wirefuzz::guided::Feedback;
use wirefuzz::signature::Signature;
use wirefuzz::target::{Deadline, TargetError, TargetSpec};

use crate::input::read_text;
use crate::trace_relay::RelayClient;
use crate::{out, outln};

/// Most generated cases drawn and skipped (`--skip-family`) while looking for the next one.
const MAX_SKIPPED_DRAWS: u32 = 100_000;
/// Most sends of one replayed case (`--repeat`): a few minutes of a guest run.
pub const MAX_REPLAY_REPEAT: u64 = 10_000;
/// Most corpus case files one run writes (new signatures beyond it are counted, not saved).
const MAX_CORPUS_FILES: u64 = 2000;
/// Cases between reconnection attempts to a trace relay that failed.
const RELAY_RETRY_CASES: u64 = 100;

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
    /// With --replay: send the case this many times, one after another (a fault that lives in
    /// a race with the case needs many tries on one boot), at most [`MAX_REPLAY_REPEAT`].
    #[arg(long, default_value_t = 1, requires = "replay", value_parser = clap::value_parser!(u64).range(1..=MAX_REPLAY_REPEAT))]
    repeat: u64,
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
    /// Collect each case's responder events (the simulator's model events, or a live kernel's
    /// trace events through --trace-relay) and report distinct signatures over time. The case
    /// stream is unchanged.
    #[arg(long)]
    signatures: bool,
    /// Guided fuzzing (implies --signatures): a case with a new signature joins the corpus,
    /// and two cases in three are structure-aware mutants of corpus entries, the third the
    /// families' next case.
    #[arg(long)]
    guided: bool,
    /// The server guest's `rig trace-relay` (ADDR:PORT): the --target kernel's trace events
    /// per case. Needed for --signatures/--guided against a live target.
    #[arg(long)]
    trace_relay: Option<String>,
    /// Seconds between the points of the signatures-over-time table.
    #[arg(long, default_value_t = 10)]
    signature_interval: u64,
    /// Where cases with a new signature are written (at most 2000 per run).
    #[arg(long, default_value = "target/wire-fuzz/corpus")]
    corpus: PathBuf,
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
    let repeat = args.repeat;
    let stop_file = args.stop_file.clone();
    // The generator index runs ahead of the sent count when families are skipped; family
    // cases are counted apart from the stream index (guided runs mix mutants in).
    let mut next_index = 0u64;
    let mut families_drawn = 0u64;
    let mut next_family_case = move || -> Option<Case> {
        let i = families_drawn;
        families_drawn += 1;
        match (&replayed, family) {
            (Some(case), _) => (i < repeat).then(|| case.clone()),
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
    let feedback = RefCell::new(
        (args.signatures || args.guided || args.trace_relay.is_some()).then(|| {
            Feedback::new(
                seed,
                args.guided,
                Duration::from_secs(args.signature_interval.max(1)),
            )
        }),
    );
    let mut next_case = |i: u64| -> Option<Case> {
        if stop_file.as_deref().is_some_and(Path::exists) {
            eprintln!("fuzz-wire: stop file present, stopping before case {i}");
            return None;
        }
        match feedback.borrow_mut().as_mut() {
            Some(feedback) => feedback.next_case(i, &mut next_family_case),
            None => next_family_case(),
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
    if args.trace_relay.is_none()
        && feedback.borrow().is_some()
        && !matches!(spec_a, TargetSpec::Sim(_))
    {
        anyhow::bail!(
            "--signatures/--guided against {} need --trace-relay",
            args.target
        )
    }
    if let Some(parent) = args.log.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let log =
        File::create(&args.log).with_context(|| format!("creating {}", args.log.display()))?;
    let mut runner_a = open_runner(
        &spec_a,
        seed,
        deadline,
        Some(Box::new(BufWriter::new(log))),
        &crate::rdma_target::open,
    )?;
    let mut runner_b = spec_b
        .as_ref()
        .map(|spec| open_runner(spec, seed, deadline, None, &crate::rdma_target::open))
        .transpose()?;
    let known = read_known(&args.known)?;
    let options = RunOptions {
        seed,
        cases: if args.replay.is_some() {
            args.repeat
        } else {
            args.cases
        },
        time: args.time.map(Duration::from_secs),
    };
    let traces = args.traces || args.replay.is_some();
    let mut relay = match &args.trace_relay {
        Some(addr) => Some(RelayState::connect(addr)?),
        None => None,
    };
    let mut corpus = CorpusWriter::new(args.corpus.clone(), feedback.borrow().is_some());
    let started = Instant::now();
    let mut driver = WallClock {
        started,
        save_dir: args.save_divergences.clone(),
    };
    // The observer cannot fail: the first write error is kept, later traces are not written,
    // and the error ends the command once the run is over.
    let mut write_error = None;
    let mut report = differential::run_observed(
        &options,
        next_case,
        runner_a.as_mut(),
        runner_b.as_deref_mut(),
        &known,
        &mut driver,
        |case, a, b| {
            if traces && write_error.is_none() {
                write_error = out!("{}", case_trace(case, a, b)).err();
            }
            let mut feedback = feedback.borrow_mut();
            let Some(feedback) = feedback.as_mut() else {
                return;
            };
            // The kernel's events come through the relay (one case later); the simulator has
            // its own.
            match &mut relay {
                Some(relay) => {
                    if let Some((marked, events)) = relay.after_case(case) {
                        let saved = corpus.observe(feedback, &marked, events, started.elapsed());
                        if let Err(e) = saved {
                            write_error.get_or_insert(e);
                        }
                    }
                }
                None => {
                    let saved = corpus.observe(feedback, case, a.events.clone(), started.elapsed());
                    if let Err(e) = saved {
                        write_error.get_or_insert(e);
                    }
                }
            }
        },
    )?;
    if let Some(feedback) = feedback.borrow_mut().as_mut() {
        if let Some((last, events)) = relay.as_mut().and_then(RelayState::finish) {
            if let Err(e) = corpus.observe(feedback, &last, events, started.elapsed()) {
                write_error.get_or_insert(e);
            }
        }
        let mut section = feedback.report(started.elapsed());
        if let Some(relay) = &relay {
            section.cases_without_events = relay.missed;
            section.event_wait_ms = relay.waited.as_millis() as u64;
        }
        report.signatures = Some(section);
    }
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

/// The differential run's driver: the wall clock, and each new divergence written to
/// `save_dir` as `<rule>--<a>--<b>.case.json` (replayable with `--replay`) and `.outcomes.json`.
struct WallClock {
    started: Instant,
    save_dir: PathBuf,
}

impl RunDriver for WallClock {
    fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    fn keep_divergence(
        &mut self,
        divergence: &NewDivergence,
    ) -> Result<Option<String>, TargetError> {
        let io = |e: std::io::Error| TargetError::Local(format!("saving divergence: {e}"));
        std::fs::create_dir_all(&self.save_dir).map_err(io)?;
        let stem = divergence.stem();
        let case_path = self.save_dir.join(format!("{stem}.case.json"));
        std::fs::write(&case_path, divergence.case.to_json() + "\n").map_err(io)?;
        std::fs::write(
            self.save_dir.join(format!("{stem}.outcomes.json")),
            divergence.outcomes_json(),
        )
        .map_err(io)?;
        Ok(Some(case_path.display().to_string()))
    }
}

/// The trace relay as the run sees it: each case is marked right after it ran, and its events
/// come back with the next case's mark (or at the end); a lost relay is retried now and then,
/// and the cases meanwhile are counted as having no events.
struct RelayState {
    addr: String,
    client: Option<RelayClient>,
    /// The case marked last, whose events are still to come.
    marked: Option<Case>,
    missed: u64,
    since_failure: u64,
    /// Time spent in relay calls (on every case's path).
    waited: Duration,
}

impl RelayState {
    fn connect(addr: &str) -> Result<RelayState> {
        Ok(RelayState {
            addr: addr.to_string(),
            client: Some(RelayClient::connect(addr, Duration::from_secs(2))?),
            marked: None,
            missed: 0,
            since_failure: 0,
            waited: Duration::ZERO,
        })
    }

    /// Mark `case` (just run); returns the case marked before it with its events, if any.
    fn after_case(&mut self, case: &Case) -> Option<(Case, Option<Signature>)> {
        let started = Instant::now();
        if self.client.is_none() {
            self.since_failure += 1;
            if self.since_failure >= RELAY_RETRY_CASES {
                self.since_failure = 0;
                self.client = RelayClient::connect(&self.addr, Duration::from_secs(2))
                    .map_err(|e| eprintln!("fuzz-wire: trace relay: {e:#}"))
                    .ok();
            }
        }
        let previous = self.marked.take();
        let events = match self.client.as_mut().map(RelayClient::mark) {
            Some(Ok(events)) => {
                self.marked = Some(case.clone());
                events.flatten()
            }
            Some(Err(e)) => self.fail(e),
            None => None,
        };
        if self.client.is_none() {
            // Not marked: this case's events are lost with the relay.
            self.missed += 1;
        }
        self.waited += started.elapsed();
        previous.map(|previous| self.count(previous, events))
    }

    /// The last marked case with its events (at the end of the run).
    fn finish(&mut self) -> Option<(Case, Option<Signature>)> {
        let started = Instant::now();
        let last = self.marked.take()?;
        let events = match self.client.as_mut().map(RelayClient::take_pending) {
            Some(Ok(events)) => events.flatten(),
            Some(Err(e)) => self.fail(e),
            None => None,
        };
        self.waited += started.elapsed();
        Some(self.count(last, events))
    }

    fn fail(&mut self, e: anyhow::Error) -> Option<Signature> {
        eprintln!("fuzz-wire: trace relay: {e:#}");
        self.client = None;
        None
    }

    fn count(&mut self, case: Case, events: Option<Signature>) -> (Case, Option<Signature>) {
        self.missed += u64::from(events.is_none());
        (case, events)
    }
}

/// Writes the cases that found a new signature (bounded by [`MAX_CORPUS_FILES`]).
struct CorpusWriter {
    dir: PathBuf,
    enabled: bool,
    saved: u64,
}

impl CorpusWriter {
    fn new(dir: PathBuf, enabled: bool) -> CorpusWriter {
        CorpusWriter {
            dir,
            enabled,
            saved: 0,
        }
    }

    /// Record `case`'s events in `feedback`; save the case when its signature is new.
    fn observe(
        &mut self,
        feedback: &mut Feedback,
        case: &Case,
        events: Option<Signature>,
        elapsed: Duration,
    ) -> Result<()> {
        let new = feedback.observe(case, events.as_ref(), elapsed);
        match (new, &events) {
            (true, Some(signature)) => self.save(case, signature),
            _ => Ok(()),
        }
    }

    /// `<index>-<family>-<signature id>.json`: a case file (`--replay` takes it) with the
    /// signature's events beside it in `.events`.
    fn save(&mut self, case: &Case, signature: &Signature) -> Result<()> {
        if !self.enabled || self.saved >= MAX_CORPUS_FILES {
            return Ok(());
        }
        if self.saved == 0 {
            std::fs::create_dir_all(&self.dir)
                .with_context(|| format!("creating {}", self.dir.display()))?;
        }
        self.saved += 1;
        let stem = format!("{:08}-{}-{:016x}", case.index, case.family, signature.id());
        let path = self.dir.join(format!("{stem}.json"));
        std::fs::write(&path, case.to_json() + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        let events: Vec<&str> = signature.events().collect();
        std::fs::write(
            self.dir.join(format!("{stem}.events")),
            events.join("\n") + "\n",
        )
        .with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }
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
    if let Some(s) = &report.signatures {
        line(format!(
            "signatures{}: {} distinct over {} cases ({} without events){}; corpus {} (added {}), \
             mutants {} (new from mutants {}, from families {})",
            if s.guided { " (guided)" } else { "" },
            s.distinct_signatures,
            s.cases_with_events,
            s.cases_without_events,
            if s.saturated { ", saturated" } else { "" },
            s.corpus_entries,
            s.corpus_added,
            s.mutant_cases,
            s.new_from_mutants,
            s.new_from_families
        ));
        if s.event_wait_ms > 0 {
            line(format!(
                "event collection: {} ms waiting for the trace relay ({:.1} ms per case)",
                s.event_wait_ms,
                s.event_wait_ms as f64
                    / (s.cases_with_events + s.cases_without_events).max(1) as f64
            ));
        }
        let points: Vec<String> = s
            .timeline
            .iter()
            .map(|p| format!("{}s={}", p.secs, p.signatures))
            .chain(std::iter::once(format!(
                "end({}s, {} cases)={}",
                s.end.secs, s.end.cases, s.end.signatures
            )))
            .collect();
        line(format!("signatures over time: {}", points.join(" ")));
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

    /// `rig fuzz-wire --replay case` against `sim:linux-6.1`, its files in `dir`, plus `extra`.
    fn replay_cli(dir: &Path, case: &str, extra: &[&str]) -> Result<Cli, clap::Error> {
        let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
        let mut argv: Vec<String> = ["rig", "--target", "sim:linux-6.1", "--replay", case]
            .into_iter()
            .map(str::to_owned)
            .collect();
        for (flag, file) in [
            ("--report", "report.json"),
            ("--log", "log.jsonl"),
            ("--save-divergences", "div"),
        ] {
            argv.extend([flag.to_owned(), path(file)]);
        }
        argv.extend(extra.iter().map(|a| (*a).to_owned()));
        Cli::try_parse_from(argv)
    }

    /// The report and the case log a run left in `dir`.
    fn report_and_log(dir: &Path) -> (serde_json::Value, String) {
        let report = std::fs::read_to_string(dir.join("report.json")).unwrap();
        let log = std::fs::read_to_string(dir.join("log.jsonl")).unwrap();
        (serde_json::from_str(&report).unwrap(), log)
    }

    #[test]
    fn replays_a_case_file_and_writes_the_report() {
        let dir = scratch("replay");
        let case = fixture("cases/write-segcount-zero-000000.json");
        let known = fixture("known-divergences.json");
        let cli = replay_cli(
            &dir,
            &case,
            &["--against", "model:linux-6.1", "--known", &known],
        )
        .unwrap();
        assert_eq!(run(cli.args).unwrap(), 0, "the divergence is a known one");
        let (json, logged) = report_and_log(&dir);
        assert_eq!(json["cases_sent"], 1);
        assert_eq!(json["targets"][0]["outcomes"]["err-chunk"], 1);
        assert_eq!(json["targets"][1]["outcomes"]["reply"], 1);
        assert_eq!(json["divergences"][0]["rule"], "write-segcount-zero");
        assert!(json["divergences"][0]["known"].is_string());
        // The case log holds the replayed case twice: sent in the stream, then again on a fresh
        // connection to confirm the divergence.
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
    fn a_replay_repeats_its_case_as_often_as_asked_and_no_more() {
        let dir = scratch("repeat");
        let case = fixture("cases/write-segcount-zero-000000.json");
        let cli = replay_cli(&dir, &case, &["--repeat", "3"]).unwrap();
        assert_eq!(run(cli.args).unwrap(), 0);
        let (json, logged) = report_and_log(&dir);
        assert_eq!(json["cases_sent"], 3);
        assert_eq!(json["targets"][0]["outcomes"]["err-chunk"], 3);
        let replayed = Case::from_json(&std::fs::read_to_string(&case).unwrap()).unwrap();
        assert_eq!(logged.lines().count(), 3, "{logged}");
        assert!(logged
            .lines()
            .all(|line| Case::from_json(line).unwrap() == replayed));
        // Bounded, and only with a replay.
        assert!(replay_cli(&dir, &case, &["--repeat", "0"]).is_err());
        let over = (MAX_REPLAY_REPEAT + 1).to_string();
        assert!(replay_cli(&dir, &case, &["--repeat", &over]).is_err());
        assert!(
            Cli::try_parse_from(["rig", "--target", "sim:linux-6.1", "--repeat", "2"]).is_err()
        );
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
        // Kept by the driver as found: the case replayable, the outcomes beside it.
        let stem = dir.join("div/write-segcount-zero--reply--err-chunk");
        let case = std::fs::read_to_string(stem.with_extension("case.json")).unwrap();
        let case = Case::from_json(&case).unwrap();
        assert_eq!(case.target_rule, "write-segcount-zero");
        let outcomes = std::fs::read_to_string(stem.with_extension("outcomes.json")).unwrap();
        let outcomes: serde_json::Value = serde_json::from_str(&outcomes).unwrap();
        assert_eq!(outcomes["rule"], "write-segcount-zero");
        assert_eq!(outcomes["index"], case.index);
        assert_eq!(outcomes["a"]["outcome"], "reply");
        assert_eq!(outcomes["b"]["outcome"], "err-chunk");
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
    fn signatures_leave_the_stream_alone_and_guided_runs_grow_a_corpus() {
        let dir = scratch("guided");
        let run_with = |name: &str, extra: &[&str]| -> serde_json::Value {
            let report = dir.join(format!("{name}.json"));
            let log = dir.join(format!("{name}.jsonl"));
            let corpus = dir.join(format!("{name}-corpus"));
            let mut argv = vec![
                "rig",
                "--target",
                "sim:linux-2026",
                "--cases",
                "400",
                "--log",
                log.to_str().unwrap(),
                "--report",
                report.to_str().unwrap(),
                "--corpus",
                corpus.to_str().unwrap(),
                "--known",
                "/nonexistent/known.json",
            ];
            argv.extend_from_slice(extra);
            let cli = Cli::parse_from(argv);
            run(cli.args).unwrap();
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap()
        };
        let plain = run_with("plain", &[]);
        assert!(
            plain.get("signatures").is_none(),
            "no section without --signatures"
        );
        let counted = run_with("counted", &["--signatures"]);
        // The same cases, the same outcomes: collecting signatures changes nothing sent.
        assert_eq!(
            std::fs::read_to_string(dir.join("plain.jsonl")).unwrap(),
            std::fs::read_to_string(dir.join("counted.jsonl")).unwrap()
        );
        assert_eq!(plain["targets"], counted["targets"]);
        let section = &counted["signatures"];
        assert_eq!(section["guided"], false);
        assert_eq!(section["mutant_cases"], 0);
        let unguided = section["distinct_signatures"].as_u64().unwrap();
        assert_eq!(section["cases_with_events"], 400);
        assert_eq!(section["end"]["signatures"].as_u64(), Some(unguided));

        let guided = run_with("guided", &["--guided"]);
        let section = &guided["signatures"];
        assert_eq!(section["guided"], true);
        assert!(section["mutant_cases"].as_u64().unwrap() > 100);
        let found = section["distinct_signatures"].as_u64().unwrap();
        assert!(found > unguided, "guided {found} vs families {unguided}");
        // Every case that found a signature is a replayable case file in the corpus.
        let corpus = dir.join("guided-corpus");
        let files: Vec<PathBuf> = std::fs::read_dir(&corpus)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        assert_eq!(files.len() as u64, found);
        let mutant = files
            .iter()
            .find(|p| p.to_string_lossy().contains("-mutant-"))
            .expect("a mutant found a signature");
        let case = read_case(mutant).unwrap();
        assert_eq!(case.family, "mutant");
        let replay_log = dir.join("replay.jsonl");
        let cli = Cli::parse_from([
            "rig",
            "--target",
            "sim:linux-2026",
            "--replay",
            mutant.to_str().unwrap(),
            "--log",
            replay_log.to_str().unwrap(),
            "--known",
            "/nonexistent/known.json",
        ]);
        assert_eq!(run(cli.args).unwrap(), 0);
        // A live target needs the relay for its events.
        let cli = Cli::parse_from(["rig", "--target", "model:linux-6.1", "--guided"]);
        let err = run(cli.args).unwrap_err().to_string();
        assert!(err.contains("need --trace-relay"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn relay_events_are_attributed_to_the_case_they_follow() {
        let dir = scratch("relay");
        // Mark N fires one event naming N; mark 0 is taken when connecting.
        let (addr, relay) =
            crate::trace_relay::spawn_fake_relay(|mark| vec![format!("ev: tag=m{mark}")]);
        let report = dir.join("report.json");
        let corpus = dir.join("corpus");
        let cli = Cli::parse_from([
            "rig",
            "--target",
            "sim:linux-2026",
            "--cases",
            "25",
            "--trace-relay",
            &addr,
            "--log",
            dir.join("log.jsonl").to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
            "--corpus",
            corpus.to_str().unwrap(),
            "--known",
            "/nonexistent/known.json",
        ]);
        run(cli.args).unwrap();
        relay.join().unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        let section = &json["signatures"];
        assert_eq!(section["cases_with_events"], 25);
        assert_eq!(section["cases_without_events"], 0);
        assert_eq!(section["distinct_signatures"], 25);
        // Case i (stream order, family case i here) carries mark i + 1's events: the relay's,
        // not the simulator's, and not its neighbours'.
        for i in 0..25u64 {
            let case = generate(1, i);
            let stem = std::fs::read_dir(&corpus)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .find(|name| name.starts_with(&format!("{i:08}-{}-", case.family)))
                .unwrap()
                .replace(".json", "")
                .replace(".events", "");
            let events = std::fs::read_to_string(corpus.join(format!("{stem}.events"))).unwrap();
            assert_eq!(events, format!("ev tag=m{}\n", i + 1));
        }
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
