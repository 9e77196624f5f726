//! NFSv3 (RFC 1813), MOUNT v3 and NFSACL codecs: every procedure round-trips, reduced (DDP)
//! streams decode, RFC 8267 eligibility, and `rejects_*` cases.

use wire::mount3::{
    DirPath, ExportNode, MntRes, MntResOk, Mount3Call, Mount3Proc, Mount3Reply, MountBody,
    MountName, Mountstat3,
};
use wire::nfs3::*;
use wire::nfsacl::{
    Acl, AclAttr, AclEntry, GetaclArgs, GetaclResOk, NfsaclCall, NfsaclProc, NfsaclReply,
    SetaclArgs,
};
use wire::{DecodeError, Reader, Writer, Xdr};

fn fh(n: u8) -> FileHandle {
    FileHandle(vec![n; 20])
}

fn name(s: &str) -> Filename {
    Filename(s.as_bytes().to_vec())
}

fn time(s: u32) -> Nfstime3 {
    Nfstime3 {
        seconds: s,
        nseconds: 500,
    }
}

fn attr() -> Fattr3 {
    Fattr3 {
        ftype: Ftype3::Reg,
        mode: 0o644,
        nlink: 1,
        uid: 1000,
        gid: 100,
        size: 18,
        used: 4096,
        rdev: Specdata3 {
            specdata1: 0,
            specdata2: 0,
        },
        fsid: 1,
        fileid: 2,
        atime: time(1),
        mtime: time(2),
        ctime: time(3),
    }
}

fn wcc() -> WccData {
    WccData {
        before: Some(WccAttr {
            size: 0,
            mtime: time(4),
            ctime: time(5),
        }),
        after: Some(attr()),
    }
}

fn sattr() -> Sattr3 {
    Sattr3 {
        mode: Some(0o600),
        uid: None,
        gid: Some(7),
        size: Some(0),
        atime: SetTime::SetToServerTime,
        mtime: SetTime::SetToClientTime(time(9)),
    }
}

fn dirop(n: &str) -> DirOpArgs3 {
    DirOpArgs3 {
        dir: fh(1),
        name: name(n),
    }
}

fn all_calls() -> Vec<Nfs3Call> {
    vec![
        Nfs3Call::Null,
        Nfs3Call::Getattr(GetattrArgs { object: fh(1) }),
        Nfs3Call::Setattr(SetattrArgs {
            object: fh(2),
            new_attributes: sattr(),
            guard: Some(time(3)),
        }),
        Nfs3Call::Lookup(LookupArgs {
            what: dirop("hello.txt"),
        }),
        Nfs3Call::Access(AccessArgs {
            object: fh(1),
            access: ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_EXECUTE,
        }),
        Nfs3Call::Readlink(ReadlinkArgs { symlink: fh(3) }),
        Nfs3Call::Read(ReadArgs {
            file: fh(2),
            offset: 1 << 40,
            count: 32768,
        }),
        Nfs3Call::Write(WriteArgs {
            file: fh(2),
            offset: 98304,
            count: 5,
            stable: StableHow::DataSync,
            data: DdpData::Inline(b"hello".to_vec()),
        }),
        Nfs3Call::Create(CreateArgs {
            where_: dirop("a"),
            how: CreateHow3::Unchecked(sattr()),
        }),
        Nfs3Call::Create(CreateArgs {
            where_: dirop("b"),
            how: CreateHow3::Guarded(Sattr3::default()),
        }),
        Nfs3Call::Create(CreateArgs {
            where_: dirop("blob"),
            how: CreateHow3::Exclusive(*b"verifier"),
        }),
        Nfs3Call::Mkdir(MkdirArgs {
            where_: dirop("d"),
            attributes: sattr(),
        }),
        Nfs3Call::Symlink(SymlinkArgs {
            where_: dirop("l"),
            symlink_attributes: Sattr3::default(),
            symlink_data: DdpData::Inline(b"../target".to_vec()),
        }),
        Nfs3Call::Mknod(MknodArgs {
            where_: dirop("c"),
            what: MknodData3::Chr(DeviceData3 {
                dev_attributes: sattr(),
                spec: Specdata3 {
                    specdata1: 1,
                    specdata2: 3,
                },
            }),
        }),
        Nfs3Call::Mknod(MknodArgs {
            where_: dirop("p"),
            what: MknodData3::Fifo(Sattr3::default()),
        }),
        Nfs3Call::Mknod(MknodArgs {
            where_: dirop("r"),
            what: MknodData3::Other(Ftype3::Reg),
        }),
        Nfs3Call::Remove(RemoveArgs { object: dirop("x") }),
        Nfs3Call::Rmdir(RmdirArgs { object: dirop("d") }),
        Nfs3Call::Rename(RenameArgs {
            from: dirop("a"),
            to: dirop("b"),
        }),
        Nfs3Call::Link(LinkArgs {
            file: fh(2),
            link: dirop("hard"),
        }),
        Nfs3Call::Readdir(ReaddirArgs {
            dir: fh(1),
            cookie: 0,
            cookieverf: [0; 8],
            count: 4096,
        }),
        Nfs3Call::Readdirplus(ReaddirplusArgs {
            dir: fh(1),
            cookie: 42,
            cookieverf: *b"cookieve",
            dircount: 4096,
            maxcount: 32768,
        }),
        Nfs3Call::Fsstat(FsstatArgs { fsroot: fh(1) }),
        Nfs3Call::Fsinfo(FsinfoArgs { fsroot: fh(1) }),
        Nfs3Call::Pathconf(PathconfArgs { object: fh(1) }),
        Nfs3Call::Commit(CommitArgs {
            file: fh(2),
            offset: 0,
            count: 0,
        }),
    ]
}

fn fail<T, F>(status: Nfsstat3, resfail: F) -> NfsRes<T, F> {
    NfsRes::Fail { status, resfail }
}

fn all_replies() -> Vec<Nfs3Reply> {
    let no_attr = AttrResult { attributes: None };
    vec![
        Nfs3Reply::Null,
        Nfs3Reply::Getattr(NfsRes::Ok(GetattrResOk {
            obj_attributes: attr(),
        })),
        Nfs3Reply::Getattr(fail(Nfsstat3::Stale, Void)),
        Nfs3Reply::Setattr(NfsRes::Ok(WccResult { obj_wcc: wcc() })),
        Nfs3Reply::Setattr(fail(
            Nfsstat3::NotSync,
            WccResult {
                obj_wcc: WccData {
                    before: None,
                    after: None,
                },
            },
        )),
        Nfs3Reply::Lookup(NfsRes::Ok(LookupResOk {
            object: fh(2),
            obj_attributes: Some(attr()),
            dir_attributes: None,
        })),
        Nfs3Reply::Lookup(fail(Nfsstat3::Noent, no_attr.clone())),
        Nfs3Reply::Access(NfsRes::Ok(AccessResOk {
            obj_attributes: Some(attr()),
            access: ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE,
        })),
        Nfs3Reply::Readlink(NfsRes::Ok(ReadlinkResOk {
            symlink_attributes: None,
            data: DdpData::Inline(b"/etc/motd".to_vec()),
        })),
        Nfs3Reply::Read(NfsRes::Ok(ReadResOk {
            file_attributes: Some(attr()),
            count: 3,
            eof: true,
            data: DdpData::Inline(b"abc".to_vec()),
        })),
        Nfs3Reply::Read(fail(Nfsstat3::Io, no_attr.clone())),
        Nfs3Reply::Write(NfsRes::Ok(WriteResOk {
            file_wcc: wcc(),
            count: 1696,
            committed: StableHow::Unstable,
            verf: *b"writever",
        })),
        Nfs3Reply::Write(fail(Nfsstat3::Nospc, WccFail { wcc: wcc() })),
        Nfs3Reply::Create(NfsRes::Ok(DiropResOk {
            obj: Some(fh(4)),
            obj_attributes: Some(attr()),
            dir_wcc: wcc(),
        })),
        Nfs3Reply::Mkdir(fail(Nfsstat3::Exist, WccFail { wcc: wcc() })),
        Nfs3Reply::Symlink(NfsRes::Ok(DiropResOk {
            obj: None,
            obj_attributes: None,
            dir_wcc: wcc(),
        })),
        Nfs3Reply::Mknod(fail(Nfsstat3::Badtype, WccFail { wcc: wcc() })),
        Nfs3Reply::Remove(NfsRes::Ok(WccResult { obj_wcc: wcc() })),
        Nfs3Reply::Rmdir(fail(Nfsstat3::Notempty, WccResult { obj_wcc: wcc() })),
        Nfs3Reply::Rename(NfsRes::Ok(RenameResult {
            fromdir_wcc: wcc(),
            todir_wcc: wcc(),
        })),
        Nfs3Reply::Link(fail(
            Nfsstat3::Xdev,
            LinkResult {
                file_attributes: None,
                linkdir_wcc: wcc(),
            },
        )),
        Nfs3Reply::Readdir(NfsRes::Ok(ReaddirResOk {
            dir_attributes: Some(attr()),
            cookieverf: [1; 8],
            entries: vec![
                Entry3 {
                    fileid: 1,
                    name: name("."),
                    cookie: 1,
                },
                Entry3 {
                    fileid: 2,
                    name: name("hello.txt"),
                    cookie: 2,
                },
            ],
            eof: true,
        })),
        Nfs3Reply::Readdirplus(NfsRes::Ok(ReaddirplusResOk {
            dir_attributes: None,
            cookieverf: [2; 8],
            entries: vec![Entryplus3 {
                fileid: 3,
                name: name("blob"),
                cookie: 3,
                name_attributes: Some(attr()),
                name_handle: Some(fh(3)),
            }],
            eof: false,
        })),
        Nfs3Reply::Readdirplus(fail(Nfsstat3::BadCookie, no_attr.clone())),
        Nfs3Reply::Fsstat(NfsRes::Ok(FsstatResOk {
            obj_attributes: None,
            tbytes: 1 << 30,
            fbytes: 1 << 29,
            abytes: 1 << 29,
            tfiles: 1000,
            ffiles: 900,
            afiles: 900,
            invarsec: 0,
        })),
        Nfs3Reply::Fsinfo(NfsRes::Ok(FsinfoResOk {
            obj_attributes: Some(attr()),
            rtmax: 1 << 20,
            rtpref: 1 << 20,
            rtmult: 4096,
            wtmax: 1 << 20,
            wtpref: 1 << 20,
            wtmult: 4096,
            dtpref: 4096,
            maxfilesize: u64::MAX,
            time_delta: Nfstime3 {
                seconds: 0,
                nseconds: 1,
            },
            properties: 0x1b,
        })),
        Nfs3Reply::Pathconf(NfsRes::Ok(PathconfResOk {
            obj_attributes: None,
            linkmax: 32000,
            name_max: 255,
            no_trunc: true,
            chown_restricted: true,
            case_insensitive: false,
            case_preserving: true,
        })),
        Nfs3Reply::Commit(NfsRes::Ok(CommitResOk {
            file_wcc: wcc(),
            verf: *b"writever",
        })),
        Nfs3Reply::Commit(fail(Nfsstat3::Jukebox, WccFail { wcc: wcc() })),
    ]
}

#[test]
fn every_call_round_trips() {
    let calls = all_calls();
    // every procedure is covered
    for p in Nfs3Proc::ALL {
        assert!(calls.iter().any(|c| c.proc_() == *p), "{p:?} missing");
    }
    for call in calls {
        let bytes = call.to_bytes();
        let mut r = Reader::new(&bytes);
        let again = Nfs3Call::decode(call.proc_(), &mut r).unwrap();
        r.finish("args").unwrap();
        assert_eq!(again, call);
    }
}

#[test]
fn every_reply_round_trips() {
    let replies = all_replies();
    for p in Nfs3Proc::ALL {
        assert!(replies.iter().any(|c| c.proc_() == *p), "{p:?} missing");
    }
    for reply in replies {
        let bytes = reply.to_bytes();
        let mut r = Reader::new(&bytes);
        let again = Nfs3Reply::decode(reply.proc_(), &mut r).unwrap();
        r.finish("res").unwrap();
        assert_eq!(again, reply);
    }
}

#[test]
fn every_truncation_of_every_message_is_an_error() {
    for call in all_calls() {
        let bytes = call.to_bytes();
        for len in 0..bytes.len() {
            let mut r = Reader::new(&bytes[..len]);
            assert!(
                Nfs3Call::decode(call.proc_(), &mut r).is_err(),
                "{call:?} at {len}"
            );
        }
    }
    for reply in all_replies() {
        let bytes = reply.to_bytes();
        for len in 0..bytes.len() {
            let mut r = Reader::new(&bytes[..len]);
            assert!(
                Nfs3Reply::decode(reply.proc_(), &mut r).is_err(),
                "{reply:?} at {len}"
            );
        }
    }
}

#[test]
fn reduced_write_args_keep_only_the_length_word() {
    let moved = Nfs3Call::Write(WriteArgs {
        file: fh(2),
        offset: 0,
        count: 32768,
        stable: StableHow::Unstable,
        data: DdpData::Moved { length: 32768 },
    });
    let bytes = moved.to_bytes();
    // fh (4 + 20) + offset 8 + count 4 + stable 4 + data length word 4, no data
    assert_eq!(bytes.len(), 44);
    assert_eq!(&bytes[40..], &32768u32.to_be_bytes());
    let mut r = Reader::new(&bytes);
    assert_eq!(
        Nfs3Call::decode_reduced(Nfs3Proc::Write, &mut r, Ddp::Moved).unwrap(),
        moved
    );
    assert!(r.is_empty());
    // The same bytes read as an unreduced stream are truncated: this is the "malformed" READ
    // Wireshark reports, and why the decoder must be told about the chunk.
    let err = Nfs3Call::decode(Nfs3Proc::Write, &mut Reader::new(&bytes)).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::Truncated {
            needed: 32768,
            available: 0,
            ..
        }
    ));
}

#[test]
fn reduced_read_and_readlink_replies_round_trip() {
    for reply in [
        Nfs3Reply::Read(NfsRes::Ok(ReadResOk {
            file_attributes: Some(attr()),
            count: 18,
            eof: true,
            data: DdpData::Moved { length: 18 },
        })),
        Nfs3Reply::Readlink(NfsRes::Ok(ReadlinkResOk {
            symlink_attributes: None,
            data: DdpData::Moved { length: 9 },
        })),
    ] {
        let bytes = reply.to_bytes();
        let mut r = Reader::new(&bytes);
        assert_eq!(
            Nfs3Reply::decode_reduced(reply.proc_(), &mut r, Ddp::Moved).unwrap(),
            reply
        );
        assert!(r.is_empty());
    }
    // A failed READ has no data item: the mode does not matter.
    let failed = Nfs3Reply::Read(fail(Nfsstat3::Acces, AttrResult { attributes: None }));
    let bytes = failed.to_bytes();
    assert_eq!(
        Nfs3Reply::decode_reduced(Nfs3Proc::Read, &mut Reader::new(&bytes), Ddp::Moved).unwrap(),
        failed
    );
}

#[test]
fn reduced_symlink_args_round_trip() {
    let call = Nfs3Call::Symlink(SymlinkArgs {
        where_: dirop("l"),
        symlink_attributes: Sattr3::default(),
        symlink_data: DdpData::Moved { length: 4000 },
    });
    let bytes = call.to_bytes();
    let mut r = Reader::new(&bytes);
    assert_eq!(
        Nfs3Call::decode_reduced(Nfs3Proc::Symlink, &mut r, Ddp::Moved).unwrap(),
        call
    );
}

#[test]
fn ddp_eligibility_follows_rfc_8267() {
    let args: Vec<_> = Nfs3Proc::ALL
        .iter()
        .filter(|p| ddp_eligible_argument(**p).is_some())
        .copied()
        .collect();
    assert_eq!(args, [Nfs3Proc::Write, Nfs3Proc::Symlink]);
    let results: Vec<_> = Nfs3Proc::ALL
        .iter()
        .filter(|p| ddp_eligible_result(**p).is_some())
        .copied()
        .collect();
    assert_eq!(results, [Nfs3Proc::Readlink, Nfs3Proc::Read]);
    // ddp_data() exposes exactly the eligible items of the typed values.
    for call in all_calls() {
        assert_eq!(
            call.ddp_data().is_some(),
            ddp_eligible_argument(call.proc_()).is_some(),
            "{call:?}"
        );
    }
    for reply in all_replies() {
        let ok = reply.status() == Nfsstat3::Ok;
        assert_eq!(
            reply.ddp_data().is_some(),
            ok && ddp_eligible_result(reply.proc_()).is_some(),
            "{reply:?}"
        );
    }
}

#[test]
fn nfsd_caches_exactly_the_non_idempotent_procedures() {
    let cached: Vec<&str> = Nfs3Proc::ALL
        .iter()
        .filter(|p| !p.is_idempotent())
        .map(|p| p.name())
        .collect();
    assert_eq!(
        cached,
        [
            "SETATTR", "WRITE", "CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME",
            "LINK"
        ]
    );
}

#[test]
fn proc_numbers_and_names() {
    assert_eq!(Nfs3Proc::ALL.len(), 22);
    assert_eq!(Nfs3Proc::from_u32(6), Some(Nfs3Proc::Read));
    assert_eq!(Nfs3Proc::from_u32(21).map(Nfs3Proc::name), Some("COMMIT"));
    assert_eq!(Nfs3Proc::from_u32(22), None);
    assert!(matches!(
        Nfs3Proc::decode_u32(22),
        Err(DecodeError::BadDiscriminant { value: 22, .. })
    ));
}

#[test]
fn rejects_file_handle_over_64_bytes() {
    let mut w = Writer::new();
    w.u32(65);
    let err = FileHandle::decode(&mut Reader::new(w.as_bytes())).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::LengthOverLimit {
            length: 65,
            limit: 64,
            ..
        }
    ));
    assert!(err.rule().contains("RFC 1813"));
    // 64 bytes is fine
    let ok = FileHandle(vec![9; 64]);
    assert_eq!(FileHandle::from_bytes(&ok.to_bytes()).unwrap(), ok);
}

#[test]
fn rejects_undefined_enum_values() {
    let err = Nfsstat3::from_bytes(&3u32.to_be_bytes()).unwrap_err();
    assert!(matches!(err, DecodeError::BadDiscriminant { value: 3, .. }));
    assert!(err.rule().contains("nfsstat3"));
    assert!(Ftype3::from_bytes(&0u32.to_be_bytes()).is_err());
    assert!(Ftype3::from_bytes(&8u32.to_be_bytes()).is_err());
    assert!(StableHow::from_bytes(&3u32.to_be_bytes()).is_err());
    assert!(matches!(
        SetTime::from_bytes(&3u32.to_be_bytes()),
        Err(DecodeError::BadDiscriminant {
            field: "time_how",
            ..
        })
    ));
    assert!(matches!(
        CreateHow3::from_bytes(&3u32.to_be_bytes()),
        Err(DecodeError::BadDiscriminant {
            field: "createhow3.mode",
            ..
        })
    ));
}

#[test]
fn rejects_bad_boolean_in_post_op_attr() {
    // ACCESS fail arm: status NFS3ERR_IO, attributes_follow = 2
    let mut w = Writer::new();
    w.u32(5).u32(2);
    let err = Nfs3Reply::decode(Nfs3Proc::Access, &mut Reader::new(w.as_bytes())).unwrap_err();
    assert!(matches!(err, DecodeError::BadDiscriminant { value: 2, .. }));
}

#[test]
fn rejects_write_data_over_limit_before_reading_it() {
    let mut w = Writer::new();
    fh(1).encode(&mut w);
    w.u64(0).u32(0).u32(0).u32(MAX_DATA + 1);
    let err = Nfs3Call::decode(Nfs3Proc::Write, &mut Reader::new(w.as_bytes())).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::LengthOverLimit {
            field: "WriteArgs.data",
            ..
        }
    ));
}

#[test]
fn rejects_directory_listing_longer_than_the_limit() {
    let mut w = Writer::new();
    w.u32(0); // NFS3_OK
    w.bool(false); // no dir attributes
    w.opaque_fixed(&[0; 8]); // cookieverf
    for i in 0..=MAX_DIR_ENTRIES as u64 {
        w.bool(true).u64(i).u32(0).u64(i);
    }
    w.bool(false).bool(true);
    let err = Nfs3Reply::decode(Nfs3Proc::Readdir, &mut Reader::new(w.as_bytes())).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::LengthOverLimit {
            field: "dirlist3.entries",
            ..
        }
    ));
}

#[test]
fn summaries_serialise_readably() {
    let call = Nfs3Call::Lookup(LookupArgs {
        what: dirop("hello.txt"),
    });
    let v = serde_json::to_value(&call).unwrap();
    assert_eq!(v["what"]["name"], "hello.txt");
    assert_eq!(v["what"]["dir"], "01".repeat(20));
    let reply = Nfs3Reply::Read(fail(Nfsstat3::Stale, AttrResult { attributes: None }));
    let v = serde_json::to_value(&reply).unwrap();
    assert_eq!(v["status"], "NFS3ERR_STALE");
}

#[test]
fn mount_calls_and_replies_round_trip() {
    let calls = [
        Mount3Call::Null,
        Mount3Call::Mnt(DirPath(b"/export".to_vec())),
        Mount3Call::Dump,
        Mount3Call::Umnt(DirPath(b"/export".to_vec())),
        Mount3Call::Umntall,
        Mount3Call::Export,
    ];
    for call in calls {
        let mut w = Writer::new();
        call.encode(&mut w);
        let mut r = Reader::new(w.as_bytes());
        assert_eq!(Mount3Call::decode(call.proc_(), &mut r).unwrap(), call);
        assert!(r.is_empty());
    }
    let replies = [
        Mount3Reply::Mnt(MntRes::Ok(MntResOk {
            fhandle: fh(1),
            auth_flavors: vec![1, 390003],
        })),
        Mount3Reply::Mnt(MntRes::Fail(Mountstat3::Acces)),
        Mount3Reply::Dump(vec![MountBody {
            hostname: MountName(b"cli".to_vec()),
            directory: DirPath(b"/export".to_vec()),
        }]),
        Mount3Reply::Export(vec![
            ExportNode {
                dir: DirPath(b"/export".to_vec()),
                groups: vec![
                    MountName(b"*".to_vec()),
                    MountName(b"10.99.0.0/24".to_vec()),
                ],
            },
            ExportNode {
                dir: DirPath(b"/srv".to_vec()),
                groups: vec![],
            },
        ]),
        Mount3Reply::Umnt,
    ];
    for reply in replies {
        let mut w = Writer::new();
        reply.encode(&mut w);
        let mut r = Reader::new(w.as_bytes());
        assert_eq!(Mount3Reply::decode(reply.proc_(), &mut r).unwrap(), reply);
        assert!(r.is_empty());
    }
    assert_eq!(
        Mount3Proc::from_u32(5).map(Mount3Proc::name),
        Some("EXPORT")
    );
}

#[test]
fn rejects_mount_dirpath_over_1024_bytes() {
    let path = DirPath(vec![b'a'; 1025]);
    let err = DirPath::from_bytes(&path.to_bytes()).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::LengthOverLimit {
            length: 1025,
            limit: 1024,
            ..
        }
    ));
    assert!(err.rule().contains("MNTPATHLEN"));
}

fn acl(n: u32) -> Acl {
    Acl {
        count: n,
        entries: (0..n)
            .map(|i| AclEntry {
                tag: 1 << i,
                id: i,
                perm: 7,
            })
            .collect(),
    }
}

#[test]
fn nfsacl_round_trips() {
    let calls = [
        NfsaclCall::Null,
        NfsaclCall::Getacl(GetaclArgs {
            fh: fh(1),
            mask: wire::nfsacl::NFS_ACL | wire::nfsacl::NFS_DFACL,
        }),
        NfsaclCall::Setacl(SetaclArgs {
            fh: fh(1),
            mask: 5,
            acl: acl(3),
            default_acl: acl(0),
        }),
    ];
    for (call, proc_) in calls.into_iter().zip(NfsaclProc::ALL) {
        let mut w = Writer::new();
        call.encode(&mut w);
        let mut r = Reader::new(w.as_bytes());
        assert_eq!(NfsaclCall::decode(*proc_, &mut r).unwrap(), call);
        assert!(r.is_empty());
    }
    let replies = [
        NfsaclReply::Getacl(NfsRes::Ok(GetaclResOk {
            attr: Some(attr()),
            mask: 0xf,
            acl: acl(4),
            default_acl: acl(2),
        })),
        NfsaclReply::Setacl(NfsRes::Fail {
            status: Nfsstat3::Perm,
            resfail: AclAttr { attr: None },
        }),
    ];
    for (reply, proc_) in replies
        .into_iter()
        .zip([NfsaclProc::Getacl, NfsaclProc::Setacl])
    {
        let mut w = Writer::new();
        reply.encode(&mut w);
        let mut r = Reader::new(w.as_bytes());
        assert_eq!(NfsaclReply::decode(proc_, &mut r).unwrap(), reply);
        assert!(r.is_empty());
    }
}

#[test]
fn rejects_acl_with_more_than_1024_entries() {
    let mut w = Writer::new();
    w.u32(1025).u32(0);
    let err = Acl::decode(&mut Reader::new(w.as_bytes())).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::LengthOverLimit {
            length: 1025,
            limit: 1024,
            ..
        }
    ));
}
