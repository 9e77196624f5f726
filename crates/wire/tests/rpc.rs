//! ONC RPC v2 headers (RFC 5531): round trips, a hand-written vector, and `rejects_*` cases.

use wire::rpc::{
    AcceptStat, AuthSys, CallHeader, OpaqueAuth, RejectedReply, ReplyBody, ReplyHeader, RpcMessage,
    AUTH_SYS, MAX_AUTH_BYTES, NFS_PROGRAM,
};
use wire::{DecodeError, Reader, Writer, Xdr};

fn linux_cred() -> AuthSys {
    AuthSys {
        stamp: 0,
        machinename: b"cli".to_vec(),
        uid: 0,
        gid: 0,
        gids: vec![],
    }
}

/// The inline RPC call header of a Linux 6.1 NFSv3 WRITE (fixture frame 97), word by word.
const LINUX_WRITE_CALL_HEADER: [u8; 64] = [
    0x48, 0xbd, 0x88, 0x3c, // xid
    0, 0, 0, 0, // msg_type CALL
    0, 0, 0, 2, // rpcvers
    0, 0x01, 0x86, 0xa3, // prog 100003
    0, 0, 0, 3, // vers
    0, 0, 0, 7, // proc WRITE
    0, 0, 0, 1, // cred flavor AUTH_SYS
    0, 0, 0, 0x18, // cred body length 24
    0, 0, 0, 0, // stamp
    0, 0, 0, 3, b'c', b'l', b'i', 0, // machinename "cli" + padding
    0, 0, 0, 0, // uid
    0, 0, 0, 0, // gid
    0, 0, 0, 0, // gids<> count 0
    0, 0, 0, 0, // verf flavor AUTH_NONE
    0, 0, 0, 0, // verf body length 0
];

#[test]
fn decodes_linux_call_header() {
    let (msg, used) = RpcMessage::decode_prefix(&LINUX_WRITE_CALL_HEADER).unwrap();
    assert_eq!(used, 64);
    let RpcMessage::Call(call) = msg else {
        panic!("not a call")
    };
    assert_eq!(call.xid, 0x48bd_883c);
    assert_eq!((call.prog, call.vers, call.proc_), (NFS_PROGRAM, 3, 7));
    assert_eq!(call.cred.flavor, AUTH_SYS);
    assert_eq!(call.cred.auth_sys().unwrap().unwrap(), linux_cred());
    assert_eq!(call.verf, OpaqueAuth::none());
    // and it encodes back to the same bytes
    let mut expected = CallHeader::new(0x48bd_883c, NFS_PROGRAM, 3, 7);
    expected.cred = OpaqueAuth::sys(&linux_cred());
    assert_eq!(expected.to_bytes(), LINUX_WRITE_CALL_HEADER);
}

#[test]
fn call_and_replies_round_trip() {
    let mut call = CallHeader::new(1, 100005, 3, 1);
    call.cred = OpaqueAuth::sys(&AuthSys {
        stamp: 0x1234,
        machinename: b"host.example".to_vec(),
        uid: 1000,
        gid: 100,
        gids: (1..=16).collect(),
    });
    call.verf = OpaqueAuth {
        flavor: 6,
        body: vec![7; 400],
    };
    let messages = [
        RpcMessage::Call(call),
        RpcMessage::Reply(ReplyHeader::success(2)),
    ]
    .into_iter()
    .chain(
        [
            AcceptStat::Success,
            AcceptStat::ProgUnavail,
            AcceptStat::ProgMismatch { low: 2, high: 4 },
            AcceptStat::ProcUnavail,
            AcceptStat::GarbageArgs,
            AcceptStat::SystemErr,
        ]
        .into_iter()
        .map(|stat| {
            RpcMessage::Reply(ReplyHeader {
                xid: 3,
                body: ReplyBody::Accepted {
                    verf: OpaqueAuth::none(),
                    stat,
                },
            })
        }),
    )
    .chain(
        [
            RejectedReply::RpcMismatch { low: 2, high: 2 },
            RejectedReply::AuthError(1),
            RejectedReply::AuthError(14),
        ]
        .into_iter()
        .map(|r| {
            RpcMessage::Reply(ReplyHeader {
                xid: 4,
                body: ReplyBody::Denied(r),
            })
        }),
    );
    for msg in messages {
        let bytes = msg.to_bytes();
        assert_eq!(RpcMessage::from_bytes(&bytes).unwrap(), msg);
        let (again, used) = RpcMessage::decode_prefix(&bytes).unwrap();
        assert_eq!((again, used), (msg, bytes.len()));
    }
}

#[test]
fn prog_mismatch_reply_layout() {
    let reply = ReplyHeader {
        xid: 9,
        body: ReplyBody::Accepted {
            verf: OpaqueAuth::none(),
            stat: AcceptStat::ProgMismatch { low: 3, high: 3 },
        },
    };
    let words: Vec<u32> = reply
        .to_bytes()
        .chunks(4)
        .map(|c| u32::from_be_bytes(c.try_into().unwrap()))
        .collect();
    // xid, REPLY, MSG_ACCEPTED, verf (flavor, len), PROG_MISMATCH, low, high
    assert_eq!(words, [9, 1, 0, 0, 0, 2, 3, 3]);
}

#[test]
fn rejects_rpc_version_other_than_2() {
    let mut bytes = LINUX_WRITE_CALL_HEADER;
    bytes[11] = 3;
    let err = RpcMessage::decode_prefix(&bytes).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::BadValue {
            field: "call.rpcvers",
            value: 3,
            ..
        }
    ));
    assert!(err.rule().starts_with("RFC 5531 §9"));
}

#[test]
fn rejects_auth_body_over_400_bytes_before_reading_it() {
    let mut w = Writer::new();
    w.u32(1).u32(MAX_AUTH_BYTES + 1);
    let err = OpaqueAuth::decode(&mut Reader::new(w.as_bytes())).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::LengthOverLimit {
            length: 401,
            limit: 400,
            ..
        }
    ));
    assert!(err.rule().contains("RFC 5531 §8.2"));
}

#[test]
fn rejects_machinename_over_255_bytes() {
    let cred = AuthSys {
        machinename: vec![b'a'; 256],
        ..linux_cred()
    };
    let err = AuthSys::from_bytes(&cred.to_bytes()).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::LengthOverLimit {
            field: "authsys.machinename",
            limit: 255,
            ..
        }
    ));
}

#[test]
fn rejects_more_than_16_gids() {
    let cred = AuthSys {
        gids: (0..17).collect(),
        ..linux_cred()
    };
    let err = AuthSys::from_bytes(&cred.to_bytes()).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::LengthOverLimit {
            field: "authsys.gids",
            length: 17,
            limit: 16,
            ..
        }
    ));
}

#[test]
fn rejects_trailing_bytes_in_auth_sys_body() {
    let mut body = linux_cred().to_bytes();
    body.extend_from_slice(&[0, 0, 0, 0]);
    let auth = OpaqueAuth {
        flavor: AUTH_SYS,
        body,
    };
    assert!(matches!(
        auth.auth_sys(),
        Some(Err(DecodeError::TrailingBytes { count: 4, .. }))
    ));
}

#[test]
fn rejects_undefined_discriminants() {
    // msg_type 2
    let err = RpcMessage::from_bytes(&[0, 0, 0, 1, 0, 0, 0, 2]).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::BadDiscriminant {
            field: "rpc_msg.mtype",
            value: 2,
            ..
        }
    ));
    // reply_stat 2
    let err = RpcMessage::from_bytes(&[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2]).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::BadDiscriminant {
            field: "reply.stat",
            ..
        }
    ));
    // accept_stat 6
    let mut w = Writer::new();
    w.u32(1).u32(1).u32(0).u32(0).u32(0).u32(6);
    let err = RpcMessage::from_bytes(w.as_bytes()).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::BadDiscriminant {
            field: "accepted_reply.stat",
            value: 6,
            ..
        }
    ));
    // reject_stat 2
    let mut w = Writer::new();
    w.u32(1).u32(1).u32(1).u32(2);
    let err = RpcMessage::from_bytes(w.as_bytes()).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::BadDiscriminant {
            field: "rejected_reply.stat",
            value: 2,
            ..
        }
    ));
}

#[test]
fn every_truncation_is_an_error_not_a_panic() {
    for len in 0..LINUX_WRITE_CALL_HEADER.len() {
        let err = RpcMessage::decode_prefix(&LINUX_WRITE_CALL_HEADER[..len]).unwrap_err();
        assert!(
            matches!(err, DecodeError::Truncated { .. }),
            "len {len}: {err}"
        );
    }
}

#[test]
fn typed_decoders_refuse_the_other_direction() {
    let reply = ReplyHeader::success(5).to_bytes();
    assert!(CallHeader::from_bytes(&reply).is_err());
    assert!(ReplyHeader::from_bytes(&LINUX_WRITE_CALL_HEADER).is_err());
    assert_eq!(ReplyHeader::from_bytes(&reply).unwrap().xid, 5);
}
