//! The RESULT lines `rig guest` writes, against the lines the suites' shell wrote for the same
//! JSON (taken from a real run's guest logs: the baselines record these words).

use std::collections::BTreeMap;

use super::*;

fn who() -> Who {
    Who {
        case: "acked.after-ack-late".into(),
        role: "cli".into(),
    }
}

/// The fields of a `RESULT case=... key=value` line, read as the host reads them.
fn shell_fields(line: &str) -> BTreeMap<String, String> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .filter(|(k, _)| !matches!(*k, "case" | "role" | "verdict"))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The verdict of the real run's acked.after-ack-late, as `rig scenarios` wrote it (before
/// `rig judge --write` counted its executions).
fn after_ack_late(failure: &str, basis: &str) -> Verdict {
    let json = format!(
        r#"{{"scenario": "after-ack-late", "label": "acked", "procedure": "REMOVE",
        "outcome": "ok", "xid": 1496514563, "transmissions": 2, "argument_sets": 1,
        "replies": 2, "replies_identical": false, "statuses": ["NFS3_OK", "NFS3ERR_NOENT"],
        "executions": 2, "executions_basis": "{basis}", "inference": "x", "judgement": "fail",
        "failure": "{failure}", "credits_requested": 8, "credits_granted": 8, "unanswered": 0,
        "credits_balanced": true, "transport_errors": 0, "connects": 1, "connection": "up",
        "note": "replayed after 16 later calls"}}"#
    );
    serde_json::from_str(&json).unwrap()
}

const INFERRED: &str = "non-idempotent REMOVE executed 2 times for XID 0x59330003 with 1 argument set (inferred from NFS statuses); on a live connection";
const COUNTED: &str = "non-idempotent REMOVE executed 2 times for XID 0x59330003 with 1 argument set (counted by rig serve); on a live connection";

#[test]
fn a_scenario_result_has_the_words_the_script_wrote() {
    let script = "RESULT case=acked.after-ack-late role=cli verdict=pass label=acked scenario=after-ack-late outcome=ok rc=0 procedure=REMOVE xid=1496514563 transmissions=2 argument_sets=1 executions=2 judgement=fail failure=non-idempotent_REMOVE_executed_2_times_for_XID_0x59330003_with_1_argument_set_(inferred_from_NFS_statuses);_on_a_live_connection replies=2 replies_identical=false credits_granted=8 unanswered=0 credits_balanced=true connects=1 connection=up note=replayed_after_16_later_calls statuses=NFS3_OK,NFS3ERR_NOENT";
    let v = after_ack_late(INFERRED, "inferred");
    let result = scenario_result(&who(), Some(&v), "after-ack-late", "acked", "0", "");
    assert_eq!(result.verdict, "pass");
    assert_eq!(result.fields, shell_fields(script));
    // The line reads back as the host reads it.
    let line = result.to_line();
    let json = line.strip_prefix(verdict::guest::RESULT_PREFIX).unwrap();
    assert_eq!(GuestResult::parse(json).unwrap(), result);
}

#[test]
fn a_scenario_that_cannot_run_is_a_skip_and_a_missing_verdict_a_failure() {
    let mut v = after_ack_late(INFERRED, "inferred");
    v.outcome = UNSUPPORTED.into();
    v.note = "needs the  simulator".into();
    let skip = scenario_result(&who(), Some(&v), "after-ack-late", "acked", "0", "");
    assert_eq!(skip.verdict, "skip");
    assert_eq!(skip.fields["reason"], "needs_the_simulator");
    assert_eq!(exit_code(&skip.verdict), EXIT_SKIP);
    // Not a clean exit: a failure, never a skip.
    let failed = scenario_result(&who(), Some(&v), "after-ack-late", "acked", "1", "");
    assert_eq!(failed.verdict, "fail");
    let other = scenario_result(
        &who(),
        Some(&v),
        "after-ack",
        "acked",
        "2",
        "rig: MOUNT over TCP:  refused\n(os error 111)",
    );
    assert_eq!(other.verdict, "fail");
    assert_eq!(
        other.fields["error"],
        "rig:_MOUNT_over_TCP:_refused_(os_error_111)"
    );
    assert_eq!(other.fields["step"], "scenarios");
    let none = scenario_result(&who(), None, "after-ack", "acked", "2", "");
    assert_eq!(
        (none.verdict.as_str(), none.fields["error"].as_str()),
        ("fail", "")
    );
}

#[test]
fn a_judged_result_has_the_words_the_script_wrote() {
    let script = "RESULT case=acked.after-ack-late role=cli verdict=fail step=judge count=serve-stats executions_counted=2 reason=non-idempotent_REMOVE_executed_2_times_for_XID_0x59330003_with_1_argument_set_(counted_by_rig_serve);_on_a_live_connection";
    let judged = "after-ack-late REMOVE xid=0x59330003: fail\nexecutions_counted=2\n";
    let result = judged_result(&who(), 1, COUNTED, judged);
    assert_eq!(result.verdict, "fail");
    assert_eq!(result.fields, shell_fields(script));
    let pass = judged_result(&who(), 0, "", "executions_counted=\n");
    assert_eq!(pass.fields["executions_counted"], "unknown");
    let error = judged_result(&who(), 2, "", "a\nrig: XID 0x5 = not in the stats\n");
    assert_eq!(error.verdict, "fail");
    assert_eq!(error.fields["reason"], "rig:_XID_0x5_not_in_the_stats");
    assert_eq!(error.fields["harness"], "count-failed");
    assert_eq!(judged_result(&who(), 3, "", "").fields["judge"], "not-run");
}

#[test]
fn a_counted_result_follows_rig_judges_exit_status() {
    let v = after_ack_late(COUNTED, "counted");
    let fail = counted_result(&who(), 1, Some(&v), "");
    assert_eq!(fail.verdict, "fail");
    assert_eq!(fail.fields["judge"], "fail");
    assert!(fail.fields["reason"].starts_with("non-idempotent_REMOVE_executed_2_times"));
    // Without a failure in the verdict, rig judge's own `fail:` line says why.
    let bare = counted_result(
        &who(),
        1,
        None,
        "x\nrig judge: fail: reply  without execution\n",
    );
    assert_eq!(bare.fields["reason"], "reply_without_execution");
    let skip = counted_result(&who(), 3, None, "");
    assert_eq!(
        (
            skip.verdict.as_str(),
            skip.fields["judge"].as_str(),
            skip.fields["reason"].as_str()
        ),
        ("skip", "not-run", "no_verdict_from_the_client")
    );
    let error = counted_result(&who(), 2, Some(&v), "rig: no svc_process line\n");
    assert_eq!(
        error.fields["reason"],
        "count_failed:_rig:_no_svc_process_line"
    );
    assert_eq!(error.fields["judge"], "error");
    let pass = counted_result(&who(), 0, Some(&v), "");
    assert_eq!(pass.verdict, "pass");
    assert!(!pass.fields.contains_key("reason"));
}

#[test]
fn script_words_come_after_rigs_and_words_without_a_value_are_not_fields() {
    let mut result = GuestResult::new("c", "srv", "pass");
    result.field("judge", "pass");
    add_words(
        &mut result,
        &["kernel=6.12.118".into(), "stray".into(), "judge=x=y".into()],
    );
    assert_eq!(result.fields["kernel"], "6.12.118");
    assert_eq!(result.fields["judge"], "x=y");
    assert_eq!(result.fields.len(), 2);
}

#[test]
fn a_v41_result_judges_the_inferred_executions() {
    let v = after_ack_late(INFERRED, "inferred");
    let mut json = serde_json::to_value(&v).unwrap();
    let extra = serde_json::json!({"slot": 0, "sequence_id": 1, "call_messages": 1, "nfs4": [],
        "slot_answer": "replayed (same reply)", "expected": "x", "replay_difference": null,
        "slot_after": "NFS4_OK seq=2"});
    json.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let v41: V41Verdict = serde_json::from_value(json).unwrap();
    let result = v41_result(&who(), &v41);
    assert_eq!(result.verdict, "fail");
    assert_eq!(result.fields["slot_answer"], "replayed_(same_reply)");
    assert_eq!(result.fields["slot_after"], "NFS4_OK_seq_2");
    assert!(result.fields["reason"].ends_with("on_a_live_connection"));
}

#[test]
fn bench_and_fuzz_results_read_what_rig_wrote() {
    let m: Measurement = serde_json::from_str(
        r#"{"server": "10.99.0.1:20049", "op": "read", "size": 4096, "size_requested": 65536,
        "size_used": 4096, "limited_by": "FSINFO rtmax", "fsinfo_rtmax": 4096,
        "fsinfo_wtmax": null, "calls": 10, "errors": 0, "seconds": 5.0, "calls_per_sec": 2.5,
        "latency_p50_us": 100.25, "latency_p99_us": 300.0, "mib_per_sec": 0.009765625,
        "data_path": "rdma"}"#,
    )
    .unwrap();
    let mut result = GuestResult::new("read-4k", "cli", "pass");
    bench_fields(&mut result, &m);
    assert_eq!(result.fields["limited_by"], "FSINFO_rtmax");
    assert_eq!(result.fields["fsinfo_wtmax"], "null");
    assert_eq!(result.fields["p50_us"], "100.25");
    assert_eq!(result.fields["p99_us"], "300.0");
    let report = wirefuzz::differential::Report {
        cases_sent: 754,
        cases_per_sec: 25.1,
        ..Default::default()
    };
    let back: wirefuzz::differential::Report =
        serde_json::from_str(&serde_json::to_string_pretty(&report).unwrap()).unwrap();
    let mut fuzz = GuestResult::new("fuzz", "cli", "pass");
    fuzz_fields(&mut fuzz, &back, false);
    assert_eq!(fuzz.fields["cases"], "754");
    assert_eq!(fuzz.fields["cases_per_sec"], "25.1");
    assert_eq!(fuzz.fields["signatures"], "");
    assert_eq!(fuzz.fields["divergence_keys"], "0");
    assert_eq!(fuzz.fields["stopped_by_kernel_watch"], "no");
    // Green only when the watch did not stop it and every divergence is explained.
    assert_eq!(fuzz_verdict(&back, false), "pass");
    assert_eq!(fuzz_verdict(&back, true), "fail");
    let unexplained = wirefuzz::differential::Report {
        unknown_divergences: 4,
        ..back.clone()
    };
    assert_eq!(fuzz_verdict(&unexplained, false), "fail");
}

#[test]
fn a_namespace_procedure_executed_twice_fails_the_kernel_clients_run() {
    let stats = |remove: usize| {
        format!(
            r#"{{"executions": [
            {{"slot": 0, "xid": 1, "procedure": "WRITE", "executions": 2, "statuses": []}},
            {{"slot": 0, "xid": 2, "procedure": "REMOVE", "executions": {remove}, "statuses": []}},
            {{"slot": 1, "xid": 3, "procedure": "GETATTR", "executions": 3, "statuses": []}}],
            "drc_decisions": {{"hit": 4, "miss": 9}}}}"#
        )
    };
    let once = ServeCounts::parse(&stats(1)).unwrap();
    let result = serve_stats_result(&who(), &once, 1234);
    assert_eq!(result.verdict, "pass");
    let fields: Vec<(&str, &str)> = result
        .fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        fields,
        [
            ("double_namespace_executions", "0"),
            ("double_write_executions", "1"),
            ("drc_hits", "4"),
            ("stats_bytes", "1234"),
            ("xids_executed", "3"),
        ]
    );
    let twice = ServeCounts::parse(&stats(2)).unwrap();
    assert_eq!(serve_stats_result(&who(), &twice, 1).verdict, "fail");
    let nothing = ServeCounts::parse(r#"{"executions": []}"#).unwrap();
    let empty = serve_stats_result(&who(), &nothing, 1);
    assert_eq!(
        (empty.verdict.as_str(), empty.fields["drc_hits"].as_str()),
        ("fail", "")
    );
}

#[test]
fn svcrdma_results_are_one_per_rule_then_the_runs_own() {
    let row = |rule: &str, kind: &str, expected: &str, observed: Option<&str>, ok: bool| {
        let observed = observed.map_or("null".to_string(), |o| format!("\"{o}\""));
        serde_json::from_str::<Row>(&format!(
            r#"{{"rule": "{rule}", "case": "{kind}", "expected": "{expected}",
            "observed": {observed}, "ok": {ok}, "bytes_hex": "", "expected_note": "",
            "notes": []}}"#
        ))
        .unwrap()
    };
    let mut skipped = row("read-overlap", "negative", "err-chunk", None, true);
    skipped.skipped = Some("crashed 6.1.176".into());
    let rows = vec![
        row(
            "bad-version",
            "negative",
            "err-vers",
            Some("err-vers"),
            true,
        ),
        row("bad-version", "positive", "reply", Some("reply"), true),
        row(
            "write-segcount-zero",
            "negative",
            "reply",
            Some("err-chunk"),
            false,
        ),
        row(
            "write-segcount-zero",
            "positive",
            "reply",
            Some("reply"),
            true,
        ),
        skipped,
        row("read-overlap", "positive", "reply", Some("reply"), true),
    ];
    let run = RulesRun {
        kernel: "debian-6.12.118",
        release: "6.12.118+deb13-amd64",
        rc: 1,
        stderr: "",
        dangerous: false,
    };
    let results = svcrdma_results(&who(), &rows, &run);
    let lines: Vec<String> = results
        .iter()
        .map(|r| {
            let fields: Vec<String> = r.fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{} {}", r.verdict, fields.join(" "))
        })
        .collect();
    assert_eq!(
        lines,
        [
            "pass control=reply expected=err-vers kernel=debian-6.12.118 observed=err-vers rule=bad-version",
            "fail control=reply expected=reply kernel=debian-6.12.118 observed=err-chunk rule=write-segcount-zero",
            "pass control=reply expected=err-chunk kernel=debian-6.12.118 observed=- rule=read-overlap skipped=dangerous",
            "pass dangerous= kernel=debian-6.12.118 rc=1 release=6.12.118+deb13-amd64 rules_run=3 step=summary",
        ]
    );
    // A run that stopped: the rules it ran, then its failure.
    let stopped = RulesRun {
        rc: 2,
        stderr: "rig: connect refused",
        ..run
    };
    let results = svcrdma_results(&who(), &rows[..2], &stopped);
    assert_eq!(results.len(), 2);
    assert_eq!(results[1].verdict, "fail");
    assert_eq!(results[1].fields["error"], "rig:_connect_refused");
    assert_eq!(results[1].fields["rules_run"], "1");
}

#[test]
fn a_source_build_of_a_measured_version_gets_that_versions_profile() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/svcrdma-profiles");
    let mut profiles: Vec<(PathBuf, KernelProfile)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| {
            let profile = read_profile(&p).unwrap();
            (p, profile)
        })
        .collect();
    profiles.sort_by(|a, b| a.0.cmp(&b.0));
    let name = |release: &str| {
        profile_for_release(&profiles, release)
            .and_then(|p| p.file_stem())
            .map(|s| s.to_string_lossy().into_owned())
    };
    // Debian's binaries by their release; the siw lanes' source builds by their version.
    assert_eq!(
        name("6.12.118+deb13-amd64").as_deref(),
        Some("debian-6.12.118")
    );
    assert_eq!(name("6.1.0-57-amd64").as_deref(), Some("debian-6.1.192"));
    assert_eq!(name("6.12.118").as_deref(), Some("debian-6.12.118"));
    assert_eq!(name("6.1.192").as_deref(), Some("debian-6.1.192"));
    assert_eq!(name("7.2.13").as_deref(), Some("debian-7.2.13"));
    // A version nobody measured gets none (the suite fails with the reason).
    assert_eq!(name("6.12.119"), None);
    assert_eq!(name("2026"), None);
}

/// A drc case's end on the server guest, from the files observe-nfsd.sh leaves it: the deltas
/// and the judge's key lines in kernel.txt, the trace copy with its sources line, the log, and
/// the RESULT with the kernel's observations after the judgement.
#[test]
fn a_counted_case_writes_what_the_script_wrote_and_judges_the_copy() {
    let dir = std::env::temp_dir().join(format!("rig-counted-case-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (before, after) = (dir.join("before"), dir.join("after"));
    std::fs::create_dir_all(&before).unwrap();
    std::fs::create_dir_all(&after).unwrap();
    let rcs = |hits: u32, misses: u32| {
        format!(
            "max entries:           2048\nnum entries:           {misses}\nhash buckets:          64\n\
             mem usage:             1000\ncache hits:            {hits}\ncache misses:          {misses}\n\
             not cached:            1\npayload misses:        0\n"
        )
    };
    let rpc = |calls: u32, removes: u32| {
        format!(
            "rc 0 0 1\nrpc {calls} 0 0 0 0\nproc3 22 1 0 0 0 0 0 0 0 0 0 0 0 {removes} 0 0 0 0 0 0 0 0 0\n"
        )
    };
    std::fs::write(before.join("rcs"), rcs(0, 0)).unwrap();
    std::fs::write(after.join("rcs"), rcs(1, 1)).unwrap();
    std::fs::write(before.join("rpc"), rpc(1, 0)).unwrap();
    std::fs::write(after.join("rpc"), rpc(3, 2)).unwrap();
    std::fs::write(before.join("dmesg"), "[ 1.0] a\n[ 2.0] b\n").unwrap();
    std::fs::write(after.join("dmesg"), "[ 1.0] a\n[ 2.0] b\n[ 3.0] nfsd: c\n").unwrap();
    let verdict_file = dir.join("nfsd.after-ack.verdict.json");
    let v = r#"[{"scenario": "after-ack", "label": "nfsd", "procedure": "REMOVE", "outcome": "ok",
        "xid": 1514078226, "transmissions": 2, "argument_sets": 1, "replies": 2,
        "replies_identical": true, "statuses": ["NFS3_OK", "NFS3_OK"], "executions": 1,
        "executions_basis": "inferred", "inference": "x", "judgement": "pass", "failure": "",
        "credits_requested": 8, "credits_granted": 8, "unanswered": 0, "credits_balanced": true,
        "transport_errors": 0, "connects": 1, "connection": "up", "note": "n"}]"#;
    std::fs::write(&verdict_file, v).unwrap();
    let trace = dir.join("trace");
    let trace_text = "# tracer: nop\n\
        \x20 nfsd-1 [000] ..... 1.1: svc_process: addr=10.99.0.2 xid=0x5a3f0012 service=nfsd vers=3 proc=REMOVE\n\
        \x20 nfsd-1 [000] ..... 1.2: rig_cache_update: (nfsd_cache_update+0x0/0x2a0 [nfsd])\n\
        \x20 nfsd-1 [000] ..... 1.3: svc_process: addr=10.99.0.2 xid=0x5a3f0012 service=nfsd vers=3 proc=REMOVE\n\
        \x20 nfsd-1 [000] ..... 1.4: nfsd_drc_found: boot_time=  6571a2b3c xid=0x5a3f0012 result=REPLY\n";
    std::fs::write(&trace, trace_text).unwrap();
    let sources = "sunrpc:svc_process nfsd:nfsd_drc_found kprobes:rig_cache_update";
    let (ftrace, kernel_txt) = (dir.join("ftrace.txt"), dir.join("kernel.txt"));
    let case = CountedCase {
        verdict: &verdict_file,
        trace: &trace,
        trace_sources: sources,
        ftrace: &ftrace,
        before: &before,
        after: &after,
        kernel_txt: &kernel_txt,
    };
    let srv = Who {
        case: "nfsd.after-ack".into(),
        role: "srv".into(),
    };
    let (result, log) = counted_case(&srv, &case, "6.12.118").unwrap();
    assert_eq!(
        std::fs::read_to_string(&ftrace).unwrap(),
        format!("# rig-sources: {sources}\n{trace_text}")
    );
    let kernel = std::fs::read_to_string(&kernel_txt).unwrap();
    assert!(
        kernel.starts_with("num_entries=1\ncache_hits=1\n"),
        "{kernel}"
    );
    assert!(
        kernel.contains("\nproc3_remove=2\nexecutions_counted=1\n"),
        "{kernel}"
    );
    assert!(
        !kernel.contains("rig judge:"),
        "the summary line is not a key line: {kernel}"
    );
    assert!(
        log.starts_with("== rig judge (exit 0)\nrig judge: pass"),
        "{log}"
    );
    assert!(log.contains(&format!(
        "== deltas\n{kernel}== new dmesg lines (1)\n[ 3.0] nfsd: c\n"
    )));
    assert_eq!(result.verdict, "pass");
    let field = |k: &str| result.fields.get(k).map(String::as_str);
    assert_eq!(field("judge"), Some("pass"));
    assert_eq!(field("kernel"), Some("6.12.118"));
    assert_eq!(field("dmesg_new"), Some("1"));
    assert_eq!(field("proc3_remove"), Some("2"));
    assert_eq!(field("executions_counted"), Some("1"));
    // A trace over the limit is copied one byte over it, and the judge refuses the copy.
    let big = vec![b'x'; MAX_INPUT as usize + 10];
    std::fs::write(&trace, big).unwrap();
    let (result, _) = counted_case(&srv, &case, "6.12.118").unwrap();
    assert_eq!(std::fs::metadata(&ftrace).unwrap().len(), TRACE_COPY_LIMIT);
    assert_eq!(
        (result.verdict.as_str(), field_of(&result, "judge")),
        ("fail", "error")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn field_of<'a>(result: &'a GuestResult, key: &str) -> &'a str {
    result.fields.get(key).map_or("", String::as_str)
}

#[test]
fn only_the_judges_key_lines_join_the_deltas() {
    assert!(judge_key_line("executions_counted=1"));
    assert!(!judge_key_line("rig judge: pass: a=b"));
    assert!(!judge_key_line("Executions=1"));
    assert!(!judge_key_line("=1"));
    assert!(!judge_key_line("no equals"));
}
