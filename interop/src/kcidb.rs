//! The run as KCIDB I/O data (schema v5.3, what kernelci.org's result database takes): a
//! checkout and a build per kernel, a test per case, so a kernel CI system reads the rig's results
//! as its own. Written by `interop run --kcidb FILE` and `interop-post kcidb`; checked against
//! KCIDB's schema (`fixtures/kcidb/`).
//!
//! Statuses (KCIDB's words): a case that passed is PASS; one the kernel failed (a double
//! execution, a timeout, a kernel death) FAIL; one that failed on the harness alone — a count
//! that failed (`judge=error`), a case that never ran — MISS; a skip SKIP. A failure the matrix
//! expects (a mutant the gate caught, a known failure with its finding) stays FAIL, marked in
//! `misc.expected` with the rig's verdict, so a consumer can tell it from a regression.

use serde_json::{json, Map, Value};

use crate::report::{KernelRun, Provenance, Report};
use crate::results::{CaseOutcome, Verdict};

/// KCIDB's name for this CI system (an `origin` is `[a-z0-9_]+`).
pub const ORIGIN: &str = "rpcrdma_rig";
/// The schema version written.
pub const VERSION: (u32, u32) = (5, 3);
/// The root of every test path: `rpcrdma.<suite>.<case>`.
pub const TEST_ROOT: &str = "rpcrdma";
/// Longest `log_excerpt` (KCIDB's limit is 16 KiB).
const MAX_EXCERPT: usize = 16 * 1024;

/// The KCIDB status of a case.
pub fn status(case: &CaseOutcome) -> &'static str {
    match case.verdict {
        Verdict::Pass => "PASS",
        Verdict::Skip => "SKIP",
        Verdict::NotRun => "MISS",
        Verdict::Fail if crate::retry::retryable(case).is_ok() => "MISS",
        Verdict::Fail | Verdict::Timeout | Verdict::Caught | Verdict::Known => "FAIL",
    }
}

/// A test path segment: KCIDB allows `[a-zA-Z0-9_-]`; a case name's dots (`acked.after-ack`)
/// become path levels, anything else `_`.
fn path_part(name: &str) -> String {
    name.split('.')
        .map(|part| {
            part.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect::<String>()
        })
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(".")
}

/// An id of this origin: `rpcrdma_rig:<parts joined by :>`.
fn id(parts: &[&str]) -> String {
    format!("{ORIGIN}:{}", parts.join(":"))
}

/// What identifies a kernel's checkout and build: its inputs' key, else its name and version.
fn kernel_key(run: &KernelRun) -> String {
    if run.provenance.key.is_empty() {
        format!("{}:{}", run.kernel, run.version)
    } else {
        format!("{}:{}", run.kernel, run.provenance.key)
    }
}

fn insert_some(map: &mut Map<String, Value>, key: &str, value: Option<String>) {
    if let Some(value) = value.filter(|v| !v.is_empty()) {
        map.insert(key.to_string(), Value::String(value));
    }
}

fn checkout(run: &KernelRun) -> Value {
    let p: &Provenance = &run.provenance;
    let mut c = Map::new();
    c.insert("id".into(), json!(id(&["checkout", &kernel_key(run)])));
    c.insert("origin".into(), json!(ORIGIN));
    c.insert("tree_name".into(), json!(tree_name(run)));
    insert_some(
        &mut c,
        "git_commit_hash",
        p.commit
            .clone()
            .filter(|h| h.len() == 40 && h.bytes().all(|b| b.is_ascii_hexdigit())),
    );
    insert_some(&mut c, "git_commit_name", Some(run.version.clone()));
    c.insert("patchset_hash".into(), json!(p.patchset_hash));
    insert_some(
        &mut c,
        "message_id",
        p.message_id
            .as_ref()
            .map(|m| m.trim_matches(['<', '>']).to_string()),
    );
    c.insert(
        "comment".into(),
        json!(format!("{} {}", run.kernel, run.version_and_origin())),
    );
    c.insert("valid".into(), json!(true));
    c.insert(
        "misc".into(),
        json!({"source": p.source, "origin": run.origin, "patches": p.patches}),
    );
    Value::Object(c)
}

/// Where the source came from, as KCIDB names trees: the Debian pocket of a packaged kernel,
/// `local` for a developer's tree or image.
fn tree_name(run: &KernelRun) -> String {
    let p = &run.provenance;
    if p.source.starts_with("--kernel") || run.origin.starts_with("--kernel") {
        "local".to_string()
    } else if run.origin.starts_with("source ") {
        "debian-source".to_string()
    } else {
        format!("debian-{}", run.origin)
    }
}

fn build(run: &KernelRun) -> Value {
    let p = &run.provenance;
    let mut b = Map::new();
    let key = kernel_key(run);
    b.insert("id".into(), json!(id(&["build", &key])));
    b.insert("checkout_id".into(), json!(id(&["checkout", &key])));
    b.insert("origin".into(), json!(ORIGIN));
    b.insert("architecture".into(), json!("x86_64"));
    insert_some(&mut b, "config_name", Some(p.config.clone()));
    insert_some(&mut b, "compiler", p.compiler.clone());
    // The kernel booted and ran its suites: the build is good; one that did not build never
    // reaches a report.
    b.insert("status".into(), json!("PASS"));
    b.insert("comment".into(), json!(run.release));
    Value::Object(b)
}

fn test(run: &KernelRun, run_id: &str, case: &CaseOutcome) -> Value {
    let key = kernel_key(run);
    let mut t = Map::new();
    t.insert(
        "id".into(),
        json!(id(&[
            "test",
            run_id,
            &run.kernel,
            &run.suite,
            &case.name,
            &run.attempt.to_string()
        ])),
    );
    t.insert("build_id".into(), json!(id(&["build", &key])));
    t.insert("origin".into(), json!(ORIGIN));
    t.insert(
        "path".into(),
        json!(format!(
            "{TEST_ROOT}.{}.{}",
            path_part(&run.suite),
            path_part(&case.name)
        )),
    );
    t.insert("status".into(), json!(status(case)));
    t.insert("duration".into(), json!(case.duration_ms as f64 / 1000.0));
    t.insert(
        "environment".into(),
        json!({
            "comment": format!("two qemu guests ({}) over {}, kernel {}", run.accel, match run.transport {
                crate::matrix::Transport::Rxe => "soft-RoCE (rdma_rxe)",
                crate::matrix::Transport::Siw => "soft-iWARP (siw)",
            }, run.release),
            "misc": {"accel": run.accel, "release": run.release}
        }),
    );
    if !case.reasons.is_empty() {
        let mut excerpt = case.reasons.join("\n");
        if excerpt.len() > MAX_EXCERPT {
            let mut end = MAX_EXCERPT;
            while !excerpt.is_char_boundary(end) {
                end -= 1;
            }
            excerpt.truncate(end);
        }
        t.insert("log_excerpt".into(), json!(excerpt.replace('\0', "")));
    }
    let mut misc = Map::new();
    misc.insert("verdict".into(), json!(case.verdict.as_str()));
    if matches!(case.verdict, Verdict::Caught | Verdict::Known) {
        misc.insert("expected".into(), json!(case.verdict.as_str()));
    }
    if let Some(gate) = &run.gate {
        misc.insert("gate".into(), json!(gate));
    }
    t.insert("misc".into(), Value::Object(misc));
    Value::Object(t)
}

/// The whole report as one KCIDB I/O object; `run_id` names the run (its directory name).
pub fn kcidb(report: &Report, run_id: &str) -> Value {
    let mut checkouts: Vec<Value> = Vec::new();
    let mut builds: Vec<Value> = Vec::new();
    let mut tests: Vec<Value> = Vec::new();
    for run in &report.runs {
        let checkout = checkout(run);
        if !checkouts.iter().any(|c| c["id"] == checkout["id"]) {
            checkouts.push(checkout);
            builds.push(build(run));
        }
        tests.extend(run.cases.iter().map(|case| test(run, run_id, case)));
    }
    json!({
        "version": {"major": VERSION.0, "minor": VERSION.1},
        "checkouts": checkouts,
        "builds": builds,
        "tests": tests,
    })
}

#[cfg(test)]
mod tests;
