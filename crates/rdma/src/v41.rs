//! NFSv4.1 session scenarios over a real RDMA connection: EXCHANGE_ID, CREATE_SESSION and
//! RECLAIM_COMPLETE, then a REMOVE COMPOUND retransmitted on one slot so that the *session slot
//! replay cache* (RFC 8881 §2.10.6) answers the duplicate, not the DRC (nfsd keeps no DRC entry
//! for COMPOUND). Executions are inferred from NFSv4 statuses, as for the NFSv3 scenarios, and
//! every verdict is judged by the one rule ([`verdict::judge::judge`]).
//!
//! A request is identified by its session, slot and sequence id (RFC 8881 §2.10.6.1), so a
//! verdict's `argument_sets` counts those; `call_messages` counts the distinct call bytes (two
//! for a false retry, which the server may answer from the slot: RFC 8881 §2.10.6.1.3.1).
//! `replies_identical` compares the replies that answered the request; a refusal at SEQUENCE
//! (NFS4ERR_DELAY, NFS4ERR_SEQ_MISORDERED, NFS4ERR_SEQ_FALSE_RETRY, ...) answers nothing and is
//! listed in `nfs4` only.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use engine::{ConnectionConfig, OutgoingCall};
use serde::{Deserialize, Serialize};
use wire::nfs4::{
    opnum, Array, Bitmap4, CallbackSecParms4, ChannelAttrs4, ClientOwner4, Component4,
    Compound4Args, Compound4Res, CreateArgs, CreateSessionArgs, CreateType4, ExchangeIdArgs,
    Fattr4, Nfs4Op, OpResult, OpaqueLimited, SequenceArgs, SessionId4, StateProtect, Tag4,
    Verifier4, NFSPROC4_COMPOUND, NFS_V4,
};
use wire::rpc::NFS_PROGRAM;
use wire::rpc::{AcceptStat, AuthSys, CallHeader, OpaqueAuth, ReplyBody, RpcMessage};
use wire::xdr::{Reader, Writer, Xdr};

use crate::requester::{ClientError, RdmaClient};
use crate::scenarios::{replies_of, reply_bytes, run_until_replies};
use client::scenarios::select;
pub use verdict::judge::{is_refusal, REFUSALS};
use verdict::judge::{Basis, LOST_REPLY};
use verdict::record::Verdict;

/// The slot every scenario uses (one slot: the session's fore channel asks for few).
pub const SLOT: u32 = 0;
/// NFSv4.1 is minor version 1 (RFC 8881 §16.2.3).
pub const MINOR_VERSION: u32 = 1;
/// RFC 8881 §18.36.1: the callback program number; any value, no backchannel is asked for.
const CB_PROGRAM: u32 = 0x4000_0000;
/// NF4DIR (RFC 8881 §3.3.5 `nfs_ftype4`): the victim is a directory, so no OPEN/CLOSE and no
/// stateid is needed to make it.
const NF4DIR: u32 = 2;
/// FATTR4_MODE (RFC 8881 §5.8.2.15), attribute 33: word 1, bit 1.
const FATTR4_MODE: u32 = 33;

/// RFC 8881 §2.10.6.1: same slot and sequence id as the last request → a retry, answered from
/// the slot's cache.
pub const RULE_REPLAY: &str =
    "RFC 8881 §2.10.6.1 (same slot and sequence id: the replier MUST return the cached reply)";
/// RFC 8881 §2.10.6.2: a retry that arrives while its original is still being executed.
pub const RULE_IN_PROGRESS: &str =
    "RFC 8881 §2.10.6.2 (retry in progress: NFS4ERR_DELAY, or the reply once the original is done)";
/// RFC 8881 §2.10.6.1: a sequence id neither equal to nor one more than the slot's.
pub const RULE_MISORDERED: &str =
    "RFC 8881 §2.10.6.1 (sequence id not the slot's or the slot's + 1: the replier MUST return NFS4ERR_SEQ_MISORDERED)";
/// RFC 8881 §2.10.6.1.3.1: a retry with other arguments.
pub const RULE_FALSE_RETRY: &str =
    "RFC 8881 §2.10.6.1.3.1 (false retry: NFS4ERR_SEQ_FALSE_RETRY is permitted, the cached reply otherwise)";
/// RFC 8881 §2.10.3.1 and §2.10.6.1: with SP4_NONE a SEQUENCE binds a new connection to the
/// session, and the slot's cache outlives the connection.
pub const RULE_RECONNECT: &str =
    "RFC 8881 §2.10.3.1, §2.10.6.1 (SP4_NONE: SEQUENCE binds the new connection; the slot's cached reply is returned on it)";
/// RFC 8881 §18.35.2, §18.36.2: the results a client needs from session setup.
const RULE_SETUP: &str =
    "RFC 8881 §18.35.2, §18.36.2 (EXCHANGE_ID4resok.eir_clientid, CREATE_SESSION4resok.csr_sessionid)";

/// How to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub server: SocketAddr,
    pub label: String,
    /// Longest wait for any one reply.
    pub timeout: Duration,
    /// Prefix of every name created and of the client owner (unique per run).
    pub prefix: String,
    /// Longest wait for the server's grace period to end (REMOVE answers NFS4ERR_GRACE during
    /// it, RFC 8881 §8.4.2).
    pub grace_wait: Duration,
}

/// Why a scenario could not reach a verdict.
#[derive(Debug)]
#[non_exhaustive]
pub enum V41Error {
    Client(ClientError),
    /// No reply to a setup or helper call within the timeout.
    NoReply {
        what: &'static str,
    },
    /// A setup call failed with an NFSv4 status.
    Failed {
        what: &'static str,
        status: String,
    },
    /// The reply did not decode, or lacked a result the protocol requires.
    Undecodable {
        what: &'static str,
        rule: &'static str,
    },
    /// Still NFS4ERR_GRACE after the wait.
    GraceNotOver {
        waited: Duration,
    },
}

impl std::fmt::Display for V41Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            V41Error::Client(e) => write!(f, "{e}"),
            V41Error::NoReply { what } => write!(f, "no reply to {what}"),
            V41Error::Failed { what, status } => write!(f, "{what} failed: {status}"),
            V41Error::Undecodable { what, rule } => write!(f, "{what}: reply undecodable ({rule})"),
            V41Error::GraceNotOver { waited } => write!(
                f,
                "REMOVE still answered NFS4ERR_GRACE after {} s (RFC 8881 §8.4.2)",
                waited.as_secs()
            ),
        }
    }
}

impl std::error::Error for V41Error {}

impl From<ClientError> for V41Error {
    fn from(e: ClientError) -> Self {
        V41Error::Client(e)
    }
}

// ---- call builders (pure) ----

/// The AUTH_SYS credential of every call: root, no stamp, so retransmissions are byte-identical
/// and nfsd's replay check (same principal, RFC 8881 §2.10.6.1.3.1) holds.
pub fn credential() -> OpaqueAuth {
    OpaqueAuth::sys(&AuthSys {
        stamp: 0,
        machinename: b"rig".to_vec(),
        uid: 0,
        gid: 0,
        gids: Vec::new(),
    })
}

/// The RPC call message of a COMPOUND (program 100003 version 4 procedure 1, RFC 8881 §16.2).
pub fn call_message(xid: u32, args: &Compound4Args) -> Vec<u8> {
    let mut header = CallHeader::new(xid, NFS_PROGRAM, NFS_V4, NFSPROC4_COMPOUND);
    header.cred = credential();
    let mut w = Writer::new();
    header.encode(&mut w);
    args.encode(&mut w);
    w.into_bytes()
}

fn compound(ops: Vec<Nfs4Op>) -> Compound4Args {
    Compound4Args {
        tag: Tag4::default(),
        minorversion: MINOR_VERSION,
        ops,
    }
}

/// EXCHANGE_ID with SP4_NONE (RFC 8881 §18.35): the owner names this run.
pub fn exchange_id(owner: &[u8], verifier: [u8; 8]) -> Compound4Args {
    compound(vec![Nfs4Op::ExchangeId(Box::new(ExchangeIdArgs {
        clientowner: ClientOwner4 {
            verifier: Verifier4(verifier),
            ownerid: OpaqueLimited(owner.to_vec()),
        },
        flags: 0,
        state_protect: StateProtect::None,
        client_impl_id: Array(Vec::new()),
    }))])
}

/// The fore channel we ask for: a few slots, replies cached up to 4 KiB.
pub fn fore_channel() -> ChannelAttrs4 {
    ChannelAttrs4 {
        headerpadsize: 0,
        maxrequestsize: 1 << 20,
        maxresponsesize: 1 << 20,
        maxresponsesize_cached: 4096,
        maxoperations: 16,
        maxrequests: 4,
        rdma_ird: Array(Vec::new()),
    }
}

/// CREATE_SESSION for `clientid` with the sequence id EXCHANGE_ID returned (RFC 8881 §18.36);
/// no backchannel is requested (flags 0).
pub fn create_session(clientid: u64, sequence: u32) -> Compound4Args {
    compound(vec![Nfs4Op::CreateSession(Box::new(CreateSessionArgs {
        clientid,
        sequence,
        flags: 0,
        fore_chan_attrs: fore_channel(),
        back_chan_attrs: ChannelAttrs4 {
            headerpadsize: 0,
            maxrequestsize: 4096,
            maxresponsesize: 4096,
            maxresponsesize_cached: 0,
            maxoperations: 2,
            maxrequests: 1,
            rdma_ird: Array(Vec::new()),
        },
        cb_program: CB_PROGRAM,
        sec_parms: Array(vec![CallbackSecParms4::AuthNone]),
    }))])
}

/// SEQUENCE on `slot` with `sequenceid`, asking the server to cache the reply (`sa_cachethis`:
/// without it nfsd caches only the SEQUENCE result and answers a retry with
/// NFS4ERR_RETRY_UNCACHED_REP, RFC 8881 §2.10.6.1.3).
pub fn sequence(session: SessionId4, slot: u32, sequenceid: u32) -> Nfs4Op {
    Nfs4Op::Sequence(SequenceArgs {
        sessionid: session,
        sequenceid,
        slotid: slot,
        highest_slotid: slot,
        cachethis: true,
    })
}

/// SEQUENCE + `ops`.
pub fn sequenced(
    session: SessionId4,
    slot: u32,
    sequenceid: u32,
    ops: Vec<Nfs4Op>,
) -> Compound4Args {
    let mut all = vec![sequence(session, slot, sequenceid)];
    all.extend(ops);
    compound(all)
}

/// PUTROOTFH + REMOVE `name` (the operations under test).
pub fn remove_ops(name: &str) -> Vec<Nfs4Op> {
    vec![
        Nfs4Op::Putrootfh,
        Nfs4Op::Remove(Component4(name.as_bytes().to_vec())),
    ]
}

/// PUTROOTFH + CREATE `name` as a directory, mode 0755.
pub fn mkdir_ops(name: &str) -> Vec<Nfs4Op> {
    let mut mask = Bitmap4(vec![0, 0]);
    mask.0[(FATTR4_MODE / 32) as usize] |= 1 << (FATTR4_MODE % 32);
    vec![
        Nfs4Op::Putrootfh,
        Nfs4Op::Create(CreateArgs {
            objtype: CreateType4::Other(NF4DIR),
            objname: Component4(name.as_bytes().to_vec()),
            createattrs: Fattr4 {
                attrmask: mask,
                attr_vals: wire::nfs4::AttrVals(0o755u32.to_be_bytes().to_vec()),
            },
        }),
    ]
}

/// PUTROOTFH + LOOKUP `name`.
pub fn lookup_ops(name: &str) -> Vec<Nfs4Op> {
    vec![
        Nfs4Op::Putrootfh,
        Nfs4Op::Lookup(Component4(name.as_bytes().to_vec())),
    ]
}

/// BIND_CONN_TO_SESSION (RFC 8881 §18.34) for the fore channel, not in RDMA mode; the codec
/// keeps this operation opaque, so its arguments are written here: sessionid,
/// `CDFC4_FORE` (1), `bctsa_use_conn_in_rdma_mode` false.
pub fn bind_conn_to_session(session: SessionId4) -> Compound4Args {
    let mut w = Writer::new();
    session.encode(&mut w);
    w.u32(1).bool(false);
    compound(vec![Nfs4Op::Opaque {
        opnum: opnum::BIND_CONN_TO_SESSION,
        body: w.into_bytes(),
    }])
}

// ---- replies (untrusted) ----

/// What one reply said, as a verdict records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nfs4Answer {
    /// The COMPOUND's status (the first failing operation's, RFC 8881 §16.2.3), or why there
    /// is none: `undecodable (<rule>)`, an RPC `accept_stat`, `DENIED`.
    pub status: String,
    /// The operation that failed, when one did.
    pub failed_op: Option<String>,
    /// The slot and sequence id SEQUENCE echoed, when it succeeded.
    pub slot: Option<u32>,
    pub sequence_id: Option<u32>,
    /// The operations and their results without volatile values ("SEQUENCE(slot=0 seq=3)
    /// PUTROOTFH REMOVE").
    pub summary: String,
}

/// Decode an RPC reply to a COMPOUND: the results, or the status text a verdict records.
pub fn decode_reply(message: &[u8]) -> Result<Compound4Res, String> {
    let (rpc, used) =
        RpcMessage::decode_prefix(message).map_err(|e| format!("undecodable ({})", e.rule()))?;
    let RpcMessage::Reply(header) = rpc else {
        return Err("undecodable (RFC 5531 §9: not a reply)".to_string());
    };
    match header.body {
        ReplyBody::Accepted {
            stat: AcceptStat::Success,
            ..
        } => {}
        ReplyBody::Accepted { stat, .. } => return Err(stat.name().to_string()),
        ReplyBody::Denied(_) => return Err("DENIED".to_string()),
    }
    let mut r = Reader::new(message.get(used..).unwrap_or_default());
    Compound4Res::decode(&mut r).map_err(|e| format!("undecodable ({})", e.rule()))
}

/// The answer a verdict records for one reply message.
pub fn answer(message: &[u8]) -> Nfs4Answer {
    match decode_reply(message) {
        Ok(res) => {
            let failed_op = res
                .results
                .iter()
                .find(|r| !r.status.is_ok())
                .map(|r| wire::nfs4::op_name(r.opnum).into_owned());
            let seq = res.results.first().and_then(|r| match &r.result {
                OpResult::Sequence(s) => Some((s.slotid, s.sequenceid)),
                _ => None,
            });
            Nfs4Answer {
                status: res.status.name().into_owned(),
                failed_op,
                slot: seq.map(|s| s.0),
                sequence_id: seq.map(|s| s.1),
                summary: res.summary(),
            }
        }
        Err(status) => Nfs4Answer {
            status,
            failed_op: None,
            slot: None,
            sequence_id: None,
            summary: String::new(),
        },
    }
}

/// Executions of the REMOVE under test inferred from the statuses of its replies (a reply lost
/// with its connection first, as [`LOST_REPLY`]). Refusals executed nothing; the first answer
/// is the execution (NFS4_OK), a later NFS4_OK is the slot's replay, a later NFS4ERR_NOENT a
/// second execution (the victim was already gone).
pub fn infer(statuses: &[String]) -> (Option<usize>, String) {
    if statuses.is_empty() {
        return (None, "no reply: nothing to infer from".to_string());
    }
    let answers: Vec<&String> = statuses.iter().filter(|s| !is_refusal(s)).collect();
    let refused = statuses.len() - answers.len();
    let Some(first) = answers.first() else {
        return (
            Some(0),
            format!("inferred: all {refused} reply(ies) refused the request (nothing executed)"),
        );
    };
    if first.as_str() != "NFS4_OK" && first.as_str() != LOST_REPLY {
        return (None, format!("first answer {first}: nothing to infer from"));
    }
    let again = answers
        .iter()
        .skip(1)
        .filter(|s| s.as_str() == "NFS4ERR_NOENT")
        .count();
    let replayed = answers
        .iter()
        .skip(1)
        .filter(|s| s.as_str() == "NFS4_OK")
        .count();
    (
        Some(1 + again),
        format!(
            "inferred: {again} later answer(s) NFS4ERR_NOENT (executed again), {replayed} NFS4_OK (replayed from the slot), {refused} refusal(s)"
        ),
    )
}

/// What the slot answered a false retry with, and the executions, from the second reply and a
/// LOOKUP of the second name afterwards (the statuses alone cannot tell: NFS4_OK is what both
/// the cached reply and a fresh REMOVE of the second name answer).
pub fn infer_false_retry(
    first: &str,
    second: Option<&str>,
    second_identical: bool,
    other_after: &str,
) -> (Option<usize>, String, String) {
    let answer = match second {
        None => "no reply".to_string(),
        Some(s) if is_refusal(s) => s.to_string(),
        Some("NFS4_OK") if second_identical => "cached reply".to_string(),
        // Other bytes but the second name still there: the slot's reply, encoded again (6.1 and
        // 6.12 re-encode a replayed SEQUENCE result with the current status flags), not a
        // fresh execution of the false retry.
        Some("NFS4_OK") if other_after == "NFS4_OK" => {
            "cached reply, encoded again (bytes differ)".to_string()
        }
        Some(s) => format!("fresh answer {s}"),
    };
    let (executions, how) = match (first, other_after) {
        ("NFS4_OK", "NFS4ERR_NOENT") => (
            Some(2),
            "inferred: the first REMOVE answered NFS4_OK and the second name is gone (the false retry was executed)",
        ),
        ("NFS4_OK", "NFS4_OK") => (
            Some(1),
            "inferred: the first REMOVE answered NFS4_OK and the second name still exists (the false retry was not executed)",
        ),
        _ => (None, "not inferable"),
    };
    let how = if executions.is_none() {
        format!("not inferable: first reply {first}, LOOKUP of the second name {other_after}")
    } else {
        how.to_string()
    };
    (executions, how, answer)
}

/// What the slot answered the retransmission: "replay" (a byte-identical NFS4_OK), a refusal's
/// name, "re-executed" (NFS4ERR_NOENT), "no reply", or `"other: <status>"`.
pub fn slot_answer(first: Option<&[u8]>, retry: Option<(&str, &[u8])>) -> String {
    match retry {
        None => "no reply".to_string(),
        Some((status, _)) if is_refusal(status) => status.to_string(),
        Some(("NFS4_OK", bytes)) if first.is_none_or(|f| f == bytes) => "replay".to_string(),
        Some(("NFS4_OK", _)) => "replay (bytes differ)".to_string(),
        Some(("NFS4ERR_NOENT", _)) => "re-executed".to_string(),
        Some((other, _)) => format!("other: {other}"),
    }
}

/// Where two replies to one request first differ: in the SEQUENCE result (nfsd encodes it
/// afresh on a replay and caches only what follows, so flags may change) or after it.
pub fn difference(a: &[u8], b: &[u8]) -> Option<String> {
    if a == b {
        return None;
    }
    match (decode_reply(a), decode_reply(b)) {
        (Ok(x), Ok(y)) => {
            let seq = |r: &Compound4Res| r.results.first().cloned();
            if seq(&x) != seq(&y) {
                let flags = |r: &Compound4Res| match r.results.first().map(|r| &r.result) {
                    Some(OpResult::Sequence(s)) => format!(
                        "status_flags {:#x} target_highest_slotid {}",
                        s.status_flags, s.target_highest_slotid
                    ),
                    _ => "no SEQUENCE result".to_string(),
                };
                Some(format!(
                    "SEQUENCE result differs ({} vs {})",
                    flags(&x),
                    flags(&y)
                ))
            } else if x.results != y.results || x.status != y.status {
                Some(format!(
                    "results after SEQUENCE differ ({} vs {})",
                    x.summary(),
                    y.summary()
                ))
            } else {
                Some("RPC header differs".to_string())
            }
        }
        _ => Some("a reply did not decode".to_string()),
    }
}

// ---- the verdict ----

/// A verdict of an NFSv4.1 session scenario: the NFSv3 verdict's fields (judged by the same
/// rule) and the slot's side of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct V41Verdict {
    #[serde(flatten)]
    pub base: Verdict,
    /// The slot and sequence id of the request under test.
    pub slot: u32,
    pub sequence_id: u32,
    /// Distinct call messages sent for it (2 for a false retry; `argument_sets` counts requests
    /// by slot and sequence id).
    pub call_messages: usize,
    /// Every reply to the request under test, in arrival order.
    pub nfs4: Vec<Nfs4Answer>,
    /// What the slot answered the retransmission ([`slot_answer`]).
    pub slot_answer: String,
    /// What RFC 8881 says the server does (recorded beside the judgement, not judged).
    pub expected: String,
    /// Where two answers differ, when they do ([`difference`]).
    pub replay_difference: Option<String>,
    /// The status of a SEQUENCE on the same slot with the next sequence id, after the scenario:
    /// whether the slot is free and its sequence where it should be.
    pub slot_after: String,
}

/// A scenario body's findings beyond the replies to the XID under test.
struct Findings {
    xid: u32,
    sequence_id: u32,
    note: String,
    slot_answer: String,
    inferred: Option<(Option<usize>, String)>,
}

type Body = fn(&mut Session41) -> Result<Findings, V41Error>;

/// A scenario: name, RFC expectation, body.
pub struct Scenario41 {
    pub name: &'static str,
    pub expected: &'static str,
    run: Body,
}

/// The catalogue, in order.
pub fn catalogue() -> Vec<Scenario41> {
    vec![
        Scenario41 {
            name: "v41-replay-after-ack",
            expected: RULE_REPLAY,
            run: replay_after_ack,
        },
        Scenario41 {
            name: "v41-replay-in-progress",
            expected: RULE_IN_PROGRESS,
            run: replay_in_progress,
        },
        Scenario41 {
            name: "v41-misordered",
            expected: RULE_MISORDERED,
            run: misordered,
        },
        Scenario41 {
            name: "v41-false-retry",
            expected: RULE_FALSE_RETRY,
            run: false_retry,
        },
        Scenario41 {
            name: "v41-after-reconnect",
            expected: RULE_RECONNECT,
            run: after_reconnect,
        },
    ]
}

/// Run the catalogue (or one scenario) against `options.server`.
pub fn run(options: &Options, only: Option<&str>) -> Result<Vec<V41Verdict>, String> {
    let scenarios = select(catalogue(), |s| s.name, only, "NFSv4.1 scenario")?;
    Ok(scenarios.iter().map(|s| run_one(s, options)).collect())
}

fn run_one(scenario: &Scenario41, options: &Options) -> V41Verdict {
    let mut opts = options.clone();
    opts.prefix = format!("{}-{}", options.prefix, scenario.name);
    let mut session = match Session41::open(opts) {
        Ok(s) => s,
        Err(e) => return error_verdict(scenario, options, e.to_string()),
    };
    let verdict = match (scenario.run)(&mut session) {
        Ok(findings) => session.verdict(scenario, findings),
        Err(e) => error_verdict(scenario, options, e.to_string()),
    };
    session.close();
    verdict
}

/// A verdict for a scenario that reached none: outcome "error", nothing judged.
pub fn error_verdict(scenario: &Scenario41, options: &Options, note: String) -> V41Verdict {
    blank_verdict(scenario, &options.label, note)
}

fn blank_verdict(scenario: &Scenario41, label: &str, note: String) -> V41Verdict {
    V41Verdict {
        base: Verdict::without_call(scenario.name, label, "REMOVE", "error", note),
        slot: SLOT,
        sequence_id: 0,
        call_messages: 0,
        nfs4: Vec::new(),
        slot_answer: String::new(),
        expected: scenario.expected.to_string(),
        replay_difference: None,
        slot_after: String::new(),
    }
}

/// Assemble a verdict from what was sent and received for the XID under test, and judge it by
/// the one rule. `lost` replies reached us but were lost with their connection.
#[allow(clippy::too_many_arguments)]
pub fn assemble(
    scenario: &Scenario41,
    label: &str,
    xid: u32,
    sequence_id: u32,
    transmissions: usize,
    call_messages: usize,
    replies: &[Vec<u8>],
    lost: usize,
    inferred: Option<(Option<usize>, String)>,
) -> V41Verdict {
    let nfs4: Vec<Nfs4Answer> = replies.iter().map(|r| answer(r)).collect();
    let statuses: Vec<String> = std::iter::repeat_n(LOST_REPLY.to_string(), lost)
        .chain(nfs4.iter().map(|a| a.status.clone()))
        .collect();
    let answering: Vec<&Vec<u8>> = replies
        .iter()
        .zip(&nfs4)
        .filter(|(_, a)| !is_refusal(&a.status))
        .map(|(r, _)| r)
        .collect();
    let replies_identical = answering.windows(2).all(|w| w[0] == w[1]);
    let replay_difference = answering.windows(2).find_map(|w| difference(w[0], w[1]));
    let (executions, inference) = inferred.unwrap_or_else(|| infer(&statuses));
    let mut verdict = blank_verdict(scenario, label, String::new());
    verdict.base = Verdict {
        outcome: "ok".to_string(),
        xid,
        transmissions,
        argument_sets: usize::from(transmissions > 0),
        replies: replies.len(),
        replies_identical,
        statuses,
        executions,
        executions_basis: Basis::Inferred.verdict_name().to_string(),
        inference,
        connects: 1,
        connection: "up".to_string(),
        ..verdict.base
    };
    verdict.sequence_id = sequence_id;
    verdict.call_messages = call_messages;
    verdict.nfs4 = nfs4;
    verdict.replay_difference = replay_difference;
    // The outcome is recorded in the verdict; a failure is not an error of the run.
    let _ = verdict.base.apply_judgement(Basis::Inferred);
    verdict
}

// ---- the session over RDMA ----

/// One scenario's connection, client id, session and slot.
pub struct Session41 {
    client: RdmaClient,
    options: Options,
    next_xid: u32,
    session: SessionId4,
    clientid: u64,
    /// The last sequence id the slot accepted (0 after CREATE_SESSION, RFC 8881 §2.10.6.1).
    slot_seq: u32,
    /// Slot 1 when the server granted two slots or more: the grace probes go there, so the slot
    /// under test sees the same sequence ids in every run however long grace lasts.
    probe_slot: Option<u32>,
    probe_seq: u32,
    transmissions: BTreeMap<u32, usize>,
    messages: BTreeMap<u32, BTreeSet<u64>>,
    replies: BTreeMap<u32, Vec<Vec<u8>>>,
    transport_errors: BTreeMap<u32, usize>,
    lost_replies: usize,
}

fn hash(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

impl Session41 {
    /// Connect, EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE, and wait out the grace period.
    pub fn open(options: Options) -> Result<Session41, V41Error> {
        let client =
            RdmaClient::connect(options.server, ConnectionConfig::default(), options.timeout)?;
        let mut s = Session41 {
            client,
            next_xid: std::process::id().wrapping_mul(0x10000) ^ 0x4a00_0000,
            options,
            session: SessionId4::default(),
            clientid: 0,
            slot_seq: 0,
            probe_slot: None,
            probe_seq: 0,
            transmissions: BTreeMap::new(),
            messages: BTreeMap::new(),
            replies: BTreeMap::new(),
            transport_errors: BTreeMap::new(),
            lost_replies: 0,
        };
        let owner = format!("rig-{}", s.options.prefix);
        let verifier = hash(owner.as_bytes()).to_be_bytes();
        let res = s.rpc(&exchange_id(owner.as_bytes(), verifier), "EXCHANGE_ID")?;
        let Some(OpResult::ExchangeId(eid)) = res.results.first().map(|r| &r.result) else {
            return Err(V41Error::Undecodable {
                what: "EXCHANGE_ID",
                rule: RULE_SETUP,
            });
        };
        s.clientid = eid.clientid;
        let res = s.rpc(
            &create_session(eid.clientid, eid.sequenceid),
            "CREATE_SESSION",
        )?;
        let Some(OpResult::CreateSession(cs)) = res.results.first().map(|r| &r.result) else {
            return Err(V41Error::Undecodable {
                what: "CREATE_SESSION",
                rule: RULE_SETUP,
            });
        };
        s.session = cs.sessionid;
        s.probe_slot = (cs.fore_chan_attrs.maxrequests >= 2).then_some(SLOT + 1);
        // RFC 8881 §18.51.3: a client MUST send RECLAIM_COMPLETE before non-reclaim locking
        // operations; nfsd refuses OPEN without it and may end grace early once it has it.
        let (_, rc) = s.sequenced(vec![Nfs4Op::ReclaimComplete(false)])?;
        if rc.status != "NFS4_OK" && rc.status != "NFS4ERR_COMPLETE_ALREADY" {
            return Err(V41Error::Failed {
                what: "RECLAIM_COMPLETE",
                status: rc.status,
            });
        }
        s.wait_out_grace()?;
        Ok(s)
    }

    fn fresh_xid(&mut self) -> u32 {
        self.next_xid = self.next_xid.wrapping_add(1);
        self.next_xid
    }

    fn name(&self, suffix: &str) -> String {
        format!("{}-{suffix}", self.options.prefix)
    }

    /// Transmit `message` with `xid`.
    fn send(&mut self, xid: u32, message: Vec<u8>, honour_credits: bool) -> Result<(), V41Error> {
        let h = hash(&message);
        self.client
            .call(OutgoingCall::inline(xid, message), honour_credits)?;
        *self.transmissions.entry(xid).or_default() += 1;
        self.messages.entry(xid).or_default().insert(h);
        Ok(())
    }

    fn absorb(&mut self) {
        for reply in replies_of(self.client.take_outputs(), &mut self.transport_errors) {
            let xid = reply.xid;
            self.replies
                .entry(xid)
                .or_default()
                .push(reply_bytes(reply));
        }
    }

    /// Wait until `xid` has `n` replies (or the timeout); returns whether it has.
    fn wait_replies(&mut self, xid: u32, n: usize) -> bool {
        let have = self.replies.get(&xid).map_or(0, Vec::len);
        run_until_replies(&mut self.client, self.options.timeout, xid, have, n);
        self.absorb();
        self.replies.get(&xid).map_or(0, Vec::len) >= n
    }

    fn reply(&self, xid: u32, index: usize) -> Option<&[u8]> {
        self.replies.get(&xid)?.get(index).map(Vec::as_slice)
    }

    /// A COMPOUND without SEQUENCE (session setup); its results, or why not.
    fn rpc(&mut self, args: &Compound4Args, what: &'static str) -> Result<Compound4Res, V41Error> {
        let xid = self.fresh_xid();
        self.send(xid, call_message(xid, args), true)?;
        if !self.wait_replies(xid, 1) {
            return Err(V41Error::NoReply { what });
        }
        let bytes = self.reply(xid, 0).unwrap_or_default();
        let res = decode_reply(bytes).map_err(|status| V41Error::Failed { what, status })?;
        if !res.status.is_ok() {
            return Err(V41Error::Failed {
                what,
                status: res.status.name().into_owned(),
            });
        }
        Ok(res)
    }

    /// The call message of SEQUENCE(slot, `seq`) + `ops`.
    fn message(&self, xid: u32, seq: u32, ops: Vec<Nfs4Op>) -> Vec<u8> {
        call_message(xid, &sequenced(self.session, SLOT, seq, ops))
    }

    /// Note that the slot accepted `seq` when a reply's SEQUENCE succeeded with it.
    fn track(&mut self, seq: u32, a: &Nfs4Answer) {
        if a.slot == Some(SLOT) && a.sequence_id == Some(seq) {
            self.slot_seq = self.slot_seq.max(seq);
        }
    }

    /// SEQUENCE with the slot's next sequence id + `ops`, one transmission, its answer.
    fn sequenced(&mut self, ops: Vec<Nfs4Op>) -> Result<(u32, Nfs4Answer), V41Error> {
        let xid = self.fresh_xid();
        let seq = self.slot_seq.wrapping_add(1);
        let message = self.message(xid, seq, ops);
        self.send(xid, message, true)?;
        if !self.wait_replies(xid, 1) {
            return Err(V41Error::NoReply {
                what: "SEQUENCE compound",
            });
        }
        let a = answer(self.reply(xid, 0).unwrap_or_default());
        self.track(seq, &a);
        Ok((xid, a))
    }

    /// SEQUENCE on the probe slot (or the slot under test when there is only one) + `ops`.
    fn probe(&mut self, ops: Vec<Nfs4Op>) -> Result<Nfs4Answer, V41Error> {
        let Some(slot) = self.probe_slot else {
            return Ok(self.sequenced(ops)?.1);
        };
        let xid = self.fresh_xid();
        let seq = self.probe_seq.wrapping_add(1);
        self.send(
            xid,
            call_message(xid, &sequenced(self.session, slot, seq, ops)),
            true,
        )?;
        if !self.wait_replies(xid, 1) {
            return Err(V41Error::NoReply {
                what: "SEQUENCE compound (probe slot)",
            });
        }
        let a = answer(self.reply(xid, 0).unwrap_or_default());
        if a.slot == Some(slot) && a.sequence_id == Some(seq) {
            self.probe_seq = seq;
        }
        Ok(a)
    }

    /// REMOVE answers NFS4ERR_GRACE until nfsd's grace period ends (`nfsv4gracetime`).
    fn wait_out_grace(&mut self) -> Result<(), V41Error> {
        let start = Instant::now();
        let probe = self.name("grace-probe");
        loop {
            let a = self.probe(remove_ops(&probe))?;
            if a.status != "NFS4ERR_GRACE" {
                return Ok(());
            }
            if start.elapsed() >= self.options.grace_wait {
                return Err(V41Error::GraceNotOver {
                    waited: start.elapsed(),
                });
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// CREATE a directory `name` (the victim); its status.
    fn mkdir(&mut self, name: &str) -> Result<String, V41Error> {
        let (_, a) = self.sequenced(mkdir_ops(name))?;
        if a.status != "NFS4_OK" {
            return Err(V41Error::Failed {
                what: "CREATE (NF4DIR) of the victim",
                status: a.status,
            });
        }
        Ok(a.status)
    }

    fn lookup(&mut self, name: &str) -> Result<String, V41Error> {
        Ok(self.sequenced(lookup_ops(name))?.1.status)
    }

    /// The victim made, and the REMOVE of it on the slot's next sequence id: (xid, seq, message).
    fn victim(&mut self) -> Result<(u32, u32, Vec<u8>), V41Error> {
        let name = self.name("victim");
        self.mkdir(&name)?;
        let xid = self.fresh_xid();
        let seq = self.slot_seq.wrapping_add(1);
        let message = self.message(xid, seq, remove_ops(&name));
        Ok((xid, seq, message))
    }

    /// The answers to `xid` so far, in order.
    fn answers(&self, xid: u32) -> Vec<Nfs4Answer> {
        self.replies
            .get(&xid)
            .map(|rs| rs.iter().map(|r| answer(r)).collect())
            .unwrap_or_default()
    }

    /// The slot's answer to the `index`th reply of `xid` compared with the first.
    fn slot_answer_of(&self, xid: u32, index: usize) -> String {
        let first = self.reply(xid, 0);
        let retry = self.reply(xid, index).map(|b| (answer(b).status, b));
        slot_answer(first, retry.as_ref().map(|(s, b)| (s.as_str(), *b)))
    }

    /// The status of SEQUENCE alone on the slot's next sequence id.
    fn slot_after(&mut self) -> String {
        match self.sequenced(Vec::new()) {
            Ok((_, a)) => a.status,
            Err(e) => e.to_string(),
        }
    }

    fn verdict(&mut self, scenario: &Scenario41, f: Findings) -> V41Verdict {
        self.absorb();
        let slot_after = if self.client.is_connected() {
            self.slot_after()
        } else {
            "not connected".to_string()
        };
        self.absorb();
        let replies = self.replies.get(&f.xid).cloned().unwrap_or_default();
        let mut v = assemble(
            scenario,
            &self.options.label,
            f.xid,
            f.sequence_id,
            self.transmissions.get(&f.xid).copied().unwrap_or(0),
            self.messages.get(&f.xid).map_or(0, BTreeSet::len),
            &replies,
            self.lost_replies,
            f.inferred,
        );
        v.base.credits_requested = ConnectionConfig::default().credits;
        v.base.credits_granted = self.client.engine.credits_granted();
        v.base.unanswered = self.client.engine.outstanding();
        v.base.credits_balanced = self.client.engine.outstanding() == 0;
        v.base.transport_errors = self.transport_errors.get(&f.xid).copied().unwrap_or(0);
        v.base.connects = self.client.connects();
        v.base.connection = if self.client.is_connected() {
            "up"
        } else {
            "down"
        }
        .to_string();
        v.base.note = f.note;
        v.slot_answer = f.slot_answer;
        v.slot_after = slot_after;
        // Judge again: connects may have changed the wording.
        let _ = v.base.apply_judgement(Basis::Inferred);
        v
    }

    /// DESTROY_SESSION and DESTROY_CLIENTID, best effort (the lease would expire them anyway).
    fn close(&mut self) {
        if !self.client.is_connected() {
            return;
        }
        let session = self.session;
        let _ = self.rpc(
            &compound(vec![Nfs4Op::DestroySession(session)]),
            "DESTROY_SESSION",
        );
        let clientid = self.clientid;
        let _ = self.rpc(
            &compound(vec![Nfs4Op::DestroyClientid(clientid)]),
            "DESTROY_CLIENTID",
        );
        let _ = self.client.disconnect();
    }
}

// ---- scenarios ----

fn replay_after_ack(s: &mut Session41) -> Result<Findings, V41Error> {
    let (xid, seq, message) = s.victim()?;
    s.send(xid, message.clone(), true)?;
    let first = s.wait_replies(xid, 1);
    if let Some(a) = s.answers(xid).first().cloned() {
        s.track(seq, &a);
    }
    s.send(xid, message, true)?;
    s.wait_replies(xid, 2);
    Ok(Findings {
        xid,
        sequence_id: seq,
        note: format!(
            "retransmitted with the same slot and sequence id after the reply was processed (first reply: {first})"
        ),
        slot_answer: s.slot_answer_of(xid, 1),
        inferred: None,
    })
}

fn replay_in_progress(s: &mut Session41) -> Result<Findings, V41Error> {
    let (xid, seq, message) = s.victim()?;
    s.send(xid, message.clone(), true)?;
    s.send(xid, message, true)?;
    let both = s.wait_replies(xid, 2);
    let answers = s.answers(xid);
    for a in &answers {
        s.track(seq, a);
    }
    // Which reply the slot refused (either may be dispatched first by nfsd's threads).
    let refused: Vec<&str> = answers
        .iter()
        .filter(|a| is_refusal(&a.status))
        .map(|a| a.status.as_str())
        .collect();
    let answer = match refused.first() {
        Some(status) => status.to_string(),
        None => s.slot_answer_of(xid, 1),
    };
    Ok(Findings {
        xid,
        sequence_id: seq,
        note: format!(
            "sent back to back; both answered within the timeout: {both}; RPC-over-RDMA credits balanced: {}",
            s.client.engine.outstanding() == 0
        ),
        slot_answer: answer,
        inferred: None,
    })
}

fn misordered(s: &mut Session41) -> Result<Findings, V41Error> {
    let name = s.name("victim");
    s.mkdir(&name)?;
    let xid = s.fresh_xid();
    // One sequence id skipped.
    let seq = s.slot_seq.wrapping_add(2);
    let message = s.message(xid, seq, remove_ops(&name));
    s.send(xid, message, true)?;
    s.wait_replies(xid, 1);
    let answers = s.answers(xid);
    for a in &answers {
        s.track(seq, a);
    }
    let after = s.lookup(&name)?;
    let status = answers
        .first()
        .map_or_else(|| "no reply".to_string(), |a| a.status.clone());
    Ok(Findings {
        xid,
        sequence_id: seq,
        note: format!(
            "sequence id {seq} sent where the slot expected {}; LOOKUP victim afterwards: {after}",
            seq.wrapping_sub(1)
        ),
        slot_answer: status,
        inferred: None,
    })
}

fn false_retry(s: &mut Session41) -> Result<Findings, V41Error> {
    let victim = s.name("victim");
    let other = s.name("other");
    s.mkdir(&victim)?;
    s.mkdir(&other)?;
    let xid = s.fresh_xid();
    let seq = s.slot_seq.wrapping_add(1);
    let first = s.message(xid, seq, remove_ops(&victim));
    // Same slot, same sequence id, same operation count, another name.
    let second = s.message(xid, seq, remove_ops(&other));
    s.send(xid, first, true)?;
    s.wait_replies(xid, 1);
    if let Some(a) = s.answers(xid).first().cloned() {
        s.track(seq, &a);
    }
    s.send(xid, second, true)?;
    s.wait_replies(xid, 2);
    let answers = s.answers(xid);
    let other_after = s.lookup(&other)?;
    let first_status = answers.first().map_or("no reply", |a| a.status.as_str());
    let second_status = answers.get(1).map(|a| a.status.as_str());
    let identical = s.reply(xid, 0).is_some() && s.reply(xid, 0) == s.reply(xid, 1);
    let (executions, how, answer) =
        infer_false_retry(first_status, second_status, identical, &other_after);
    Ok(Findings {
        xid,
        sequence_id: seq,
        note: format!(
            "REMOVE of another name on the same slot and sequence id; LOOKUP of that name afterwards: {other_after}"
        ),
        slot_answer: answer,
        inferred: Some((executions, how)),
    })
}

fn after_reconnect(s: &mut Session41) -> Result<Findings, V41Error> {
    let (xid, seq, message) = s.victim()?;
    // The reply reaches our buffer, then the connection goes before we process it.
    s.client.hold_receives = true;
    s.send(xid, message.clone(), true)?;
    let (held, lost) = s.client.reconnect_losing_held_replies(s.options.timeout)?;
    s.lost_replies = lost;
    // SP4_NONE: the SEQUENCE itself binds the new connection (RFC 8881 §2.10.3.1).
    s.send(xid, message.clone(), true)?;
    s.wait_replies(xid, 1);
    let mut bound = "implicitly by SEQUENCE (SP4_NONE)".to_string();
    let answers = s.answers(xid);
    if answers
        .last()
        .is_some_and(|a| a.status == "NFS4ERR_CONN_NOT_BOUND_TO_SESSION")
    {
        let session = s.session;
        let res = s.rpc(&bind_conn_to_session(session), "BIND_CONN_TO_SESSION");
        bound = match res {
            Ok(_) => "by BIND_CONN_TO_SESSION after NFS4ERR_CONN_NOT_BOUND_TO_SESSION".to_string(),
            Err(e) => format!("not bound: {e}"),
        };
        s.send(xid, message, true)?;
        s.wait_replies(xid, 2);
    }
    for a in s.answers(xid) {
        s.track(seq, &a);
    }
    let n = s.replies.get(&xid).map_or(0, Vec::len);
    let answer = s
        .reply(xid, n.saturating_sub(1))
        .map(|b| (answer(b).status, b.to_vec()));
    Ok(Findings {
        xid,
        sequence_id: seq,
        note: format!(
            "first reply received then lost with the connection: {held}; new connection bound {bound}"
        ),
        slot_answer: slot_answer(None, answer.as_ref().map(|(st, b)| (st.as_str(), b.as_slice()))),
        inferred: None,
    })
}

/// The verdicts as a table: the NFSv3 table's columns, then the slot's answer.
pub fn table(verdicts: &[V41Verdict]) -> String {
    let bases: Vec<Verdict> = verdicts.iter().map(|v| v.base.clone()).collect();
    let mut out = verdict::record::table(&bases);
    out.push_str(&format!(
        "{:<24} {:>4} {:>4} {:<28} {:<16} {}\n",
        "scenario", "slot", "seq", "slot answer", "slot after", "expected"
    ));
    for v in verdicts {
        out.push_str(&format!(
            "{:<24} {:>4} {:>4} {:<28} {:<16} {}\n",
            v.base.scenario, v.slot, v.sequence_id, v.slot_answer, v.slot_after, v.expected
        ));
    }
    out
}

#[cfg(test)]
mod tests;
