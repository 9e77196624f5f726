//! MOUNT protocol version 3 (RFC 1813 Appendix I): NULL, MNT, DUMP, UMNT, UMNTALL, EXPORT.

use serde::Serialize;

use crate::error::{DecodeError, Result};
use crate::nfs3::{bounded_bytes, serialize_bytes_as_text, xdr_enum, xdr_struct, FileHandle};
use crate::xdr::{Reader, Writer, Xdr};

/// MOUNT version this module implements.
pub const MOUNT_V3: u32 = 3;
/// RFC 1813 Appendix I: `const MNTPATHLEN = 1024`.
pub const MNTPATHLEN: u32 = 1024;
/// RFC 1813 Appendix I: `const MNTNAMLEN = 255`.
pub const MNTNAMLEN: u32 = 255;
/// Decoder limit on `auth_flavors<>`, export, group and mount lists.
pub const MAX_LIST_ENTRIES: usize = 4096;

bounded_bytes!(
    /// `dirpath` (RFC 1813 Appendix I): `string dirpath<MNTPATHLEN>`.
    DirPath,
    MNTPATHLEN,
    "RFC 1813 Appendix I (dirpath<MNTPATHLEN=1024>)",
    serialize_bytes_as_text
);
bounded_bytes!(
    /// `name` (RFC 1813 Appendix I): `string name<MNTNAMLEN>`.
    MountName,
    MNTNAMLEN,
    "RFC 1813 Appendix I (name<MNTNAMLEN=255>)",
    serialize_bytes_as_text
);

xdr_enum! {
    /// MOUNT v3 procedures (RFC 1813 Appendix I).
    pub enum Mount3Proc ("RFC 1813 Appendix I (MOUNT procedure number)") {
        Null = 0 => "NULL",
        Mnt = 1 => "MNT",
        Dump = 2 => "DUMP",
        Umnt = 3 => "UMNT",
        Umntall = 4 => "UMNTALL",
        Export = 5 => "EXPORT",
    }
}

xdr_enum! {
    /// `mountstat3` (RFC 1813 Appendix I).
    pub enum Mountstat3 ("RFC 1813 Appendix I (mountstat3)") {
        Ok = 0 => "MNT3_OK",
        Perm = 1 => "MNT3ERR_PERM",
        Noent = 2 => "MNT3ERR_NOENT",
        Io = 5 => "MNT3ERR_IO",
        Acces = 13 => "MNT3ERR_ACCES",
        Notdir = 20 => "MNT3ERR_NOTDIR",
        Inval = 22 => "MNT3ERR_INVAL",
        Nametoolong = 63 => "MNT3ERR_NAMETOOLONG",
        Notsupp = 10004 => "MNT3ERR_NOTSUPP",
        Serverfault = 10006 => "MNT3ERR_SERVERFAULT",
    }
}

/// `mountres3_ok` (RFC 1813 Appendix I): the root file handle and the auth flavors accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MntResOk {
    pub fhandle: FileHandle,
    pub auth_flavors: Vec<u32>,
}

impl Xdr for MntResOk {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Ok(MntResOk {
            fhandle: FileHandle::decode(r)?,
            auth_flavors: r.array(
                MAX_LIST_ENTRIES as u32,
                4,
                "mountres3_ok.auth_flavors",
                |r| r.u32("auth_flavor"),
            )?,
        })
    }
    fn encode(&self, w: &mut Writer) {
        self.fhandle.encode(w);
        w.array(&self.auth_flavors, |w, f| {
            w.u32(*f);
        });
    }
}

/// `mountres3` (RFC 1813 Appendix I).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum MntRes {
    Ok(MntResOk),
    Fail(Mountstat3),
}

impl MntRes {
    /// The `mountstat3` this result carries.
    pub fn status(&self) -> Mountstat3 {
        match self {
            MntRes::Ok(_) => Mountstat3::Ok,
            MntRes::Fail(status) => *status,
        }
    }
}

impl Xdr for MntRes {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        match Mountstat3::decode(r)? {
            Mountstat3::Ok => MntResOk::decode(r).map(MntRes::Ok),
            status => Ok(MntRes::Fail(status)),
        }
    }
    fn encode(&self, w: &mut Writer) {
        match self {
            MntRes::Ok(ok) => {
                Mountstat3::Ok.encode(w);
                ok.encode(w);
            }
            MntRes::Fail(status) => status.encode(w),
        }
    }
}

xdr_struct! {
    /// One `mountbody` of a DUMP reply (without the `ml_next` link).
    pub struct MountBody { hostname: MountName, directory: DirPath }
}

/// `exportnode` (RFC 1813 Appendix I), links flattened: the directory and its groups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExportNode {
    pub dir: DirPath,
    pub groups: Vec<MountName>,
}

impl Xdr for ExportNode {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Ok(ExportNode {
            dir: DirPath::decode(r)?,
            groups: r.list(MAX_LIST_ENTRIES, "exportnode.ex_groups", MountName::decode)?,
        })
    }
    fn encode(&self, w: &mut Writer) {
        self.dir.encode(w);
        w.list(&self.groups, |w, g| g.encode(w));
    }
}

/// The arguments of one MOUNT v3 call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Mount3Call {
    Null,
    Mnt(DirPath),
    Dump,
    Umnt(DirPath),
    Umntall,
    Export,
}

impl Mount3Call {
    pub fn decode(proc_: Mount3Proc, r: &mut Reader<'_>) -> Result<Self> {
        Ok(match proc_ {
            Mount3Proc::Null => Mount3Call::Null,
            Mount3Proc::Mnt => Mount3Call::Mnt(DirPath::decode(r)?),
            Mount3Proc::Dump => Mount3Call::Dump,
            Mount3Proc::Umnt => Mount3Call::Umnt(DirPath::decode(r)?),
            Mount3Proc::Umntall => Mount3Call::Umntall,
            Mount3Proc::Export => Mount3Call::Export,
        })
    }

    pub fn encode(&self, w: &mut Writer) {
        match self {
            Mount3Call::Mnt(p) | Mount3Call::Umnt(p) => p.encode(w),
            Mount3Call::Null | Mount3Call::Dump | Mount3Call::Umntall | Mount3Call::Export => {}
        }
    }

    pub fn proc_(&self) -> Mount3Proc {
        match self {
            Mount3Call::Null => Mount3Proc::Null,
            Mount3Call::Mnt(_) => Mount3Proc::Mnt,
            Mount3Call::Dump => Mount3Proc::Dump,
            Mount3Call::Umnt(_) => Mount3Proc::Umnt,
            Mount3Call::Umntall => Mount3Proc::Umntall,
            Mount3Call::Export => Mount3Proc::Export,
        }
    }
}

/// The results of one MOUNT v3 reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Mount3Reply {
    Null,
    Mnt(MntRes),
    Dump(Vec<MountBody>),
    Umnt,
    Umntall,
    Export(Vec<ExportNode>),
}

impl Mount3Reply {
    pub fn decode(proc_: Mount3Proc, r: &mut Reader<'_>) -> Result<Self> {
        Ok(match proc_ {
            Mount3Proc::Null => Mount3Reply::Null,
            Mount3Proc::Mnt => Mount3Reply::Mnt(MntRes::decode(r)?),
            Mount3Proc::Dump => {
                Mount3Reply::Dump(r.list(MAX_LIST_ENTRIES, "mountlist", MountBody::decode)?)
            }
            Mount3Proc::Umnt => Mount3Reply::Umnt,
            Mount3Proc::Umntall => Mount3Reply::Umntall,
            Mount3Proc::Export => {
                Mount3Reply::Export(r.list(MAX_LIST_ENTRIES, "exports", ExportNode::decode)?)
            }
        })
    }

    pub fn encode(&self, w: &mut Writer) {
        match self {
            Mount3Reply::Null | Mount3Reply::Umnt | Mount3Reply::Umntall => {}
            Mount3Reply::Mnt(res) => res.encode(w),
            Mount3Reply::Dump(list) => {
                w.list(list, |w, m| m.encode(w));
            }
            Mount3Reply::Export(list) => {
                w.list(list, |w, e| e.encode(w));
            }
        }
    }

    /// The status the results carry: MNT's `mountstat3`; the other procedures return none
    /// (RFC 1813 Appendix I) and count as `MNT3_OK`.
    pub fn status(&self) -> Mountstat3 {
        match self {
            Mount3Reply::Mnt(res) => res.status(),
            _ => Mountstat3::Ok,
        }
    }

    pub fn proc_(&self) -> Mount3Proc {
        match self {
            Mount3Reply::Null => Mount3Proc::Null,
            Mount3Reply::Mnt(_) => Mount3Proc::Mnt,
            Mount3Reply::Dump(_) => Mount3Proc::Dump,
            Mount3Reply::Umnt => Mount3Proc::Umnt,
            Mount3Reply::Umntall => Mount3Proc::Umntall,
            Mount3Reply::Export(_) => Mount3Proc::Export,
        }
    }
}

/// A `DecodeError` for a MOUNT procedure number outside the definition.
pub fn unknown_proc(value: u32) -> DecodeError {
    DecodeError::BadDiscriminant {
        field: "Mount3Proc",
        value,
        rule: "RFC 1813 Appendix I (MOUNT procedure number)",
    }
}
