//! The KCIDB output against KCIDB's own schema (fixtures/kcidb/), and what it says of each case.

use std::collections::BTreeMap;

use super::*;
use crate::results::ResultLine;

fn case(name: &str, verdict: Verdict, reasons: &[&str], results: Vec<ResultLine>) -> CaseOutcome {
    CaseOutcome {
        name: name.into(),
        verdict,
        duration_ms: 1500,
        reasons: reasons.iter().map(|r| r.to_string()).collect(),
        results,
    }
}

fn judge_error() -> ResultLine {
    ResultLine {
        case: "nfsd.deferred".into(),
        role: "srv".into(),
        verdict: "fail".into(),
        fields: BTreeMap::from([("judge".into(), "error".into())]),
    }
}

fn run(kernel: &str, suite: &str, provenance: Provenance, cases: Vec<CaseOutcome>) -> KernelRun {
    KernelRun {
        kernel: kernel.into(),
        release: "6.12.118+deb13-amd64".into(),
        version: "6.12.118-1".into(),
        origin: "trixie-security".into(),
        provenance,
        accel: "tcg".into(),
        suite: suite.into(),
        wall_ms: 1,
        boot_ms: None,
        cases,
        artifacts: Vec::new(),
        error: None,
        attempt: 1,
        guest_died: None,
        transport: Default::default(),
        retried_after: None,
        gate: None,
    }
}

/// A run of every kind of kernel and every verdict.
fn report() -> Report {
    let debian = Provenance {
        source: "linux-image-6.12.118+deb13-amd64".into(),
        config: "debian".into(),
        key: "0eba1aa1b956211a".into(),
        ..Provenance::default()
    };
    let mutant = Provenance {
        source: "linux-source-6.12 6.12.117-1".into(),
        patches: vec!["drc-mutants".into()],
        patchset_hash: "a".repeat(64),
        config: "rig".into(),
        compiler: Some("gcc (Debian 12.2.0-14+deb12u1) 12.2.0".into()),
        key: "1f2e3d4c5b6a7988".into(),
        ..Provenance::default()
    };
    let developer = Provenance {
        source: "--kernel-src /src/linux".into(),
        commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        patches: vec![
            "series \"[PATCH 0/2] nfsd: evict acked replies\" <cover.1@example.org> patchset bb"
                .into(),
        ],
        patchset_hash: "b".repeat(64),
        message_id: Some("cover.1@example.org".into()),
        config: "rig+kasan".into(),
        compiler: Some("gcc 12.2.0".into()),
        key: "99aa".into(),
    };
    let mut gated = run(
        "linux-6.12-acked-evict",
        "drc",
        mutant,
        vec![case(
            "nfsd.after-ack",
            Verdict::Caught,
            &["srv: verdict=fail judge=fail"],
            vec![],
        )],
    );
    gated.gate = Some("the gate caught 1 of 1 expected".into());
    gated.origin = "source linux-source-6.12 + drc-mutants".into();
    Report {
        runs: vec![
            run(
                "linux-6.12",
                "selftest",
                debian.clone(),
                vec![
                    case("acked.after-ack-late", Verdict::Pass, &[], vec![]),
                    case("classic.burst", Verdict::Skip, &[], vec![]),
                    case(
                        "nfsd.v41-false-retry",
                        Verdict::Known,
                        &["cli: exit 1"],
                        vec![],
                    ),
                ],
            ),
            // The same kernel in another suite: one checkout and one build for both.
            run(
                "linux-6.12",
                "drc",
                debian,
                vec![
                    case(
                        "nfsd.deferred",
                        Verdict::Fail,
                        &["srv: verdict=fail judge=error"],
                        vec![judge_error()],
                    ),
                    case(
                        "nfsd.after-ack",
                        Verdict::Fail,
                        &["srv: verdict=fail judge=fail"],
                        vec![],
                    ),
                    case("nfsd.burst", Verdict::NotRun, &["cli: did not run"], vec![]),
                    case(
                        "nfsd.once",
                        Verdict::Timeout,
                        &["cli: killed after 60s"],
                        vec![],
                    ),
                ],
            ),
            gated,
            run(
                "custom",
                "smoke",
                developer,
                vec![case("nfs3", Verdict::Pass, &[], vec![])],
            ),
        ],
    }
}

/// KCIDB's schema. Its patterns write NUL as the ECMA-262 escape `\0`, which the validator's own
/// check of the schema (formats on) refuses as a regex; `\x00` is the same character.
fn schema() -> serde_json::Value {
    let path = crate::cache::workspace_root().join("fixtures/kcidb/kcidb-v5.3.schema.json");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text.replace(r"\\0", r"\\x00")).unwrap()
}

#[test]
fn the_output_is_valid_kcidb_v5() {
    let out = kcidb(&report(), "20261205T090848Z-a5e70e");
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema())
        .expect("KCIDB's schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&out)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // And the check can fail: an id of another form, a status KCIDB does not know.
    let mut bad = out.clone();
    bad["tests"][0]["status"] = json!("CAUGHT");
    bad["builds"][0]["id"] = json!("no origin prefix");
    assert_eq!(validator.iter_errors(&bad).count(), 2);
}

#[test]
fn each_case_is_a_test_with_the_status_kcidb_means() {
    let out = kcidb(&report(), "r1");
    let by_path: BTreeMap<String, (&str, &serde_json::Value)> = out["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                format!(
                    "{} {}",
                    t["build_id"].as_str().unwrap(),
                    t["path"].as_str().unwrap()
                ),
                (t["status"].as_str().unwrap(), &t["misc"]),
            )
        })
        .collect();
    let status = |build: &str, path: &str| by_path[&format!("rpcrdma_rig:build:{build} {path}")].0;
    let debian = "linux-6.12:0eba1aa1b956211a";
    assert_eq!(
        status(debian, "rpcrdma.selftest.acked.after-ack-late"),
        "PASS"
    );
    assert_eq!(status(debian, "rpcrdma.selftest.classic.burst"), "SKIP");
    // A known failure is a failure, marked as expected.
    assert_eq!(
        status(debian, "rpcrdma.selftest.nfsd.v41-false-retry"),
        "FAIL"
    );
    assert_eq!(
        by_path[&format!("rpcrdma_rig:build:{debian} rpcrdma.selftest.nfsd.v41-false-retry")].1
            ["expected"],
        "known"
    );
    // A count that failed is the harness's: MISS, as a case that never ran.
    assert_eq!(status(debian, "rpcrdma.drc.nfsd.deferred"), "MISS");
    assert_eq!(status(debian, "rpcrdma.drc.nfsd.burst"), "MISS");
    assert_eq!(status(debian, "rpcrdma.drc.nfsd.after-ack"), "FAIL");
    assert_eq!(status(debian, "rpcrdma.drc.nfsd.once"), "FAIL");
    assert_eq!(
        status(
            "linux-6.12-acked-evict:1f2e3d4c5b6a7988",
            "rpcrdma.drc.nfsd.after-ack"
        ),
        "FAIL"
    );
    assert_eq!(out["tests"].as_array().unwrap().len(), 9);
}

#[test]
fn one_checkout_per_kernel_names_its_source_commit_and_series() {
    let out = kcidb(&report(), "r1");
    let checkouts = out["checkouts"].as_array().unwrap();
    assert_eq!(
        checkouts.len(),
        3,
        "linux-6.12 ran two suites on one checkout"
    );
    assert_eq!(out["builds"].as_array().unwrap().len(), 3);
    let developer = checkouts
        .iter()
        .find(|c| c["tree_name"] == "local")
        .expect("the developer's tree");
    assert_eq!(
        developer["git_commit_hash"],
        "0123456789abcdef0123456789abcdef01234567"
    );
    assert_eq!(developer["patchset_hash"], "b".repeat(64));
    assert_eq!(developer["message_id"], "cover.1@example.org");
    assert!(checkouts.iter().any(|c| c["tree_name"] == "debian-source"));
    let debian = &checkouts[0];
    assert_eq!(debian["tree_name"], "debian-trixie-security");
    assert_eq!(debian["git_commit_name"], "6.12.118-1");
    assert_eq!(debian["patchset_hash"], "");
    assert!(debian.get("git_commit_hash").is_none());
}

#[test]
fn case_names_become_dotted_paths_kcidb_accepts() {
    assert_eq!(path_part("acked.after-ack"), "acked.after-ack");
    assert_eq!(path_part("odd name/with+chars"), "odd_name_with_chars");
    assert_eq!(path_part("a..b"), "a.b");
}
