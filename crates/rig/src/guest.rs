//! `rig guest`: what the suites' guest scripts used to read out of rig's JSON with sed and awk,
//! read with rig's own types instead, and the case's RESULT line written from them as a
//! [`verdict::guest::GuestResult`] (one JSON line the host reads back with the same type).
//!
//! Each `*-result` command prints one RESULT line and exits 0 for pass, 1 for fail, 3 for skip
//! (2 is rig's own error: no RESULT line, so the host fails the role for printing none). Trailing
//! `key=value` words are added to the fields as the script's own observations, after rig's.
//! The field values are the words the baselines recorded when the scripts made them
//! ([`verdict::guest::word`], [`verdict::guest::squeezed`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rdma::v41::V41Verdict;
use serde::de::DeserializeOwned;
use verdict::counted::ServeCounts;
use verdict::guest::{json_text, squeezed, word, GuestResult};
use verdict::nfsd_stats::{self, Counters};
use verdict::record::{Verdict, UNSUPPORTED};
use verdict::send_completion::{judge_premise, ClientMeasurement};

use crate::bench_rpc::Measurement;
use crate::judge::Counts;
use crate::svcrdma_rules::Row;
use wirefuzz::rules::{answers_text, Answer, CaseKind, KernelProfile};

/// Largest JSON file read (a verdict, a bench measurement, a fuzz report, serve stats).
const MAX_INPUT: u64 = 16 << 20;
/// How much of a failed command's standard error a RESULT line quotes.
const ERROR_QUOTE: usize = 200;
/// How much of `rig judge`'s last line a RESULT line quotes.
const JUDGE_QUOTE: usize = 300;
/// Longest wait for `rig serve` to see a scenario's connections close (`scenario-result
/// --serve-stats`).
const CLOSE_WAIT: Duration = Duration::from_secs(10);
const CLOSE_POLL: Duration = Duration::from_millis(200);

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

/// The case and role a RESULT line is for (the guest's `$RIG_CASE`, `$RIG_name`).
#[derive(Debug, clap::Args)]
struct Who {
    #[arg(long)]
    case: String,
    #[arg(long)]
    role: String,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// The RESULT of one `rig scenarios --format json` run (pass when it reached a verdict,
    /// skip when the transport cannot run the scenario, fail otherwise).
    ScenarioResult {
        #[command(flatten)]
        who: Who,
        /// The verdict file `rig scenarios` wrote.
        #[arg(long)]
        verdict: PathBuf,
        /// The scenario that was asked for.
        #[arg(long)]
        scenario: String,
        #[arg(long)]
        label: String,
        /// `rig scenarios`' exit status.
        #[arg(long)]
        rc: String,
        /// `rig scenarios`' standard error.
        #[arg(long)]
        stderr: PathBuf,
        /// Against `rig serve` (selftest): when the scenario passed, also wait until `rig serve`
        /// has seen its connections close (at most 10 s), judge the verdict with the executions
        /// it counted (`rig judge --serve-stats --write`, in-process) and print that RESULT
        /// too: one exec where the script made four, each 0.1-0.2 s of a TCG guest's CPU.
        #[arg(long, requires = "closed_before")]
        serve_stats: Option<PathBuf>,
        /// Connections `rig serve` had closed before the scenario (`closed-connections`).
        #[arg(long, requires = "serve_stats")]
        closed_before: Option<usize>,
        words: Vec<String>,
    },
    /// The drc server guest's end of a case, one exec where its script made four: the kernel's
    /// deltas (`nfsd-deltas` into `--kernel-txt`), the case's trace copied from `--trace` with
    /// the sources line first (`--ftrace`, at most 16 MiB + 1 byte, so an overflowing copy is
    /// refused rather than judged truncated), `rig judge --ftrace --write` in-process (its
    /// `key=value` lines join the deltas), the log a maintainer reads, and the `counted-result`
    /// RESULT with the kernel's observations as its words.
    CountedCase {
        #[command(flatten)]
        who: Who,
        /// The client's verdict (judged and rewritten).
        #[arg(long)]
        verdict: PathBuf,
        /// The ftrace text to copy (`/sys/kernel/tracing/trace`; absent: an empty copy).
        #[arg(long)]
        trace: PathBuf,
        /// The event sources the set-up enabled (the copy's first line).
        #[arg(long, default_value = "")]
        trace_sources: String,
        /// Where the case's trace copy goes (`<case>.ftrace.txt`).
        #[arg(long)]
        ftrace: PathBuf,
        /// The snapshots before and after the case (`rcs`, `rpc`, `dmesg`).
        #[arg(long)]
        before: PathBuf,
        #[arg(long)]
        after: PathBuf,
        /// The case's kernel.txt (its snapshot's kernel lines).
        #[arg(long)]
        kernel_txt: PathBuf,
        /// The kernel's release (`kernel=` in the RESULT).
        #[arg(long)]
        kernel: String,
    },
    /// The RESULT of an NFSv4.1 session scenario's judgement (`rig scenarios --v41`).
    V41Result {
        #[command(flatten)]
        who: Who,
        #[arg(long)]
        verdict: PathBuf,
        words: Vec<String>,
    },
    /// The RESULT of the Send-completion measurement: `rig send-completion`'s JSON (client)
    /// judged with the server's svcrdma trace copied while the cut stood (pass when the
    /// measurement holds, whatever it found: the finding is in the fields).
    SendCompletionResult {
        #[command(flatten)]
        who: Who,
        /// The client's measurement (`rig send-completion` output).
        #[arg(long)]
        client: PathBuf,
        /// The server's ftrace text, copied while every frame from it was cut.
        #[arg(long)]
        trace_during_cut: PathBuf,
        /// Also write the finding as `key=value` lines here (the case's kernel.txt: its
        /// snapshot).
        #[arg(long)]
        kernel_txt: Option<PathBuf>,
        words: Vec<String>,
    },
    /// The RESULT of one `rig bench-rpc` measurement.
    BenchResult {
        #[command(flatten)]
        who: Who,
        /// The measurement `rig bench-rpc` printed.
        #[arg(long)]
        measurement: PathBuf,
        words: Vec<String>,
    },
    /// The RESULT of one `rig fuzz-wire --report` run.
    FuzzResult {
        #[command(flatten)]
        who: Who,
        #[arg(long)]
        report: PathBuf,
        /// The server's kernel watch stopped the run.
        #[arg(long)]
        stopped_by_kernel_watch: bool,
        words: Vec<String>,
    },
    /// A failed command's RESULT: `--step`, its exit status and the start of its standard error.
    FailedResult {
        #[command(flatten)]
        who: Who,
        #[arg(long)]
        step: Option<String>,
        #[arg(long)]
        rc: String,
        #[arg(long)]
        stderr: PathBuf,
        words: Vec<String>,
    },
    /// The kernel client's RESULT from `rig serve --stats` (kclient): pass when something was
    /// executed and no non-idempotent namespace procedure twice for one XID.
    ServeStatsResult {
        #[command(flatten)]
        who: Who,
        #[arg(long)]
        stats: PathBuf,
        words: Vec<String>,
    },
    /// The svcrdma-rules client's RESULT lines: one per rule that ran, from `rig svcrdma-rules
    /// --rows` (pass when neither its negative case nor its positive control mismatched the
    /// profile), then the run's own (a summary, or a failure when the run stopped: `--rc` 2).
    SvcrdmaResults {
        #[command(flatten)]
        who: Who,
        /// The rows `rig svcrdma-rules --rows` wrote.
        #[arg(long)]
        rows: PathBuf,
        /// The profile the run compared with (its `kernel` names the kernel).
        #[arg(long)]
        profile: PathBuf,
        /// `rig svcrdma-rules`' exit status: 0 every rule as the profile says, 1 mismatches, 2
        /// the run itself failed.
        #[arg(long)]
        rc: u8,
        #[arg(long)]
        stderr: PathBuf,
        /// The guest's `uname -r`.
        #[arg(long)]
        release: String,
        /// The dangerous negative cases were sent.
        #[arg(long)]
        dangerous: bool,
    },
    /// Print the profile in DIR whose `release` is RELEASE (exit 1, printing nothing, when
    /// none is).
    SvcrdmaProfile {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long)]
        release: String,
    },
    /// Kernel nfsd's counter deltas over a case: reads `rcs` (reply_cache_stats), `rpc`
    /// (/proc/net/rpc/nfsd) and `dmesg` in the two directories, writes the `key=value` deltas
    /// to `--out` (the case's kernel.txt) and prints how many kernel log lines are new.
    NfsdDeltas {
        #[arg(long, value_enum)]
        counters: CountersArg,
        #[arg(long)]
        before: PathBuf,
        #[arg(long)]
        after: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Print how many connections `rig serve --stats` has seen close (0 without the file).
    ClosedConnections { stats: PathBuf },
}

/// The counters a suite records ([`verdict::nfsd_stats::Counters`]).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum CountersArg {
    Nfs3,
    Nfs41,
}

/// Exit statuses of the `*-result` commands.
const EXIT_PASS: u8 = 0;
const EXIT_FAIL: u8 = 1;
const EXIT_SKIP: u8 = 3;

pub fn run(args: Args) -> Result<u8> {
    let result = match args.command {
        Command::ScenarioResult {
            who,
            verdict,
            scenario,
            label,
            rc,
            stderr,
            serve_stats,
            closed_before,
            words,
        } => {
            let first = first_verdict(&verdict).ok();
            let stderr = read_quote(&stderr);
            let mut result = scenario_result(&who, first.as_ref(), &scenario, &label, &rc, &stderr);
            add_words(&mut result, &words);
            let code = exit_code(&result.verdict);
            if let (EXIT_PASS, Some(stats), Some(before)) = (code, serve_stats, closed_before) {
                crate::outln!("{}", result.to_line())?;
                let connects = first.as_ref().map_or(0, |v| v.connects as usize);
                wait_closed(&stats, before.saturating_add(connects));
                let (judge_rc, judged) =
                    crate::judge::judge_in_process(&verdict, Counts::ServeStats(&stats));
                crate::outln!("== rig judge (exit {judge_rc})")?;
                crate::out!("{judged}")?;
                let failure = first_verdict(&verdict)
                    .map(|v| v.failure)
                    .unwrap_or_default();
                crate::outln!(
                    "{}",
                    judged_result(&who, judge_rc, &failure, &judged).to_line()
                )?;
                // The scenario's status: the judgement is the second RESULT line's.
                return Ok(code);
            }
            result
        }
        Command::CountedCase {
            who,
            verdict,
            trace,
            trace_sources,
            ftrace,
            before,
            after,
            kernel_txt,
            kernel,
        } => {
            let case = CountedCase {
                verdict: &verdict,
                trace: &trace,
                trace_sources: &trace_sources,
                ftrace: &ftrace,
                before: &before,
                after: &after,
                kernel_txt: &kernel_txt,
            };
            let (result, log) = counted_case(&who, &case, &kernel)?;
            crate::out!("{log}")?;
            crate::outln!("{}", result.to_line())?;
            // The script ends well either way: the RESULT line is the case's verdict.
            return Ok(0);
        }
        Command::V41Result {
            who,
            verdict,
            words,
        } => {
            let v41: Vec<V41Verdict> = read_verdicts(&verdict)?;
            let first = v41.into_iter().next().context("verdict JSON: no verdict")?;
            let mut result = v41_result(&who, &first);
            add_words(&mut result, &words);
            result
        }
        Command::SendCompletionResult {
            who,
            client,
            trace_during_cut,
            kernel_txt,
            words,
        } => {
            let mut result = match read_json::<ClientMeasurement>(&client) {
                Ok(measured) => {
                    let (result, finding) =
                        send_completion_result(&who, &measured, &read_text(&trace_during_cut));
                    if let (Some(path), Some(finding)) = (&kernel_txt, finding) {
                        std::fs::write(path, finding)
                            .with_context(|| format!("{}", path.display()))?;
                    }
                    result
                }
                Err(e) => {
                    let mut failed = GuestResult::new(&who.case, &who.role, "fail");
                    failed.field("reason", squeezed(&format!("{e:#}")));
                    failed
                }
            };
            add_words(&mut result, &words);
            result
        }
        Command::BenchResult {
            who,
            measurement,
            words,
        } => {
            let m: Measurement = read_json(&measurement)?;
            let mut result = GuestResult::new(&who.case, &who.role, "pass");
            add_words(&mut result, &words);
            bench_fields(&mut result, &m);
            result
        }
        Command::FuzzResult {
            who,
            report,
            stopped_by_kernel_watch,
            words,
        } => {
            let report: wirefuzz::differential::Report = read_json(&report)?;
            let verdict = fuzz_verdict(&report, stopped_by_kernel_watch);
            let mut result = GuestResult::new(&who.case, &who.role, verdict);
            add_words(&mut result, &words);
            fuzz_fields(&mut result, &report, stopped_by_kernel_watch);
            result
        }
        Command::FailedResult {
            who,
            step,
            rc,
            stderr,
            words,
        } => {
            let mut result = GuestResult::new(&who.case, &who.role, "fail");
            if let Some(step) = step {
                result.field("step", step);
            }
            result
                .field("rc", rc)
                .field("error", squeezed(&read_quote(&stderr)));
            add_words(&mut result, &words);
            result
        }
        Command::ServeStatsResult { who, stats, words } => {
            let bytes = crate::input::read_bounded(&stats, MAX_INPUT, "serve stats")?;
            let counts = ServeCounts::parse(&String::from_utf8_lossy(&bytes))?;
            let mut result = serve_stats_result(&who, &counts, bytes.len());
            add_words(&mut result, &words);
            result
        }
        Command::NfsdDeltas {
            counters,
            before,
            after,
            out,
        } => {
            let counters = match counters {
                CountersArg::Nfs3 => Counters::Nfs3,
                CountersArg::Nfs41 => Counters::Nfs41,
            };
            let snapshots = NfsdSnapshots::read(&before, &after);
            let text: String = snapshots
                .deltas(counters)
                .iter()
                .map(|line| format!("{line}\n"))
                .collect();
            std::fs::write(&out, text).with_context(|| format!("{}", out.display()))?;
            crate::outln!("{}", snapshots.new_log_lines())?;
            return Ok(0);
        }
        Command::SvcrdmaResults {
            who,
            rows,
            profile,
            rc,
            stderr,
            release,
            dangerous,
        } => {
            let profile = read_profile(&profile)?;
            let rows: Vec<Row> = read_text(&rows)
                .lines()
                .filter(|l| !l.trim().is_empty())
                .take(MAX_ROWS)
                .map(serde_json::from_str)
                .collect::<Result<_, _>>()
                .context("svcrdma-rules rows")?;
            let run = RulesRun {
                kernel: &profile.kernel,
                release: &release,
                rc,
                stderr: &read_quote(&stderr),
                dangerous,
            };
            for line in svcrdma_results(&who, &rows, &run) {
                crate::outln!("{}", line.to_line())?;
            }
            return Ok(if rc == 0 { EXIT_PASS } else { EXIT_FAIL });
        }
        Command::SvcrdmaProfile { dir, release } => {
            let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
                .with_context(|| format!("{}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "toml"))
                .collect();
            paths.sort();
            let profiles: Vec<(PathBuf, KernelProfile)> = paths
                .into_iter()
                .filter_map(|path| read_profile(&path).ok().map(|p| (path, p)))
                .collect();
            return Ok(match profile_for_release(&profiles, &release) {
                Some(path) => {
                    crate::outln!("{}", path.display())?;
                    0
                }
                None => 1,
            });
        }
        Command::ClosedConnections { stats } => {
            crate::outln!("{}", closed_connections(&stats))?;
            return Ok(0);
        }
    };
    crate::outln!("{}", result.to_line())?;
    Ok(exit_code(&result.verdict))
}

/// Wait (bounded by [`CLOSE_WAIT`]) until `rig serve`'s stats say `want` connections closed, so
/// its counts are final.
fn wait_closed(stats: &Path, want: usize) {
    let started = Instant::now();
    while closed_connections(stats) < want && started.elapsed() < CLOSE_WAIT {
        std::thread::sleep(CLOSE_POLL);
    }
}

fn exit_code(verdict: &str) -> u8 {
    match verdict {
        "pass" => EXIT_PASS,
        "skip" => EXIT_SKIP,
        _ => EXIT_FAIL,
    }
}

/// The Send-completion measurement as a RESULT: the premise judged, or why it could not be;
/// with the finding's `key=value` lines for the case's snapshot when it was judged.
fn send_completion_result(
    who: &Who,
    client: &ClientMeasurement,
    trace: &str,
) -> (GuestResult, Option<String>) {
    match judge_premise(client, trace) {
        Ok(premise) => {
            let mut result = GuestResult::new(&who.case, &who.role, "pass");
            // What the snapshot compares: the finding, not its timing (how the Send ended, after
            // how long, and how the reply got through once mended are the evidence the case log
            // prints, see the suite's script).
            result
                .field("link", text_word(&premise.link))
                .field("sends_posted", premise.sends_posted.to_string())
                .field("premise_holds", premise.premise_holds.to_string());
            let finding = format!(
                "link={}\nsends_posted={}\nsend_while_cut={}\npremise_holds={}\n",
                text_word(&premise.link),
                premise.sends_posted,
                premise.completion_while_cut.word(),
                premise.premise_holds
            );
            (result, Some(finding))
        }
        Err(void) => {
            let mut result = GuestResult::new(&who.case, &who.role, "fail");
            result
                .field("link", text_word(&client.link))
                .field("reason", squeezed(&void.to_string()));
            (result, None)
        }
    }
}

/// The profile for a guest's `uname -r`: the one measured on that release (Debian's binary
/// kernels: `6.12.118+deb13-amd64`), else, for a kernel built from Debian's source of a
/// measured version (the siw lanes: `uname -r` is the bare `6.12.118`), that version's
/// `debian-<version>` profile: the same svcrdma source, checked again by the suite's run.
fn profile_for_release<'a>(
    profiles: &'a [(PathBuf, KernelProfile)],
    release: &str,
) -> Option<&'a Path> {
    profiles
        .iter()
        .find(|(_, p)| p.release == release)
        .or_else(|| {
            profiles
                .iter()
                .find(|(_, p)| p.kernel.strip_prefix("debian-") == Some(release))
        })
        .map(|(path, _)| path.as_path())
}

/// `key=value` words, as the host reads them from a `RESULT case=...` line: a word without `=`
/// is not a field; a later value for the same key wins.
fn add_words(result: &mut GuestResult, words: &[String]) {
    for (key, value) in words.iter().filter_map(|w| w.split_once('=')) {
        result.field(key, value);
    }
}

fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let bytes = crate::input::read_bounded(path, MAX_INPUT, "JSON")?;
    serde_json::from_slice(&bytes).with_context(|| format!("{}", path.display()))
}

/// A verdict file: the array `rig scenarios --format json` prints, or one verdict.
fn read_verdicts<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let value: serde_json::Value = read_json(path)?;
    if value.is_array() {
        serde_json::from_value(value).context("verdict JSON: not a list of verdicts")
    } else {
        Ok(vec![
            serde_json::from_value(value).context("verdict JSON: not a verdict")?
        ])
    }
}

/// The first verdict of a verdict file (one scenario's run writes one).
fn first_verdict(path: &Path) -> Result<Verdict> {
    read_verdicts::<Verdict>(path)?
        .into_iter()
        .next()
        .context("verdict JSON: no verdict")
}

/// A text file, lossily, within [`MAX_INPUT`]; empty when it cannot be read.
fn read_text(path: &Path) -> String {
    crate::input::read_bounded(path, MAX_INPUT, "text")
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// The first [`ERROR_QUOTE`] bytes of a file, lossily (`head -c 200`).
fn read_quote(path: &Path) -> String {
    let bytes = crate::input::read_bounded(path, MAX_INPUT, "text").unwrap_or_default();
    String::from_utf8_lossy(&bytes[..bytes.len().min(ERROR_QUOTE)]).into_owned()
}

/// The connections `rig serve --stats` lists closed; 0 while the file is missing or unreadable
/// (it is rewritten whenever a connection closes).
fn closed_connections(stats: &Path) -> usize {
    crate::input::read_bounded(stats, MAX_INPUT, "serve stats")
        .ok()
        .and_then(|b| ServeCounts::parse(&String::from_utf8_lossy(&b)).ok())
        .map_or(0, |c| c.closed_connections())
}

/// A verdict's string as the scripts' one-word form.
fn text_word(value: &str) -> String {
    word(&json_text(value))
}

/// A verdict's reason (`failure`, `note`) as the scripts squeezed it.
fn reason_word(value: &str) -> String {
    squeezed(&json_text(value))
}

/// The verdict's observations, as `verdict_scan` listed them for every scenario RESULT.
fn verdict_fields(result: &mut GuestResult, v: &Verdict) {
    let statuses: Vec<String> = v
        .statuses
        .iter()
        .map(|s| json_text(s).replace([' ', '"', ','], ""))
        .filter(|s| !s.is_empty())
        .collect();
    result
        .field("procedure", text_word(&v.procedure))
        .field("xid", v.xid.to_string())
        .field("transmissions", v.transmissions.to_string())
        .field("argument_sets", v.argument_sets.to_string())
        .field(
            "executions",
            v.executions.map_or("null".to_string(), |n| n.to_string()),
        )
        .field("judgement", text_word(&v.judgement))
        .field("failure", text_word(&v.failure))
        .field("replies", v.replies.to_string())
        .field("replies_identical", v.replies_identical.to_string())
        .field("credits_granted", v.credits_granted.to_string())
        .field("unanswered", v.unanswered.to_string())
        .field("credits_balanced", v.credits_balanced.to_string())
        .field("connects", v.connects.to_string())
        .field("connection", text_word(&v.connection))
        .field("note", text_word(&v.note))
        .field("statuses", statuses.join(","));
}

/// `run_scenario`'s RESULT: `verdict` is the first verdict of the file (`None`: none could be
/// read), `rc` `rig scenarios`' exit status, `stderr` the start of its standard error.
fn scenario_result(
    who: &Who,
    verdict: Option<&Verdict>,
    scenario: &str,
    label: &str,
    rc: &str,
    stderr: &str,
) -> GuestResult {
    let Some(v) = verdict.filter(|v| v.scenario == scenario) else {
        // No verdict for the scenario asked: `rig scenarios` itself failed.
        let mut result = GuestResult::new(&who.case, &who.role, "fail");
        result
            .field("step", "scenarios")
            .field("rc", rc)
            .field("label", label)
            .field("scenario", scenario)
            .field("error", squeezed(stderr));
        return result;
    };
    // A scenario this transport cannot run sent nothing: a skip with the verdict's note as
    // its reason, never a pass. "ok" with a clean exit ran to a verdict; anything else
    // ("error") could not reach one.
    let verdict = if v.outcome == UNSUPPORTED && rc == "0" {
        "skip"
    } else if v.outcome == "ok" && rc == "0" {
        "pass"
    } else {
        "fail"
    };
    let mut result = GuestResult::new(&who.case, &who.role, verdict);
    result
        .field("label", label)
        .field("scenario", scenario)
        .field("outcome", text_word(&v.outcome))
        .field("rc", rc);
    if verdict == "skip" {
        result.field("reason", reason_word(&v.note));
    }
    verdict_fields(&mut result, v);
    result
}

/// The first value of `rig judge`'s `executions_counted=` line.
fn executions_counted(judged: &str) -> Option<&str> {
    judged
        .lines()
        .find_map(|line| line.strip_prefix("executions_counted="))
        .filter(|n| !n.is_empty())
}

/// The last line of `rig judge`'s output, squeezed, quoted up to `limit` bytes.
fn last_line_quote(judged: &str, limit: usize) -> String {
    let last = judged.lines().last().unwrap_or_default();
    let mut quote = squeezed(last);
    if quote.len() > limit {
        let mut end = limit;
        while !quote.is_char_boundary(end) {
            end -= 1;
        }
        quote.truncate(end);
    }
    quote
}

/// The selftest judgement's RESULT (`scenario-result --serve-stats`): `rig judge` exits 0 pass,
/// 1 fail, 2 no count (a harness failure of the case, never a pass), 3 nothing sent although the
/// scenario did not skip.
fn judged_result(who: &Who, judge_rc: u8, failure: &str, judged: &str) -> GuestResult {
    let counted = executions_counted(judged).unwrap_or("unknown");
    let verdict = if judge_rc == 0 { "pass" } else { "fail" };
    let mut result = GuestResult::new(&who.case, &who.role, verdict);
    result.field("step", "judge").field("count", "serve-stats");
    match judge_rc {
        0 => {
            result.field("executions_counted", counted);
        }
        1 => {
            result
                .field("executions_counted", counted)
                .field("reason", reason_word(failure));
        }
        3 => {
            result.field("judge", "not-run").field(
                "reason",
                "the_scenario_sent_no_call_under_test_but_did_not_skip",
            );
        }
        _ => {
            result
                .field("judge", "error")
                .field("harness", "count-failed")
                .field("reason", last_line_quote(judged, JUDGE_QUOTE));
        }
    }
    result
}

/// What a server guest's script saved of nfsd before and after a case (`rcs`:
/// reply_cache_stats, `rpc`: /proc/net/rpc/nfsd, `dmesg`), for `nfsd-deltas` and `counted-case`.
struct NfsdSnapshots {
    before_rcs: String,
    after_rcs: String,
    before_rpc: String,
    after_rpc: String,
    before_dmesg: String,
    after_dmesg: String,
}

impl NfsdSnapshots {
    fn read(before: &Path, after: &Path) -> NfsdSnapshots {
        let read = |dir: &Path, name: &str| read_text(&dir.join(name));
        NfsdSnapshots {
            before_rcs: read(before, "rcs"),
            after_rcs: read(after, "rcs"),
            before_rpc: read(before, "rpc"),
            after_rpc: read(after, "rpc"),
            before_dmesg: read(before, "dmesg"),
            after_dmesg: read(after, "dmesg"),
        }
    }

    /// The counters' deltas as `key=value` lines (kernel.txt's).
    fn deltas(&self, counters: Counters) -> Vec<String> {
        nfsd_stats::deltas(
            counters,
            &self.before_rcs,
            &self.after_rcs,
            &self.before_rpc,
            &self.after_rpc,
        )
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect()
    }

    fn new_log_lines(&self) -> usize {
        nfsd_stats::new_log_lines(&self.before_dmesg, &self.after_dmesg)
    }
}

/// The files of one drc case's end on the server guest (`counted-case`).
struct CountedCase<'a> {
    verdict: &'a Path,
    trace: &'a Path,
    trace_sources: &'a str,
    ftrace: &'a Path,
    before: &'a Path,
    after: &'a Path,
    kernel_txt: &'a Path,
}

/// Largest trace copy: one byte over `rig judge`'s input limit, so an overflowing copy is
/// refused by it rather than judged truncated.
const TRACE_COPY_LIMIT: u64 = MAX_INPUT + 1;

/// `counted-case`: write the deltas and the trace copy, judge, and return the RESULT and the
/// case log's text (the judgement, the deltas, the new dmesg lines), as observe-nfsd.sh wrote
/// them when it ran `nfsd-deltas`, `head`, `rig judge` and `counted-result` one by one.
fn counted_case(who: &Who, case: &CountedCase<'_>, kernel: &str) -> Result<(GuestResult, String)> {
    use std::fmt::Write as _;
    use std::io::Read as _;
    let snapshots = NfsdSnapshots::read(case.before, case.after);
    let mut kernel_lines = snapshots.deltas(Counters::Nfs3);
    let new_dmesg = snapshots.new_log_lines();
    let mut copy = format!("# rig-sources: {}\n", case.trace_sources).into_bytes();
    if let Ok(file) = std::fs::File::open(case.trace) {
        let room = TRACE_COPY_LIMIT.saturating_sub(copy.len() as u64);
        file.take(room)
            .read_to_end(&mut copy)
            .with_context(|| format!("reading {}", case.trace.display()))?;
    }
    std::fs::write(case.ftrace, &copy).with_context(|| format!("{}", case.ftrace.display()))?;
    let (judge_rc, judged) =
        crate::judge::judge_in_process(case.verdict, Counts::Ftrace(case.ftrace));
    let mut log = format!("== rig judge (exit {judge_rc})\n{judged}");
    // rig judge's key=value lines (a key of [a-z_] only) join the deltas.
    kernel_lines.extend(
        judged
            .lines()
            .filter(|line| judge_key_line(line))
            .map(str::to_owned),
    );
    let kernel_text: String = kernel_lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(case.kernel_txt, &kernel_text)
        .with_context(|| format!("{}", case.kernel_txt.display()))?;
    let _ = write!(
        log,
        "== deltas\n{kernel_text}== new dmesg lines ({new_dmesg})\n"
    );
    if new_dmesg > 0 {
        let lines: Vec<&str> = snapshots.after_dmesg.lines().collect();
        for line in &lines[lines.len().saturating_sub(new_dmesg)..] {
            let _ = writeln!(log, "{line}");
        }
    }
    let first = first_verdict(case.verdict).ok();
    let mut result = counted_result(who, judge_rc, first.as_ref(), &judged);
    let mut words = vec![format!("kernel={kernel}"), format!("dmesg_new={new_dmesg}")];
    words.extend(kernel_text.split_whitespace().map(str::to_owned));
    add_words(&mut result, &words);
    Ok((result, log))
}

/// Whether a line of `rig judge`'s output is one of its `key=value` lines: a key of `[a-z_]`
/// only (its summary line is not).
fn judge_key_line(line: &str) -> bool {
    line.split_once('=').is_some_and(|(key, _)| {
        !key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
    })
}

/// The drc server's RESULT after `rig judge --ftrace`: 0 pass, 1 fail (the reason is the
/// verdict's failure, else rig judge's `fail:` line), 2 no count (a harness failure: never a
/// pass), 3 nothing sent (a skip whose reason is the client's note). `words` are the server's
/// kernel observations (`kernel=`, `dmesg_new=`, the deltas), put after the judgement as the
/// script did.
fn counted_result(who: &Who, judge_rc: u8, verdict: Option<&Verdict>, judged: &str) -> GuestResult {
    let (outcome, judge, reason) = match judge_rc {
        0 => ("pass", "pass", String::new()),
        1 => {
            let failure = verdict.map(|v| json_text(&v.failure)).unwrap_or_default();
            let reason = if failure.is_empty() {
                judged
                    .lines()
                    .find_map(|l| l.strip_prefix("rig judge: fail: "))
                    .unwrap_or_default()
                    .to_string()
            } else {
                failure
            };
            ("fail", "fail", squeezed(&reason))
        }
        3 => {
            let note = verdict.map(|v| reason_word(&v.note)).unwrap_or_default();
            let reason = if note.is_empty() {
                "no_verdict_from_the_client".to_string()
            } else {
                note
            };
            ("skip", "not-run", reason)
        }
        _ => {
            // The script quoted 300 bytes of the squeezed line after its own prefix.
            let reason = format!("count_failed:_{}", last_line_quote(judged, JUDGE_QUOTE));
            ("fail", "error", reason)
        }
    };
    let mut result = GuestResult::new(&who.case, &who.role, outcome);
    result.field("judge", judge);
    if !reason.is_empty() {
        result.field("reason", reason);
    }
    result
}

/// The v41 client's RESULT after `run_scenario`: the judgement on the inferred executions (the
/// server guest does not count COMPOUND executions per XID), fail when the rule fails.
fn v41_result(who: &Who, v: &V41Verdict) -> GuestResult {
    let failed = v.base.judgement == "fail";
    let mut result = GuestResult::new(&who.case, &who.role, if failed { "fail" } else { "pass" });
    result
        .field("step", "judge")
        .field("count", "inferred")
        .field("slot_answer", reason_word(&v.slot_answer))
        .field("slot_after", reason_word(&v.slot_after));
    if failed {
        result.field("reason", reason_word(&v.base.failure));
    }
    result
}

/// Namespace procedures a retransmission must not execute twice (RFC 1813: not idempotent).
const NON_IDEMPOTENT_NAMESPACE: [&str; 9] = [
    "CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK", "SETATTR",
];

/// The kclient server's RESULT: `rig serve` lists executions per (slot, XID, procedure); a
/// non-idempotent namespace procedure executed more than once for one XID means a retransmit
/// after the reconnect missed the DRC. A WRITE executed twice rewrites the same data (counted,
/// not failed).
fn serve_stats_result(who: &Who, counts: &ServeCounts, stats_bytes: usize) -> GuestResult {
    let executed = counts.listed().count();
    let twice = |wanted: &dyn Fn(&str) -> bool| {
        counts
            .listed()
            .filter(|&(_, procedure, n)| n > 1 && wanted(procedure))
            .count()
    };
    let double_namespace = twice(&|p| NON_IDEMPOTENT_NAMESPACE.contains(&p));
    let double_write = twice(&|p| p == "WRITE");
    let drc_hits = counts
        .drc_decisions()
        .iter()
        .find(|(decision, _)| decision.starts_with("hit"))
        .map_or(String::new(), |(_, n)| n.to_string());
    let pass = executed > 0 && double_namespace == 0;
    let mut result = GuestResult::new(&who.case, &who.role, if pass { "pass" } else { "fail" });
    result
        .field("stats_bytes", stats_bytes.to_string())
        .field("xids_executed", executed.to_string())
        .field("double_namespace_executions", double_namespace.to_string())
        .field("double_write_executions", double_write.to_string())
        .field("drc_hits", drc_hits);
    result
}

/// Most rows read (the catalogue has two per rule).
const MAX_ROWS: usize = 4096;

/// A profile file, by the type `rig svcrdma-rules` reads it with.
fn read_profile(path: &Path) -> Result<KernelProfile> {
    KernelProfile::parse(&read_text(path)).with_context(|| format!("{}", path.display()))
}

/// What one `rig svcrdma-rules` run was, beside its rows.
struct RulesRun<'a> {
    kernel: &'a str,
    release: &'a str,
    rc: u8,
    stderr: &'a str,
    dangerous: bool,
}

/// One RESULT per rule, in the order the rules ran, then the run's: `fail` with the start of
/// its standard error when it stopped (rc 2: a connect refused after a kernel crash, a bad
/// profile; the rules after it never ran), else the summary.
fn svcrdma_results(who: &Who, rows: &[Row], run: &RulesRun<'_>) -> Vec<GuestResult> {
    let mut rules: Vec<&str> = Vec::new();
    for row in rows {
        if !rules.contains(&row.rule.as_ref()) {
            rules.push(&row.rule);
        }
    }
    let mut out = Vec::with_capacity(rules.len() + 1);
    for rule in &rules {
        let of = |kind| {
            rows.iter()
                .rev()
                .find(|r| r.rule == *rule && r.case == kind)
        };
        let (negative, positive) = (of(CaseKind::Negative), of(CaseKind::Positive));
        let mismatch = |row: Option<&Row>| row.is_some_and(|r| r.skipped.is_none() && !r.ok);
        let observed = |row: Option<&Row>| {
            row.map_or(String::new(), |r| {
                r.observed.map_or("-", Answer::name).to_string()
            })
        };
        let verdict = if mismatch(negative) || mismatch(positive) {
            "fail"
        } else {
            "pass"
        };
        let mut result = GuestResult::new(&who.case, &who.role, verdict);
        result
            .field("rule", *rule)
            .field("kernel", run.kernel)
            .field(
                "expected",
                negative.map_or(String::new(), |r| answers_text(r.expected, &r.also)),
            )
            .field("observed", observed(negative))
            .field("control", observed(positive));
        if negative.is_some_and(|r| r.skipped.is_some()) {
            result.field("skipped", "dangerous");
        }
        out.push(result);
    }
    let mut last = GuestResult::new(&who.case, &who.role, "pass");
    if run.rc > 1 {
        last.verdict = "fail".into();
        last.field("step", "svcrdma-rules")
            .field("rc", run.rc.to_string())
            .field("kernel", run.kernel)
            .field("rules_run", rules.len().to_string())
            .field("error", squeezed(run.stderr));
    } else {
        last.field("step", "summary")
            .field("kernel", run.kernel)
            .field("release", run.release)
            .field("rules_run", rules.len().to_string())
            .field("rc", run.rc.to_string())
            .field("dangerous", if run.dangerous { "included" } else { "" });
    }
    out.push(last);
    out
}

/// A JSON number as `rig bench-rpc` printed it.
fn json_number<T: serde::Serialize>(n: &T) -> String {
    serde_json::to_string(n).unwrap_or_default()
}

/// One bench-rpc measurement's fields (`limited_by`: what capped the size, `none` when nothing).
fn bench_fields(result: &mut GuestResult, m: &Measurement) {
    result
        .field("size_used", m.size_used.to_string())
        .field(
            "limited_by",
            m.limited_by.as_deref().map_or("none".to_string(), squeezed),
        )
        .field("fsinfo_rtmax", json_number(&m.fsinfo_rtmax))
        .field("fsinfo_wtmax", json_number(&m.fsinfo_wtmax))
        .field("calls", m.calls.to_string())
        .field("calls_per_sec", json_number(&m.calls_per_sec))
        .field("p50_us", json_number(&m.latency_p50_us))
        .field("p99_us", json_number(&m.latency_p99_us))
        .field("mib_per_sec", json_number(&m.mib_per_sec));
}

/// One wire-fuzz run's fields.
/// A fuzz run fails when the kernel watch stopped it or when it met a divergence no
/// known-divergences entry explains (`just fuzz-wire` fails on the same two; a suite that passed
/// with an unexplained nfsd-vs-`rig serve` answer would hide it).
fn fuzz_verdict(r: &wirefuzz::differential::Report, stopped: bool) -> &'static str {
    if stopped || r.unknown_divergences > 0 {
        "fail"
    } else {
        "pass"
    }
}

fn fuzz_fields(result: &mut GuestResult, r: &wirefuzz::differential::Report, stopped: bool) {
    let signatures = r
        .signatures
        .as_ref()
        .map_or(String::new(), |s| s.distinct_signatures.to_string());
    result
        .field("cases", r.cases_sent.to_string())
        .field("cases_per_sec", json_number(&r.cases_per_sec))
        .field("new_divergences", r.unknown_divergences.to_string())
        .field("signatures", signatures)
        // Each divergence, confirmed or not, is keyed by its rule.
        .field(
            "divergence_keys",
            (r.divergences.len() + r.unconfirmed.len()).to_string(),
        )
        .field(
            "stopped_by_kernel_watch",
            if stopped { "yes" } else { "no" },
        );
}

#[cfg(test)]
mod tests;
