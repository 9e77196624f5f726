//! The in-memory NFSv3 file system: each procedure's semantics and error statuses (RFC 1813 §3.3).

use server::fs::{Fs, Limits};
use wire::mount3::{DirPath, MntRes, Mount3Call, Mount3Reply, Mountstat3};
use wire::nfs3::*;

fn dirop(dir: &FileHandle, name: &str) -> DirOpArgs3 {
    DirOpArgs3 {
        dir: dir.clone(),
        name: Filename(name.as_bytes().to_vec()),
    }
}

fn create(fs: &mut Fs, name: &str, how: CreateHow3) -> Nfs3Reply {
    let root = fs.root_handle();
    fs.nfs(&Nfs3Call::Create(CreateArgs {
        where_: dirop(&root, name),
        how,
    }))
}

fn handle(reply: &Nfs3Reply) -> FileHandle {
    match reply {
        Nfs3Reply::Create(NfsRes::Ok(ok)) | Nfs3Reply::Mkdir(NfsRes::Ok(ok)) => {
            ok.obj.clone().expect("handle")
        }
        other => panic!("expected a created object, got {other:?}"),
    }
}

#[test]
fn mount_hands_out_the_root_handle_for_the_export_only() {
    let mut fs = Fs::default();
    let Mount3Reply::Mnt(MntRes::Ok(ok)) = fs.mount(&Mount3Call::Mnt(DirPath(b"/export".to_vec())))
    else {
        panic!("export mounts");
    };
    assert_eq!(ok.fhandle, fs.root_handle());
    assert_eq!(
        fs.mount(&Mount3Call::Mnt(DirPath(b"/etc".to_vec()))),
        Mount3Reply::Mnt(MntRes::Fail(Mountstat3::Noent))
    );
}

#[test]
fn guarded_create_then_remove_twice_gives_noent() {
    let mut fs = Fs::default();
    let root = fs.root_handle();
    assert_eq!(
        create(&mut fs, "f", CreateHow3::Guarded(Sattr3::default())).status(),
        Nfsstat3::Ok
    );
    assert_eq!(
        create(&mut fs, "f", CreateHow3::Guarded(Sattr3::default())).status(),
        Nfsstat3::Exist
    );
    let remove = Nfs3Call::Remove(RemoveArgs {
        object: dirop(&root, "f"),
    });
    assert_eq!(fs.nfs(&remove).status(), Nfsstat3::Ok);
    assert_eq!(fs.nfs(&remove).status(), Nfsstat3::Noent);
}

#[test]
fn exclusive_create_is_idempotent_for_the_same_verifier_only() {
    let mut fs = Fs::default();
    assert_eq!(
        create(&mut fs, "x", CreateHow3::Exclusive(*b"verf0001")).status(),
        Nfsstat3::Ok
    );
    assert_eq!(
        create(&mut fs, "x", CreateHow3::Exclusive(*b"verf0001")).status(),
        Nfsstat3::Ok
    );
    assert_eq!(
        create(&mut fs, "x", CreateHow3::Exclusive(*b"verf0002")).status(),
        Nfsstat3::Exist
    );
}

#[test]
fn write_then_read_round_trips_and_reports_eof() {
    let mut fs = Fs::default();
    let fh = handle(&create(
        &mut fs,
        "f",
        CreateHow3::Unchecked(Sattr3::default()),
    ));
    let write = fs.nfs(&Nfs3Call::Write(WriteArgs {
        file: fh.clone(),
        offset: 2,
        count: 3,
        stable: StableHow::FileSync,
        data: DdpData::Inline(b"abc".to_vec()),
    }));
    assert_eq!(write.status(), Nfsstat3::Ok);
    let Nfs3Reply::Read(NfsRes::Ok(read)) = fs.nfs(&Nfs3Call::Read(ReadArgs {
        file: fh.clone(),
        offset: 0,
        count: 100,
    })) else {
        panic!("read succeeds");
    };
    assert_eq!(read.data, DdpData::Inline(b"\0\0abc".to_vec()));
    assert!(read.eof);
    // count disagreeing with the data is refused.
    let bad = fs.nfs(&Nfs3Call::Write(WriteArgs {
        file: fh,
        offset: 0,
        count: 9,
        stable: StableHow::Unstable,
        data: DdpData::Inline(b"abc".to_vec()),
    }));
    assert_eq!(bad.status(), Nfsstat3::Inval);
}

#[test]
fn writes_past_the_size_limit_are_refused() {
    let mut fs = Fs::new(Limits {
        max_inodes: 16,
        max_file_bytes: 8,
        max_total_bytes: 64,
    });
    let fh = handle(&create(
        &mut fs,
        "f",
        CreateHow3::Unchecked(Sattr3::default()),
    ));
    let write = |offset| {
        Nfs3Call::Write(WriteArgs {
            file: fh.clone(),
            offset,
            count: 4,
            stable: StableHow::FileSync,
            data: DdpData::Inline(vec![1; 4]),
        })
    };
    assert_eq!(fs.nfs(&write(4)).status(), Nfsstat3::Ok);
    assert_eq!(fs.nfs(&write(5)).status(), Nfsstat3::Fbig);
    assert_eq!(fs.nfs(&write(u64::MAX - 1)).status(), Nfsstat3::Fbig);
}

#[test]
fn rename_link_rmdir_and_lookup() {
    let mut fs = Fs::default();
    let root = fs.root_handle();
    let file = handle(&create(
        &mut fs,
        "a",
        CreateHow3::Unchecked(Sattr3::default()),
    ));
    let rename = Nfs3Call::Rename(RenameArgs {
        from: dirop(&root, "a"),
        to: dirop(&root, "b"),
    });
    assert_eq!(fs.nfs(&rename).status(), Nfsstat3::Ok);
    assert_eq!(fs.nfs(&rename).status(), Nfsstat3::Noent);
    let link = Nfs3Call::Link(LinkArgs {
        file: file.clone(),
        link: dirop(&root, "c"),
    });
    assert_eq!(fs.nfs(&link).status(), Nfsstat3::Ok);
    assert_eq!(fs.nfs(&link).status(), Nfsstat3::Exist);
    let Nfs3Reply::Getattr(NfsRes::Ok(attrs)) =
        fs.nfs(&Nfs3Call::Getattr(GetattrArgs { object: file }))
    else {
        panic!("getattr");
    };
    assert_eq!(attrs.obj_attributes.nlink, 2);
    let dir = handle(&fs.nfs(&Nfs3Call::Mkdir(MkdirArgs {
        where_: dirop(&root, "d"),
        attributes: Sattr3::default(),
    })));
    let _ = create_in(&mut fs, &dir, "inner");
    let rmdir = Nfs3Call::Rmdir(RmdirArgs {
        object: dirop(&root, "d"),
    });
    assert_eq!(fs.nfs(&rmdir).status(), Nfsstat3::Notempty);
    let lookup = fs.nfs(&Nfs3Call::Lookup(LookupArgs {
        what: dirop(&root, "zz"),
    }));
    assert_eq!(lookup.status(), Nfsstat3::Noent);
    assert_eq!(
        fs.root_names(),
        vec![b"b".to_vec(), b"c".to_vec(), b"d".to_vec()]
    );
}

fn create_in(fs: &mut Fs, dir: &FileHandle, name: &str) -> Nfs3Reply {
    fs.nfs(&Nfs3Call::Create(CreateArgs {
        where_: dirop(dir, name),
        how: CreateHow3::Unchecked(Sattr3::default()),
    }))
}

#[test]
fn symlink_readlink_mknod_and_setattr_guard() {
    let mut fs = Fs::default();
    let root = fs.root_handle();
    let Nfs3Reply::Symlink(NfsRes::Ok(ok)) = fs.nfs(&Nfs3Call::Symlink(SymlinkArgs {
        where_: dirop(&root, "l"),
        symlink_attributes: Sattr3::default(),
        symlink_data: DdpData::Inline(b"/target".to_vec()),
    })) else {
        panic!("symlink");
    };
    let link = ok.obj.unwrap();
    let Nfs3Reply::Readlink(NfsRes::Ok(rl)) = fs.nfs(&Nfs3Call::Readlink(ReadlinkArgs {
        symlink: link.clone(),
    })) else {
        panic!("readlink");
    };
    assert_eq!(rl.data, DdpData::Inline(b"/target".to_vec()));
    let mknod = fs.nfs(&Nfs3Call::Mknod(MknodArgs {
        where_: dirop(&root, "fifo"),
        what: MknodData3::Fifo(Sattr3::default()),
    }));
    assert_eq!(mknod.status(), Nfsstat3::Ok);
    let bad = fs.nfs(&Nfs3Call::Mknod(MknodArgs {
        where_: dirop(&root, "reg"),
        what: MknodData3::Other(Ftype3::Reg),
    }));
    assert_eq!(bad.status(), Nfsstat3::Badtype);
    let guarded = fs.nfs(&Nfs3Call::Setattr(SetattrArgs {
        object: link,
        new_attributes: Sattr3 {
            mode: Some(0o600),
            ..Sattr3::default()
        },
        guard: Some(Nfstime3 {
            seconds: 999_999,
            nseconds: 0,
        }),
    }));
    assert_eq!(guarded.status(), Nfsstat3::NotSync);
}

#[test]
fn readdir_pages_with_cookies() {
    let mut fs = Fs::default();
    let root = fs.root_handle();
    for i in 0..20 {
        create(
            &mut fs,
            &format!("file{i:02}"),
            CreateHow3::Unchecked(Sattr3::default()),
        );
    }
    let mut names = Vec::new();
    let mut cookie = 0;
    for _ in 0..50 {
        let Nfs3Reply::Readdir(NfsRes::Ok(page)) = fs.nfs(&Nfs3Call::Readdir(ReaddirArgs {
            dir: root.clone(),
            cookie,
            cookieverf: [0; 8],
            count: 256,
        })) else {
            panic!("readdir");
        };
        assert!(!page.entries.is_empty() || page.eof);
        for e in &page.entries {
            names.push(e.name.0.clone());
            cookie = e.cookie;
        }
        if page.eof {
            break;
        }
    }
    assert_eq!(names.len(), 20);
}

#[test]
fn stale_and_bad_handles_are_reported() {
    let mut fs = Fs::default();
    let bad = fs.nfs(&Nfs3Call::Getattr(GetattrArgs {
        object: FileHandle(vec![1, 2, 3]),
    }));
    assert_eq!(bad.status(), Nfsstat3::Badhandle);
    let stale = fs.nfs(&Nfs3Call::Getattr(GetattrArgs {
        object: FileHandle(999u64.to_be_bytes().to_vec()),
    }));
    assert_eq!(stale.status(), Nfsstat3::Stale);
    for call in [
        Nfs3Call::Fsstat(FsstatArgs {
            fsroot: fs.root_handle(),
        }),
        Nfs3Call::Fsinfo(FsinfoArgs {
            fsroot: fs.root_handle(),
        }),
        Nfs3Call::Pathconf(PathconfArgs {
            object: fs.root_handle(),
        }),
        Nfs3Call::Access(AccessArgs {
            object: fs.root_handle(),
            access: 0x3f,
        }),
        Nfs3Call::Null,
    ] {
        assert_eq!(fs.nfs(&call).status(), Nfsstat3::Ok);
    }
}
