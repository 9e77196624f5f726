//! An in-memory NFSv3 file system (RFC 1813) with bounded size and a logical clock.
//!
//! Times are a counter bumped on every change, never the wall clock, so replies are reproducible
//! byte for byte and a cached reply can be compared with a re-executed one.
//!
//! Architecture Invariant: the file system never grows past [`Limits`]; a request that would is
//! answered NFS3ERR_NOSPC / NFS3ERR_FBIG, never by allocating.

mod dirs;
mod files;
mod inodes;
mod namespace;

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
