//! NFS version 3 (RFC 1813): every procedure's arguments and results, plus the RFC 8267
//! upper-layer binding (which data items may be moved by RDMA chunks, i.e. are DDP-eligible).
//!
//! Architecture Invariant: a DDP-eligible item that travelled in a chunk is absent from the
//! inline XDR stream (RFC 8166 §3.4.1, "reduced" stream). Decoders take a [`Ddp`] mode so a
//! reduced READ reply or WRITE call decodes cleanly instead of looking truncated; such an item is
//! represented as [`DdpData::Moved`] carrying only its length.

use serde::{Serialize, Serializer};

pub use crate::ddp::{Ddp, DdpData};
use crate::error::{DecodeError, Result};
use crate::xdr::{Reader, Writer, Xdr};

/// NFS version this module implements.
pub const NFS_V3: u32 = 3;
/// RFC 1813 §2.4 (sizes) and §2.6 (nfs_fh3): `opaque data<NFS3_FHSIZE>`, NFS3_FHSIZE = 64.
pub const NFS3_FHSIZE: u32 = 64;
/// Decoder limit for `filename3` (RFC 1813 §2.5 leaves it unbounded; Linux uses 255).
pub const MAX_FILENAME: u32 = 1024;
/// Decoder limit for `nfspath3` (RFC 1813 §2.5 leaves it unbounded; Linux PATH_MAX is 4096).
pub const MAX_PATH: u32 = 4096;
/// Decoder limit for WRITE data and READ results (Linux nfsd's maximum payload is 1 MiB).
pub const MAX_DATA: u32 = 1 << 20;
/// Decoder limit on READDIR / READDIRPLUS entry lists.
pub const MAX_DIR_ENTRIES: usize = 65536;

/// Field-level codec used by the struct macro: like [`Xdr`] but also for primitive fields, and
/// told the field name so errors can say where they happened.
pub(crate) trait Wire: Sized {
    fn get(r: &mut Reader<'_>, field: &'static str) -> Result<Self>;
    fn put(&self, w: &mut Writer);
}

impl Wire for u32 {
    fn get(r: &mut Reader<'_>, field: &'static str) -> Result<Self> {
        r.u32(field)
    }
    fn put(&self, w: &mut Writer) {
        w.u32(*self);
    }
}

impl Wire for u64 {
    fn get(r: &mut Reader<'_>, field: &'static str) -> Result<Self> {
        r.u64(field)
    }
    fn put(&self, w: &mut Writer) {
        w.u64(*self);
    }
}

impl Wire for bool {
    fn get(r: &mut Reader<'_>, field: &'static str) -> Result<Self> {
        r.bool(field)
    }
    fn put(&self, w: &mut Writer) {
        w.bool(*self);
    }
}

/// The 8-byte verifiers of RFC 1813 §2.5 (cookieverf3, createverf3, writeverf3).
impl Wire for [u8; 8] {
    fn get(r: &mut Reader<'_>, field: &'static str) -> Result<Self> {
        let mut out = [0u8; 8];
        out.copy_from_slice(r.opaque_fixed(8, field)?);
        Ok(out)
    }
    fn put(&self, w: &mut Writer) {
        w.opaque_fixed(self);
    }
}

/// XDR optional data (`T *` / a boolean-discriminated union with a void arm).
impl<T: Wire> Wire for Option<T> {
    fn get(r: &mut Reader<'_>, field: &'static str) -> Result<Self> {
        r.optional(field, |r| T::get(r, field))
    }
    fn put(&self, w: &mut Writer) {
        w.optional(self.as_ref(), |w, v| v.put(w));
    }
}

impl<T: Xdr> Wire for T {
    fn get(r: &mut Reader<'_>, _field: &'static str) -> Result<Self> {
        T::decode(r)
    }
    fn put(&self, w: &mut Writer) {
        self.encode(w);
    }
}

/// Declare a struct whose XDR encoding is its fields in order, with [`Xdr`] implemented.
macro_rules! xdr_struct {
    ($(#[$meta:meta])* $vis:vis struct $name:ident {
        $($(#[$fmeta:meta])* $field:ident : $ty:ty),* $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
        $vis struct $name { $($(#[$fmeta])* pub $field: $ty),* }

        impl $crate::xdr::Xdr for $name {
            fn decode(r: &mut $crate::xdr::Reader<'_>) -> $crate::error::Result<Self> {
                Ok($name {
                    $($field: <$ty as $crate::nfs3::Wire>::get(
                        r,
                        concat!(stringify!($name), ".", stringify!($field)),
                    )?),*
                })
            }
            #[allow(unused_variables)]
            fn encode(&self, w: &mut $crate::xdr::Writer) {
                $($crate::nfs3::Wire::put(&self.$field, w);)*
            }
        }
    };
}
pub(crate) use xdr_struct;

/// Declare a C-like XDR enum: `from_u32`, `name` (the RFC's spelling), [`Xdr`] that rejects
/// values outside the definition, and serialisation as the name.
macro_rules! xdr_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident ($rule:literal) {
        $($variant:ident = $value:literal => $text:literal),* $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name { $($variant = $value),* }

        impl $name {
            /// Every value, in definition order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The value for a wire number, if it is defined.
            pub fn from_u32(value: u32) -> Option<Self> {
                match value {
                    $($value => Some($name::$variant),)*
                    _ => None,
                }
            }

            /// The name as the specification spells it.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),*
                }
            }
        }

        impl $name {
            /// [`Self::from_u32`], with an undefined value as a typed error naming the rule.
            pub fn decode_u32(value: u32) -> $crate::error::Result<Self> {
                $name::from_u32(value).ok_or($crate::error::DecodeError::BadDiscriminant {
                    field: stringify!($name),
                    value,
                    rule: $rule,
                })
            }
        }

        impl $crate::xdr::Xdr for $name {
            fn decode(r: &mut $crate::xdr::Reader<'_>) -> $crate::error::Result<Self> {
                $name::decode_u32(r.u32(stringify!($name))?)
            }
            fn encode(&self, w: &mut $crate::xdr::Writer) {
                w.u32(*self as u32);
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }
    };
}
pub(crate) use xdr_enum;

/// Serialise raw XDR string bytes as (lossy) UTF-8 text, for summaries.
pub fn serialize_bytes_as_text<S: Serializer>(
    bytes: &[u8],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(bytes))
}

/// Serialise an 8-byte verifier as hex.
pub(crate) fn serialize_verifier<S: Serializer>(
    v: &[u8; 8],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&crate::hex::encode(v))
}

/// A variable-length byte string with a decoder limit; `$rule` names where the limit comes from.
macro_rules! bounded_bytes {
    ($(#[$meta:meta])* $name:ident, $max:expr, $rule:literal, $ser:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
        pub struct $name(pub Vec<u8>);

        impl $crate::xdr::Xdr for $name {
            fn decode(r: &mut $crate::xdr::Reader<'_>) -> $crate::error::Result<Self> {
                let len = r.u32(stringify!($name))?;
                if len > $max {
                    return Err($crate::error::DecodeError::LengthOverLimit {
                        field: stringify!($name),
                        length: len.into(),
                        limit: ($max).into(),
                        rule: $rule,
                    });
                }
                Ok($name(r.opaque_fixed(len as usize, stringify!($name))?.to_vec()))
            }
            fn encode(&self, w: &mut $crate::xdr::Writer) {
                w.opaque_var(&self.0);
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                $ser(&self.0, s)
            }
        }

        impl From<&[u8]> for $name {
            fn from(bytes: &[u8]) -> Self {
                $name(bytes.to_vec())
            }
        }
    };
}
pub(crate) use bounded_bytes;

pub(crate) fn serialize_hex<S: Serializer>(
    bytes: &[u8],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&crate::hex::encode(bytes))
}

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

// ---- Arguments (RFC 1813 §3.3.x) ----

xdr_struct! { pub struct GetattrArgs { object: FileHandle } }
xdr_struct! { pub struct SetattrArgs { object: FileHandle, new_attributes: Sattr3, guard: Option<Nfstime3> } }
xdr_struct! { pub struct LookupArgs { what: DirOpArgs3 } }
xdr_struct! { pub struct AccessArgs { object: FileHandle, access: u32 } }
xdr_struct! { pub struct ReadlinkArgs { symlink: FileHandle } }
xdr_struct! { pub struct ReadArgs { file: FileHandle, offset: u64, count: u32 } }

/// `WRITE3args` (RFC 1813 §3.3.7); `data` is DDP-eligible (RFC 8267 §4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WriteArgs {
    pub file: FileHandle,
    pub offset: u64,
    pub count: u32,
    pub stable: StableHow,
    pub data: DdpData,
}

impl WriteArgs {
    pub fn decode_with(r: &mut Reader<'_>, ddp: Ddp) -> Result<Self> {
        Ok(WriteArgs {
            file: FileHandle::decode(r)?,
            offset: r.u64("WriteArgs.offset")?,
            count: r.u32("WriteArgs.count")?,
            stable: StableHow::decode(r)?,
            data: DdpData::decode_with(
                r,
                MAX_DATA,
                ddp,
                "WriteArgs.data",
                "RFC 1813 §3.3.7 (WRITE data; decoder limit 1 MiB)",
            )?,
        })
    }
}

impl Xdr for WriteArgs {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Self::decode_with(r, Ddp::Inline)
    }
    fn encode(&self, w: &mut Writer) {
        self.file.encode(w);
        w.u64(self.offset).u32(self.count);
        self.stable.encode(w);
        self.data.encode(w);
    }
}

/// `createhow3` (RFC 1813 §3.3.8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum CreateHow3 {
    Unchecked(Sattr3),
    Guarded(Sattr3),
    Exclusive(#[serde(serialize_with = "serialize_verifier")] [u8; 8]),
}

impl Xdr for CreateHow3 {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        match r.u32("createhow3.mode")? {
            0 => Ok(CreateHow3::Unchecked(Sattr3::decode(r)?)),
            1 => Ok(CreateHow3::Guarded(Sattr3::decode(r)?)),
            2 => Ok(CreateHow3::Exclusive(<[u8; 8]>::get(r, "createverf3")?)),
            value => Err(DecodeError::BadDiscriminant {
                field: "createhow3.mode",
                value,
                rule: "RFC 1813 §3.3.8 (createmode3)",
            }),
        }
    }
    fn encode(&self, w: &mut Writer) {
        match self {
            CreateHow3::Unchecked(a) => {
                w.u32(0);
                a.encode(w);
            }
            CreateHow3::Guarded(a) => {
                w.u32(1);
                a.encode(w);
            }
            CreateHow3::Exclusive(v) => {
                w.u32(2).opaque_fixed(v);
            }
        }
    }
}

xdr_struct! { pub struct CreateArgs { #[serde(rename = "where")] where_: DirOpArgs3, how: CreateHow3 } }
xdr_struct! { pub struct MkdirArgs { #[serde(rename = "where")] where_: DirOpArgs3, attributes: Sattr3 } }

/// `SYMLINK3args` (RFC 1813 §3.3.10); the pathname is DDP-eligible (RFC 8267 §4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SymlinkArgs {
    #[serde(rename = "where")]
    pub where_: DirOpArgs3,
    pub symlink_attributes: Sattr3,
    pub symlink_data: DdpData,
}

impl SymlinkArgs {
    pub fn decode_with(r: &mut Reader<'_>, ddp: Ddp) -> Result<Self> {
        Ok(SymlinkArgs {
            where_: DirOpArgs3::decode(r)?,
            symlink_attributes: Sattr3::decode(r)?,
            symlink_data: DdpData::decode_with(
                r,
                MAX_PATH,
                ddp,
                "SymlinkArgs.symlink_data",
                "RFC 1813 §3.3.10 (nfspath3; decoder limit 4096)",
            )?,
        })
    }
}

impl Xdr for SymlinkArgs {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Self::decode_with(r, Ddp::Inline)
    }
    fn encode(&self, w: &mut Writer) {
        self.where_.encode(w);
        self.symlink_attributes.encode(w);
        self.symlink_data.encode(w);
    }
}

xdr_struct! {
    /// `devicedata3` (RFC 1813 §3.3.11).
    pub struct DeviceData3 { dev_attributes: Sattr3, spec: Specdata3 }
}

/// `mknoddata3` (RFC 1813 §3.3.11): device data for CHR/BLK, attributes for SOCK/FIFO, void
/// for the other file types (which the server then rejects with NFS3ERR_BADTYPE).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum MknodData3 {
    Chr(DeviceData3),
    Blk(DeviceData3),
    Sock(Sattr3),
    Fifo(Sattr3),
    Other(Ftype3),
}

impl Xdr for MknodData3 {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Ok(match Ftype3::decode(r)? {
            Ftype3::Chr => MknodData3::Chr(DeviceData3::decode(r)?),
            Ftype3::Blk => MknodData3::Blk(DeviceData3::decode(r)?),
            Ftype3::Sock => MknodData3::Sock(Sattr3::decode(r)?),
            Ftype3::Fifo => MknodData3::Fifo(Sattr3::decode(r)?),
            other => MknodData3::Other(other),
        })
    }
    fn encode(&self, w: &mut Writer) {
        match self {
            MknodData3::Chr(d) => {
                Ftype3::Chr.encode(w);
                d.encode(w);
            }
            MknodData3::Blk(d) => {
                Ftype3::Blk.encode(w);
                d.encode(w);
            }
            MknodData3::Sock(a) => {
                Ftype3::Sock.encode(w);
                a.encode(w);
            }
            MknodData3::Fifo(a) => {
                Ftype3::Fifo.encode(w);
                a.encode(w);
            }
            MknodData3::Other(t) => t.encode(w),
        }
    }
}

xdr_struct! { pub struct MknodArgs { #[serde(rename = "where")] where_: DirOpArgs3, what: MknodData3 } }
xdr_struct! { pub struct RemoveArgs { object: DirOpArgs3 } }
xdr_struct! { pub struct RmdirArgs { object: DirOpArgs3 } }
xdr_struct! { pub struct RenameArgs { from: DirOpArgs3, to: DirOpArgs3 } }
xdr_struct! { pub struct LinkArgs { file: FileHandle, link: DirOpArgs3 } }
xdr_struct! {
    pub struct ReaddirArgs {
        dir: FileHandle,
        cookie: u64,
        #[serde(serialize_with = "serialize_verifier")]
        cookieverf: [u8; 8],
        count: u32,
    }
}
xdr_struct! {
    pub struct ReaddirplusArgs {
        dir: FileHandle,
        cookie: u64,
        #[serde(serialize_with = "serialize_verifier")]
        cookieverf: [u8; 8],
        dircount: u32,
        maxcount: u32,
    }
}
xdr_struct! { pub struct FsstatArgs { fsroot: FileHandle } }
xdr_struct! { pub struct FsinfoArgs { fsroot: FileHandle } }
xdr_struct! { pub struct PathconfArgs { object: FileHandle } }
xdr_struct! { pub struct CommitArgs { file: FileHandle, offset: u64, count: u32 } }

// ---- Results (RFC 1813 §3.3.x) ----

xdr_struct! { pub struct GetattrResOk { obj_attributes: Fattr3 } }
pub type GetattrRes = NfsRes<GetattrResOk, Void>;

xdr_struct! { pub struct WccResult { obj_wcc: WccData } }
/// SETATTR (§3.3.2), REMOVE (§3.3.12), RMDIR (§3.3.13): wcc_data in both arms.
pub type SetattrRes = NfsRes<WccResult, WccResult>;
pub type RemoveRes = NfsRes<WccResult, WccResult>;
pub type RmdirRes = NfsRes<WccResult, WccResult>;

xdr_struct! { pub struct LookupResOk { object: FileHandle, obj_attributes: PostOpAttr, dir_attributes: PostOpAttr } }
xdr_struct! { pub struct AttrResult { attributes: PostOpAttr } }
pub type LookupRes = NfsRes<LookupResOk, AttrResult>;

xdr_struct! { pub struct AccessResOk { obj_attributes: PostOpAttr, access: u32 } }
pub type AccessRes = NfsRes<AccessResOk, AttrResult>;

/// `READLINK3resok` (RFC 1813 §3.3.5); the pathname is DDP-eligible (RFC 8267 §4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadlinkResOk {
    pub symlink_attributes: PostOpAttr,
    pub data: DdpData,
}

impl ReadlinkResOk {
    pub fn decode_with(r: &mut Reader<'_>, ddp: Ddp) -> Result<Self> {
        Ok(ReadlinkResOk {
            symlink_attributes: PostOpAttr::get(r, "ReadlinkResOk.symlink_attributes")?,
            data: DdpData::decode_with(
                r,
                MAX_PATH,
                ddp,
                "ReadlinkResOk.data",
                "RFC 1813 §3.3.5 (nfspath3; decoder limit 4096)",
            )?,
        })
    }
}

impl Xdr for ReadlinkResOk {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Self::decode_with(r, Ddp::Inline)
    }
    fn encode(&self, w: &mut Writer) {
        self.symlink_attributes.put(w);
        self.data.encode(w);
    }
}
pub type ReadlinkRes = NfsRes<ReadlinkResOk, AttrResult>;

/// `READ3resok` (RFC 1813 §3.3.6); `data` is DDP-eligible (RFC 8267 §4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadResOk {
    pub file_attributes: PostOpAttr,
    pub count: u32,
    pub eof: bool,
    pub data: DdpData,
}

impl ReadResOk {
    pub fn decode_with(r: &mut Reader<'_>, ddp: Ddp) -> Result<Self> {
        Ok(ReadResOk {
            file_attributes: PostOpAttr::get(r, "ReadResOk.file_attributes")?,
            count: r.u32("ReadResOk.count")?,
            eof: r.bool("ReadResOk.eof")?,
            data: DdpData::decode_with(
                r,
                MAX_DATA,
                ddp,
                "ReadResOk.data",
                "RFC 1813 §3.3.6 (READ data; decoder limit 1 MiB)",
            )?,
        })
    }
}

impl Xdr for ReadResOk {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Self::decode_with(r, Ddp::Inline)
    }
    fn encode(&self, w: &mut Writer) {
        self.file_attributes.put(w);
        w.u32(self.count).bool(self.eof);
        self.data.encode(w);
    }
}
pub type ReadRes = NfsRes<ReadResOk, AttrResult>;

xdr_struct! {
    pub struct WriteResOk {
        file_wcc: WccData,
        count: u32,
        committed: StableHow,
        #[serde(serialize_with = "serialize_verifier")]
        verf: [u8; 8],
    }
}
xdr_struct! { pub struct WccFail { wcc: WccData } }
pub type WriteRes = NfsRes<WriteResOk, WccFail>;

xdr_struct! {
    /// The `resok` of CREATE, MKDIR, SYMLINK and MKNOD (RFC 1813 §3.3.8–§3.3.11).
    pub struct DiropResOk { obj: PostOpFh3, obj_attributes: PostOpAttr, dir_wcc: WccData }
}
pub type CreateRes = NfsRes<DiropResOk, WccFail>;
pub type MkdirRes = NfsRes<DiropResOk, WccFail>;
pub type SymlinkRes = NfsRes<DiropResOk, WccFail>;
pub type MknodRes = NfsRes<DiropResOk, WccFail>;

xdr_struct! { pub struct RenameResult { fromdir_wcc: WccData, todir_wcc: WccData } }
pub type RenameRes = NfsRes<RenameResult, RenameResult>;

xdr_struct! { pub struct LinkResult { file_attributes: PostOpAttr, linkdir_wcc: WccData } }
pub type LinkRes = NfsRes<LinkResult, LinkResult>;

xdr_struct! {
    /// `entry3` (RFC 1813 §3.3.16), without the `nextentry` link (see [`Reader::list`]).
    pub struct Entry3 { fileid: u64, name: Filename, cookie: u64 }
}

/// `READDIR3resok` (RFC 1813 §3.3.16): the entry list is bounded by [`MAX_DIR_ENTRIES`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReaddirResOk {
    pub dir_attributes: PostOpAttr,
    #[serde(serialize_with = "serialize_verifier")]
    pub cookieverf: [u8; 8],
    pub entries: Vec<Entry3>,
    pub eof: bool,
}

impl Xdr for ReaddirResOk {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Ok(ReaddirResOk {
            dir_attributes: PostOpAttr::get(r, "ReaddirResOk.dir_attributes")?,
            cookieverf: <[u8; 8]>::get(r, "ReaddirResOk.cookieverf")?,
            entries: r.list(MAX_DIR_ENTRIES, "dirlist3.entries", Entry3::decode)?,
            eof: r.bool("dirlist3.eof")?,
        })
    }
    fn encode(&self, w: &mut Writer) {
        self.dir_attributes.put(w);
        w.opaque_fixed(&self.cookieverf);
        w.list(&self.entries, |w, e| e.encode(w));
        w.bool(self.eof);
    }
}
pub type ReaddirRes = NfsRes<ReaddirResOk, AttrResult>;

xdr_struct! {
    /// `entryplus3` (RFC 1813 §3.3.17), without the `nextentry` link.
    pub struct Entryplus3 {
        fileid: u64,
        name: Filename,
        cookie: u64,
        name_attributes: PostOpAttr,
        name_handle: PostOpFh3,
    }
}

/// `READDIRPLUS3resok` (RFC 1813 §3.3.17).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReaddirplusResOk {
    pub dir_attributes: PostOpAttr,
    #[serde(serialize_with = "serialize_verifier")]
    pub cookieverf: [u8; 8],
    pub entries: Vec<Entryplus3>,
    pub eof: bool,
}

impl Xdr for ReaddirplusResOk {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Ok(ReaddirplusResOk {
            dir_attributes: PostOpAttr::get(r, "ReaddirplusResOk.dir_attributes")?,
            cookieverf: <[u8; 8]>::get(r, "ReaddirplusResOk.cookieverf")?,
            entries: r.list(MAX_DIR_ENTRIES, "dirlistplus3.entries", Entryplus3::decode)?,
            eof: r.bool("dirlistplus3.eof")?,
        })
    }
    fn encode(&self, w: &mut Writer) {
        self.dir_attributes.put(w);
        w.opaque_fixed(&self.cookieverf);
        w.list(&self.entries, |w, e| e.encode(w));
        w.bool(self.eof);
    }
}
pub type ReaddirplusRes = NfsRes<ReaddirplusResOk, AttrResult>;

xdr_struct! {
    pub struct FsstatResOk {
        obj_attributes: PostOpAttr,
        tbytes: u64,
        fbytes: u64,
        abytes: u64,
        tfiles: u64,
        ffiles: u64,
        afiles: u64,
        invarsec: u32,
    }
}
pub type FsstatRes = NfsRes<FsstatResOk, AttrResult>;

xdr_struct! {
    pub struct FsinfoResOk {
        obj_attributes: PostOpAttr,
        rtmax: u32,
        rtpref: u32,
        rtmult: u32,
        wtmax: u32,
        wtpref: u32,
        wtmult: u32,
        dtpref: u32,
        maxfilesize: u64,
        time_delta: Nfstime3,
        properties: u32,
    }
}
pub type FsinfoRes = NfsRes<FsinfoResOk, AttrResult>;

xdr_struct! {
    pub struct PathconfResOk {
        obj_attributes: PostOpAttr,
        linkmax: u32,
        name_max: u32,
        no_trunc: bool,
        chown_restricted: bool,
        case_insensitive: bool,
        case_preserving: bool,
    }
}
pub type PathconfRes = NfsRes<PathconfResOk, AttrResult>;

xdr_struct! {
    pub struct CommitResOk {
        file_wcc: WccData,
        #[serde(serialize_with = "serialize_verifier")]
        verf: [u8; 8],
    }
}
pub type CommitRes = NfsRes<CommitResOk, WccFail>;

/// The arguments of one NFSv3 call, by procedure (serialised untagged: just the arguments).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Nfs3Call {
    Null,
    Getattr(GetattrArgs),
    Setattr(SetattrArgs),
    Lookup(LookupArgs),
    Access(AccessArgs),
    Readlink(ReadlinkArgs),
    Read(ReadArgs),
    Write(WriteArgs),
    Create(CreateArgs),
    Mkdir(MkdirArgs),
    Symlink(SymlinkArgs),
    Mknod(MknodArgs),
    Remove(RemoveArgs),
    Rmdir(RmdirArgs),
    Rename(RenameArgs),
    Link(LinkArgs),
    Readdir(ReaddirArgs),
    Readdirplus(ReaddirplusArgs),
    Fsstat(FsstatArgs),
    Fsinfo(FsinfoArgs),
    Pathconf(PathconfArgs),
    Commit(CommitArgs),
}

impl Nfs3Call {
    /// Decode arguments carried entirely inline.
    pub fn decode(proc_: Nfs3Proc, r: &mut Reader<'_>) -> Result<Self> {
        Self::decode_reduced(proc_, r, Ddp::Inline)
    }

    /// Decode arguments whose DDP-eligible item (WRITE data, SYMLINK path) may have been moved
    /// to a Read chunk: with [`Ddp::Moved`] only its length word is inline (RFC 8166 §3.4.1).
    /// `ddp` is ignored for procedures without a DDP-eligible argument.
    pub fn decode_reduced(proc_: Nfs3Proc, r: &mut Reader<'_>, ddp: Ddp) -> Result<Self> {
        Ok(match proc_ {
            Nfs3Proc::Null => Nfs3Call::Null,
            Nfs3Proc::Getattr => Nfs3Call::Getattr(Xdr::decode(r)?),
            Nfs3Proc::Setattr => Nfs3Call::Setattr(Xdr::decode(r)?),
            Nfs3Proc::Lookup => Nfs3Call::Lookup(Xdr::decode(r)?),
            Nfs3Proc::Access => Nfs3Call::Access(Xdr::decode(r)?),
            Nfs3Proc::Readlink => Nfs3Call::Readlink(Xdr::decode(r)?),
            Nfs3Proc::Read => Nfs3Call::Read(Xdr::decode(r)?),
            Nfs3Proc::Write => Nfs3Call::Write(WriteArgs::decode_with(r, ddp)?),
            Nfs3Proc::Create => Nfs3Call::Create(Xdr::decode(r)?),
            Nfs3Proc::Mkdir => Nfs3Call::Mkdir(Xdr::decode(r)?),
            Nfs3Proc::Symlink => Nfs3Call::Symlink(SymlinkArgs::decode_with(r, ddp)?),
            Nfs3Proc::Mknod => Nfs3Call::Mknod(Xdr::decode(r)?),
            Nfs3Proc::Remove => Nfs3Call::Remove(Xdr::decode(r)?),
            Nfs3Proc::Rmdir => Nfs3Call::Rmdir(Xdr::decode(r)?),
            Nfs3Proc::Rename => Nfs3Call::Rename(Xdr::decode(r)?),
            Nfs3Proc::Link => Nfs3Call::Link(Xdr::decode(r)?),
            Nfs3Proc::Readdir => Nfs3Call::Readdir(Xdr::decode(r)?),
            Nfs3Proc::Readdirplus => Nfs3Call::Readdirplus(Xdr::decode(r)?),
            Nfs3Proc::Fsstat => Nfs3Call::Fsstat(Xdr::decode(r)?),
            Nfs3Proc::Fsinfo => Nfs3Call::Fsinfo(Xdr::decode(r)?),
            Nfs3Proc::Pathconf => Nfs3Call::Pathconf(Xdr::decode(r)?),
            Nfs3Proc::Commit => Nfs3Call::Commit(Xdr::decode(r)?),
        })
    }

    /// The DDP-eligible argument (WRITE data, SYMLINK path), if the procedure has one
    /// (RFC 8267 §4): what a Requester may move to a Read chunk, or what a Responder finds there.
    pub fn ddp_data(&self) -> Option<&DdpData> {
        match self {
            Nfs3Call::Write(a) => Some(&a.data),
            Nfs3Call::Symlink(a) => Some(&a.symlink_data),
            _ => None,
        }
    }

    /// The procedure these arguments belong to.
    pub fn proc_(&self) -> Nfs3Proc {
        match self {
            Nfs3Call::Null => Nfs3Proc::Null,
            Nfs3Call::Getattr(_) => Nfs3Proc::Getattr,
            Nfs3Call::Setattr(_) => Nfs3Proc::Setattr,
            Nfs3Call::Lookup(_) => Nfs3Proc::Lookup,
            Nfs3Call::Access(_) => Nfs3Proc::Access,
            Nfs3Call::Readlink(_) => Nfs3Proc::Readlink,
            Nfs3Call::Read(_) => Nfs3Proc::Read,
            Nfs3Call::Write(_) => Nfs3Proc::Write,
            Nfs3Call::Create(_) => Nfs3Proc::Create,
            Nfs3Call::Mkdir(_) => Nfs3Proc::Mkdir,
            Nfs3Call::Symlink(_) => Nfs3Proc::Symlink,
            Nfs3Call::Mknod(_) => Nfs3Proc::Mknod,
            Nfs3Call::Remove(_) => Nfs3Proc::Remove,
            Nfs3Call::Rmdir(_) => Nfs3Proc::Rmdir,
            Nfs3Call::Rename(_) => Nfs3Proc::Rename,
            Nfs3Call::Link(_) => Nfs3Proc::Link,
            Nfs3Call::Readdir(_) => Nfs3Proc::Readdir,
            Nfs3Call::Readdirplus(_) => Nfs3Proc::Readdirplus,
            Nfs3Call::Fsstat(_) => Nfs3Proc::Fsstat,
            Nfs3Call::Fsinfo(_) => Nfs3Proc::Fsinfo,
            Nfs3Call::Pathconf(_) => Nfs3Proc::Pathconf,
            Nfs3Call::Commit(_) => Nfs3Proc::Commit,
        }
    }

    /// Append the arguments' encoding (a reduced stream if a DDP item is [`DdpData::Moved`]).
    pub fn encode(&self, w: &mut Writer) {
        match self {
            Nfs3Call::Null => {}
            Nfs3Call::Getattr(a) => a.encode(w),
            Nfs3Call::Setattr(a) => a.encode(w),
            Nfs3Call::Lookup(a) => a.encode(w),
            Nfs3Call::Access(a) => a.encode(w),
            Nfs3Call::Readlink(a) => a.encode(w),
            Nfs3Call::Read(a) => a.encode(w),
            Nfs3Call::Write(a) => a.encode(w),
            Nfs3Call::Create(a) => a.encode(w),
            Nfs3Call::Mkdir(a) => a.encode(w),
            Nfs3Call::Symlink(a) => a.encode(w),
            Nfs3Call::Mknod(a) => a.encode(w),
            Nfs3Call::Remove(a) => a.encode(w),
            Nfs3Call::Rmdir(a) => a.encode(w),
            Nfs3Call::Rename(a) => a.encode(w),
            Nfs3Call::Link(a) => a.encode(w),
            Nfs3Call::Readdir(a) => a.encode(w),
            Nfs3Call::Readdirplus(a) => a.encode(w),
            Nfs3Call::Fsstat(a) => a.encode(w),
            Nfs3Call::Fsinfo(a) => a.encode(w),
            Nfs3Call::Pathconf(a) => a.encode(w),
            Nfs3Call::Commit(a) => a.encode(w),
        }
    }

    /// The encoding as a fresh buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.encode(&mut w);
        w.into_bytes()
    }
}

/// The results of one NFSv3 reply, by procedure (the procedure is not on the wire: the caller
/// knows it from the matching call). Serialised untagged: just the results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Nfs3Reply {
    Null,
    Getattr(GetattrRes),
    Setattr(SetattrRes),
    Lookup(LookupRes),
    Access(AccessRes),
    Readlink(ReadlinkRes),
    Read(ReadRes),
    Write(WriteRes),
    Create(CreateRes),
    Mkdir(MkdirRes),
    Symlink(SymlinkRes),
    Mknod(MknodRes),
    Remove(RemoveRes),
    Rmdir(RmdirRes),
    Rename(RenameRes),
    Link(LinkRes),
    Readdir(ReaddirRes),
    Readdirplus(ReaddirplusRes),
    Fsstat(FsstatRes),
    Fsinfo(FsinfoRes),
    Pathconf(PathconfRes),
    Commit(CommitRes),
}

impl Nfs3Reply {
    /// Decode results carried entirely inline.
    pub fn decode(proc_: Nfs3Proc, r: &mut Reader<'_>) -> Result<Self> {
        Self::decode_reduced(proc_, r, Ddp::Inline)
    }

    /// Decode results whose DDP-eligible item (READ data, READLINK path) may have been returned
    /// through a Write chunk: with [`Ddp::Moved`] only its length word is inline (RFC 8166
    /// §3.4.1). Wireshark flags such READ replies as malformed; they are not.
    pub fn decode_reduced(proc_: Nfs3Proc, r: &mut Reader<'_>, ddp: Ddp) -> Result<Self> {
        Ok(match proc_ {
            Nfs3Proc::Null => Nfs3Reply::Null,
            Nfs3Proc::Getattr => Nfs3Reply::Getattr(Xdr::decode(r)?),
            Nfs3Proc::Setattr => Nfs3Reply::Setattr(Xdr::decode(r)?),
            Nfs3Proc::Lookup => Nfs3Reply::Lookup(Xdr::decode(r)?),
            Nfs3Proc::Access => Nfs3Reply::Access(Xdr::decode(r)?),
            Nfs3Proc::Readlink => Nfs3Reply::Readlink(NfsRes::decode_with(r, |r| {
                ReadlinkResOk::decode_with(r, ddp)
            })?),
            Nfs3Proc::Read => {
                Nfs3Reply::Read(NfsRes::decode_with(r, |r| ReadResOk::decode_with(r, ddp))?)
            }
            Nfs3Proc::Write => Nfs3Reply::Write(Xdr::decode(r)?),
            Nfs3Proc::Create => Nfs3Reply::Create(Xdr::decode(r)?),
            Nfs3Proc::Mkdir => Nfs3Reply::Mkdir(Xdr::decode(r)?),
            Nfs3Proc::Symlink => Nfs3Reply::Symlink(Xdr::decode(r)?),
            Nfs3Proc::Mknod => Nfs3Reply::Mknod(Xdr::decode(r)?),
            Nfs3Proc::Remove => Nfs3Reply::Remove(Xdr::decode(r)?),
            Nfs3Proc::Rmdir => Nfs3Reply::Rmdir(Xdr::decode(r)?),
            Nfs3Proc::Rename => Nfs3Reply::Rename(Xdr::decode(r)?),
            Nfs3Proc::Link => Nfs3Reply::Link(Xdr::decode(r)?),
            Nfs3Proc::Readdir => Nfs3Reply::Readdir(Xdr::decode(r)?),
            Nfs3Proc::Readdirplus => Nfs3Reply::Readdirplus(Xdr::decode(r)?),
            Nfs3Proc::Fsstat => Nfs3Reply::Fsstat(Xdr::decode(r)?),
            Nfs3Proc::Fsinfo => Nfs3Reply::Fsinfo(Xdr::decode(r)?),
            Nfs3Proc::Pathconf => Nfs3Reply::Pathconf(Xdr::decode(r)?),
            Nfs3Proc::Commit => Nfs3Reply::Commit(Xdr::decode(r)?),
        })
    }

    /// The NFS status of the reply (NULL has none and reports NFS3_OK).
    pub fn status(&self) -> Nfsstat3 {
        match self {
            Nfs3Reply::Null => Nfsstat3::Ok,
            Nfs3Reply::Getattr(r) => r.status(),
            Nfs3Reply::Setattr(r) => r.status(),
            Nfs3Reply::Lookup(r) => r.status(),
            Nfs3Reply::Access(r) => r.status(),
            Nfs3Reply::Readlink(r) => r.status(),
            Nfs3Reply::Read(r) => r.status(),
            Nfs3Reply::Write(r) => r.status(),
            Nfs3Reply::Create(r) => r.status(),
            Nfs3Reply::Mkdir(r) => r.status(),
            Nfs3Reply::Symlink(r) => r.status(),
            Nfs3Reply::Mknod(r) => r.status(),
            Nfs3Reply::Remove(r) => r.status(),
            Nfs3Reply::Rmdir(r) => r.status(),
            Nfs3Reply::Rename(r) => r.status(),
            Nfs3Reply::Link(r) => r.status(),
            Nfs3Reply::Readdir(r) => r.status(),
            Nfs3Reply::Readdirplus(r) => r.status(),
            Nfs3Reply::Fsstat(r) => r.status(),
            Nfs3Reply::Fsinfo(r) => r.status(),
            Nfs3Reply::Pathconf(r) => r.status(),
            Nfs3Reply::Commit(r) => r.status(),
        }
    }

    /// The DDP-eligible result (READ data, READLINK path) of a successful reply, if the
    /// procedure has one (RFC 8267 §4): what a Responder may return through a Write chunk.
    pub fn ddp_data(&self) -> Option<&DdpData> {
        match self {
            Nfs3Reply::Read(NfsRes::Ok(ok)) => Some(&ok.data),
            Nfs3Reply::Readlink(NfsRes::Ok(ok)) => Some(&ok.data),
            _ => None,
        }
    }

    /// The procedure these results belong to.
    pub fn proc_(&self) -> Nfs3Proc {
        match self {
            Nfs3Reply::Null => Nfs3Proc::Null,
            Nfs3Reply::Getattr(_) => Nfs3Proc::Getattr,
            Nfs3Reply::Setattr(_) => Nfs3Proc::Setattr,
            Nfs3Reply::Lookup(_) => Nfs3Proc::Lookup,
            Nfs3Reply::Access(_) => Nfs3Proc::Access,
            Nfs3Reply::Readlink(_) => Nfs3Proc::Readlink,
            Nfs3Reply::Read(_) => Nfs3Proc::Read,
            Nfs3Reply::Write(_) => Nfs3Proc::Write,
            Nfs3Reply::Create(_) => Nfs3Proc::Create,
            Nfs3Reply::Mkdir(_) => Nfs3Proc::Mkdir,
            Nfs3Reply::Symlink(_) => Nfs3Proc::Symlink,
            Nfs3Reply::Mknod(_) => Nfs3Proc::Mknod,
            Nfs3Reply::Remove(_) => Nfs3Proc::Remove,
            Nfs3Reply::Rmdir(_) => Nfs3Proc::Rmdir,
            Nfs3Reply::Rename(_) => Nfs3Proc::Rename,
            Nfs3Reply::Link(_) => Nfs3Proc::Link,
            Nfs3Reply::Readdir(_) => Nfs3Proc::Readdir,
            Nfs3Reply::Readdirplus(_) => Nfs3Proc::Readdirplus,
            Nfs3Reply::Fsstat(_) => Nfs3Proc::Fsstat,
            Nfs3Reply::Fsinfo(_) => Nfs3Proc::Fsinfo,
            Nfs3Reply::Pathconf(_) => Nfs3Proc::Pathconf,
            Nfs3Reply::Commit(_) => Nfs3Proc::Commit,
        }
    }

    /// Append the results' encoding (a reduced stream if a DDP item is [`DdpData::Moved`]).
    pub fn encode(&self, w: &mut Writer) {
        match self {
            Nfs3Reply::Null => {}
            Nfs3Reply::Getattr(r) => r.encode(w),
            Nfs3Reply::Setattr(r) => r.encode(w),
            Nfs3Reply::Lookup(r) => r.encode(w),
            Nfs3Reply::Access(r) => r.encode(w),
            Nfs3Reply::Readlink(r) => r.encode(w),
            Nfs3Reply::Read(r) => r.encode(w),
            Nfs3Reply::Write(r) => r.encode(w),
            Nfs3Reply::Create(r) => r.encode(w),
            Nfs3Reply::Mkdir(r) => r.encode(w),
            Nfs3Reply::Symlink(r) => r.encode(w),
            Nfs3Reply::Mknod(r) => r.encode(w),
            Nfs3Reply::Remove(r) => r.encode(w),
            Nfs3Reply::Rmdir(r) => r.encode(w),
            Nfs3Reply::Rename(r) => r.encode(w),
            Nfs3Reply::Link(r) => r.encode(w),
            Nfs3Reply::Readdir(r) => r.encode(w),
            Nfs3Reply::Readdirplus(r) => r.encode(w),
            Nfs3Reply::Fsstat(r) => r.encode(w),
            Nfs3Reply::Fsinfo(r) => r.encode(w),
            Nfs3Reply::Pathconf(r) => r.encode(w),
            Nfs3Reply::Commit(r) => r.encode(w),
        }
    }

    /// The encoding as a fresh buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.encode(&mut w);
        w.into_bytes()
    }
}
