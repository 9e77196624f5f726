//! The retransmitting RPC-over-RDMA client: a catalogue of named scenarios that send the same XID
//! again on a live connection (before the reply, after it, after its Send completed, with changed
//! arguments, over credit, across a reconnect) and verdicts that say exactly what happened.
//!
//! Everything runs over the deterministic simulator: same seed, same verdicts, byte for byte.
//! Architecture Invariant: verdicts are counted, not inferred — executions come from the server's
//! own per-(XID, procedure) counter, replies from the requester's record.
#![forbid(unsafe_code)]

#[doc(hidden)]
pub mod fuzzing;
pub mod harness;
pub mod scenarios;
pub mod trace;

use serde::Serialize;

use crate::harness::{Harness, SimDriver};
use crate::scenarios::{catalogue, Driver, Outcome, Scenario};

/// The default scheduler seed of the expected table.
pub const DEFAULT_SEED: u64 = 1;

/// What happened to the XID under test, for one scenario under one DRC policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub scenario: &'static str,
    pub policy: String,
    pub procedure: &'static str,
    /// Transmissions of the XID the requester sent.
    pub transmissions: usize,
    /// Times the server executed the procedure for the XID.
    pub executions: usize,
    /// Replies the requester received for the XID.
    pub replies: usize,
    /// Whether every reply equals the first, byte for byte (message and Write chunk data).
    pub replies_identical: bool,
    /// The NFS status of each reply, in arrival order.
    pub statuses: Vec<String>,
    /// The server's DRC decisions for the XID, in order.
    pub drc: Vec<&'static str>,
    /// Requester has nothing outstanding, server nothing unanswered, every Receive reposted.
    pub credits_balanced: bool,
    /// "up" or "down" at the end.
    pub connection: &'static str,
    pub note: String,
}

/// A verdict plus the normalised trace of the run.
#[derive(Debug, Clone)]
pub struct Run {
    pub verdict: Verdict,
    pub trace: Vec<String>,
}

/// Why a run could not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    UnknownPolicy(String),
    UnknownScenario(String),
    /// A scenario the simulator cannot run, and why (it needs kernel nfsd's export cache).
    Unsupported {
        scenario: &'static str,
        reason: &'static str,
    },
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::UnknownPolicy(p) => write!(
                f,
                "unknown policy {p:?} (known: {})",
                server::drc::POLICY_NAMES.join(", ")
            ),
            RunError::UnknownScenario(s) => write!(
                f,
                "unknown scenario {s:?} (known: {})",
                scenario_names().join(", ")
            ),
            RunError::Unsupported { scenario, reason } => {
                write!(
                    f,
                    "scenario {scenario:?} cannot run in the simulator: {reason}"
                )
            }
        }
    }
}

impl std::error::Error for RunError {}

/// Names of every scenario, in table order.
pub fn scenario_names() -> Vec<&'static str> {
    catalogue().iter().map(|s| s.name).collect()
}

fn verdict_of(scenario: &Scenario, policy: &str, h: &Harness, xid: u32, note: String) -> Verdict {
    let replies = h.replies(xid);
    let first = replies.first();
    let replies_identical = replies.iter().all(|r| {
        first.is_some_and(|f| {
            f.reply.message == r.reply.message
                && f.reply.write_chunk_data == r.reply.write_chunk_data
        })
    });
    Verdict {
        scenario: scenario.name,
        policy: policy.to_string(),
        procedure: scenario.procedure,
        transmissions: h.transmissions(xid),
        executions: h.sim.server.executions_of(xid, scenario.procedure),
        replies: replies.len(),
        replies_identical,
        statuses: replies.iter().map(|r| r.status.clone()).collect(),
        drc: h.decisions(xid),
        credits_balanced: h.credits_balanced(),
        connection: if h.connected() { "up" } else { "down" },
        note,
    }
}

/// Run one scenario under one policy.
pub fn run_one(scenario: &Scenario, policy: &str, seed: u64) -> Result<Run, RunError> {
    if let Some(reason) = scenario.unsupported_by(<SimDriver as Driver>::supports) {
        return Err(RunError::Unsupported {
            scenario: scenario.name,
            reason,
        });
    }
    let mut h =
        Harness::new(policy, seed).ok_or_else(|| RunError::UnknownPolicy(policy.to_string()))?;
    // Every scenario mounts first; the simulator supports every control but kernel nfsd's
    // export cache (those scenarios are not run here) and never fails.
    h.mount();
    let outcome = (scenario.run)(&mut SimDriver { harness: &mut h }).unwrap_or_else(|e| Outcome {
        xid: 0,
        note: format!("driver error: {e}"),
        inference: None,
    });
    h.settle();
    let verdict = verdict_of(scenario, policy, &h, outcome.xid, outcome.note);
    Ok(Run {
        verdict,
        trace: trace::normalise(h.trace()),
    })
}

/// Run the matrix, optionally filtered to one policy and/or one scenario.
pub fn run_matrix(
    policy: Option<&str>,
    scenario: Option<&str>,
    seed: u64,
) -> Result<Vec<Run>, RunError> {
    let policies: Vec<&str> = match policy {
        Some(p) if server::drc::POLICY_NAMES.contains(&p) => vec![p],
        Some(p) => return Err(RunError::UnknownPolicy(p.to_string())),
        None => server::drc::POLICY_NAMES.to_vec(),
    };
    let scenarios: Vec<Scenario> = catalogue()
        .into_iter()
        .filter(|s| scenario.is_none_or(|name| s.name == name))
        .collect();
    if scenarios.is_empty() {
        return Err(RunError::UnknownScenario(
            scenario.unwrap_or("").to_string(),
        ));
    }
    // The whole matrix leaves out what the simulator cannot run; one asked for by name says why.
    let scenarios: Vec<Scenario> = if scenario.is_some() {
        scenarios
    } else {
        scenarios
            .into_iter()
            .filter(|s| s.unsupported_by(<SimDriver as Driver>::supports).is_none())
            .collect()
    };
    let mut runs = Vec::new();
    for s in &scenarios {
        for p in &policies {
            runs.push(run_one(s, p, seed)?);
        }
    }
    Ok(runs)
}

/// The verdicts as pretty JSON (one object per scenario × policy), newline-terminated.
pub fn verdicts_json(runs: &[Run]) -> String {
    let verdicts: Vec<&Verdict> = runs.iter().map(|r| &r.verdict).collect();
    let mut out = serde_json::to_string_pretty(&verdicts).unwrap_or_default();
    out.push('\n');
    out
}

/// The verdicts as an aligned text table.
pub fn verdicts_table(runs: &[Run]) -> String {
    let header = [
        "scenario",
        "policy",
        "proc",
        "tx",
        "exec",
        "replies",
        "identical",
        "statuses",
        "drc",
        "credits",
        "conn",
    ];
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let v = &r.verdict;
            vec![
                v.scenario.to_string(),
                v.policy.clone(),
                v.procedure.to_string(),
                v.transmissions.to_string(),
                v.executions.to_string(),
                format!("{}/{}", v.replies, v.transmissions),
                if v.replies_identical { "yes" } else { "NO" }.to_string(),
                v.statuses
                    .iter()
                    .map(|s| s.trim_start_matches("NFS3ERR_").trim_start_matches("NFS3_"))
                    .collect::<Vec<_>>()
                    .join(","),
                v.drc.join(","),
                if v.credits_balanced {
                    "balanced"
                } else {
                    "LEAKED"
                }
                .to_string(),
                v.connection.to_string(),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<String>, out: &mut String| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(padded.join("  ").trim_end());
        out.push('\n');
    };
    line(header.iter().map(|s| s.to_string()).collect(), &mut out);
    for row in rows {
        line(row, &mut out);
    }
    out
}
