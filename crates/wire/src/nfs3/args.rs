//! The arguments of each NFSv3 procedure (RFC 1813 §3.3.x); WRITE data and SYMLINK's path are
//! DDP-eligible (RFC 8267 §4).

use super::*;

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
