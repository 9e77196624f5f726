//! `rig judge`: re-judge a `rig scenarios --format json` verdict file with executions counted on
//! the server (kernel ftrace text or `rig serve --stats` JSON), by the one rule in
//! [`verdict::judge`]. Prints one summary line per verdict and `key=value` lines for the case's
//! kernel.txt; `--write` rewrites the verdict file in place. Exit 0 pass, 1 fail, 2 bad input or
//! a count that failed (a harness failure: nothing was judged, so it is never a pass), 3 nothing
//! to judge (the scenario sent no call under test: the case is a skip, or its client failed).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use verdict::counted::{FtraceCounts, ServeCounts};
use verdict::judge::Basis;
use verdict::record::{Verdict, SKIP, UNSUPPORTED};

/// Largest input file read (verdict, trace or stats).
const MAX_INPUT: u64 = 16 << 20;
/// Most verdicts judged from one file.
const MAX_VERDICTS: usize = 1024;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("count").required(true).args(["ftrace", "serve_stats"])))]
pub struct Args {
    /// The case's verdict file (`rig scenarios --format json`).
    #[arg(long)]
    verdict: PathBuf,
    /// Kernel ftrace text (a copy of /sys/kernel/tracing/trace) with sunrpc:svc_process,
    /// nfsd:nfsd_drc_found and the rig_cache_update kprobe.
    #[arg(long)]
    ftrace: Option<PathBuf>,
    /// `rig serve --stats` JSON (per-XID execution counts of our server).
    #[arg(long)]
    serve_stats: Option<PathBuf>,
    /// Rewrite the verdict file with the counted executions and the new judgement.
    #[arg(long)]
    write: bool,
}

/// Where the counts come from.
enum Source {
    Ftrace(Box<FtraceCounts>),
    ServeStats(ServeCounts),
}

/// What judging one verdict (or a file of them) came to, worst last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Judgement {
    /// No call under test: nothing to count or judge (the scenario cannot run here, or failed).
    NotRun,
    /// Judged by the rule on a count, and it holds.
    Pass,
    /// The count failed and the inferred executions do not fail the rule: nothing was judged.
    NotCounted,
    /// The rule failed (on the count, or on the inferred executions when the count failed).
    Fail,
}

impl Judgement {
    /// The exit status of `rig judge` (see the module comment).
    pub fn exit_code(self) -> u8 {
        match self {
            Judgement::Pass => 0,
            Judgement::Fail => 1,
            Judgement::NotCounted => 2,
            Judgement::NotRun => 3,
        }
    }
}

/// What judging one verdict printed.
#[derive(Debug)]
struct Judged {
    summary: String,
    keys: Vec<(&'static str, String)>,
    judgement: Judgement,
}

fn read_bounded(path: &Path) -> Result<String> {
    let bytes = crate::input::read_bounded(path, MAX_INPUT, "input")?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// An array of verdicts (what `rig scenarios --format json` prints) or one verdict.
fn parse_verdicts(text: &str) -> Result<Vec<Verdict>> {
    let value: serde_json::Value = serde_json::from_str(text).context("verdict JSON")?;
    let verdicts: Vec<Verdict> = if value.is_array() {
        serde_json::from_value(value).context("verdict JSON: not a list of verdicts")?
    } else {
        vec![serde_json::from_value(value).context("verdict JSON: not a verdict")?]
    };
    ensure!(!verdicts.is_empty(), "verdict JSON: no verdict");
    ensure!(
        verdicts.len() <= MAX_VERDICTS,
        "verdict JSON: {} verdicts, more than {MAX_VERDICTS}",
        verdicts.len()
    );
    Ok(verdicts)
}

fn number(n: Option<usize>) -> String {
    n.map_or_else(|| "unknown".to_string(), |n| n.to_string())
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Count, set and judge one verdict.
fn judge_one(verdict: &mut Verdict, source: &Source) -> Judged {
    // What `rig scenarios` inferred (a verdict judged before already holds a counted value).
    let inferred = verdict
        .executions
        .filter(|_| verdict.executions_basis == Basis::Inferred.verdict_name());
    let head = format!(
        "{} {} xid={:#010x}",
        verdict.scenario, verdict.procedure, verdict.xid
    );
    let mut keys = Vec::new();
    // The count, or why there is none.
    let counted: Result<(usize, Basis, String), String> = if verdict.outcome != "ok"
        || verdict.xid == 0
    {
        Err(format!("no XID under test (outcome {})", verdict.outcome))
    } else {
        match source {
            // Two counts of the same executions that disagree vouch for neither: the per-XID
            // count is then no count (judged on the inferred one, a pass recorded as an error).
            Source::Ftrace(trace) if trace.counts_agree() == Some(false) => Err(format!(
                "the kernel's two counts disagree: svc_process calls minus DRC replays, \
                 drops, deferred passes and undecodable calls give {} executions in all \
                 ({} deferred passes), nfsd_cache_update ran {} times",
                number(trace.total_executions()),
                trace.total_deferred,
                trace.cache_update_hits
            )),
            Source::Ftrace(trace) => match trace.xid(verdict.xid) {
                Ok(c) => {
                    let n = c.executions().unwrap_or(0);
                    let mut how = format!(
                        "{} - {} - {}",
                        plural(c.calls, "call", "calls"),
                        plural(c.replays, "replay", "replays"),
                        plural(c.drops, "drop", "drops")
                    );
                    // Named only when they happened, so the usual lines stay as they were.
                    if c.deferred > 0 {
                        how.push_str(&format!(
                            " - {}",
                            plural(c.deferred, "deferred pass", "deferred passes")
                        ));
                    }
                    if c.garbage_args > 0 {
                        how.push_str(&format!(
                            " - {}",
                            plural(c.garbage_args, "undecodable call", "undecodable calls")
                        ));
                    }
                    Ok((n, Basis::Kernel, how))
                }
                Err(e) => Err(e.to_string()),
            },
            Source::ServeStats(stats) => match stats.executions(verdict.xid, &verdict.procedure) {
                Ok(n) => Ok((n, Basis::Serve, "per-XID execution count".to_string())),
                Err(e) => Err(e.to_string()),
            },
        }
    };
    let (basis, count_text) = match &counted {
        Ok((n, basis, how)) => {
            verdict.executions = Some(*n);
            verdict.executions_basis = basis.verdict_name().to_string();
            (
                *basis,
                format!(
                    "executions {n} {} ({how}; inferred {})",
                    basis.describe(),
                    number(inferred)
                ),
            )
        }
        Err(why) => (
            // A verdict with no XID under test has nothing to count or infer.
            if verdict.xid == 0 {
                Basis::None
            } else {
                Basis::Inferred
            },
            format!(
                "executions not counted: {why}; judged on inferred {}",
                number(inferred)
            ),
        ),
    };
    keys.push((
        "executions_counted",
        number(counted.as_ref().ok().map(|c| c.0)),
    ));
    keys.push(("executions_inferred", number(inferred)));
    if let Source::Ftrace(trace) = source {
        let per_xid = trace.xid(verdict.xid).ok().filter(|_| counted.is_ok());
        keys.push(("svc_calls", number(per_xid.as_ref().map(|c| c.calls))));
        keys.push(("drc_replays", number(per_xid.as_ref().map(|c| c.replays))));
        keys.push(("drc_drops", number(per_xid.as_ref().map(|c| c.drops))));
        // Keys that exist only when the event happened: a snapshot without a deferral or an
        // undecodable call reads as before these sources were counted.
        if let Some(c) = per_xid.as_ref().filter(|c| c.deferred > 0) {
            keys.push(("svc_deferred", c.deferred.to_string()));
        }
        if let Some(c) = per_xid.as_ref().filter(|c| c.garbage_args > 0) {
            keys.push(("garbage_args", c.garbage_args.to_string()));
        }
        keys.push(("executions_total", number(trace.total_executions())));
        keys.push((
            "cache_update_hits",
            if trace.sources.cache_update {
                trace.cache_update_hits.to_string()
            } else {
                "unknown".to_string()
            },
        ));
        keys.push((
            "counts_agree",
            trace
                .counts_agree()
                .map_or_else(|| "unknown".to_string(), |a| a.to_string()),
        ));
        if trace.lost_events > 0 {
            keys.push(("trace_lost_events", trace.lost_events.to_string()));
        }
    }
    if basis == Basis::None && verdict.transmissions == 0 {
        // Nothing was sent to count: the verdict keeps what `rig scenarios` recorded ("skip"
        // for a scenario this transport cannot run, "error" for one that failed before its
        // XID), never a pass.
        let why = if verdict.outcome == UNSUPPORTED {
            // A verdict recorded before "skip" existed said "pass" here.
            verdict.judgement = SKIP.to_string();
            format!("not run: {}", verdict.note)
        } else {
            format!("no verdict (outcome {})", verdict.outcome)
        };
        return Judged {
            summary: format!("rig judge: not run: {head}: {why}; {count_text}"),
            keys,
            judgement: Judgement::NotRun,
        };
    }
    let result = verdict.apply_judgement(basis);
    let sets = plural(verdict.argument_sets, "argument set", "argument sets");
    let (summary, judgement) = match (&result, &counted) {
        (Err(failure), _) => (
            format!("rig judge: fail: {head}: {failure} [{count_text}]"),
            Judgement::Fail,
        ),
        (Ok(()), Ok(_)) => (
            format!("rig judge: pass: {head}: {count_text}, {sets}"),
            Judgement::Pass,
        ),
        (Ok(()), Err(why)) => {
            // The inferred executions do not fail the rule, but they are no count: a failed
            // count is a harness failure, recorded as such in the verdict, never a pass.
            verdict.judgement = "error".to_string();
            verdict.failure = format!("executions not counted: {why}");
            (
                format!("rig judge: error: {head}: {count_text}"),
                Judgement::NotCounted,
            )
        }
    };
    Judged {
        summary,
        keys,
        judgement,
    }
}

/// Replace `path` by `text` (a sibling temporary file renamed over it).
fn write_in_place(path: &Path, text: &str) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".judge.tmp");
    let tmp = PathBuf::from(tmp);
    fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
}

/// Judge the file; the summary and key lines go to `out`. Returns the worst judgement of its
/// verdicts (a file whose every verdict is not run is not run).
fn judge_file(args: &Args, out: &mut Vec<String>) -> Result<Judgement> {
    let mut verdicts = parse_verdicts(&read_bounded(&args.verdict)?)?;
    let source = match (&args.ftrace, &args.serve_stats) {
        (Some(path), None) => Source::Ftrace(Box::new(FtraceCounts::parse(&read_bounded(path)?))),
        (None, Some(path)) => Source::ServeStats(
            ServeCounts::parse(&read_bounded(path)?)
                .with_context(|| format!("{}", path.display()))?,
        ),
        _ => bail!("exactly one of --ftrace and --serve-stats"),
    };
    let several = verdicts.len() > 1;
    let mut worst = Judgement::NotRun;
    for verdict in &mut verdicts {
        let judged = judge_one(verdict, &source);
        worst = worst.max(judged.judgement);
        out.push(judged.summary);
        for (key, value) in judged.keys {
            if several {
                out.push(format!("{}.{key}={value}", verdict.scenario));
            } else {
                out.push(format!("{key}={value}"));
            }
        }
    }
    if args.write {
        let text = serde_json::to_string_pretty(&verdicts)? + "\n";
        write_in_place(&args.verdict, &text)?;
    }
    Ok(worst)
}

/// Where an in-process judgement counts the executions.
pub(crate) enum Counts<'a> {
    /// `--ftrace`: kernel nfsd's trace (the drc server guest).
    Ftrace(&'a std::path::Path),
    /// `--serve-stats`: `rig serve`'s stats (selftest).
    ServeStats(&'a std::path::Path),
}

/// `rig judge --verdict <verdict> --ftrace|--serve-stats <file> --write`, in-process: its exit
/// status and everything it would have printed (stdout, then `rig: <error>` as `main` prints an
/// error, exit 2), for the `rig guest` commands that spare a TCG guest the exec.
pub(crate) fn judge_in_process(verdict: &std::path::Path, counts: Counts<'_>) -> (u8, String) {
    let (ftrace, serve_stats) = match counts {
        Counts::Ftrace(path) => (Some(path.to_path_buf()), None),
        Counts::ServeStats(path) => (None, Some(path.to_path_buf())),
    };
    let args = Args {
        verdict: verdict.to_path_buf(),
        ftrace,
        serve_stats,
        write: true,
    };
    let mut out = Vec::new();
    let judged = judge_file(&args, &mut out);
    let mut text: String = out.iter().map(|line| format!("{line}\n")).collect();
    match judged {
        Ok(judgement) => (judgement.exit_code(), text),
        Err(e) => {
            text.push_str(&format!("rig: {e:#}\n"));
            (2, text)
        }
    }
}

pub fn run(args: Args) -> Result<u8> {
    let mut out = Vec::new();
    let judgement = judge_file(&args, &mut out)?;
    for line in out {
        crate::outln!("{line}")?;
    }
    Ok(judgement.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    type Cli = crate::test_cli::Cli<Args>;

    const VERDICT: &str = r#"[
  {
    "scenario": "after-ack",
    "label": "nfsd",
    "procedure": "REMOVE",
    "outcome": "ok",
    "xid": 1514078226,
    "transmissions": 2,
    "argument_sets": 1,
    "replies": 2,
    "replies_identical": true,
    "statuses": [
      "NFS3_OK",
      "NFS3_OK"
    ],
    "executions": 1,
    "executions_basis": "inferred",
    "inference": "inferred: 0 later reply(ies) NFS3ERR_NOENT (executed again), 1 NFS3_OK (replayed)",
    "judgement": "pass",
    "failure": "",
    "credits_requested": 32,
    "credits_granted": 32,
    "unanswered": 0,
    "credits_balanced": true,
    "transport_errors": 0,
    "connects": 1,
    "connection": "up",
    "note": "retransmitted after the reply was processed"
  }
]
"#;

    fn trace(second: &str) -> String {
        format!(
            "# rig-sources: sunrpc:svc_process nfsd:nfsd_drc_found kprobes:rig_cache_update\n\
             # tracer: nop\n\
             \x20 nfsd-1 [000] ..... 1.1: svc_process: addr=10.99.0.2 xid=0x5a3f0012 service=nfsd vers=3 proc=REMOVE\n\
             \x20 nfsd-1 [000] ..... 1.2: rig_cache_update: (nfsd_cache_update+0x0/0x2a0 [nfsd])\n\
             \x20 nfsd-1 [000] ..... 1.3: svc_process: addr=10.99.0.2 xid=0x5a3f0012 service=nfsd vers=3 proc=REMOVE\n\
             {second}"
        )
    }

    const REPLAYED: &str =
        "  nfsd-1 [000] ..... 1.4: nfsd_drc_found: boot_time=  6571a2b3c xid=0x5a3f0012 result=REPLY\n";
    const RE_EXECUTED: &str =
        "  nfsd-1 [000] ..... 1.4: rig_cache_update: (nfsd_cache_update+0x0/0x2a0 [nfsd])\n";

    fn case(trace_text: &str) -> (tempfile_dir::Dir, Args) {
        let dir = tempfile_dir::Dir::new();
        let verdict = dir.path().join("nfsd.after-ack.verdict.json");
        let ftrace = dir.path().join("nfsd.after-ack.ftrace.txt");
        fs::write(&verdict, VERDICT).unwrap();
        fs::write(&ftrace, trace_text).unwrap();
        let cli = Cli::parse_from([
            "rig",
            "--verdict",
            verdict.to_str().unwrap(),
            "--ftrace",
            ftrace.to_str().unwrap(),
            "--write",
        ]);
        (dir, cli.args)
    }

    /// A scratch directory removed on drop (no tempfile crate in this workspace's rig deps).
    mod tempfile_dir {
        use std::path::{Path, PathBuf};
        use std::sync::atomic::{AtomicUsize, Ordering};

        static NEXT: AtomicUsize = AtomicUsize::new(0);

        pub struct Dir(PathBuf);

        impl Dir {
            pub fn new() -> Dir {
                let path = std::env::temp_dir().join(format!(
                    "rig-judge-test-{}-{}",
                    std::process::id(),
                    NEXT.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&path).unwrap();
                Dir(path)
            }

            pub fn path(&self) -> &Path {
                &self.0
            }
        }

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn a_replayed_retransmit_passes_with_counted_executions() {
        let (_dir, args) = case(&trace(REPLAYED));
        let mut out = Vec::new();
        assert_eq!(judge_file(&args, &mut out).unwrap(), Judgement::Pass);
        assert!(out[0].starts_with("rig judge: pass: after-ack REMOVE xid=0x5a3f0012: executions 1 counted in the kernel (2 calls - 1 replay - 0 drops; inferred 1)"), "{out:?}");
        assert_eq!(
            out[1..],
            [
                "executions_counted=1",
                "executions_inferred=1",
                "svc_calls=2",
                "drc_replays=1",
                "drc_drops=0",
                "executions_total=1",
                "cache_update_hits=1",
                "counts_agree=true",
            ]
        );
        let written = parse_verdicts(&fs::read_to_string(&args.verdict).unwrap()).unwrap();
        assert_eq!(written[0].executions_basis, "counted");
        assert_eq!(written[0].judgement, "pass");
        assert!(written[0].inference.starts_with("inferred: 0 later"));
        // Same pretty format as `rig scenarios --format json` (here: only the basis changed).
        assert_eq!(
            fs::read_to_string(&args.verdict).unwrap(),
            VERDICT.replace(
                "\"executions_basis\": \"inferred\"",
                "\"executions_basis\": \"counted\""
            )
        );
    }

    #[test]
    fn a_re_executed_retransmit_fails_and_is_written_back() {
        let (_dir, args) = case(&trace(RE_EXECUTED));
        let mut out = Vec::new();
        assert_eq!(judge_file(&args, &mut out).unwrap(), Judgement::Fail);
        assert!(out[0].starts_with("rig judge: fail: after-ack REMOVE xid=0x5a3f0012: non-idempotent REMOVE executed 2 times for XID 0x5a3f0012 with 1 argument set (counted in the kernel); on a live connection"), "{out:?}");
        assert!(out.contains(&"counts_agree=true".to_string()), "{out:?}");
        assert!(out.contains(&"executions_counted=2".to_string()), "{out:?}");
        let written = parse_verdicts(&fs::read_to_string(&args.verdict).unwrap()).unwrap();
        assert_eq!(written[0].executions, Some(2));
        assert_eq!(written[0].judgement, "fail");
        assert!(written[0].failure.contains("executed 2 times"));
        // The CLI's exit code: 1.
        assert_eq!(run(args).unwrap(), 1);
    }

    #[test]
    fn counts_that_disagree_are_no_count_and_not_a_pass() {
        // The per-XID arithmetic says 1 execution (2 calls, 1 replay), but nfsd_cache_update
        // ran twice: one of the two sources missed something (a deferral's revisit, an event
        // under another program), so neither is the count.
        let (_dir, args) = case(&trace(&format!("{REPLAYED}{RE_EXECUTED}")));
        let mut out = Vec::new();
        assert_eq!(judge_file(&args, &mut out).unwrap(), Judgement::NotCounted);
        assert!(out[0].starts_with("rig judge: error: "), "{out:?}");
        assert!(
            out[0].contains(
                "the kernel's two counts disagree: svc_process calls minus DRC replays, drops, \
                 deferred passes and undecodable calls give 1 executions in all (0 deferred \
                 passes), nfsd_cache_update ran 2 times"
            ),
            "{out:?}"
        );
        assert!(out.contains(&"counts_agree=false".to_string()), "{out:?}");
        assert!(out.contains(&"executions_counted=unknown".to_string()));
        let written = parse_verdicts(&fs::read_to_string(&args.verdict).unwrap()).unwrap();
        assert_eq!(written[0].judgement, "error");
        assert_eq!(run(args).unwrap(), 2);
    }

    #[test]
    fn an_xid_missing_from_the_trace_is_not_counted_and_not_a_pass() {
        let (_dir, args) = case("# rig-sources: sunrpc:svc_process nfsd:nfsd_drc_found\n");
        let mut out = Vec::new();
        assert_eq!(judge_file(&args, &mut out).unwrap(), Judgement::NotCounted);
        assert!(out[0].starts_with("rig judge: error: "), "{out:?}");
        assert!(
            out[0].contains("executions not counted: no svc_process line"),
            "{out:?}"
        );
        assert!(out.contains(&"executions_counted=unknown".to_string()));
        assert!(out.contains(&"cache_update_hits=unknown".to_string()));
        assert!(out.contains(&"counts_agree=unknown".to_string()));
        let written = parse_verdicts(&fs::read_to_string(&args.verdict).unwrap()).unwrap();
        assert_eq!(written[0].executions_basis, "inferred");
        // Recorded as the harness failure it is (the inferred 1 passes the rule, yet no count).
        assert_eq!(written[0].judgement, "error");
        assert!(written[0].failure.starts_with("executions not counted: "));
        assert_eq!(run(args).unwrap(), 2);
    }

    #[test]
    fn a_scenario_with_no_call_under_test_has_basis_none() {
        let unsupported = VERDICT
            .replace(
                "\"outcome\": \"ok\"",
                "\"outcome\": \"unsupported-on-rdma\"",
            )
            .replace("\"xid\": 1514078226", "\"xid\": 0")
            .replace("\"executions\": 1", "\"executions\": null")
            .replace(
                "\"executions_basis\": \"inferred\"",
                "\"executions_basis\": \"none\"",
            )
            .replace("\"transmissions\": 2", "\"transmissions\": 0");
        let (_dir, args) = case(&trace(REPLAYED));
        fs::write(&args.verdict, &unsupported).unwrap();
        let mut out = Vec::new();
        assert_eq!(judge_file(&args, &mut out).unwrap(), Judgement::NotRun);
        assert!(
            out[0].starts_with("rig judge: not run: ")
                && out[0].contains(
                    "executions not counted: no XID under test (outcome unsupported-on-rdma)"
                ),
            "{out:?}"
        );
        // A verdict recorded as a pass before "skip" existed is rewritten as the skip it is.
        let written = parse_verdicts(&fs::read_to_string(&args.verdict).unwrap()).unwrap();
        assert_eq!(written[0].executions_basis, "none");
        assert_eq!(written[0].executions, None);
        assert_eq!(written[0].judgement, "skip");
        assert_eq!(run(args).unwrap(), 3);

        // An "ok" verdict that transmitted but names no XID has nothing counted: not a pass.
        let (_dir, args) = case(&trace(REPLAYED));
        fs::write(
            &args.verdict,
            VERDICT.replace("\"xid\": 1514078226", "\"xid\": 0"),
        )
        .unwrap();
        let mut out = Vec::new();
        assert_eq!(judge_file(&args, &mut out).unwrap(), Judgement::NotCounted);
    }

    /// The verdict and `rig serve` stats that count its XID executed twice.
    fn serve_stats_case() -> (tempfile_dir::Dir, PathBuf, PathBuf) {
        let dir = tempfile_dir::Dir::new();
        let verdict = dir.path().join("classic.after-ack.verdict.json");
        let stats = dir.path().join("serve-classic.stats.json");
        fs::write(&verdict, VERDICT).unwrap();
        fs::write(
            &stats,
            r#"{"executions": [{"slot": 0, "xid": 1514078226, "procedure": "REMOVE", "executions": 2, "statuses": []}]}"#,
        )
        .unwrap();
        (dir, verdict, stats)
    }

    #[test]
    fn serve_stats_count_too() {
        let (_dir, verdict, stats) = serve_stats_case();
        let cli = Cli::parse_from([
            "rig",
            "--verdict",
            verdict.to_str().unwrap(),
            "--serve-stats",
            stats.to_str().unwrap(),
        ]);
        let mut out = Vec::new();
        assert_eq!(judge_file(&cli.args, &mut out).unwrap(), Judgement::Fail);
        assert!(out[0].contains("(counted by rig serve)"), "{out:?}");
        assert_eq!(out[1..], ["executions_counted=2", "executions_inferred=1"]);
        // Without --write the file is untouched.
        assert_eq!(fs::read_to_string(&verdict).unwrap(), VERDICT);
    }

    /// What `rig guest scenario-result --serve-stats` gets in-process: what `rig judge --write`
    /// would print and exit with, the verdict rewritten; an error as `main` prints one, exit 2.
    #[test]
    fn judging_in_process_prints_and_exits_as_the_command_would() {
        let (dir, verdict, stats) = serve_stats_case();
        let (rc, text) = judge_in_process(&verdict, Counts::ServeStats(&stats));
        assert_eq!(rc, Judgement::Fail.exit_code());
        assert!(
            text.ends_with("executions_counted=2\nexecutions_inferred=1\n"),
            "{text}"
        );
        // --write: the verdict now carries the counted executions.
        assert!(fs::read_to_string(&verdict)
            .unwrap()
            .contains("\"executions_basis\": \"counted\""));
        let (rc, text) = judge_in_process(
            &verdict,
            Counts::ServeStats(&dir.path().join("missing.json")),
        );
        assert_eq!(rc, 2);
        assert!(
            text.starts_with("rig: ") && text.contains("missing.json"),
            "{text}"
        );
    }

    #[test]
    fn bad_input_is_an_error() {
        let dir = tempfile_dir::Dir::new();
        let verdict = dir.path().join("v.json");
        let trace = dir.path().join("t.txt");
        fs::write(&trace, "").unwrap();
        for bad in ["", "{", "[]", "42", "[{\"scenario\": 1}]"] {
            fs::write(&verdict, bad).unwrap();
            let cli = Cli::parse_from([
                "rig",
                "--verdict",
                verdict.to_str().unwrap(),
                "--ftrace",
                trace.to_str().unwrap(),
            ]);
            assert!(run(cli.args).is_err(), "{bad:?}");
        }
        fs::write(&verdict, VERDICT).unwrap();
        let big = dir.path().join("big.txt");
        fs::write(&big, vec![b'x'; MAX_INPUT as usize + 1]).unwrap();
        let cli = Cli::parse_from([
            "rig",
            "--verdict",
            verdict.to_str().unwrap(),
            "--ftrace",
            big.to_str().unwrap(),
        ]);
        let err = run(cli.args).unwrap_err().to_string();
        assert!(err.contains("larger than"), "{err}");
        let cli = Cli::parse_from([
            "rig",
            "--verdict",
            verdict.to_str().unwrap(),
            "--serve-stats",
            trace.to_str().unwrap(),
        ]);
        assert!(run(cli.args).is_err());
        // One count source is required, and only one.
        assert!(Cli::try_parse_from(["rig", "--verdict", "v"]).is_err());
        assert!(Cli::try_parse_from([
            "rig",
            "--verdict",
            "v",
            "--ftrace",
            "a",
            "--serve-stats",
            "b"
        ])
        .is_err());
    }

    #[test]
    fn verdicts_without_an_xid_make_no_claim() {
        let dir = tempfile_dir::Dir::new();
        let verdict = dir.path().join("v.json");
        let trace_path = dir.path().join("t.txt");
        fs::write(
            &verdict,
            VERDICT
                .replace("\"xid\": 1514078226", "\"xid\": 0")
                .replace(
                    "\"outcome\": \"ok\"",
                    "\"outcome\": \"unsupported-on-rdma\"",
                )
                .replace("\"transmissions\": 2", "\"transmissions\": 0"),
        )
        .unwrap();
        fs::write(&trace_path, trace(REPLAYED)).unwrap();
        let cli = Cli::parse_from([
            "rig",
            "--verdict",
            verdict.to_str().unwrap(),
            "--ftrace",
            trace_path.to_str().unwrap(),
        ]);
        let mut out = Vec::new();
        assert_eq!(judge_file(&cli.args, &mut out).unwrap(), Judgement::NotRun);
        assert!(
            out[0].contains("no XID under test (outcome unsupported-on-rdma)"),
            "{out:?}"
        );
        assert!(out.contains(&"executions_counted=unknown".to_string()));
    }
}
