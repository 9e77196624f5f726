//! Tests of the NFSv4.1 COMPOUND codec: round trips of every typed operation, reduced streams
//! through `ddp::Reduction`, the opaque and undecoded operations, hostile input.

use super::*;
use crate::ddp::Ddp;
use crate::rpcrdma::{ReadChunk, Segment};

fn stateid(n: u8) -> Stateid4 {
    Stateid4 {
        seqid: u32::from(n),
        other: [n; 12],
    }
}

fn name(s: &str) -> Component4 {
    Component4(s.as_bytes().to_vec())
}

fn fattr() -> Fattr4 {
    Fattr4 {
        attrmask: Bitmap4(vec![0x10, 0x2]),
        attr_vals: AttrVals(vec![1, 2, 3, 4, 5, 6, 7, 8]),
    }
}

fn sequence_args(seq: u32) -> Nfs4Op {
    Nfs4Op::Sequence(SequenceArgs {
        sessionid: SessionId4([7; 16]),
        sequenceid: seq,
        slotid: 0,
        highest_slotid: 0,
        cachethis: false,
    })
}

fn channel() -> ChannelAttrs4 {
    ChannelAttrs4 {
        headerpadsize: 0,
        maxrequestsize: 1049620,
        maxresponsesize: 1049480,
        maxresponsesize_cached: 7584,
        maxoperations: 16,
        maxrequests: 64,
        rdma_ird: Array(vec![]),
    }
}

/// One of every typed operation's arguments (and the opaque kinds).
fn every_op() -> Vec<Nfs4Op> {
    vec![
        sequence_args(5),
        Nfs4Op::Putrootfh,
        Nfs4Op::Putfh(FileHandle4(vec![1, 0, 1, 0])),
        Nfs4Op::Getfh,
        Nfs4Op::Lookup(name("export")),
        Nfs4Op::Getattr(Bitmap4(vec![0x0010011a, 0x00b0a23a])),
        Nfs4Op::Access(0x1f),
        Nfs4Op::Open(OpenArgs {
            seqid: 0,
            share_access: 2,
            share_deny: 0,
            owner: OpenOwner4 {
                clientid: 42,
                owner: OpaqueLimited(b"open id:owner".to_vec()),
            },
            openhow: OpenFlag4::Create(CreateHow4::Exclusive41 {
                verf: Verifier4([3; 8]),
                attrs: fattr(),
            }),
            claim: OpenClaim4::Null(name("nfs41.blob")),
        }),
        Nfs4Op::Open(OpenArgs {
            seqid: 0,
            share_access: 1,
            share_deny: 0,
            owner: OpenOwner4 {
                clientid: 42,
                owner: OpaqueLimited(vec![]),
            },
            openhow: OpenFlag4::NoCreate,
            claim: OpenClaim4::DelegateCur {
                delegate_stateid: stateid(4),
                file: name("f"),
            },
        }),
        Nfs4Op::Close(CloseArgs {
            seqid: 0,
            open_stateid: stateid(1),
        }),
        Nfs4Op::Read(ReadArgs {
            stateid: stateid(2),
            offset: 4096,
            count: 32768,
        }),
        Nfs4Op::Write(WriteArgs {
            stateid: stateid(2),
            offset: 0,
            stable: StableHow4::Unstable,
            data: DdpData::Inline(b"hello".to_vec()),
        }),
        Nfs4Op::Commit(CommitArgs {
            offset: 0,
            count: 0,
        }),
        Nfs4Op::Create(CreateArgs {
            objtype: CreateType4::Link(DdpData::Inline(b"../target".to_vec())),
            objname: name("link"),
            createattrs: fattr(),
        }),
        Nfs4Op::Create(CreateArgs {
            objtype: CreateType4::Other(2),
            objname: name("dir"),
            createattrs: fattr(),
        }),
        Nfs4Op::Create(CreateArgs {
            objtype: CreateType4::Block(Specdata4 {
                specdata1: 8,
                specdata2: 1,
            }),
            objname: name("sda1"),
            createattrs: fattr(),
        }),
        Nfs4Op::Remove(name("x")),
        Nfs4Op::Rename(RenameArgs {
            oldname: name("a"),
            newname: name("b"),
        }),
        Nfs4Op::Link(name("hard")),
        Nfs4Op::Readdir(ReaddirArgs {
            cookie: 0,
            cookieverf: Verifier4::default(),
            dircount: 8192,
            maxcount: 32768,
            attr_request: Bitmap4(vec![0x18091a, 0xb0a23a]),
        }),
        Nfs4Op::Readlink,
        Nfs4Op::SecinfoNoName(0),
        Nfs4Op::TestStateid(Array(vec![stateid(1), stateid(2)])),
        Nfs4Op::FreeStateid(stateid(3)),
        Nfs4Op::DestroySession(SessionId4([9; 16])),
        Nfs4Op::DestroyClientid(77),
        Nfs4Op::ReclaimComplete(false),
        Nfs4Op::ExchangeId(Box::new(ExchangeIdArgs {
            clientowner: ClientOwner4 {
                verifier: Verifier4([1; 8]),
                ownerid: OpaqueLimited(b"Linux NFSv4.1 client".to_vec()),
            },
            flags: 0x103,
            state_protect: StateProtect::MachCred(StateProtectOps4 {
                must_enforce: Bitmap4(vec![1]),
                must_allow: Bitmap4(vec![]),
            }),
            client_impl_id: Array(vec![NfsImplId4 {
                domain: name("kernel.org"),
                name: name("Linux 6.12"),
                date: Nfstime4 {
                    seconds: 0,
                    nseconds: 0,
                },
            }]),
        })),
        Nfs4Op::CreateSession(Box::new(CreateSessionArgs {
            clientid: 42,
            sequence: 1,
            flags: 3,
            fore_chan_attrs: channel(),
            back_chan_attrs: channel(),
            cb_program: 0x40000000,
            sec_parms: Array(vec![
                CallbackSecParms4::AuthNone,
                CallbackSecParms4::AuthSys(AuthsysParms {
                    stamp: 1,
                    machinename: MachineName(b"client".to_vec()),
                    uid: 0,
                    gid: 0,
                    gids: Array(vec![Uint32(0), Uint32(10)]),
                }),
            ]),
        })),
        // LAYOUTGET: 56 bytes of arguments kept as they are.
        Nfs4Op::Opaque {
            opnum: opnum::LAYOUTGET,
            body: (0..56).collect(),
        },
        Nfs4Op::Opaque {
            opnum: opnum::SAVEFH,
            body: vec![],
        },
    ]
}

fn compound(ops: Vec<Nfs4Op>) -> Compound4Args {
    Compound4Args {
        tag: Tag4(vec![]),
        minorversion: 1,
        ops,
    }
}

#[test]
fn every_typed_operation_round_trips() {
    let args = compound(every_op());
    let bytes = args.to_bytes();
    let again = Compound4Args::from_bytes(&bytes).unwrap();
    assert_eq!(again, args);
    assert_eq!(again.to_bytes(), bytes);
    // Minor version 2 decodes the same operations.
    let mut v2 = args.clone();
    v2.minorversion = 2;
    assert_eq!(Compound4Args::from_bytes(&v2.to_bytes()).unwrap(), v2);
}

fn reply(opnum: u32, result: OpResult) -> Nfs4OpReply {
    Nfs4OpReply {
        opnum,
        status: Nfsstat4::OK,
        result,
    }
}

fn every_result() -> Vec<Nfs4OpReply> {
    use opnum::*;
    let cinfo = ChangeInfo4 {
        atomic: true,
        before: 1,
        after: 2,
    };
    vec![
        reply(
            SEQUENCE,
            OpResult::Sequence(SequenceResOk {
                sessionid: SessionId4([7; 16]),
                sequenceid: 5,
                slotid: 0,
                highest_slotid: 63,
                target_highest_slotid: 63,
                status_flags: 0,
            }),
        ),
        reply(PUTFH, OpResult::Void),
        reply(GETFH, OpResult::Getfh(FileHandle4(vec![1; 8]))),
        reply(GETATTR, OpResult::Getattr(fattr())),
        reply(
            ACCESS,
            OpResult::Access {
                supported: 0x1f,
                access: 0xd,
            },
        ),
        reply(
            OPEN,
            OpResult::Open(Box::new(OpenResOk {
                stateid: stateid(1),
                cinfo: cinfo.clone(),
                rflags: 4,
                attrset: Bitmap4(vec![0, 2]),
                delegation: OpenDelegation4::Write {
                    attrs_deleg: true,
                    stateid: stateid(9),
                    recall: false,
                    space_limit: SpaceLimit4::Size(u64::MAX),
                    permissions: Nfsace4 {
                        acetype: 0,
                        flag: 0,
                        access_mask: 0,
                        who: name(""),
                    },
                },
            })),
        ),
        reply(
            OPEN,
            OpResult::Open(Box::new(OpenResOk {
                stateid: stateid(1),
                cinfo: cinfo.clone(),
                rflags: 4,
                attrset: Bitmap4(vec![]),
                delegation: OpenDelegation4::NoneExt {
                    why: 5,
                    will_push_or_signal: Some(true),
                },
            })),
        ),
        reply(CLOSE, OpResult::Close(stateid(2))),
        reply(
            READ,
            OpResult::Read(ReadResOk {
                eof: true,
                data: DdpData::Inline(b"hello, world\n".to_vec()),
            }),
        ),
        reply(
            WRITE,
            OpResult::Write(WriteResOk {
                count: 32768,
                committed: StableHow4::Unstable,
                writeverf: Verifier4([5; 8]),
            }),
        ),
        reply(COMMIT, OpResult::Commit(Verifier4([5; 8]))),
        reply(
            CREATE,
            OpResult::Create(CreateResOk {
                cinfo: cinfo.clone(),
                attrset: Bitmap4(vec![2]),
            }),
        ),
        reply(REMOVE, OpResult::ChangeInfo(cinfo.clone())),
        reply(
            RENAME,
            OpResult::Rename(RenameResOk {
                source_cinfo: cinfo.clone(),
                target_cinfo: cinfo,
            }),
        ),
        reply(
            READDIR,
            OpResult::Readdir(ReaddirResOk {
                cookieverf: Verifier4::default(),
                entries: vec![Entry4 {
                    cookie: 3,
                    name: name("hello.txt"),
                    attrs: fattr(),
                }],
                eof: true,
            }),
        ),
        reply(
            READLINK,
            OpResult::Readlink(DdpData::Inline(b"../t".to_vec())),
        ),
        reply(
            SECINFO_NO_NAME,
            OpResult::SecinfoNoName(Array(vec![
                Secinfo4::Flavor(1),
                Secinfo4::RpcsecGss(RpcsecGssInfo {
                    oid: SecOpaque(vec![0x2a, 0x86]),
                    qop: 0,
                    service: 1,
                }),
            ])),
        ),
        reply(
            TEST_STATEID,
            OpResult::TestStateid(Array(vec![Nfsstat4::OK, Nfsstat4(10025)])),
        ),
        reply(
            EXCHANGE_ID,
            OpResult::ExchangeId(Box::new(ExchangeIdResOk {
                clientid: 1,
                sequenceid: 1,
                flags: 0x10003,
                state_protect: StateProtect::None,
                server_owner: ServerOwner4 {
                    minor_id: 0,
                    major_id: OpaqueLimited(b"srv".to_vec()),
                },
                server_scope: OpaqueLimited(b"srv".to_vec()),
                server_impl_id: Array(vec![]),
            })),
        ),
        reply(
            CREATE_SESSION,
            OpResult::CreateSession(Box::new(CreateSessionResOk {
                sessionid: SessionId4([7; 16]),
                sequence: 1,
                flags: 2,
                fore_chan_attrs: channel(),
                back_chan_attrs: channel(),
            })),
        ),
        reply(SETATTR, OpResult::Opaque(vec![0, 0, 0, 1, 0, 0, 0, 2])),
        Nfs4OpReply {
            opnum: LOOKUP,
            status: Nfsstat4(2),
            result: OpResult::Void,
        },
    ]
}

#[test]
fn every_typed_result_round_trips() {
    let res = Compound4Res {
        status: Nfsstat4(2),
        tag: Tag4(vec![]),
        results: every_result(),
    };
    let bytes = res.to_bytes();
    let again = Compound4Res::from_bytes(&bytes).unwrap();
    assert_eq!(again, res);
    assert_eq!(again.to_bytes(), bytes);
    assert!(
        res.summary().ends_with("LOOKUP:NFS4ERR_NOENT"),
        "{}",
        res.summary()
    );
}

#[test]
fn summaries_show_key_arguments_and_leave_volatile_values_out() {
    let args = compound(vec![
        sequence_args(5),
        Nfs4Op::Putfh(FileHandle4(vec![0xab; 8])),
        Nfs4Op::Write(WriteArgs {
            stateid: stateid(0xcd),
            offset: 0,
            stable: StableHow4::Unstable,
            data: DdpData::Moved { length: 32768 },
        }),
    ]);
    assert_eq!(
        args.summary(),
        "SEQUENCE(slot=0 seq=5) PUTFH WRITE(off=0 len=32768 UNSTABLE4 chunk)"
    );
    assert_eq!(op_name(99), "OP99");
    assert_eq!(op_name(opnum::ILLEGAL), "ILLEGAL");
}

fn read_chunk(position: u32, length: u32) -> ReadChunk {
    ReadChunk {
        position,
        segments: vec![Segment {
            handle: 1,
            length,
            offset: 0,
        }],
    }
}

#[test]
fn a_moved_write_keeps_its_length_word_and_later_operations_follow() {
    // RFC 8267 §6: WRITE4args.data is DDP-eligible; the GETATTR after it stays inline.
    let moved = compound(vec![
        sequence_args(1),
        Nfs4Op::Write(WriteArgs {
            stateid: stateid(1),
            offset: 0,
            stable: StableHow4::FileSync,
            data: DdpData::Moved { length: 5 },
        }),
        Nfs4Op::Getattr(Bitmap4(vec![0x18])),
    ]);
    let reduced = moved.to_bytes();
    let mut reduction = Reduction::for_call(&[read_chunk(0, 0), read_chunk(64, 5)]);
    let mut r = Reader::new(&reduced);
    let decoded = Compound4Args::decode_with(&mut r, &mut reduction).unwrap();
    r.finish("reduced call").unwrap();
    assert_eq!(decoded, moved);
    let item = &reduction.items()[0];
    assert_eq!(item.item, ITEM_WRITE_DATA);
    assert!(item.moved);
    assert_eq!(item.chunk, Some(64));
    assert_eq!(reduction.chunk_length(item), Some(5));
    assert_eq!(reduction.unused_chunks().next(), None);
    // The data's XDR position: just after its length word in the reduced stream.
    let tag_minor_count = 12;
    let sequence = 4 + 16 + 4 * 4;
    let write_head = 4 + 16 + 8 + 4 + 4;
    assert_eq!(item.offset, tag_minor_count + sequence + write_head);
    assert_eq!(
        crate::ddp::check_argument_position(64, item.offset),
        Err(crate::ddp::ReadChunkError::ArgumentPosition {
            position: 64,
            expected: item.offset as u64
        })
    );
    // Inline, the same stream is five bytes (and three of padding) longer.
    let inline = compound(vec![
        sequence_args(1),
        Nfs4Op::Write(WriteArgs {
            stateid: stateid(1),
            offset: 0,
            stable: StableHow4::FileSync,
            data: DdpData::Inline(b"12345".to_vec()),
        }),
        Nfs4Op::Getattr(Bitmap4(vec![0x18])),
    ]);
    assert_eq!(inline.to_bytes().len(), reduced.len() + 8);
    assert_eq!(
        Compound4Args::from_bytes(&inline.to_bytes()).unwrap(),
        inline
    );
}

#[test]
fn a_second_moved_write_is_positioned_after_the_first_ones_bytes_in_the_unreduced_stream() {
    // RFC 8166 §3.4.4: Read chunk positions are offsets in the unreduced stream, so the second
    // WRITE's data sits after the first WRITE's data (padded, §3.4.5.2), not at its offset in
    // the reduced stream the decoder reads. Lengths 5 (padded to 8) and 2048.
    let write = |offset: u64, length: u32| {
        Nfs4Op::Write(WriteArgs {
            stateid: stateid(1),
            offset,
            stable: StableHow4::FileSync,
            data: DdpData::Moved { length },
        })
    };
    let moved = compound(vec![sequence_args(1), write(0, 5), write(5, 2048)]);
    let reduced = moved.to_bytes();
    let tag_minor_count = 12;
    let sequence = 4 + 16 + 4 * 4;
    let write_head = 4 + 16 + 8 + 4 + 4;
    let first = tag_minor_count + sequence + write_head;
    let second_reduced = first + write_head;
    let second = second_reduced + 8;
    let mut reduction =
        Reduction::for_call(&[read_chunk(first as u32, 5), read_chunk(second as u32, 2048)]);
    let mut r = Reader::new(&reduced);
    Compound4Args::decode_with(&mut r, &mut reduction).unwrap();
    let items = reduction.items();
    assert_eq!((items[0].offset, items[0].position), (first, first));
    assert_eq!(
        (items[1].offset, items[1].position),
        (second_reduced, second)
    );
    assert_eq!(items[1].chunk, Some(second));
    assert_eq!(
        crate::ddp::check_argument_position(second as u32, items[1].position),
        Ok(())
    );
    // The reduced offset is what a decoder that forgot the first item's bytes would expect.
    assert!(crate::ddp::check_argument_position(second_reduced as u32, items[1].position).is_err());
}

#[test]
fn read_results_take_write_chunks_in_order_and_only_when_they_carried_bytes() {
    let res = |data: DdpData| Compound4Res {
        status: Nfsstat4::OK,
        tag: Tag4(vec![]),
        results: vec![
            reply(opnum::PUTFH, OpResult::Void),
            reply(opnum::READ, OpResult::Read(ReadResOk { eof: false, data })),
            reply(
                opnum::READLINK,
                OpResult::Readlink(DdpData::Moved { length: 4 }),
            ),
        ],
    };
    let moved = res(DdpData::Moved { length: 18 });
    let mut reduction = Reduction::for_reply([18, 4]);
    let decoded =
        Compound4Res::decode_with(&mut Reader::new(&moved.to_bytes()), &mut reduction).unwrap();
    assert_eq!(decoded, moved);
    assert_eq!(
        decoded.summary(),
        "PUTFH READ(len=18 chunk) READLINK(len=4 chunk)"
    );
    let lengths: Vec<_> = reduction
        .items()
        .iter()
        .map(|i| reduction.chunk_length(i))
        .collect();
    assert_eq!(lengths, [Some(18), Some(4)]);
    // An empty Write chunk: the Responder kept the data inline (RFC 8166 §3.4.6).
    let inline = res(DdpData::Inline(b"abc".to_vec()));
    let mut reduction = Reduction::for_reply([0, 4, 9]);
    let decoded =
        Compound4Res::decode_with(&mut Reader::new(&inline.to_bytes()), &mut reduction).unwrap();
    assert_eq!(decoded, inline);
    assert_eq!(reduction.unused_chunks().collect::<Vec<_>>(), [(2, 9)]);
}

#[test]
fn the_nfs3_and_nfs4_items_go_through_one_reduction() {
    // Every item moved (chunks unknown): NFSv3's Ddp::Moved is the same mode.
    let mut every = Reduction::from_ddp(Ddp::Moved);
    let mut w = Writer::new();
    w.u32(7);
    let data = every
        .decode_item(&mut Reader::new(w.as_bytes()), 16, ITEM_READ_DATA, "r")
        .unwrap();
    assert_eq!(data, DdpData::Moved { length: 7 });
    assert_eq!(Reduction::from_ddp(Ddp::Inline), Reduction::inline());
}

#[test]
fn other_operations_are_opaque_when_their_length_is_known_else_a_typed_stop() {
    // SETATTR (stateid, fattr4) between typed operations: kept whole, the rest decoded.
    let mut w = Writer::new();
    w.opaque_var(b"").u32(1).u32(3);
    w.u32(opnum::PUTROOTFH);
    w.u32(opnum::SETATTR);
    stateid(1).encode(&mut w);
    fattr().encode(&mut w);
    w.u32(opnum::GETFH);
    let args = Compound4Args::from_bytes(w.as_bytes()).unwrap();
    assert!(
        matches!(&args.ops[1], Nfs4Op::Opaque { opnum: 34, body } if body.len() == 16 + 12 + 12)
    );
    assert_eq!(args.ops[2], Nfs4Op::Getfh);
    assert_eq!(args.to_bytes(), w.as_bytes());
    // LOCK (12): shape not decoded here, so decoding stops with the opcode named.
    let mut w = Writer::new();
    w.opaque_var(b"")
        .u32(1)
        .u32(2)
        .u32(opnum::PUTROOTFH)
        .u32(12)
        .u32(0);
    let err = Compound4Args::from_bytes(w.as_bytes()).unwrap_err();
    assert_eq!(
        err,
        DecodeError::UndecodedOperation {
            field: "nfs_argop4.argop",
            opnum: 12,
            rule: RULE_UNDECODED_OP
        }
    );
    assert!(err.to_string().contains("undecoded op 12"), "{err}");
    // In a reply, too.
    let mut w = Writer::new();
    w.u32(0).opaque_var(b"").u32(1).u32(12).u32(0);
    assert!(matches!(
        Compound4Res::from_bytes(w.as_bytes()),
        Err(DecodeError::UndecodedOperation { opnum: 12, .. })
    ));
}

#[test]
fn hostile_input_is_a_typed_error_never_a_panic() {
    // Minor versions other than 1 and 2.
    for minor in [0u32, 3, u32::MAX] {
        let mut w = Writer::new();
        w.opaque_var(b"").u32(minor).u32(0);
        assert_eq!(
            Compound4Args::from_bytes(w.as_bytes()).unwrap_err().rule(),
            RULE_MINOR_VERSION
        );
    }
    // Operation counts over the limit or over what the bytes can hold.
    let mut w = Writer::new();
    w.opaque_var(b"").u32(1).u32(MAX_OPS + 1);
    assert!(matches!(
        Compound4Args::from_bytes(w.as_bytes()),
        Err(DecodeError::LengthOverLimit { .. })
    ));
    let mut w = Writer::new();
    w.u32(0).opaque_var(b"").u32(200).u32(53);
    assert!(matches!(
        Compound4Res::from_bytes(w.as_bytes()),
        Err(DecodeError::Truncated { .. })
    ));
    // Bad union arms name their rule.
    let mut w = Writer::new();
    w.opaque_var(b"")
        .u32(1)
        .u32(1)
        .u32(opnum::OPEN)
        .u32(0)
        .u32(1)
        .u32(0);
    w.u64(1).opaque_var(b"o").u32(1).u32(9);
    let err = Compound4Args::from_bytes(w.as_bytes()).unwrap_err();
    assert!(
        matches!(err, DecodeError::BadDiscriminant { value: 9, .. }),
        "{err}"
    );
    assert!(err.rule().starts_with("RFC 8881 §18.16.1"));
    // Every truncation of valid calls and replies fails cleanly.
    let call = compound(every_op()).to_bytes();
    for cut in 0..call.len() {
        assert!(
            Compound4Args::from_bytes(&call[..cut]).is_err(),
            "cut {cut}"
        );
    }
    let res = Compound4Res {
        status: Nfsstat4::OK,
        tag: Tag4(vec![]),
        results: every_result(),
    }
    .to_bytes();
    for cut in 0..res.len() {
        assert!(Compound4Res::from_bytes(&res[..cut]).is_err(), "cut {cut}");
    }
    // A file handle over NFS4_FHSIZE.
    let mut w = Writer::new();
    w.opaque_var(b"")
        .u32(1)
        .u32(1)
        .u32(opnum::PUTFH)
        .opaque_var(&[0; 129]);
    assert!(matches!(
        Compound4Args::from_bytes(w.as_bytes()),
        Err(DecodeError::LengthOverLimit { limit: 128, .. })
    ));
}
