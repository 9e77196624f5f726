//! NFSv3 data types (RFC 1813 §2.5, §2.6): handles and names, procedures and statuses, file
//! attributes, and the `nfsstat3`-switched union every result has.

use super::*;

bounded_bytes!(
    /// `nfs_fh3` (RFC 1813 §2.6): at most NFS3_FHSIZE = 64 bytes; serialised as hex.
    FileHandle,
    NFS3_FHSIZE,
    "RFC 1813 §2.6 (nfs_fh3 data<NFS3_FHSIZE=64>)",
    serialize_hex
);
bounded_bytes!(
    /// `filename3` (RFC 1813 §2.5), bounded by [`MAX_FILENAME`].
    Filename,
    MAX_FILENAME,
    "RFC 1813 §2.5 (filename3; decoder limit 1024)",
    serialize_bytes_as_text
);
bounded_bytes!(
    /// `nfspath3` (RFC 1813 §2.5), bounded by [`MAX_PATH`].
    NfsPath,
    MAX_PATH,
    "RFC 1813 §2.5 (nfspath3; decoder limit 4096)",
    serialize_bytes_as_text
);

xdr_enum! {
    /// NFSv3 procedures (RFC 1813 §3).
    pub enum Nfs3Proc ("RFC 1813 §3 (NFSv3 procedure number)") {
        Null = 0 => "NULL",
        Getattr = 1 => "GETATTR",
        Setattr = 2 => "SETATTR",
        Lookup = 3 => "LOOKUP",
        Access = 4 => "ACCESS",
        Readlink = 5 => "READLINK",
        Read = 6 => "READ",
        Write = 7 => "WRITE",
        Create = 8 => "CREATE",
        Mkdir = 9 => "MKDIR",
        Symlink = 10 => "SYMLINK",
        Mknod = 11 => "MKNOD",
        Remove = 12 => "REMOVE",
        Rmdir = 13 => "RMDIR",
        Rename = 14 => "RENAME",
        Link = 15 => "LINK",
        Readdir = 16 => "READDIR",
        Readdirplus = 17 => "READDIRPLUS",
        Fsstat = 18 => "FSSTAT",
        Fsinfo = 19 => "FSINFO",
        Pathconf = 20 => "PATHCONF",
        Commit = 21 => "COMMIT",
    }
}

impl Nfs3Proc {
    /// Whether nfsd treats the procedure as idempotent, i.e. does *not* keep its reply in the
    /// duplicate reply cache. nfsd caches exactly SETATTR, WRITE, CREATE, MKDIR, SYMLINK, MKNOD,
    /// REMOVE, RMDIR, RENAME and LINK (fs/nfsd/nfs3proc.c `pc_cachetype`); note WRITE is
    /// idempotent in RFC 1813 terms but nfsd still caches it.
    pub fn is_idempotent(self) -> bool {
        !matches!(
            self,
            Nfs3Proc::Setattr
                | Nfs3Proc::Write
                | Nfs3Proc::Create
                | Nfs3Proc::Mkdir
                | Nfs3Proc::Symlink
                | Nfs3Proc::Mknod
                | Nfs3Proc::Remove
                | Nfs3Proc::Rmdir
                | Nfs3Proc::Rename
                | Nfs3Proc::Link
        )
    }
}

/// RFC 8267 §4: the DDP-eligible *argument* of an NFSv3 call, if any — the opaque file data of
/// WRITE and the pathname of SYMLINK. Only these may be conveyed in a (non-position-zero) Read
/// chunk; all other NFSv3 arguments are not DDP-eligible.
pub fn ddp_eligible_argument(proc_: Nfs3Proc) -> Option<&'static str> {
    match proc_ {
        Nfs3Proc::Write => Some("WRITE3args.data"),
        Nfs3Proc::Symlink => Some("SYMLINK3args.symlink.symlink_data"),
        _ => None,
    }
}

/// RFC 8267 §4: the DDP-eligible *result* of an NFSv3 reply, if any — the opaque file data of
/// READ and the pathname of READLINK. Only these may be returned through a Write chunk. READDIR
/// and READDIRPLUS entry lists are not DDP-eligible: a large directory listing is a Long reply
/// sent through the Reply chunk (RFC 8166 §3.5.3), not a Write chunk.
pub fn ddp_eligible_result(proc_: Nfs3Proc) -> Option<&'static str> {
    match proc_ {
        Nfs3Proc::Read => Some("READ3resok.data"),
        Nfs3Proc::Readlink => Some("READLINK3resok.data"),
        _ => None,
    }
}

xdr_enum! {
    /// `nfsstat3` (RFC 1813 §2.5).
    pub enum Nfsstat3 ("RFC 1813 §2.5 (nfsstat3)") {
        Ok = 0 => "NFS3_OK",
        Perm = 1 => "NFS3ERR_PERM",
        Noent = 2 => "NFS3ERR_NOENT",
        Io = 5 => "NFS3ERR_IO",
        Nxio = 6 => "NFS3ERR_NXIO",
        Acces = 13 => "NFS3ERR_ACCES",
        Exist = 17 => "NFS3ERR_EXIST",
        Xdev = 18 => "NFS3ERR_XDEV",
        Nodev = 19 => "NFS3ERR_NODEV",
        Notdir = 20 => "NFS3ERR_NOTDIR",
        Isdir = 21 => "NFS3ERR_ISDIR",
        Inval = 22 => "NFS3ERR_INVAL",
        Fbig = 27 => "NFS3ERR_FBIG",
        Nospc = 28 => "NFS3ERR_NOSPC",
        Rofs = 30 => "NFS3ERR_ROFS",
        Mlink = 31 => "NFS3ERR_MLINK",
        Nametoolong = 63 => "NFS3ERR_NAMETOOLONG",
        Notempty = 66 => "NFS3ERR_NOTEMPTY",
        Dquot = 69 => "NFS3ERR_DQUOT",
        Stale = 70 => "NFS3ERR_STALE",
        Remote = 71 => "NFS3ERR_REMOTE",
        Badhandle = 10001 => "NFS3ERR_BADHANDLE",
        NotSync = 10002 => "NFS3ERR_NOT_SYNC",
        BadCookie = 10003 => "NFS3ERR_BAD_COOKIE",
        Notsupp = 10004 => "NFS3ERR_NOTSUPP",
        Toosmall = 10005 => "NFS3ERR_TOOSMALL",
        Serverfault = 10006 => "NFS3ERR_SERVERFAULT",
        Badtype = 10007 => "NFS3ERR_BADTYPE",
        Jukebox = 10008 => "NFS3ERR_JUKEBOX",
    }
}

xdr_enum! {
    /// `ftype3` (RFC 1813 §2.6).
    pub enum Ftype3 ("RFC 1813 §2.6 (ftype3)") {
        Reg = 1 => "NF3REG",
        Dir = 2 => "NF3DIR",
        Blk = 3 => "NF3BLK",
        Chr = 4 => "NF3CHR",
        Lnk = 5 => "NF3LNK",
        Sock = 6 => "NF3SOCK",
        Fifo = 7 => "NF3FIFO",
    }
}

xdr_enum! {
    /// `stable_how` (RFC 1813 §3.3.7).
    pub enum StableHow ("RFC 1813 §3.3.7 (stable_how)") {
        Unstable = 0 => "UNSTABLE",
        DataSync = 1 => "DATA_SYNC",
        FileSync = 2 => "FILE_SYNC",
    }
}

/// ACCESS3 bits (RFC 1813 §3.3.4).
pub const ACCESS3_READ: u32 = 0x0001;
pub const ACCESS3_LOOKUP: u32 = 0x0002;
pub const ACCESS3_MODIFY: u32 = 0x0004;
pub const ACCESS3_EXTEND: u32 = 0x0008;
pub const ACCESS3_DELETE: u32 = 0x0010;
pub const ACCESS3_EXECUTE: u32 = 0x0020;

xdr_struct! {
    /// `specdata3` (RFC 1813 §2.6).
    pub struct Specdata3 { specdata1: u32, specdata2: u32 }
}

xdr_struct! {
    /// `nfstime3` (RFC 1813 §2.6).
    #[derive(Copy, Hash)]
    pub struct Nfstime3 { seconds: u32, nseconds: u32 }
}

xdr_struct! {
    /// `fattr3` (RFC 1813 §2.6).
    pub struct Fattr3 {
        ftype: Ftype3,
        mode: u32,
        nlink: u32,
        uid: u32,
        gid: u32,
        size: u64,
        used: u64,
        rdev: Specdata3,
        fsid: u64,
        fileid: u64,
        atime: Nfstime3,
        mtime: Nfstime3,
        ctime: Nfstime3,
    }
}

/// `post_op_attr` (RFC 1813 §2.6).
pub type PostOpAttr = Option<Fattr3>;
/// `post_op_fh3` (RFC 1813 §2.6).
pub type PostOpFh3 = Option<FileHandle>;

xdr_struct! {
    /// `wcc_attr` (RFC 1813 §2.6).
    pub struct WccAttr { size: u64, mtime: Nfstime3, ctime: Nfstime3 }
}

xdr_struct! {
    /// `wcc_data` (RFC 1813 §2.6): `pre_op_attr before; post_op_attr after`.
    pub struct WccData { before: Option<WccAttr>, after: PostOpAttr }
}

/// `set_atime` / `set_mtime` (RFC 1813 §2.6 `time_how`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
pub enum SetTime {
    #[default]
    DontChange,
    SetToServerTime,
    SetToClientTime(Nfstime3),
}

impl Xdr for SetTime {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        match r.u32("time_how")? {
            0 => Ok(SetTime::DontChange),
            1 => Ok(SetTime::SetToServerTime),
            2 => Ok(SetTime::SetToClientTime(Nfstime3::decode(r)?)),
            value => Err(DecodeError::BadDiscriminant {
                field: "time_how",
                value,
                rule: "RFC 1813 §2.6 (time_how)",
            }),
        }
    }

    fn encode(&self, w: &mut Writer) {
        match self {
            SetTime::DontChange => {
                w.u32(0);
            }
            SetTime::SetToServerTime => {
                w.u32(1);
            }
            SetTime::SetToClientTime(t) => {
                w.u32(2);
                t.encode(w);
            }
        }
    }
}

xdr_struct! {
    /// `sattr3` (RFC 1813 §2.6): each `set_*` union is optional data.
    #[derive(Default)]
    pub struct Sattr3 {
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: SetTime,
        mtime: SetTime,
    }
}

xdr_struct! {
    /// `diropargs3` (RFC 1813 §2.6).
    pub struct DirOpArgs3 { dir: FileHandle, name: Filename }
}

/// A void arm (RFC 4506 §4.16), for result unions whose failure case carries nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
pub struct Void;

impl Xdr for Void {
    fn decode(_r: &mut Reader<'_>) -> Result<Self> {
        Ok(Void)
    }
    fn encode(&self, _w: &mut Writer) {}
}

/// The shape of every NFSv3 result: `union switch (nfsstat3 status) { case NFS3_OK: resok;
/// default: resfail; }`. Serialised untagged: the `resok` fields, or `{status, resfail}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum NfsRes<T, F> {
    Ok(T),
    Fail { status: Nfsstat3, resfail: F },
}

impl<T, F> NfsRes<T, F> {
    /// The status on the wire.
    pub fn status(&self) -> Nfsstat3 {
        match self {
            NfsRes::Ok(_) => Nfsstat3::Ok,
            NfsRes::Fail { status, .. } => *status,
        }
    }

    /// Decode with a custom decoder for the `resok` arm.
    pub fn decode_with(
        r: &mut Reader<'_>,
        ok: impl FnOnce(&mut Reader<'_>) -> Result<T>,
    ) -> Result<Self>
    where
        F: Xdr,
    {
        match Nfsstat3::decode(r)? {
            Nfsstat3::Ok => ok(r).map(NfsRes::Ok),
            status => Ok(NfsRes::Fail {
                status,
                resfail: F::decode(r)?,
            }),
        }
    }

    /// Encode with a custom encoder for the `resok` arm.
    pub fn encode_with(&self, w: &mut Writer, ok: impl FnOnce(&T, &mut Writer))
    where
        F: Xdr,
    {
        match self {
            NfsRes::Ok(v) => {
                w.u32(Nfsstat3::Ok as u32);
                ok(v, w);
            }
            NfsRes::Fail { status, resfail } => {
                // A failure arm with status NFS3_OK cannot be expressed; emitting it anyway is
                // what a raw builder would do, and decoding then reads a `resok`.
                status.encode(w);
                resfail.encode(w);
            }
        }
    }
}

impl<T: Xdr, F: Xdr> Xdr for NfsRes<T, F> {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Self::decode_with(r, T::decode)
    }
    fn encode(&self, w: &mut Writer) {
        self.encode_with(w, |v, w| v.encode(w));
    }
}
