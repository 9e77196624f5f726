//! The results of each NFSv3 procedure (RFC 1813 §3.3.x); READ data and READLINK's path are
//! DDP-eligible (RFC 8267 §4).

use super::*;

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
