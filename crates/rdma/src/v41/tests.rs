//! Host tests of the NFSv4.1 session scenarios: every call they send decodes with the wire
//! codec to what was meant, and synthetic replies go through the answer, the inference and the
//! one judgement rule. No RDMA needed.

use super::*;
use wire::nfs4::{ChangeInfo4, Nfs4OpReply, Nfsstat4, SequenceResOk};
use wire::rpc::{ReplyHeader, AUTH_SYS};

const SESSION: SessionId4 = SessionId4([7; 16]);
const XID: u32 = 0x4a00_1234;

/// Decode a call message: the RPC header and the COMPOUND arguments.
fn decode_call(message: &[u8]) -> (CallHeader, Compound4Args) {
    let (rpc, used) = RpcMessage::decode_prefix(message).unwrap();
    let RpcMessage::Call(header) = rpc else {
        panic!("not a call");
    };
    let args = Compound4Args::from_bytes(&message[used..]).unwrap();
    (header, args)
}

fn sequence_ok(seq: u32, flags: u32) -> Nfs4OpReply {
    Nfs4OpReply {
        opnum: opnum::SEQUENCE,
        status: Nfsstat4::OK,
        result: OpResult::Sequence(SequenceResOk {
            sessionid: SESSION,
            sequenceid: seq,
            slotid: SLOT,
            highest_slotid: 0,
            target_highest_slotid: 3,
            status_flags: flags,
        }),
    }
}

fn op(opnum: u32, status: u32, result: OpResult) -> Nfs4OpReply {
    Nfs4OpReply {
        opnum,
        status: Nfsstat4(status),
        result,
    }
}

/// An RPC reply carrying `results` (the COMPOUND status is the last result's).
fn reply(results: Vec<Nfs4OpReply>) -> Vec<u8> {
    let status = results.last().map_or(Nfsstat4::OK, |r| r.status);
    let mut bytes = ReplyHeader::success(XID).to_bytes();
    bytes.extend(
        Compound4Res {
            status,
            tag: Tag4::default(),
            results,
        }
        .to_bytes(),
    );
    bytes
}

const NOENT: u32 = 2;
const DELAY: u32 = 10008;
const MISORDERED: u32 = 10063;
const FALSE_RETRY: u32 = 10076;

fn removed(seq: u32, flags: u32) -> Vec<u8> {
    reply(vec![
        sequence_ok(seq, flags),
        op(opnum::PUTROOTFH, 0, OpResult::Void),
        op(
            opnum::REMOVE,
            0,
            OpResult::ChangeInfo(ChangeInfo4 {
                atomic: true,
                before: 10,
                after: 11,
            }),
        ),
    ])
}

fn not_found(seq: u32) -> Vec<u8> {
    reply(vec![
        sequence_ok(seq, 0),
        op(opnum::PUTROOTFH, 0, OpResult::Void),
        op(opnum::REMOVE, NOENT, OpResult::Void),
    ])
}

fn refused(status: u32) -> Vec<u8> {
    reply(vec![op(opnum::SEQUENCE, status, OpResult::Void)])
}

fn scenario(name: &str) -> Scenario41 {
    catalogue().into_iter().find(|s| s.name == name).unwrap()
}

#[test]
fn the_remove_compound_decodes_to_sequence_putrootfh_remove() {
    let message = call_message(XID, &sequenced(SESSION, SLOT, 5, remove_ops("victim")));
    let (header, args) = decode_call(&message);
    assert_eq!(
        (header.xid, header.prog, header.vers, header.proc_),
        (XID, NFS_PROGRAM, 4, 1)
    );
    assert_eq!(header.cred.flavor, AUTH_SYS);
    let cred = header.cred.auth_sys().unwrap().unwrap();
    assert_eq!((cred.uid, cred.gid, cred.stamp), (0, 0, 0));
    assert_eq!(args.minorversion, 1);
    assert_eq!(
        args.ops,
        vec![
            Nfs4Op::Sequence(SequenceArgs {
                sessionid: SESSION,
                sequenceid: 5,
                slotid: 0,
                highest_slotid: 0,
                cachethis: true,
            }),
            Nfs4Op::Putrootfh,
            Nfs4Op::Remove(Component4(b"victim".to_vec())),
        ]
    );
    assert_eq!(
        args.summary(),
        "SEQUENCE(slot=0 seq=5) PUTROOTFH REMOVE(name=victim)"
    );
    // A retransmission is byte for byte the same call; a false retry differs in bytes only.
    let again = call_message(XID, &sequenced(SESSION, SLOT, 5, remove_ops("victim")));
    assert_eq!(message, again);
    let other = call_message(XID, &sequenced(SESSION, SLOT, 5, remove_ops("other")));
    assert_ne!(message, other);
    assert_eq!(decode_call(&other).1.ops.len(), args.ops.len());
}

#[test]
fn session_setup_calls_decode_to_what_was_asked() {
    let (_, args) = decode_call(&call_message(1, &exchange_id(b"rig-owner", [1; 8])));
    let [Nfs4Op::ExchangeId(eid)] = args.ops.as_slice() else {
        panic!("{:?}", args.ops);
    };
    assert_eq!(eid.clientowner.ownerid.0, b"rig-owner");
    assert_eq!(eid.clientowner.verifier, Verifier4([1; 8]));
    assert_eq!(eid.state_protect, StateProtect::None);
    assert_eq!(eid.flags, 0);

    let (_, args) = decode_call(&call_message(2, &create_session(0xabcd, 9)));
    let [Nfs4Op::CreateSession(cs)] = args.ops.as_slice() else {
        panic!("{:?}", args.ops);
    };
    assert_eq!((cs.clientid, cs.sequence, cs.flags), (0xabcd, 9, 0));
    assert_eq!(cs.fore_chan_attrs, fore_channel());
    assert!(cs.fore_chan_attrs.maxresponsesize_cached >= 1024);
    assert!(cs.back_chan_attrs.maxoperations >= 2);
    assert_eq!(cs.sec_parms.0, vec![CallbackSecParms4::AuthNone]);

    let (_, args) = decode_call(&call_message(
        3,
        &sequenced(SESSION, SLOT, 1, vec![Nfs4Op::ReclaimComplete(false)]),
    ));
    assert_eq!(
        args.summary(),
        "SEQUENCE(slot=0 seq=1) RECLAIM_COMPLETE(one_fs=false)"
    );
}

#[test]
fn the_victim_is_a_directory_made_with_mode_0755() {
    let (_, args) = decode_call(&call_message(
        4,
        &sequenced(SESSION, SLOT, 2, mkdir_ops("v")),
    ));
    let Nfs4Op::Create(create) = &args.ops[2] else {
        panic!("{:?}", args.ops);
    };
    assert_eq!(create.objtype.name(), "NF4DIR");
    assert_eq!(create.objname.0, b"v");
    assert!(create.createattrs.attrmask.contains(33));
    assert_eq!(create.createattrs.attrmask.count(), 1);
    assert_eq!(create.createattrs.attr_vals.0, 0o755u32.to_be_bytes());
    let (_, args) = decode_call(&call_message(
        5,
        &sequenced(SESSION, SLOT, 3, lookup_ops("v")),
    ));
    assert_eq!(
        args.summary(),
        "SEQUENCE(slot=0 seq=3) PUTROOTFH LOOKUP(name=v)"
    );
}

#[test]
fn bind_conn_to_session_is_the_24_bytes_rfc_8881_gives_it() {
    let args = bind_conn_to_session(SESSION);
    let bytes = call_message(6, &args);
    let (_, decoded) = decode_call(&bytes);
    let [Nfs4Op::Opaque { opnum: n, body }] = decoded.ops.as_slice() else {
        panic!("{:?}", decoded.ops);
    };
    assert_eq!(*n, opnum::BIND_CONN_TO_SESSION);
    assert_eq!(body.len(), 24);
    assert_eq!(&body[..16], &SESSION.0);
    assert_eq!(&body[16..], &[0, 0, 0, 1, 0, 0, 0, 0]);
    assert_eq!(decoded, args);
}

#[test]
fn answers_name_the_status_the_failing_op_and_the_slot() {
    let a = answer(&removed(5, 0));
    assert_eq!(a.status, "NFS4_OK");
    assert_eq!(
        (a.slot, a.sequence_id, a.failed_op.as_deref()),
        (Some(0), Some(5), None)
    );
    assert_eq!(a.summary, "SEQUENCE(slot=0 seq=5) PUTROOTFH REMOVE");
    let a = answer(&not_found(5));
    assert_eq!(
        (a.status.as_str(), a.failed_op.as_deref()),
        ("NFS4ERR_NOENT", Some("REMOVE"))
    );
    let a = answer(&refused(DELAY));
    assert_eq!(
        (a.status.as_str(), a.failed_op.as_deref()),
        ("NFS4ERR_DELAY", Some("SEQUENCE"))
    );
    assert_eq!((a.slot, a.sequence_id), (None, None));
    assert!(is_refusal(&a.status));
    assert!(!is_refusal("NFS4ERR_NOENT") && !is_refusal("NFS4_OK"));
}

#[test]
fn hostile_replies_never_panic_and_say_why() {
    let good = removed(5, 0);
    for cut in 0..good.len() {
        let a = answer(&good[..cut]);
        assert!(
            a.status.starts_with("undecodable ("),
            "cut {cut}: {}",
            a.status
        );
    }
    // A result count of 2^32-1 is refused before anything is allocated.
    let mut huge = ReplyHeader::success(XID).to_bytes();
    huge.extend([0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
    assert!(
        answer(&huge).status.starts_with("undecodable (RFC"),
        "{}",
        answer(&huge).status
    );
    // A call is not a reply; an unexecuted call says why.
    let call = call_message(XID, &sequenced(SESSION, SLOT, 1, Vec::new()));
    assert!(answer(&call).status.contains("not a reply"));
    let mut garbage = ReplyHeader {
        xid: XID,
        body: ReplyBody::Accepted {
            verf: OpaqueAuth::none(),
            stat: AcceptStat::GarbageArgs,
        },
    }
    .to_bytes();
    garbage.extend([0; 8]);
    assert_eq!(answer(&garbage).status, "GARBAGE_ARGS");
}

fn statuses(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn executions_are_inferred_from_nfs4_statuses_with_refusals_apart() {
    assert_eq!(infer(&statuses(&["NFS4_OK", "NFS4_OK"])).0, Some(1));
    assert_eq!(infer(&statuses(&["NFS4_OK", "NFS4ERR_NOENT"])).0, Some(2));
    // The retry refused while the original ran: one execution.
    assert_eq!(infer(&statuses(&["NFS4_OK", "NFS4ERR_DELAY"])).0, Some(1));
    assert_eq!(infer(&statuses(&["NFS4ERR_DELAY", "NFS4_OK"])).0, Some(1));
    // Refused alone: nothing ran.
    let (n, how) = infer(&statuses(&["NFS4ERR_SEQ_MISORDERED"]));
    assert_eq!(n, Some(0), "{how}");
    assert_eq!(infer(&statuses(&[LOST_REPLY, "NFS4_OK"])).0, Some(1));
    assert_eq!(infer(&statuses(&[LOST_REPLY, "NFS4ERR_NOENT"])).0, Some(2));
    assert_eq!(infer(&statuses(&["NFS4ERR_NOENT"])).0, None);
    assert_eq!(infer(&[]).0, None);
    assert_eq!(
        infer(&statuses(&["undecodable (RFC 5531 §9)", "NFS4_OK"])).0,
        None
    );
}

#[test]
fn a_replay_after_ack_passes_when_identical_and_fails_when_executed_again() {
    let s = scenario("v41-replay-after-ack");
    let v = assemble(
        &s,
        "nfsd",
        XID,
        5,
        2,
        1,
        &[removed(5, 0), removed(5, 0)],
        0,
        None,
    );
    assert_eq!(v.base.statuses, statuses(&["NFS4_OK", "NFS4_OK"]));
    assert_eq!((v.base.executions, v.base.argument_sets), (Some(1), 1));
    assert!(v.base.replies_identical);
    assert_eq!(v.base.judgement, "pass", "{}", v.base.failure);
    assert_eq!(v.replay_difference, None);

    let v = assemble(
        &s,
        "nfsd",
        XID,
        5,
        2,
        1,
        &[removed(5, 0), not_found(5)],
        0,
        None,
    );
    assert_eq!(v.base.executions, Some(2));
    assert_eq!(v.base.judgement, "fail");
    assert!(
        v.base
            .failure
            .starts_with("non-idempotent REMOVE executed 2 times for XID 0x4a001234 with 1 argument set (inferred from NFS statuses)"),
        "{}",
        v.base.failure
    );
}

#[test]
fn a_replay_whose_bytes_differ_fails_and_says_where() {
    let s = scenario("v41-replay-after-ack");
    // nfsd encodes the SEQUENCE result afresh on a replay: a changed flag is a changed reply.
    let v = assemble(
        &s,
        "nfsd",
        XID,
        5,
        2,
        1,
        &[removed(5, 0), removed(5, 1)],
        0,
        None,
    );
    assert!(!v.base.replies_identical);
    assert_eq!(v.base.judgement, "fail");
    assert!(
        v.base.failure.contains("not identical"),
        "{}",
        v.base.failure
    );
    let diff = v.replay_difference.unwrap();
    assert!(
        diff.starts_with("SEQUENCE result differs (status_flags 0x0"),
        "{diff}"
    );
    let after = difference(&removed(5, 0), &not_found(5)).unwrap();
    assert!(
        after.starts_with("results after SEQUENCE differ"),
        "{after}"
    );
    assert_eq!(difference(&removed(5, 0), &removed(5, 0)), None);
}

#[test]
fn a_retry_refused_in_progress_is_one_execution_with_identical_answers() {
    let s = scenario("v41-replay-in-progress");
    let v = assemble(
        &s,
        "nfsd",
        XID,
        5,
        2,
        1,
        &[removed(5, 0), refused(DELAY)],
        0,
        None,
    );
    assert_eq!(v.base.statuses, statuses(&["NFS4_OK", "NFS4ERR_DELAY"]));
    assert_eq!(v.base.executions, Some(1));
    assert!(v.base.replies_identical, "the refusal answers nothing");
    assert_eq!(v.base.judgement, "pass", "{}", v.base.failure);
    assert_eq!(v.nfs4[1].failed_op.as_deref(), Some("SEQUENCE"));
}

#[test]
fn a_misordered_request_refused_executed_nothing() {
    let s = scenario("v41-misordered");
    let v = assemble(&s, "nfsd", XID, 7, 1, 1, &[refused(MISORDERED)], 0, None);
    assert_eq!(v.base.executions, Some(0));
    assert_eq!(v.base.judgement, "pass");
    assert_eq!(v.sequence_id, 7);
    assert_eq!(v.expected, RULE_MISORDERED);
}

#[test]
fn a_false_retry_may_be_refused_or_answered_from_the_slot_but_not_executed() {
    // nfsd answers from the slot when the operation count matches (replay_matches_cache).
    let (n, how, answer) = infer_false_retry("NFS4_OK", Some("NFS4_OK"), true, "NFS4_OK");
    assert_eq!((n, answer.as_str()), (Some(1), "cached reply"), "{how}");
    let (n, _, answer) =
        infer_false_retry("NFS4_OK", Some("NFS4ERR_SEQ_FALSE_RETRY"), false, "NFS4_OK");
    assert_eq!((n, answer.as_str()), (Some(1), "NFS4ERR_SEQ_FALSE_RETRY"));
    let (n, _, answer) = infer_false_retry("NFS4_OK", Some("NFS4_OK"), false, "NFS4ERR_NOENT");
    assert_eq!((n, answer.as_str()), (Some(2), "fresh answer NFS4_OK"));
    // 6.1/6.12: NFS4_OK with other status flags, the second name untouched: the slot answered.
    let (n, _, answer) = infer_false_retry("NFS4_OK", Some("NFS4_OK"), false, "NFS4_OK");
    assert_eq!(
        (n, answer.as_str()),
        (Some(1), "cached reply, encoded again (bytes differ)")
    );
    assert_eq!(
        infer_false_retry("NFS4ERR_NOENT", None, false, "NFS4_OK").0,
        None
    );

    let s = scenario("v41-false-retry");
    for (second, executions, judgement) in [
        (removed(5, 0), Some(1), "pass"),
        (refused(FALSE_RETRY), Some(1), "pass"),
        (removed(5, 0), Some(2), "fail"),
    ] {
        let inferred = Some((executions, "test".to_string()));
        let v = assemble(
            &s,
            "nfsd",
            XID,
            5,
            2,
            2,
            &[removed(5, 0), second],
            0,
            inferred,
        );
        assert_eq!(v.call_messages, 2);
        // One request by its slot and sequence id (RFC 8881 §2.10.6.1).
        assert_eq!(v.base.argument_sets, 1);
        assert_eq!(
            v.base.judgement, judgement,
            "{executions:?}: {}",
            v.base.failure
        );
    }
}

#[test]
fn a_reply_lost_with_the_connection_leads_the_statuses() {
    let s = scenario("v41-after-reconnect");
    let v = assemble(&s, "nfsd", XID, 5, 2, 1, &[removed(5, 0)], 1, None);
    assert_eq!(v.base.statuses, statuses(&[LOST_REPLY, "NFS4_OK"]));
    assert_eq!(
        (v.base.executions, v.base.judgement.as_str()),
        (Some(1), "pass")
    );
    let v = assemble(&s, "nfsd", XID, 5, 2, 1, &[not_found(5)], 1, None);
    assert_eq!(
        (v.base.executions, v.base.judgement.as_str()),
        (Some(2), "fail")
    );
}

#[test]
fn slot_answers_are_named() {
    let ok = removed(5, 0);
    assert_eq!(slot_answer(Some(&ok), Some(("NFS4_OK", &ok))), "replay");
    assert_eq!(slot_answer(None, Some(("NFS4_OK", &ok))), "replay");
    assert_eq!(
        slot_answer(Some(&ok), Some(("NFS4_OK", &removed(5, 1)))),
        "replay (bytes differ)"
    );
    assert_eq!(
        slot_answer(Some(&ok), Some(("NFS4ERR_NOENT", &ok))),
        "re-executed"
    );
    assert_eq!(
        slot_answer(Some(&ok), Some(("NFS4ERR_DELAY", &ok))),
        "NFS4ERR_DELAY"
    );
    assert_eq!(slot_answer(Some(&ok), None), "no reply");
    assert_eq!(
        slot_answer(Some(&ok), Some(("NFS4ERR_IO", &ok))),
        "other: NFS4ERR_IO"
    );
}

#[test]
fn verdicts_serialise_flat_without_volatile_ids_and_read_back() {
    let s = scenario("v41-replay-after-ack");
    let v = assemble(
        &s,
        "nfsd",
        XID,
        5,
        2,
        1,
        &[removed(5, 0), removed(5, 0)],
        0,
        None,
    );
    let json = serde_json::to_string_pretty(&vec![v.clone()]).unwrap();
    for key in [
        "\"scenario\": \"v41-replay-after-ack\"",
        "\"procedure\": \"REMOVE\"",
        "\"executions_basis\": \"inferred\"",
        "\"judgement\": \"pass\"",
        "\"slot\": 0",
        "\"sequence_id\": 5",
        "\"call_messages\": 1",
        "\"status\": \"NFS4_OK\"",
    ] {
        assert!(json.contains(key), "{key} in {json}");
    }
    // The session id (07..07) would differ run to run; it is never in a verdict.
    assert!(!json.contains("0707070707"), "{json}");
    let back: Vec<V41Verdict> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, vec![v.clone()]);
    // The NFSv3 verdict reader (rig judge, the interop snapshots) reads the same file.
    let base: Vec<Verdict> = serde_json::from_str(&json).unwrap();
    assert_eq!(base[0], v.base);
}

#[test]
fn the_catalogue_is_the_five_scenarios_each_with_its_rfc_rule() {
    let names: Vec<&str> = catalogue().iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "v41-replay-after-ack",
            "v41-replay-in-progress",
            "v41-misordered",
            "v41-false-retry",
            "v41-after-reconnect"
        ]
    );
    for s in catalogue() {
        assert!(s.expected.starts_with("RFC 8881 §2.10."), "{}", s.expected);
    }
    let options = Options {
        server: "10.99.0.1:20049".parse().unwrap(),
        label: "nfsd".into(),
        timeout: Duration::from_secs(1),
        prefix: "p".into(),
        grace_wait: Duration::from_secs(1),
    };
    assert!(run(&options, Some("v41-never"))
        .unwrap_err()
        .contains("unknown"));
    let e = error_verdict(&catalogue()[0], &options, "no device".into());
    assert_eq!(
        (e.base.outcome.as_str(), e.base.executions_basis.as_str()),
        ("error", "none")
    );
}
