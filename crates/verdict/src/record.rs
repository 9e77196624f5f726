//! The verdict on one scenario run, as a record: what `rig scenarios` writes (executions
//! inferred from NFS statuses), `rig judge` rewrites (executions counted on the server) and
//! `rig guest` reads back for the case's RESULT line — one type for all three, judged by the one
//! rule ([`crate::judge::judge`]).

use serde::{Deserialize, Serialize};

use crate::judge::{self, Basis, Observation};

/// What was observed for the XID under test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub scenario: String,
    pub label: String,
    pub procedure: String,
    /// "ok", "unsupported-on-rdma" or "error".
    pub outcome: String,
    /// The XID under test (0 when the scenario did not run).
    #[serde(default)]
    pub xid: u32,
    pub transmissions: usize,
    /// Distinct call messages transmitted with that XID (2 for changed-args-same-xid).
    #[serde(default)]
    pub argument_sets: usize,
    pub replies: usize,
    pub replies_identical: bool,
    pub statuses: Vec<String>,
    /// Executions *inferred* from the statuses by `rig scenarios`, or *counted* on the server
    /// once `rig judge` has seen its trace or stats; null when nothing can tell.
    pub executions: Option<usize>,
    /// "inferred" (from NFS statuses), "counted" (by `rig judge`) or "none" (no call under test).
    pub executions_basis: String,
    /// How the statuses were read (kept when `rig judge` replaces the count).
    pub inference: String,
    /// "pass" or "fail", by [`judge::judge`]; "skip" when the scenario sent no call under test
    /// because it cannot run on this transport ([`UNSUPPORTED`]); "error" when it failed before
    /// reaching a verdict. Neither of the last two is a pass.
    #[serde(default = "pass")]
    pub judgement: String,
    /// Why the verdict fails; empty when it passes.
    #[serde(default)]
    pub failure: String,
    /// Credits we asked for, and the server's last grant.
    pub credits_requested: u32,
    pub credits_granted: u32,
    /// Transmissions never answered when the scenario ended (credits not returned).
    pub unanswered: usize,
    /// Nothing left unanswered: every credit we used came back.
    pub credits_balanced: bool,
    pub transport_errors: usize,
    pub connects: u32,
    pub connection: String,
    pub note: String,
}

/// The outcome of a scenario this transport cannot run (the reason is the verdict's note).
pub const UNSUPPORTED: &str = "unsupported-on-rdma";

/// The judgement of a scenario that sent nothing: not run, so neither pass nor fail.
pub const SKIP: &str = "skip";

/// The judgement of a verdict the rule has not failed (yet): `rig scenarios` starts there.
pub const PASS: &str = "pass";

fn pass() -> String {
    PASS.to_string()
}

impl Verdict {
    /// A verdict with no call under test (the scenario could not run, or failed before its
    /// XID): nothing sent, nothing counted (`executions_basis` none), and not a pass: judged
    /// "skip" when the transport cannot run it ([`UNSUPPORTED`]), else "error".
    pub fn without_call(
        scenario: &str,
        label: &str,
        procedure: &str,
        outcome: &str,
        note: String,
    ) -> Verdict {
        Verdict {
            scenario: scenario.to_string(),
            label: label.to_string(),
            procedure: procedure.to_string(),
            outcome: outcome.to_string(),
            xid: 0,
            transmissions: 0,
            argument_sets: 0,
            replies: 0,
            replies_identical: true,
            statuses: Vec::new(),
            executions: None,
            executions_basis: Basis::None.verdict_name().to_string(),
            inference: String::new(),
            judgement: if outcome == UNSUPPORTED {
                SKIP.to_string()
            } else {
                "error".to_string()
            },
            failure: String::new(),
            credits_requested: 0,
            credits_granted: 0,
            unanswered: 0,
            credits_balanced: false,
            transport_errors: 0,
            connects: 0,
            connection: "down".to_string(),
            note,
        }
    }

    /// What the rule looks at, with the executions on `basis`.
    pub fn observation(&self, basis: Basis) -> Observation<'_> {
        Observation {
            xid: self.xid,
            procedure: &self.procedure,
            transmissions: self.transmissions,
            argument_sets: self.argument_sets,
            executions: self.executions,
            basis,
            replies: self.replies,
            replies_identical: self.replies_identical,
            statuses: &self.statuses,
            connects: self.connects,
        }
    }

    /// Judge with the one rule and record the outcome in `judgement` and `failure`.
    pub fn apply_judgement(&mut self, basis: Basis) -> Result<(), judge::Failure> {
        let result = judge::judge(&self.observation(basis));
        match &result {
            Ok(()) => {
                self.judgement = pass();
                self.failure.clear();
            }
            Err(failure) => {
                self.judgement = "fail".to_string();
                self.failure = failure.to_string();
            }
        }
        result
    }
}

/// The verdicts as a table.
pub fn table(verdicts: &[Verdict]) -> String {
    let mut out = format!(
        "{:<24} {:<8} {:<20} {:>4} {:>4} {:>5} {:<9} {:<32} {:>7} {:<5} {}\n",
        "scenario",
        "proc",
        "outcome",
        "tx",
        "rx",
        "same",
        "exec*",
        "statuses",
        "credit",
        "judge",
        "note"
    );
    for v in verdicts {
        out.push_str(&format!(
            "{:<24} {:<8} {:<20} {:>4} {:>4} {:>5} {:<9} {:<32} {:>7} {:<5} {}\n",
            v.scenario,
            v.procedure,
            v.outcome,
            v.transmissions,
            v.replies,
            v.replies_identical,
            v.executions.map_or("?".to_string(), |n| n.to_string()),
            v.statuses.join(","),
            format!("{}/{}", v.unanswered, v.credits_granted),
            v.judgement,
            if v.failure.is_empty() {
                v.note.clone()
            } else {
                format!("{} [{}]", v.failure, v.note)
            }
        ));
    }
    out.push_str(
        "exec* = executions (inferred from NFS statuses unless counted by rig judge); credit = unanswered/granted\n",
    );
    out
}
