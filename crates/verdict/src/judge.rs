//! The one judgement rule for a retransmitted XID: given what the client sent and received and how
//! often the server executed the call (counted in the kernel, counted by `rig serve`, or inferred
//! from NFS statuses), pass, or fail with a typed, readable reason.
//!
//! Both `rig scenarios` (inferred counts) and `rig judge` (counted ones) call [`judge`]; nothing
//! else decides whether a verdict passes.

use std::fmt;

use wire::nfs3::Nfs3Proc;

/// The status `rig scenarios` records for a reply lost with its connection (it still answered
/// an execution).
pub const LOST_REPLY: &str = "lost-with-connection";

/// Statuses by which a server says the call was neither executed nor answered from a cache:
/// NFSv4.1 SEQUENCE refused it (RFC 8881 §2.10.6.1 NFS4ERR_SEQ_MISORDERED, §2.10.6.1.3.1
/// NFS4ERR_SEQ_FALSE_RETRY, §2.10.6.2 NFS4ERR_DELAY, §15.1.11 the other session errors) or the
/// operation was held off (NFS4ERR_GRACE, RFC 8881 §8.4.2). Such a reply answers no arguments.
pub const REFUSALS: &[&str] = &[
    "NFS4ERR_DELAY",
    "NFS4ERR_SEQ_MISORDERED",
    "NFS4ERR_SEQ_FALSE_RETRY",
    "NFS4ERR_BADSLOT",
    "NFS4ERR_BADSESSION",
    "NFS4ERR_DEADSESSION",
    "NFS4ERR_RETRY_UNCACHED_REP",
    "NFS4ERR_CONN_NOT_BOUND_TO_SESSION",
    "NFS4ERR_SEQUENCE_POS",
    "NFS4ERR_REQ_TOO_BIG",
    "NFS4ERR_REP_TOO_BIG_TO_CACHE",
    "NFS4ERR_GRACE",
];

/// Whether `status` is a refusal ([`REFUSALS`]).
pub fn is_refusal(status: &str) -> bool {
    REFUSALS.contains(&status)
}

/// Where an execution count comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// From the NFS statuses of the replies (a second REMOVE answered NOENT ran twice).
    Inferred,
    /// Counted by kernel tracepoints (ftrace: svc_process minus DRC replays and drops).
    Kernel,
    /// Counted by `rig serve` (its `--stats` per-XID execution counts).
    Serve,
    /// Nothing to count: the scenario sent no call under test (it cannot run on this transport).
    None,
}

impl Basis {
    /// How the failure text names the basis.
    pub fn describe(self) -> &'static str {
        match self {
            Basis::Inferred => "inferred from NFS statuses",
            Basis::Kernel => "counted in the kernel",
            Basis::Serve => "counted by rig serve",
            Basis::None => "not run",
        }
    }

    /// The verdict's `executions_basis` value.
    pub fn verdict_name(self) -> &'static str {
        match self {
            Basis::Inferred => "inferred",
            Basis::Kernel | Basis::Serve => "counted",
            Basis::None => "none",
        }
    }
}

/// Everything the rule looks at, for one XID.
#[derive(Debug, Clone)]
pub struct Observation<'a> {
    pub xid: u32,
    /// The procedure's name as RFC 1813 spells it ("REMOVE").
    pub procedure: &'a str,
    pub transmissions: usize,
    /// Distinct call messages sent with this XID.
    pub argument_sets: usize,
    /// How many times the server executed the call; `None` when unknown.
    pub executions: Option<usize>,
    pub basis: Basis,
    /// Replies processed by the client.
    pub replies: usize,
    pub replies_identical: bool,
    /// One per reply, plus [`LOST_REPLY`] for each reply lost with its connection.
    pub statuses: &'a [String],
    pub connects: u32,
}

impl Observation<'_> {
    /// Replies the server sent that reached us: processed ones plus those lost with the
    /// connection.
    pub fn replies_sent(&self) -> usize {
        self.replies
            + self
                .statuses
                .iter()
                .filter(|s| s.as_str() == LOST_REPLY)
                .count()
    }

    /// Replies that answered the call: [`Observation::replies_sent`] less the refusals
    /// ([`REFUSALS`]), which executed nothing and replayed nothing.
    pub fn answers(&self) -> usize {
        let refused = self.statuses.iter().filter(|s| is_refusal(s)).count();
        self.replies_sent().saturating_sub(refused)
    }

    fn connection_text(&self) -> &'static str {
        if self.connects > 1 {
            "across a reconnect"
        } else {
            "on a live connection"
        }
    }
}

/// Why a verdict fails.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// A non-idempotent procedure ran more often than it was sent distinct arguments.
    ReExecuted {
        procedure: String,
        xid: u32,
        executions: usize,
        argument_sets: usize,
        basis: &'static str,
        connection: &'static str,
    },
    /// More replies than executions while some argument set was never executed: a reply
    /// answered arguments the server never ran (an XID-only cache replaying another call's reply).
    ReplayedUnexecutedArguments {
        procedure: String,
        xid: u32,
        replies: usize,
        executions: usize,
        argument_sets: usize,
        basis: &'static str,
        connection: &'static str,
    },
    /// More replies than executions, so some were replays from a cache, and the replies differ:
    /// a replay is the original reply (RFC 8881 §2.10.6.1.3: the replier MUST return the cached
    /// reply; nfsd's DRC replays the cached bytes for NFSv3).
    ReplayDiffers {
        procedure: String,
        xid: u32,
        replies: usize,
        executions: usize,
        basis: &'static str,
        connection: &'static str,
    },
    /// A count was claimed (kernel or `rig serve`) but none is there: the count failed, so
    /// nothing can be said about the call, and the verdict must not read as a pass.
    ExecutionsNotCounted {
        procedure: String,
        xid: u32,
        basis: &'static str,
    },
}

impl Failure {
    /// A short, stable name of the kind of failure.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::ReExecuted { .. } => "re-executed",
            Failure::ReplayedUnexecutedArguments { .. } => "replayed-unexecuted-arguments",
            Failure::ReplayDiffers { .. } => "replay-differs",
            Failure::ExecutionsNotCounted { .. } => "executions-not-counted",
        }
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::ReExecuted {
                procedure,
                xid,
                executions,
                argument_sets,
                basis,
                connection,
            } => write!(
                f,
                "non-idempotent {procedure} executed {} for XID {xid:#010x} with {} ({basis}); {connection}",
                plural(*executions, "time", "times"),
                plural(*argument_sets, "argument set", "argument sets"),
            ),
            Failure::ReplayedUnexecutedArguments {
                procedure,
                xid,
                replies,
                executions,
                argument_sets,
                basis,
                connection,
            } => write!(
                f,
                "{} to {} of {procedure} for XID {xid:#010x} with {} ({basis}): a reply answered arguments that were never executed; {connection}",
                plural(*replies, "reply", "replies"),
                plural(*executions, "execution", "executions"),
                plural(*argument_sets, "argument set", "argument sets"),
            ),
            Failure::ReplayDiffers {
                procedure,
                xid,
                replies,
                executions,
                basis,
                connection,
            } => write!(
                f,
                "{} to {} of {procedure} for XID {xid:#010x} ({basis}) are not identical: a replay differs from the reply it replays; {connection}",
                plural(*replies, "reply", "replies"),
                plural(*executions, "execution", "executions"),
            ),
            Failure::ExecutionsNotCounted {
                procedure,
                xid,
                basis,
            } => write!(
                f,
                "executions of {procedure} for XID {xid:#010x} unknown ({basis}, but no count): nothing was judged"
            ),
        }
    }
}

impl std::error::Error for Failure {}

/// The procedure by its RFC 1813 name.
pub fn procedure_by_name(name: &str) -> Option<Nfs3Proc> {
    Nfs3Proc::ALL
        .iter()
        .copied()
        .find(|p| p.name().eq_ignore_ascii_case(name))
}

/// The rule. Unknown executions on a counted basis (kernel, `rig serve`) fail
/// [`Failure::ExecutionsNotCounted`]: a count that failed is never a pass. Unknown *inferred*
/// executions make no claim: `rig scenarios`' verdict is provisional, and every suite that runs
/// it over RDMA re-judges it with a count (`rig judge`, which refuses to fall back to an unknown
/// inferred count). Otherwise a non-idempotent procedure (in
/// nfsd's sense, [`Nfs3Proc::is_idempotent`]) executed more often than it had argument sets fails
/// [`Failure::ReExecuted`], and more replies than executions while an argument set went
/// unexecuted fails [`Failure::ReplayedUnexecutedArguments`]; more replies than executions
/// that are not byte-identical (`replies_identical` false: a replay differs from its original)
/// fails [`Failure::ReplayDiffers`]. Replies are counted as answers ([`Observation::answers`]):
/// a refusal ([`REFUSALS`]) answered nothing.
pub fn judge(o: &Observation<'_>) -> Result<(), Failure> {
    let Some(executions) = o.executions else {
        return match o.basis {
            Basis::Kernel | Basis::Serve => Err(Failure::ExecutionsNotCounted {
                procedure: o.procedure.to_string(),
                xid: o.xid,
                basis: o.basis.describe(),
            }),
            Basis::Inferred | Basis::None => Ok(()),
        };
    };
    let non_idempotent = procedure_by_name(o.procedure).is_some_and(|p| !p.is_idempotent());
    if non_idempotent && executions > o.argument_sets {
        return Err(Failure::ReExecuted {
            procedure: o.procedure.to_string(),
            xid: o.xid,
            executions,
            argument_sets: o.argument_sets,
            basis: o.basis.describe(),
            connection: o.connection_text(),
        });
    }
    let replies = o.answers();
    if o.argument_sets > executions && replies > executions {
        return Err(Failure::ReplayedUnexecutedArguments {
            procedure: o.procedure.to_string(),
            xid: o.xid,
            replies,
            executions,
            argument_sets: o.argument_sets,
            basis: o.basis.describe(),
            connection: o.connection_text(),
        });
    }
    if replies > executions && !o.replies_identical {
        return Err(Failure::ReplayDiffers {
            procedure: o.procedure.to_string(),
            xid: o.xid,
            replies,
            executions,
            basis: o.basis.describe(),
            connection: o.connection_text(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statuses(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn observation<'a>(procedure: &'a str, statuses: &'a [String]) -> Observation<'a> {
        Observation {
            xid: 0x5a3f_0012,
            procedure,
            transmissions: 2,
            argument_sets: 1,
            executions: Some(1),
            basis: Basis::Kernel,
            replies: 2,
            replies_identical: true,
            statuses,
            connects: 1,
        }
    }

    #[test]
    fn a_replayed_retransmit_passes() {
        let s = statuses(&["NFS3_OK", "NFS3_OK"]);
        assert_eq!(judge(&observation("REMOVE", &s)), Ok(()));
    }

    #[test]
    fn a_re_executed_remove_fails_and_says_where() {
        let s = statuses(&["NFS3_OK", "NFS3ERR_NOENT"]);
        let mut o = observation("REMOVE", &s);
        o.executions = Some(2);
        let failure = judge(&o).unwrap_err();
        assert_eq!(failure.kind(), "re-executed");
        assert_eq!(
            failure.to_string(),
            "non-idempotent REMOVE executed 2 times for XID 0x5a3f0012 with 1 argument set \
             (counted in the kernel); on a live connection"
        );
        o.connects = 2;
        o.basis = Basis::Inferred;
        let text = judge(&o).unwrap_err().to_string();
        assert!(
            text.ends_with("(inferred from NFS statuses); across a reconnect"),
            "{text}"
        );
    }

    #[test]
    fn idempotent_procedures_may_run_again() {
        let s = statuses(&["NFS3_OK", "NFS3_OK"]);
        let mut o = observation("LOOKUP", &s);
        o.executions = Some(2);
        assert_eq!(judge(&o), Ok(()));
        // Unknown names make no claim either.
        o.procedure = "MOUNT.MNT";
        assert_eq!(judge(&o), Ok(()));
        // WRITE is cached by nfsd, so running it twice for one XID is a re-execution.
        o.procedure = "WRITE";
        assert_eq!(judge(&o).unwrap_err().kind(), "re-executed");
    }

    #[test]
    fn two_argument_sets_may_execute_twice() {
        let s = statuses(&["NFS3_OK", "NFS3_OK"]);
        let mut o = observation("REMOVE", &s);
        o.argument_sets = 2;
        o.executions = Some(2);
        assert_eq!(judge(&o), Ok(()));
        o.executions = Some(3);
        assert_eq!(judge(&o).unwrap_err().kind(), "re-executed");
    }

    #[test]
    fn a_reply_to_arguments_never_executed_fails() {
        // The XID-only cache answered REMOVE b with REMOVE a's reply.
        let s = statuses(&["NFS3_OK", "NFS3_OK"]);
        let mut o = observation("REMOVE", &s);
        o.argument_sets = 2;
        o.executions = Some(1);
        let failure = judge(&o).unwrap_err();
        assert_eq!(failure.kind(), "replayed-unexecuted-arguments");
        assert_eq!(
            failure.to_string(),
            "2 replies to 1 execution of REMOVE for XID 0x5a3f0012 with 2 argument sets \
             (counted in the kernel): a reply answered arguments that were never executed; \
             on a live connection"
        );
        // The second call dropped, not answered: nothing answered arguments never run.
        o.replies = 1;
        assert_eq!(judge(&o), Ok(()));
        // A reply lost with its connection still counts as an answer.
        let s = statuses(&[LOST_REPLY, "NFS3_OK"]);
        o.statuses = &s;
        o.connects = 2;
        let text = judge(&o).unwrap_err().to_string();
        assert!(text.starts_with("2 replies to 1 execution"), "{text}");
        assert!(text.ends_with("across a reconnect"), "{text}");
    }

    #[test]
    fn a_replay_that_differs_from_its_original_fails() {
        let s = statuses(&["NFS4_OK", "NFS4_OK"]);
        let mut o = observation("REMOVE", &s);
        o.replies_identical = false;
        let failure = judge(&o).unwrap_err();
        assert_eq!(failure.kind(), "replay-differs");
        assert_eq!(
            failure.to_string(),
            "2 replies to 1 execution of REMOVE for XID 0x5a3f0012 (counted in the kernel) are \
             not identical: a replay differs from the reply it replays; on a live connection"
        );
        // As many executions as replies: nothing was replayed, the replies may differ.
        o.argument_sets = 2;
        o.executions = Some(2);
        assert_eq!(judge(&o), Ok(()));
        // Re-execution is the first reason given.
        o.argument_sets = 1;
        assert_eq!(judge(&o).unwrap_err().kind(), "re-executed");
        // Identical replays pass.
        o.executions = Some(1);
        o.replies_identical = true;
        assert_eq!(judge(&o), Ok(()));
    }

    #[test]
    fn refusals_answer_nothing() {
        // NFS4ERR_SEQ_MISORDERED: the request never ran and no reply answered it.
        let s = statuses(&["NFS4ERR_SEQ_MISORDERED"]);
        let mut o = observation("REMOVE", &s);
        o.executions = Some(0);
        o.replies = 1;
        assert_eq!(judge(&o), Ok(()));
        // A retry refused with NFS4ERR_DELAY beside the original's reply: one answer.
        let s = statuses(&["NFS4_OK", "NFS4ERR_DELAY"]);
        let mut o = observation("REMOVE", &s);
        o.replies_identical = false;
        assert_eq!(o.answers(), 1);
        assert_eq!(judge(&o), Ok(()));
        // An answer without an execution still fails.
        let s = statuses(&["NFS4_OK"]);
        let mut o = observation("REMOVE", &s);
        o.executions = Some(0);
        o.replies = 1;
        assert_eq!(
            judge(&o).unwrap_err().kind(),
            "replayed-unexecuted-arguments"
        );
        assert!(is_refusal("NFS4ERR_GRACE") && !is_refusal("NFS3ERR_JUKEBOX"));
    }

    #[test]
    fn unknown_inferred_executions_make_no_claim_but_a_missing_count_fails() {
        let s = statuses(&["NFS3_OK", "NFS3ERR_NOENT", "NFS3ERR_NOENT"]);
        let mut o = observation("REMOVE", &s);
        o.executions = None;
        o.argument_sets = 2;
        o.replies = 3;
        o.basis = Basis::Inferred;
        assert_eq!(judge(&o), Ok(()));
        // A counted basis without a count is a count that failed: never a pass.
        for basis in [Basis::Kernel, Basis::Serve] {
            o.basis = basis;
            let failure = judge(&o).unwrap_err();
            assert_eq!(failure.kind(), "executions-not-counted");
            assert!(
                failure.to_string().contains("nothing was judged"),
                "{failure}"
            );
        }
    }

    #[test]
    fn procedures_are_found_by_name() {
        assert_eq!(procedure_by_name("REMOVE"), Some(Nfs3Proc::Remove));
        assert_eq!(procedure_by_name("rename"), Some(Nfs3Proc::Rename));
        assert_eq!(procedure_by_name("MOUNT.MNT"), None);
    }
}
