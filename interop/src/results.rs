//! Parsing what the guests wrote (STEP and RESULT lines), judging each case, and scanning guest
//! kernel logs for WARN/BUG/Oops/KASAN/hung-task reports.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::known::KnownProblem;
use crate::suite::{Case, Role};

/// `RESULT case=<case> role=<role> verdict=<verdict> key=value...` from a guest script.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultLine {
    pub case: String,
    pub role: String,
    pub verdict: String,
    pub fields: BTreeMap<String, String>,
}

/// Limit on lines and fields taken from guest output (the guests are under test, not trusted).
const MAX_RESULT_LINES: usize = 10_000;
const MAX_FIELDS: usize = 64;

fn key_values(rest: &str) -> BTreeMap<String, String> {
    rest.split_whitespace()
        .filter_map(|word| word.split_once('='))
        .take(MAX_FIELDS)
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// All well-formed RESULT lines of `text` (lines must start with `RESULT `; `set -x` traces
/// of the echo start with `+ ` and are ignored). A line is either the JSON `rig guest` writes
/// ([`verdict::guest::GuestResult`], read with that type and its schema version) or the
/// `case=... role=... verdict=... key=value` words of a script that runs no rig
/// (vm-images/guest/lib.sh `rig_result`). A line that is neither is not a result: the role
/// then printed none, and fails.
pub fn parse_result_lines(text: &str) -> Vec<ResultLine> {
    text.lines()
        .filter_map(|line| line.strip_prefix(verdict::guest::RESULT_PREFIX))
        .take(MAX_RESULT_LINES)
        .filter_map(|rest| {
            if rest.starts_with('{') {
                return verdict::guest::GuestResult::parse(rest)
                    .ok()
                    .map(|r| ResultLine {
                        case: r.case,
                        role: r.role,
                        verdict: r.verdict,
                        fields: r.fields,
                    });
            }
            let mut fields = key_values(rest);
            Some(ResultLine {
                case: fields.remove("case")?,
                role: fields.remove("role")?,
                verdict: fields.remove("verdict")?,
                fields,
            })
        })
        .collect()
}

/// `STEP case=<case> role=<role> rc=<exit code> ms=<duration>` from the guest driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepLine {
    pub case: String,
    pub role: String,
    /// The exit code text (`0`, `137`, or a word such as `server-not-ready`).
    pub rc: String,
    pub ms: u64,
}

pub fn parse_step_lines(text: &str) -> Vec<StepLine> {
    text.lines()
        .filter_map(|line| line.strip_prefix("STEP "))
        .take(MAX_RESULT_LINES)
        .filter_map(|rest| {
            let mut fields = key_values(rest);
            Some(StepLine {
                case: fields.remove("case")?,
                role: fields.remove("role")?,
                rc: fields.remove("rc")?,
                ms: fields.get("ms").and_then(|ms| ms.parse().ok()).unwrap_or(0),
            })
        })
        .collect()
}

/// Outcome of one case (or one host check).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Timeout,
    NotRun,
    /// Failed as vm-images/expectations.toml requires: a mutant kernel the gate caught.
    Caught,
    /// Failed, and listed there as a known failure (with a reason and a finding).
    Known,
    /// Did not run on this transport or kernel: the case sent nothing under test (a scenario
    /// unsupported on RDMA, a missing prerequisite), with the guest's reason. Not a pass: the
    /// summary counts it apart; not a failure either.
    Skip,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Timeout => "timeout",
            Verdict::NotRun => "not-run",
            Verdict::Caught => "caught",
            Verdict::Known => "known",
            Verdict::Skip => "skip",
        }
    }

    /// Whether the run stays green with this verdict (a skip is reported and counted, but the
    /// kernel did nothing wrong).
    pub fn is_ok(self) -> bool {
        matches!(
            self,
            Verdict::Pass | Verdict::Caught | Verdict::Known | Verdict::Skip
        )
    }
}

/// A judged case, as it appears in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseOutcome {
    pub name: String,
    pub verdict: Verdict,
    pub duration_ms: u64,
    /// Why the verdict is not `pass` (empty when it is).
    pub reasons: Vec<String>,
    /// The RESULT lines of this case (checksums and other details).
    pub results: Vec<ResultLine>,
}

/// The RESULT verdict of a role that ran nothing under test (`rig_result skip reason=...`).
pub const SKIP_VERDICT: &str = "skip";

/// Why a role skipped: its `reason`, else the scenario's `note`, else a plain word.
fn skip_reason(line: &ResultLine) -> String {
    line.fields
        .get("reason")
        .or_else(|| line.fields.get("note"))
        .filter(|r| !r.is_empty())
        .map_or_else(|| "no reason given".to_owned(), |r| r.replace('_', " "))
}

/// `timeout -s KILL` exits with 128 + SIGKILL.
const TIMEOUT_EXIT: &str = "137";

/// Judge `case` from the driver's STEP lines and the scripts' RESULT lines.
pub fn evaluate_case(case: &Case, steps: &[StepLine], results: &[ResultLine]) -> CaseOutcome {
    let mut reasons = Vec::new();
    let mut verdict = Verdict::Pass;
    let mut worst = |v: Verdict, reasons: &mut Vec<String>, why: String| {
        reasons.push(why);
        // NotRun < Timeout < Fail in severity only matters for the first non-pass.
        if verdict == Verdict::Pass {
            verdict = v;
        }
    };
    let mine: Vec<ResultLine> = results
        .iter()
        .filter(|r| r.case == case.name)
        .cloned()
        .collect();
    let mut duration_ms = 0;
    let mut skipped = Vec::new();
    for role in Role::BOTH {
        if case.script(role).is_none() {
            continue;
        }
        let role_name = role.as_str();
        let Some(step) = steps
            .iter()
            .find(|s| s.case == case.name && s.role == role_name)
        else {
            worst(
                Verdict::NotRun,
                &mut reasons,
                format!("{role_name}: did not run"),
            );
            continue;
        };
        duration_ms = duration_ms.max(step.ms);
        match step.rc.as_str() {
            "0" => {}
            TIMEOUT_EXIT => worst(
                Verdict::Timeout,
                &mut reasons,
                format!("{role_name}: killed after {}s", case.timeout_secs),
            ),
            rc => worst(
                Verdict::Fail,
                &mut reasons,
                format!("{role_name}: exit {rc}"),
            ),
        }
        let role_results: Vec<&ResultLine> = mine.iter().filter(|r| r.role == role_name).collect();
        let role_skips: Vec<&&ResultLine> = role_results
            .iter()
            .filter(|r| r.verdict == SKIP_VERDICT)
            .collect();
        for skip in &role_skips {
            skipped.push(format!("{role_name}: skipped: {}", skip_reason(skip)));
        }
        // A role that reported nothing failed silently; one whose RESULT lines failed says why
        // below (no second "no pass" line beside its reasons).
        if role_results.is_empty() {
            worst(
                Verdict::Fail,
                &mut reasons,
                format!("{role_name}: printed no RESULT line"),
            );
        }
        for failed in role_results
            .iter()
            .filter(|r| r.verdict != "pass" && r.verdict != SKIP_VERDICT)
        {
            let detail: Vec<String> = failed
                .fields
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            worst(
                Verdict::Fail,
                &mut reasons,
                format!(
                    "{role_name}: verdict={} {}",
                    failed.verdict,
                    detail.join(" ")
                ),
            );
        }
    }
    if reasons.is_empty() && !skipped.is_empty() {
        // Nothing failed and a role sent nothing under test: the case did not run, and its
        // checksums (if it has any) were never produced.
        return CaseOutcome {
            name: case.name.clone(),
            verdict: Verdict::Skip,
            duration_ms,
            reasons: skipped,
            results: mine,
        };
    }
    // Values that must agree (checksums from both guests): each key present, all equal.
    let mut compared: Vec<(&str, &str)> = Vec::new();
    for key in &case.equal {
        let values: Vec<&str> = mine
            .iter()
            .filter_map(|r| r.fields.get(key).map(String::as_str))
            .collect();
        if values.is_empty() {
            worst(Verdict::Fail, &mut reasons, format!("no {key} reported"));
        }
        compared.extend(values.into_iter().map(|v| (key.as_str(), v)));
    }
    if let Some((first_key, first)) = compared.first() {
        for (key, value) in &compared[1..] {
            if value != first {
                worst(
                    Verdict::Fail,
                    &mut reasons,
                    format!("{key}={value} differs from {first_key}={first}"),
                );
            }
        }
    }
    CaseOutcome {
        name: case.name.clone(),
        verdict,
        duration_ms,
        reasons,
        results: mine,
    }
}

/// A line of a guest kernel log that reports a kernel problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelProblem {
    pub source: String,
    pub line_number: usize,
    pub kind: &'static str,
    pub line: String,
    /// The case whose dmesg slice (`<case>.<role>.dmesg`) holds the line, when one does.
    pub case: Option<String>,
}

/// Problems reported in a kernel log (`dmesg` output or a serial console), at most one per line.
pub fn scan_kernel_log(text: &str, source: &str) -> Vec<KernelProblem> {
    const MAX_PROBLEMS: usize = 200;
    text.lines()
        .enumerate()
        .filter_map(|(index, line)| {
            // The marker table is shared with the wire-fuzz watch: crates/kernel-log.
            kernel_log::classify(line, kernel_log::Reader::DmesgCheck).map(|kind| KernelProblem {
                source: source.to_owned(),
                line_number: index + 1,
                kind: kind.name(),
                line: line.chars().take(300).collect(),
                case: None,
            })
        })
        .take(MAX_PROBLEMS)
        .collect()
}

/// Whether a guest's console shows its kernel died (a `Kernel panic` line: with `panic=-1` and
/// qemu's `-no-reboot` the guest then powers off), and how: the first problem the kernel logged
/// (the Oops or BUG that led to the panic) and the panic line. `None` for a console without one.
pub fn guest_death(console: &str) -> Option<String> {
    let problems = scan_kernel_log(console, "console");
    let panic = problems
        .iter()
        .find(|p| p.kind == kernel_log::Kind::Panic.name())?;
    let first = problems
        .first()
        .filter(|p| p.line_number < panic.line_number);
    let strip = |line: &str| {
        // `[  131.632879] Kernel panic ...` → `Kernel panic ...`: the uptime says nothing here.
        match line
            .trim_start()
            .strip_prefix('[')
            .and_then(|rest| rest.split_once(']'))
        {
            Some((_, rest)) => rest.trim().to_owned(),
            None => line.trim().to_owned(),
        }
    };
    Some(match first {
        Some(first) => format!("{} → {}", strip(&first.line), strip(&panic.line)),
        None => strip(&panic.line),
    })
}

/// Name the case during which each problem was logged: the first case (in suite order) whose
/// dmesg slice, the lines the guest's kernel logged while the case ran, holds the problem's line.
pub fn attribute_to_cases(problems: &mut [KernelProblem], slices: &[(String, String)]) {
    for problem in problems.iter_mut() {
        let line = problem.line.trim();
        problem.case = slices
            .iter()
            .find(|(_, text)| text.lines().any(|l| l.trim() == line))
            .map(|(case, _)| case.clone());
    }
}

/// The known finding (fixtures/findings/findings.toml, `known = true` over the run's transport)
/// each problem is, if any. A WARN's cut mark goes with the known `WARNING:` line that follows
/// it in the same log (within two lines: the kernel prints them back to back).
fn known_findings<'a>(
    problems: &[KernelProblem],
    known: &'a [KnownProblem],
) -> Vec<Option<&'a str>> {
    let mut names: Vec<Option<&str>> = problems
        .iter()
        .map(|p| crate::known::known_problem(&p.line, known).map(|k| k.finding.as_str()))
        .collect();
    for (index, problem) in problems.iter().enumerate() {
        if names[index].is_some() || !problem.line.contains(kernel_log::CUT_HERE) {
            continue;
        }
        let next = problems.get(index + 1).filter(|next| {
            next.source == problem.source
                && (1..=2).contains(&next.line_number.saturating_sub(problem.line_number))
        });
        if next.is_some() {
            names[index] = names[index + 1];
        }
    }
    names
}

/// Turn kernel-log problems into the report's `dmesg` pseudo-case: red on any problem that is
/// not a known finding of this run's transport (`known`), `known` when every one is.
pub fn dmesg_outcome(
    problems: &[KernelProblem],
    logs_found: usize,
    known: &[KnownProblem],
) -> CaseOutcome {
    let describe = |p: &KernelProblem| {
        let during = p
            .case
            .as_ref()
            .map(|case| format!(" (during case {case})"))
            .unwrap_or_default();
        format!(
            "{}:{}: {}{during}: {}",
            p.source,
            p.line_number,
            p.kind,
            p.line.trim()
        )
    };
    let names = known_findings(problems, known);
    let mut reasons: Vec<String> = problems
        .iter()
        .zip(&names)
        .filter(|(_, name)| name.is_none())
        .take(10)
        .map(|(p, _)| describe(p))
        .collect();
    if logs_found == 0 {
        reasons.push("no guest kernel log collected".to_owned());
    }
    let known_lines: Vec<String> = problems
        .iter()
        .zip(&names)
        .filter_map(|(p, name)| {
            name.map(|name| {
                format!(
                    "known finding {name} ({}): {}",
                    crate::known::FINDINGS_FILE,
                    describe(p)
                )
            })
        })
        .take(10)
        .collect();
    let verdict = if !reasons.is_empty() {
        Verdict::Fail
    } else if !known_lines.is_empty() {
        Verdict::Known
    } else {
        Verdict::Pass
    };
    reasons.extend(known_lines);
    CaseOutcome {
        name: "dmesg".to_owned(),
        verdict,
        duration_ms: 0,
        reasons,
        results: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_death_is_read_from_its_console() {
        let console = include_str!(
            "../../fixtures/findings/2026-12-01-double-fault-linux-6.12-selftest-srv.console"
        );
        assert_eq!(
            guest_death(console).as_deref(),
            Some(
                "Oops: double fault: 0000 [#1] PREEMPT SMP NOPTI → \
                 Kernel panic - not syncing: Fatal exception in interrupt"
            )
        );
        // An Oops the guest survived is a dmesg finding, not a death.
        assert_eq!(
            guest_death("[ 1.0] Oops: general protection fault\nrig-init: poweroff\n"),
            None
        );
        assert_eq!(
            guest_death("[ 2.5] Kernel panic - not syncing: VFS: Unable to mount root\n")
                .as_deref(),
            Some("Kernel panic - not syncing: VFS: Unable to mount root")
        );
    }

    fn case(server: Option<&str>, client: Option<&str>, equal: &[&str]) -> Case {
        Case {
            name: "nfs3".into(),
            server: server.map(Into::into),
            client: client.map(Into::into),
            timeout_secs: 60,
            equal: equal.iter().map(|s| s.to_string()).collect(),
            artifacts: vec![],
            concurrent: false,
            always: false,
        }
    }

    const CLIENT_LOG: &str = "\
+ echo RESULT case=nfs3 role=cli verdict=pass vers=3 md5_written=aa md5_read=aa
RESULT case=nfs3 role=cli verdict=pass vers=3 bytes=1048576 md5_written=aa md5_read=aa
RESULT case=nfs3 role=cli
";

    #[test]
    fn a_json_result_line_reads_as_rig_guest_wrote_it() {
        let mut written = verdict::guest::GuestResult::new("nfsd.after-ack", "cli", "fail");
        written
            .field("reason", "executed_twice")
            .field("note", "spaces and = survive");
        let text = format!(
            "boot noise\n{}\nRESULT {{\"schema\":99,\"case\":\"x\"}}\nRESULT {{not json\n",
            written.to_line()
        );
        let results = parse_result_lines(&text);
        assert_eq!(
            results,
            [ResultLine {
                case: "nfsd.after-ack".into(),
                role: "cli".into(),
                verdict: "fail".into(),
                fields: written.fields.clone(),
            }]
        );
    }

    #[test]
    fn result_lines_need_case_role_and_verdict() {
        let results = parse_result_lines(CLIENT_LOG);
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].fields["bytes"], "1048576");
        assert_eq!(results[0].fields.get("case"), None);
    }

    #[test]
    fn step_lines_parse_numeric_and_word_rc() {
        let steps = parse_step_lines(
            "STEP case=nfs3 role=cli rc=0 ms=5120\nSTEP case=rping role=cli rc=server-not-ready ms=0\njunk\n",
        );
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0].ms, 5120);
        assert_eq!(steps[1].rc, "server-not-ready");
    }

    fn steps(srv_rc: &str, cli_rc: &str) -> Vec<StepLine> {
        parse_step_lines(&format!(
            "STEP case=nfs3 role=srv rc={srv_rc} ms=900\nSTEP case=nfs3 role=cli rc={cli_rc} ms=4000\n"
        ))
    }

    #[test]
    fn passing_case_with_matching_checksums() {
        let results = parse_result_lines(&format!(
            "{CLIENT_LOG}RESULT case=nfs3 role=srv verdict=pass md5_server=aa\n"
        ));
        let outcome = evaluate_case(
            &case(
                Some("v.sh"),
                Some("c.sh"),
                &["md5_written", "md5_read", "md5_server"],
            ),
            &steps("0", "0"),
            &results,
        );
        assert_eq!(outcome.verdict, Verdict::Pass, "{:?}", outcome.reasons);
        assert_eq!(outcome.duration_ms, 4000);
        assert_eq!(outcome.results.len(), 2);
    }

    #[test]
    fn checksum_mismatch_across_roles_fails_even_if_guests_said_pass() {
        let results = parse_result_lines(&format!(
            "{CLIENT_LOG}RESULT case=nfs3 role=srv verdict=pass md5_server=bb\n"
        ));
        let outcome = evaluate_case(
            &case(
                Some("v.sh"),
                Some("c.sh"),
                &["md5_written", "md5_read", "md5_server"],
            ),
            &steps("0", "0"),
            &results,
        );
        assert_eq!(outcome.verdict, Verdict::Fail);
        assert!(
            outcome.reasons[0].contains("md5_server=bb differs"),
            "{:?}",
            outcome.reasons
        );
    }

    #[test]
    fn missing_equal_key_fails() {
        let outcome = evaluate_case(
            &case(None, Some("c.sh"), &["md5_server"]),
            &steps("0", "0"),
            &parse_result_lines(CLIENT_LOG),
        );
        assert_eq!(outcome.verdict, Verdict::Fail);
        assert_eq!(outcome.reasons, ["no md5_server reported"]);
    }

    #[test]
    fn timeout_not_run_and_failure_are_distinguished() {
        let results = parse_result_lines(CLIENT_LOG);
        let timed_out = evaluate_case(&case(None, Some("c.sh"), &[]), &steps("0", "137"), &results);
        assert_eq!(timed_out.verdict, Verdict::Timeout);
        let not_run = evaluate_case(&case(None, Some("c.sh"), &[]), &[], &results);
        assert_eq!(not_run.verdict, Verdict::NotRun);
        let failed = evaluate_case(&case(None, Some("c.sh"), &[]), &steps("0", "1"), &results);
        assert_eq!(failed.verdict, Verdict::Fail);
        let no_result = evaluate_case(&case(Some("s.sh"), None, &[]), &steps("0", "0"), &results);
        assert_eq!(no_result.verdict, Verdict::Fail);
        assert_eq!(no_result.reasons, ["srv: printed no RESULT line"]);
    }

    #[test]
    fn a_case_that_sent_nothing_is_a_skip_with_its_reason_not_a_pass() {
        let results = parse_result_lines(
            "RESULT case=nfs3 role=cli verdict=skip outcome=unsupported-on-rdma transmissions=0 \
             reason=needs_the_simulator\n\
             RESULT case=nfs3 role=srv verdict=skip judge=not-run reason=needs_the_simulator\n",
        );
        let both = case(Some("s.sh"), Some("c.sh"), &["md5_server"]);
        let outcome = evaluate_case(&both, &steps("0", "0"), &results);
        assert_eq!(outcome.verdict, Verdict::Skip, "{:?}", outcome.reasons);
        assert_eq!(
            outcome.reasons,
            [
                "srv: skipped: needs the simulator",
                "cli: skipped: needs the simulator"
            ]
        );
        // A skip beside a failure is the failure.
        let mut failing = results.clone();
        failing[1].verdict = "fail".into();
        let outcome = evaluate_case(&both, &steps("0", "0"), &failing);
        assert_eq!(outcome.verdict, Verdict::Fail);
        // A role whose script failed is not a skip either.
        let outcome = evaluate_case(&both, &steps("0", "1"), &results);
        assert_eq!(outcome.verdict, Verdict::Fail);
        // Only the client skipped, the server passed: still not run.
        let mut half = results.clone();
        half[1].verdict = "pass".into();
        let outcome = evaluate_case(&both, &steps("0", "0"), &half);
        assert_eq!(outcome.verdict, Verdict::Skip);
        assert!(Verdict::Skip.is_ok() && Verdict::Skip.as_str() == "skip");
    }

    #[test]
    fn a_fail_line_beats_a_pass_line() {
        let results = parse_result_lines(&format!(
            "{CLIENT_LOG}RESULT case=nfs3 role=cli verdict=fail step=umount rc=16\n"
        ));
        let outcome = evaluate_case(&case(None, Some("c.sh"), &[]), &steps("0", "0"), &results);
        assert_eq!(outcome.verdict, Verdict::Fail);
        assert!(outcome.reasons[0].contains("step=umount"));
    }

    fn data(name: &str) -> String {
        let path = crate::cache::workspace_root()
            .join("interop/tests/data")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn clean_guest_dmesg_has_no_problems() {
        let problems = scan_kernel_log(&data("clean-linux-6.1.dmesg"), "srv.dmesg");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(dmesg_outcome(&problems, 2, &[]).verdict, Verdict::Pass);
    }

    #[test]
    fn warn_and_hung_task_samples_are_found() {
        let warn = scan_kernel_log(&data("warn-splat.dmesg"), "cli.dmesg");
        let kinds: Vec<&str> = warn.iter().map(|p| p.kind).collect();
        assert!(kinds.contains(&"WARN"), "{kinds:?}");
        let lockup = scan_kernel_log(
            "[  260.729394] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [mount.nfs:470]\n",
            "cli.dmesg",
        );
        assert_eq!(lockup[0].kind, "soft lockup");
        let hung = scan_kernel_log(&data("hung-task.dmesg"), "srv.dmesg");
        assert!(hung.iter().any(|p| p.kind == "hung task"), "{hung:?}");
        let outcome = dmesg_outcome(&hung, 2, &[]);
        assert_eq!(outcome.verdict, Verdict::Fail);
        assert!(outcome.reasons[0].starts_with("srv.dmesg:"));
    }

    #[test]
    fn a_problem_is_named_after_the_case_whose_slice_holds_it() {
        let mut warn = scan_kernel_log(&data("warn-splat.dmesg"), "cli.dmesg");
        assert!(!warn.is_empty());
        let first = warn[0].line.clone();
        let slices = vec![
            ("setup".to_owned(), "[    1.0] rxe0: added\n".to_owned()),
            (
                "nfsd.after-ack".to_owned(),
                format!("[    2.0] something\n{first}\n"),
            ),
        ];
        attribute_to_cases(&mut warn, &slices);
        assert_eq!(warn[0].case.as_deref(), Some("nfsd.after-ack"));
        let outcome = dmesg_outcome(&warn, 2, &[]);
        assert!(
            outcome.reasons[0].contains("(during case nfsd.after-ack): "),
            "{:?}",
            outcome.reasons
        );
        // No slice holds it: no case named.
        attribute_to_cases(&mut warn, &slices[..1]);
        assert_eq!(warn[0].case, None);
    }

    #[test]
    fn missing_logs_fail_the_dmesg_check() {
        assert_eq!(dmesg_outcome(&[], 0, &[]).verdict, Verdict::Fail);
    }
}
