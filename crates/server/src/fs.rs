//! An in-memory NFSv3 file system (RFC 1813) with bounded size and a logical clock.
//!
//! Times are a counter bumped on every change, never the wall clock, so replies are reproducible
//! byte for byte and a cached reply can be compared with a re-executed one.
//!
//! Architecture Invariant: the file system never grows past [`Limits`]; a request that would is
//! answered NFS3ERR_NOSPC / NFS3ERR_FBIG, never by allocating.

use std::collections::BTreeMap;

use wire::mount3::{DirPath, ExportNode, MntRes, MntResOk, Mount3Call, Mount3Reply, Mountstat3};
use wire::nfs3::*;
use wire::rpc::{AUTH_NONE, AUTH_SYS};

/// The one exported path.
pub const EXPORT_PATH: &[u8] = b"/export";
const ROOT_ID: u64 = 1;
const FSID: u64 = 0x5249_4721; // "RIG!"

/// Size bounds of the file system.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_inodes: usize,
    pub max_file_bytes: u64,
    pub max_total_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_inodes: 4096,
            max_file_bytes: 4 << 20,
            max_total_bytes: 64 << 20,
        }
    }
}

#[derive(Debug, Clone)]
enum Content {
    File(Vec<u8>),
    Dir(BTreeMap<Vec<u8>, u64>),
    Symlink(Vec<u8>),
    Special(Ftype3, Specdata3),
}

#[derive(Debug, Clone)]
struct Inode {
    content: Content,
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u32,
    atime: u32,
    mtime: u32,
    ctime: u32,
    /// CREATE EXCLUSIVE verifier, kept so a retransmitted exclusive create succeeds (RFC 1813
    /// §3.3.8).
    create_verf: Option<[u8; 8]>,
}

/// The file system.
#[derive(Debug, Clone)]
pub struct Fs {
    inodes: BTreeMap<u64, Inode>,
    next_id: u64,
    clock: u32,
    total_bytes: u64,
    limits: Limits,
    /// WRITE/COMMIT verifier (RFC 1813 §3.3.7): constant for the server's lifetime.
    write_verf: [u8; 8],
}

type Res<T> = Result<T, Nfsstat3>;
/// (fileid, name, cookie)
type DirEntry = (u64, Vec<u8>, u64);

fn t(tick: u32) -> Nfstime3 {
    Nfstime3 {
        seconds: tick,
        nseconds: 0,
    }
}

impl Default for Fs {
    fn default() -> Self {
        Fs::new(Limits::default())
    }
}

impl Fs {
    pub fn new(limits: Limits) -> Self {
        let mut inodes = BTreeMap::new();
        inodes.insert(
            ROOT_ID,
            Inode {
                content: Content::Dir(BTreeMap::new()),
                mode: 0o755,
                uid: 0,
                gid: 0,
                nlink: 2,
                atime: 0,
                mtime: 0,
                ctime: 0,
                create_verf: None,
            },
        );
        Fs {
            inodes,
            next_id: ROOT_ID + 1,
            clock: 1,
            total_bytes: 0,
            limits,
            write_verf: *b"rigverf1",
        }
    }

    /// The export root's handle.
    pub fn root_handle(&self) -> FileHandle {
        handle(ROOT_ID)
    }

    /// Number of names in the root directory (for verdicts and tests).
    pub fn root_names(&self) -> Vec<Vec<u8>> {
        match &self.inodes[&ROOT_ID].content {
            Content::Dir(d) => d.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    fn tick(&mut self) -> u32 {
        self.clock = self.clock.wrapping_add(1);
        self.clock
    }

    fn id_of(&self, fh: &FileHandle) -> Res<u64> {
        let bytes: [u8; 8] =
            fh.0.as_slice()
                .try_into()
                .map_err(|_| Nfsstat3::Badhandle)?;
        let id = u64::from_be_bytes(bytes);
        if self.inodes.contains_key(&id) {
            Ok(id)
        } else {
            Err(Nfsstat3::Stale)
        }
    }

    fn attr(&self, id: u64) -> Fattr3 {
        let node = &self.inodes[&id];
        let (ftype, size, rdev) = match &node.content {
            Content::File(d) => (Ftype3::Reg, d.len() as u64, Specdata3::zero()),
            Content::Dir(d) => (Ftype3::Dir, 4096 + 32 * d.len() as u64, Specdata3::zero()),
            Content::Symlink(p) => (Ftype3::Lnk, p.len() as u64, Specdata3::zero()),
            Content::Special(kind, spec) => (*kind, 0, spec.clone()),
        };
        Fattr3 {
            ftype,
            mode: node.mode,
            nlink: node.nlink,
            uid: node.uid,
            gid: node.gid,
            size,
            used: size.div_ceil(4096) * 4096,
            rdev,
            fsid: FSID,
            fileid: id,
            atime: t(node.atime),
            mtime: t(node.mtime),
            ctime: t(node.ctime),
        }
    }

    fn wcc_attr(&self, id: u64) -> WccAttr {
        let a = self.attr(id);
        WccAttr {
            size: a.size,
            mtime: a.mtime,
            ctime: a.ctime,
        }
    }

    fn wcc(&self, id: u64, before: WccAttr) -> WccData {
        WccData {
            before: Some(before),
            after: Some(self.attr(id)),
        }
    }

    fn dir(&self, id: u64) -> Res<&BTreeMap<Vec<u8>, u64>> {
        match &self.inodes[&id].content {
            Content::Dir(d) => Ok(d),
            _ => Err(Nfsstat3::Notdir),
        }
    }

    fn dir_mut(&mut self, id: u64) -> Res<&mut BTreeMap<Vec<u8>, u64>> {
        match self.inodes.get_mut(&id).map(|n| &mut n.content) {
            Some(Content::Dir(d)) => Ok(d),
            Some(_) => Err(Nfsstat3::Notdir),
            None => Err(Nfsstat3::Stale),
        }
    }

    fn check_name(name: &Filename) -> Res<()> {
        if name.0.is_empty() || name.0 == b"." || name.0 == b".." || name.0.contains(&b'/') {
            return Err(Nfsstat3::Inval);
        }
        if name.0.len() > 255 {
            return Err(Nfsstat3::Nametoolong);
        }
        Ok(())
    }

    fn touch(&mut self, id: u64) {
        let now = self.tick();
        if let Some(n) = self.inodes.get_mut(&id) {
            n.mtime = now;
            n.ctime = now;
        }
    }

    fn new_inode(&mut self, content: Content, attrs: &Sattr3, default_mode: u32) -> Res<u64> {
        if self.inodes.len() >= self.limits.max_inodes {
            return Err(Nfsstat3::Nospc);
        }
        let now = self.tick();
        let id = self.next_id;
        self.next_id += 1;
        let nlink = if matches!(content, Content::Dir(_)) {
            2
        } else {
            1
        };
        self.inodes.insert(
            id,
            Inode {
                content,
                mode: attrs.mode.unwrap_or(default_mode) & 0o7777,
                uid: attrs.uid.unwrap_or(0),
                gid: attrs.gid.unwrap_or(0),
                nlink,
                atime: now,
                mtime: now,
                ctime: now,
                create_verf: None,
            },
        );
        Ok(id)
    }

    fn link_into(&mut self, dir: u64, name: &Filename, id: u64) -> Res<()> {
        self.dir_mut(dir)?.insert(name.0.clone(), id);
        self.touch(dir);
        Ok(())
    }

    fn unlink(&mut self, dir: u64, name: &[u8]) {
        if let Ok(d) = self.dir_mut(dir) {
            if let Some(id) = d.remove(name) {
                self.drop_link(id);
            }
        }
        self.touch(dir);
    }

    fn drop_link(&mut self, id: u64) {
        let gone = match self.inodes.get_mut(&id) {
            Some(n) if matches!(n.content, Content::Dir(_)) => true,
            Some(n) => {
                n.nlink = n.nlink.saturating_sub(1);
                n.nlink == 0
            }
            None => false,
        };
        if gone {
            if let Some(Inode {
                content: Content::File(data),
                ..
            }) = self.inodes.remove(&id)
            {
                self.total_bytes -= data.len() as u64;
            }
        }
    }

    fn set_size(&mut self, id: u64, size: u64) -> Res<()> {
        if size > self.limits.max_file_bytes {
            return Err(Nfsstat3::Fbig);
        }
        let total = self.total_bytes;
        let limit = self.limits.max_total_bytes;
        let Some(Content::File(data)) = self.inodes.get_mut(&id).map(|n| &mut n.content) else {
            return Err(Nfsstat3::Inval);
        };
        let old = data.len() as u64;
        if size > old && total + (size - old) > limit {
            return Err(Nfsstat3::Nospc);
        }
        data.resize(size as usize, 0);
        self.total_bytes = total - old + size;
        Ok(())
    }

    fn apply_sattr(&mut self, id: u64, attrs: &Sattr3) -> Res<()> {
        if let Some(size) = attrs.size {
            self.set_size(id, size)?;
        }
        let now = self.tick();
        let node = self.inodes.get_mut(&id).ok_or(Nfsstat3::Stale)?;
        if let Some(mode) = attrs.mode {
            node.mode = mode & 0o7777;
        }
        if let Some(uid) = attrs.uid {
            node.uid = uid;
        }
        if let Some(gid) = attrs.gid {
            node.gid = gid;
        }
        match attrs.atime {
            SetTime::DontChange => {}
            SetTime::SetToServerTime => node.atime = now,
            SetTime::SetToClientTime(t) => node.atime = t.seconds,
        }
        match attrs.mtime {
            SetTime::DontChange => {}
            SetTime::SetToServerTime => node.mtime = now,
            SetTime::SetToClientTime(t) => node.mtime = t.seconds,
        }
        node.ctime = now;
        Ok(())
    }

    /// Execute one MOUNT v3 call (RFC 1813 Appendix I).
    pub fn mount(&mut self, call: &Mount3Call) -> Mount3Reply {
        match call {
            Mount3Call::Null => Mount3Reply::Null,
            Mount3Call::Mnt(path) => {
                if path.0 == EXPORT_PATH {
                    Mount3Reply::Mnt(MntRes::Ok(MntResOk {
                        fhandle: self.root_handle(),
                        auth_flavors: vec![AUTH_NONE, AUTH_SYS],
                    }))
                } else {
                    Mount3Reply::Mnt(MntRes::Fail(Mountstat3::Noent))
                }
            }
            Mount3Call::Dump => Mount3Reply::Dump(Vec::new()),
            Mount3Call::Umnt(_) => Mount3Reply::Umnt,
            Mount3Call::Umntall => Mount3Reply::Umntall,
            Mount3Call::Export => Mount3Reply::Export(vec![ExportNode {
                dir: DirPath(EXPORT_PATH.to_vec()),
                groups: Vec::new(),
            }]),
        }
    }

    /// Execute one NFSv3 call (RFC 1813 §3.3).
    pub fn nfs(&mut self, call: &Nfs3Call) -> Nfs3Reply {
        match call {
            Nfs3Call::Null => Nfs3Reply::Null,
            Nfs3Call::Getattr(a) => Nfs3Reply::Getattr(match self.id_of(&a.object) {
                Ok(id) => NfsRes::Ok(GetattrResOk {
                    obj_attributes: self.attr(id),
                }),
                Err(status) => NfsRes::Fail {
                    status,
                    resfail: Void,
                },
            }),
            Nfs3Call::Setattr(a) => Nfs3Reply::Setattr(self.setattr(a)),
            Nfs3Call::Lookup(a) => Nfs3Reply::Lookup(self.lookup(a)),
            Nfs3Call::Access(a) => Nfs3Reply::Access(match self.id_of(&a.object) {
                Ok(id) => NfsRes::Ok(AccessResOk {
                    obj_attributes: Some(self.attr(id)),
                    access: a.access & 0x3f,
                }),
                Err(status) => fail_attr(status),
            }),
            Nfs3Call::Readlink(a) => Nfs3Reply::Readlink(self.readlink(a)),
            Nfs3Call::Read(a) => Nfs3Reply::Read(self.read(a)),
            Nfs3Call::Write(a) => Nfs3Reply::Write(self.write(a)),
            Nfs3Call::Create(a) => Nfs3Reply::Create(self.create(a)),
            Nfs3Call::Mkdir(a) => Nfs3Reply::Mkdir(self.make(
                &a.where_,
                Content::Dir(BTreeMap::new()),
                &a.attributes,
                0o755,
            )),
            Nfs3Call::Symlink(a) => Nfs3Reply::Symlink(match &a.symlink_data {
                DdpData::Inline(path) => self.make(
                    &a.where_,
                    Content::Symlink(path.clone()),
                    &a.symlink_attributes,
                    0o777,
                ),
                DdpData::Moved { .. } => wcc_fail(Nfsstat3::Inval, WccData::none()),
            }),
            Nfs3Call::Mknod(a) => Nfs3Reply::Mknod(match &a.what {
                MknodData3::Chr(d) => self.make(
                    &a.where_,
                    Content::Special(Ftype3::Chr, d.spec.clone()),
                    &d.dev_attributes,
                    0o644,
                ),
                MknodData3::Blk(d) => self.make(
                    &a.where_,
                    Content::Special(Ftype3::Blk, d.spec.clone()),
                    &d.dev_attributes,
                    0o644,
                ),
                MknodData3::Sock(s) => self.make(
                    &a.where_,
                    Content::Special(Ftype3::Sock, Specdata3::zero()),
                    s,
                    0o644,
                ),
                MknodData3::Fifo(s) => self.make(
                    &a.where_,
                    Content::Special(Ftype3::Fifo, Specdata3::zero()),
                    s,
                    0o644,
                ),
                // RFC 1813 §3.3.11: regular files, directories and links are not MKNOD's job.
                MknodData3::Other(_) => wcc_fail(Nfsstat3::Badtype, WccData::none()),
            }),
            Nfs3Call::Remove(a) => Nfs3Reply::Remove(self.remove(&a.object, false)),
            Nfs3Call::Rmdir(a) => Nfs3Reply::Rmdir(self.remove(&a.object, true)),
            Nfs3Call::Rename(a) => Nfs3Reply::Rename(self.rename(a)),
            Nfs3Call::Link(a) => Nfs3Reply::Link(self.link(a)),
            Nfs3Call::Readdir(a) => Nfs3Reply::Readdir(self.readdir(a)),
            Nfs3Call::Readdirplus(a) => Nfs3Reply::Readdirplus(self.readdirplus(a)),
            Nfs3Call::Fsstat(a) => Nfs3Reply::Fsstat(match self.id_of(&a.fsroot) {
                Ok(id) => NfsRes::Ok(FsstatResOk {
                    obj_attributes: Some(self.attr(id)),
                    tbytes: self.limits.max_total_bytes,
                    fbytes: self.limits.max_total_bytes - self.total_bytes,
                    abytes: self.limits.max_total_bytes - self.total_bytes,
                    tfiles: self.limits.max_inodes as u64,
                    ffiles: (self.limits.max_inodes - self.inodes.len()) as u64,
                    afiles: (self.limits.max_inodes - self.inodes.len()) as u64,
                    invarsec: 0,
                }),
                Err(status) => fail_attr(status),
            }),
            Nfs3Call::Fsinfo(a) => Nfs3Reply::Fsinfo(match self.id_of(&a.fsroot) {
                Ok(id) => NfsRes::Ok(FsinfoResOk {
                    obj_attributes: Some(self.attr(id)),
                    rtmax: MAX_DATA,
                    rtpref: 65536,
                    rtmult: 4096,
                    wtmax: MAX_DATA,
                    wtpref: 65536,
                    wtmult: 4096,
                    dtpref: 4096,
                    maxfilesize: self.limits.max_file_bytes,
                    time_delta: t(1),
                    // FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME
                    properties: 0x1b,
                }),
                Err(status) => fail_attr(status),
            }),
            Nfs3Call::Pathconf(a) => Nfs3Reply::Pathconf(match self.id_of(&a.object) {
                Ok(id) => NfsRes::Ok(PathconfResOk {
                    obj_attributes: Some(self.attr(id)),
                    linkmax: 255,
                    name_max: 255,
                    no_trunc: true,
                    chown_restricted: true,
                    case_insensitive: false,
                    case_preserving: true,
                }),
                Err(status) => fail_attr(status),
            }),
            Nfs3Call::Commit(a) => Nfs3Reply::Commit(match self.id_of(&a.file) {
                Ok(id) => {
                    let before = self.wcc_attr(id);
                    NfsRes::Ok(CommitResOk {
                        file_wcc: self.wcc(id, before),
                        verf: self.write_verf,
                    })
                }
                Err(status) => wcc_fail(status, WccData::none()),
            }),
        }
    }

    fn setattr(&mut self, a: &SetattrArgs) -> SetattrRes {
        let id = match self.id_of(&a.object) {
            Ok(id) => id,
            Err(status) => return wcc_result_fail(status, WccData::none()),
        };
        let before = self.wcc_attr(id);
        // RFC 1813 §3.3.2: with a guard, the change happens only if ctime still matches.
        if let Some(guard) = a.guard {
            if guard != before.ctime {
                return wcc_result_fail(Nfsstat3::NotSync, self.wcc(id, before));
            }
        }
        match self.apply_sattr(id, &a.new_attributes) {
            Ok(()) => NfsRes::Ok(WccResult {
                obj_wcc: self.wcc(id, before),
            }),
            Err(status) => wcc_result_fail(status, self.wcc(id, before)),
        }
    }

    fn lookup(&mut self, a: &LookupArgs) -> LookupRes {
        let dir = match self.id_of(&a.what.dir) {
            Ok(id) => id,
            Err(status) => return fail_attr(status),
        };
        let found = self.dir(dir).map(|d| d.get(&a.what.name.0).copied());
        match found {
            Ok(Some(id)) => NfsRes::Ok(LookupResOk {
                object: handle(id),
                obj_attributes: Some(self.attr(id)),
                dir_attributes: Some(self.attr(dir)),
            }),
            Ok(None) => NfsRes::Fail {
                status: Nfsstat3::Noent,
                resfail: AttrResult {
                    attributes: Some(self.attr(dir)),
                },
            },
            Err(status) => fail_attr(status),
        }
    }

    fn readlink(&mut self, a: &ReadlinkArgs) -> ReadlinkRes {
        match self.id_of(&a.symlink) {
            Ok(id) => match &self.inodes[&id].content {
                Content::Symlink(path) => NfsRes::Ok(ReadlinkResOk {
                    symlink_attributes: Some(self.attr(id)),
                    data: DdpData::Inline(path.clone()),
                }),
                _ => fail_attr(Nfsstat3::Inval),
            },
            Err(status) => fail_attr(status),
        }
    }

    fn read(&mut self, a: &ReadArgs) -> ReadRes {
        let id = match self.id_of(&a.file) {
            Ok(id) => id,
            Err(status) => return fail_attr(status),
        };
        let data = match &self.inodes[&id].content {
            Content::File(d) => d,
            Content::Dir(_) => return fail_attr(Nfsstat3::Isdir),
            _ => return fail_attr(Nfsstat3::Inval),
        };
        let len = data.len() as u64;
        let start = a.offset.min(len) as usize;
        let end = a
            .offset
            .saturating_add(a.count.min(MAX_DATA).into())
            .min(len) as usize;
        let bytes = data[start..end].to_vec();
        NfsRes::Ok(ReadResOk {
            file_attributes: Some(self.attr(id)),
            count: bytes.len() as u32,
            eof: end as u64 == len,
            data: DdpData::Inline(bytes),
        })
    }

    fn write(&mut self, a: &WriteArgs) -> WriteRes {
        let id = match self.id_of(&a.file) {
            Ok(id) => id,
            Err(status) => return wcc_fail(status, WccData::none()),
        };
        let before = self.wcc_attr(id);
        let DdpData::Inline(data) = &a.data else {
            return wcc_fail(Nfsstat3::Inval, self.wcc(id, before));
        };
        match &self.inodes[&id].content {
            Content::File(_) => {}
            Content::Dir(_) => return wcc_fail(Nfsstat3::Isdir, self.wcc(id, before)),
            _ => return wcc_fail(Nfsstat3::Inval, self.wcc(id, before)),
        }
        // RFC 1813 §3.3.7: count is the number of bytes of data; they must agree.
        if a.count as usize != data.len() {
            return wcc_fail(Nfsstat3::Inval, self.wcc(id, before));
        }
        let Some(end) = a.offset.checked_add(data.len() as u64) else {
            return wcc_fail(Nfsstat3::Fbig, self.wcc(id, before));
        };
        if end > before.size {
            if let Err(status) = self.set_size(id, end) {
                return wcc_fail(status, self.wcc(id, before));
            }
        }
        if let Some(Content::File(file)) = self.inodes.get_mut(&id).map(|n| &mut n.content) {
            file[a.offset as usize..end as usize].copy_from_slice(data);
        }
        self.touch(id);
        NfsRes::Ok(WriteResOk {
            file_wcc: self.wcc(id, before),
            count: a.count,
            committed: StableHow::FileSync,
            verf: self.write_verf,
        })
    }

    fn create(&mut self, a: &CreateArgs) -> CreateRes {
        let dir = match self.id_of(&a.where_.dir) {
            Ok(id) => id,
            Err(status) => return wcc_fail(status, WccData::none()),
        };
        let before = self.wcc_attr(dir);
        if let Err(status) = Self::check_name(&a.where_.name) {
            return wcc_fail(status, self.wcc(dir, before));
        }
        let existing = match self.dir(dir) {
            Ok(d) => d.get(&a.where_.name.0).copied(),
            Err(status) => return wcc_fail(status, self.wcc(dir, before)),
        };
        let (attrs, verf) = match &a.how {
            CreateHow3::Unchecked(s) | CreateHow3::Guarded(s) => (s.clone(), None),
            CreateHow3::Exclusive(v) => (Sattr3::default(), Some(*v)),
        };
        let id = match (existing, &a.how) {
            // RFC 1813 §3.3.8: GUARDED fails if the name exists.
            (Some(_), CreateHow3::Guarded(_)) => {
                return wcc_fail(Nfsstat3::Exist, self.wcc(dir, before))
            }
            // EXCLUSIVE succeeds again only for the same verifier (a retransmission).
            (Some(id), CreateHow3::Exclusive(v)) => {
                if self.inodes[&id].create_verf != Some(*v) {
                    return wcc_fail(Nfsstat3::Exist, self.wcc(dir, before));
                }
                id
            }
            (Some(id), CreateHow3::Unchecked(s)) => {
                if !matches!(self.inodes[&id].content, Content::File(_)) {
                    return wcc_fail(Nfsstat3::Exist, self.wcc(dir, before));
                }
                if let Err(status) = self.apply_sattr(id, s) {
                    return wcc_fail(status, self.wcc(dir, before));
                }
                id
            }
            (None, _) => {
                let id = match self.new_inode(Content::File(Vec::new()), &attrs, 0o644) {
                    Ok(id) => id,
                    Err(status) => return wcc_fail(status, self.wcc(dir, before)),
                };
                if let Some(n) = self.inodes.get_mut(&id) {
                    n.create_verf = verf;
                }
                if let Err(status) = self.link_into(dir, &a.where_.name, id) {
                    return wcc_fail(status, self.wcc(dir, before));
                }
                id
            }
        };
        NfsRes::Ok(DiropResOk {
            obj: Some(handle(id)),
            obj_attributes: Some(self.attr(id)),
            dir_wcc: self.wcc(dir, before),
        })
    }

    fn make(
        &mut self,
        where_: &DirOpArgs3,
        content: Content,
        attrs: &Sattr3,
        default_mode: u32,
    ) -> NfsRes<DiropResOk, WccFail> {
        let dir = match self.id_of(&where_.dir) {
            Ok(id) => id,
            Err(status) => return wcc_fail(status, WccData::none()),
        };
        let before = self.wcc_attr(dir);
        if let Err(status) = Self::check_name(&where_.name) {
            return wcc_fail(status, self.wcc(dir, before));
        }
        match self.dir(dir) {
            Ok(d) if d.contains_key(&where_.name.0) => {
                return wcc_fail(Nfsstat3::Exist, self.wcc(dir, before))
            }
            Ok(_) => {}
            Err(status) => return wcc_fail(status, self.wcc(dir, before)),
        }
        let is_dir = matches!(content, Content::Dir(_));
        let id = match self.new_inode(content, attrs, default_mode) {
            Ok(id) => id,
            Err(status) => return wcc_fail(status, self.wcc(dir, before)),
        };
        if let Err(status) = self.link_into(dir, &where_.name, id) {
            return wcc_fail(status, self.wcc(dir, before));
        }
        if is_dir {
            if let Some(n) = self.inodes.get_mut(&dir) {
                n.nlink += 1;
            }
        }
        NfsRes::Ok(DiropResOk {
            obj: Some(handle(id)),
            obj_attributes: Some(self.attr(id)),
            dir_wcc: self.wcc(dir, before),
        })
    }

    fn remove(&mut self, object: &DirOpArgs3, want_dir: bool) -> RemoveRes {
        let dir = match self.id_of(&object.dir) {
            Ok(id) => id,
            Err(status) => return wcc_result_fail(status, WccData::none()),
        };
        let before = self.wcc_attr(dir);
        let target = match self.dir(dir) {
            Ok(d) => d.get(&object.name.0).copied(),
            Err(status) => return wcc_result_fail(status, self.wcc(dir, before)),
        };
        let Some(target) = target else {
            return wcc_result_fail(Nfsstat3::Noent, self.wcc(dir, before));
        };
        match (&self.inodes[&target].content, want_dir) {
            (Content::Dir(entries), true) => {
                if !entries.is_empty() {
                    return wcc_result_fail(Nfsstat3::Notempty, self.wcc(dir, before));
                }
                if let Some(n) = self.inodes.get_mut(&dir) {
                    n.nlink = n.nlink.saturating_sub(1);
                }
            }
            (_, true) => return wcc_result_fail(Nfsstat3::Notdir, self.wcc(dir, before)),
            (Content::Dir(_), false) => {
                return wcc_result_fail(Nfsstat3::Isdir, self.wcc(dir, before))
            }
            (_, false) => {}
        }
        self.unlink(dir, &object.name.0);
        NfsRes::Ok(WccResult {
            obj_wcc: self.wcc(dir, before),
        })
    }

    fn rename(&mut self, a: &RenameArgs) -> RenameRes {
        let fail = |status, from: WccData, to: WccData| NfsRes::Fail {
            status,
            resfail: RenameResult {
                fromdir_wcc: from,
                todir_wcc: to,
            },
        };
        let (from_dir, to_dir) = match (self.id_of(&a.from.dir), self.id_of(&a.to.dir)) {
            (Ok(f), Ok(t)) => (f, t),
            (Err(s), _) | (_, Err(s)) => return fail(s, WccData::none(), WccData::none()),
        };
        let (before_from, before_to) = (self.wcc_attr(from_dir), self.wcc_attr(to_dir));
        let wccs = |fs: &Fs| (fs.wcc(from_dir, before_from), fs.wcc(to_dir, before_to));
        if let Err(status) = Self::check_name(&a.to.name) {
            let (f, t) = wccs(self);
            return fail(status, f, t);
        }
        let source = match self.dir(from_dir) {
            Ok(d) => d.get(&a.from.name.0).copied(),
            Err(status) => {
                let (f, t) = wccs(self);
                return fail(status, f, t);
            }
        };
        let Some(source) = source else {
            let (f, t) = wccs(self);
            return fail(Nfsstat3::Noent, f, t);
        };
        let existing = match self.dir(to_dir) {
            Ok(d) => d.get(&a.to.name.0).copied(),
            Err(status) => {
                let (f, t) = wccs(self);
                return fail(status, f, t);
            }
        };
        if existing == Some(source) {
            let (f, t) = wccs(self);
            return NfsRes::Ok(RenameResult {
                fromdir_wcc: f,
                todir_wcc: t,
            });
        }
        if let Some(victim) = existing {
            let source_is_dir = matches!(self.inodes[&source].content, Content::Dir(_));
            match &self.inodes[&victim].content {
                Content::Dir(entries) if !source_is_dir || !entries.is_empty() => {
                    let (f, t) = wccs(self);
                    return fail(Nfsstat3::Exist, f, t);
                }
                Content::Dir(_) => {}
                _ if source_is_dir => {
                    let (f, t) = wccs(self);
                    return fail(Nfsstat3::Notdir, f, t);
                }
                _ => {}
            }
            self.unlink(to_dir, &a.to.name.0);
        }
        if let Ok(d) = self.dir_mut(from_dir) {
            d.remove(&a.from.name.0);
        }
        if let Ok(d) = self.dir_mut(to_dir) {
            d.insert(a.to.name.0.clone(), source);
        }
        self.touch(from_dir);
        self.touch(to_dir);
        let (f, t) = wccs(self);
        NfsRes::Ok(RenameResult {
            fromdir_wcc: f,
            todir_wcc: t,
        })
    }

    fn link(&mut self, a: &LinkArgs) -> LinkRes {
        let fail = |status, attrs, wcc| NfsRes::Fail {
            status,
            resfail: LinkResult {
                file_attributes: attrs,
                linkdir_wcc: wcc,
            },
        };
        let (file, dir) = match (self.id_of(&a.file), self.id_of(&a.link.dir)) {
            (Ok(f), Ok(d)) => (f, d),
            (Err(s), _) | (_, Err(s)) => return fail(s, None, WccData::none()),
        };
        let before = self.wcc_attr(dir);
        if matches!(self.inodes[&file].content, Content::Dir(_)) {
            return fail(
                Nfsstat3::Isdir,
                Some(self.attr(file)),
                self.wcc(dir, before),
            );
        }
        if let Err(status) = Self::check_name(&a.link.name) {
            return fail(status, Some(self.attr(file)), self.wcc(dir, before));
        }
        match self.dir(dir) {
            Ok(d) if d.contains_key(&a.link.name.0) => {
                return fail(
                    Nfsstat3::Exist,
                    Some(self.attr(file)),
                    self.wcc(dir, before),
                )
            }
            Ok(_) => {}
            Err(status) => return fail(status, Some(self.attr(file)), self.wcc(dir, before)),
        }
        if let Err(status) = self.link_into(dir, &a.link.name, file) {
            return fail(status, Some(self.attr(file)), self.wcc(dir, before));
        }
        let now = self.tick();
        if let Some(n) = self.inodes.get_mut(&file) {
            n.nlink += 1;
            n.ctime = now;
        }
        NfsRes::Ok(LinkResult {
            file_attributes: Some(self.attr(file)),
            linkdir_wcc: self.wcc(dir, before),
        })
    }

    /// Directory entries after `cookie` (cookies are 1-based entry indexes), bounded by `budget`
    /// bytes of XDR.
    fn entries_after(&self, dir: u64, cookie: u64, budget: u32) -> Res<(Vec<DirEntry>, bool)> {
        let d = self.dir(dir)?;
        let mut out = Vec::new();
        let mut used = 0u64;
        let skip = usize::try_from(cookie).unwrap_or(usize::MAX);
        for (index, (name, id)) in d.iter().enumerate().skip(skip) {
            let cost = 24 + pad4(name.len()) as u64;
            if used + cost > u64::from(budget) {
                return Ok((out, false));
            }
            used += cost;
            out.push((*id, name.clone(), index as u64 + 1));
        }
        Ok((out, true))
    }

    fn readdir(&mut self, a: &ReaddirArgs) -> ReaddirRes {
        let dir = match self.id_of(&a.dir) {
            Ok(id) => id,
            Err(status) => return fail_attr(status),
        };
        match self.entries_after(dir, a.cookie, a.count.saturating_sub(128)) {
            Ok((entries, eof)) => NfsRes::Ok(ReaddirResOk {
                dir_attributes: Some(self.attr(dir)),
                cookieverf: [0; 8],
                entries: entries
                    .into_iter()
                    .map(|(fileid, name, cookie)| Entry3 {
                        fileid,
                        name: Filename(name),
                        cookie,
                    })
                    .collect(),
                eof,
            }),
            Err(status) => fail_attr(status),
        }
    }

    fn readdirplus(&mut self, a: &ReaddirplusArgs) -> ReaddirplusRes {
        let dir = match self.id_of(&a.dir) {
            Ok(id) => id,
            Err(status) => return fail_attr(status),
        };
        // Each entry also carries ~100 bytes of attributes and a handle.
        match self.entries_after(dir, a.cookie, a.maxcount.saturating_sub(128) / 5) {
            Ok((entries, eof)) => NfsRes::Ok(ReaddirplusResOk {
                dir_attributes: Some(self.attr(dir)),
                cookieverf: [0; 8],
                entries: entries
                    .into_iter()
                    .map(|(fileid, name, cookie)| Entryplus3 {
                        fileid,
                        name: Filename(name),
                        cookie,
                        name_attributes: Some(self.attr(fileid)),
                        name_handle: Some(handle(fileid)),
                    })
                    .collect(),
                eof,
            }),
            Err(status) => fail_attr(status),
        }
    }
}

fn pad4(n: usize) -> usize {
    wire::xdr::pad4(n)
}

/// The handle of inode `id`: its number, 8 bytes big-endian.
pub fn handle(id: u64) -> FileHandle {
    FileHandle(id.to_be_bytes().to_vec())
}

fn fail_attr<T>(status: Nfsstat3) -> NfsRes<T, AttrResult> {
    NfsRes::Fail {
        status,
        resfail: AttrResult { attributes: None },
    }
}

fn wcc_fail<T>(status: Nfsstat3, wcc: WccData) -> NfsRes<T, WccFail> {
    NfsRes::Fail {
        status,
        resfail: WccFail { wcc },
    }
}

fn wcc_result_fail(status: Nfsstat3, wcc: WccData) -> NfsRes<WccResult, WccResult> {
    NfsRes::Fail {
        status,
        resfail: WccResult { obj_wcc: wcc },
    }
}

trait Zero {
    fn zero() -> Self;
}

impl Zero for Specdata3 {
    fn zero() -> Self {
        Specdata3 {
            specdata1: 0,
            specdata2: 0,
        }
    }
}

trait NoWcc {
    fn none() -> Self;
}

impl NoWcc for WccData {
    fn none() -> Self {
        WccData {
            before: None,
            after: None,
        }
    }
}
