//! NFSACL (program 100227, version 3): the POSIX-ACL side protocol of Linux/Solaris NFSv3.
//!
//! There is no RFC; the layout follows Linux `fs/nfsd/nfs3acl.c` and `fs/nfs_common/nfsacl.c`:
//! each ACL is `u32 count` then an XDR array of `(type, id, perm)` entries. RFC 8267 §5 treats
//! the program as a de facto standard carried on the NFS connection, with no DDP-eligible item.

use serde::Serialize;

use crate::error::{DecodeError, Result};
use crate::nfs3::{xdr_enum, xdr_struct, FileHandle, NfsRes, PostOpAttr};
use crate::xdr::{Reader, Writer, Xdr};

/// NFSACL version decoded here (the NFSv3 companion).
pub const NFSACL_V3: u32 = 3;
/// Linux `NFS_ACL_MAX_ENTRIES`: the most entries one ACL may carry.
pub const NFS_ACL_MAX_ENTRIES: u32 = 1024;
/// GETACL/SETACL mask bits (Linux `include/linux/nfsacl.h`).
pub const NFS_ACL: u32 = 0x0001;
pub const NFS_ACLCNT: u32 = 0x0002;
pub const NFS_DFACL: u32 = 0x0004;
pub const NFS_DFACLCNT: u32 = 0x0008;

xdr_enum! {
    /// NFSACL v3 procedures (Linux `ACLPROC3_*`).
    pub enum NfsaclProc ("Linux nfs3acl (NFSACL procedure number)") {
        Null = 0 => "NULL",
        Getacl = 1 => "GETACL",
        Setacl = 2 => "SETACL",
    }
}

xdr_struct! {
    /// One POSIX ACL entry as NFSACL encodes it.
    pub struct AclEntry { tag: u32, id: u32, perm: u32 }
}

/// One ACL: the entry count word and the entries array (Linux `nfsacl_encode`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Acl {
    pub count: u32,
    pub entries: Vec<AclEntry>,
}

impl Xdr for Acl {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let count = r.u32("acl.count")?;
        if count > NFS_ACL_MAX_ENTRIES {
            return Err(DecodeError::LengthOverLimit {
                field: "acl.count",
                length: count.into(),
                limit: NFS_ACL_MAX_ENTRIES.into(),
                rule: "Linux nfsacl (NFS_ACL_MAX_ENTRIES=1024)",
            });
        }
        let entries = r.array(NFS_ACL_MAX_ENTRIES, 12, "acl.entries", AclEntry::decode)?;
        Ok(Acl { count, entries })
    }
    fn encode(&self, w: &mut Writer) {
        w.u32(self.count);
        w.array(&self.entries, |w, e| e.encode(w));
    }
}

xdr_struct! { pub struct GetaclArgs { fh: FileHandle, mask: u32 } }
xdr_struct! { pub struct SetaclArgs { fh: FileHandle, mask: u32, acl: Acl, default_acl: Acl } }
xdr_struct! { pub struct GetaclResOk { attr: PostOpAttr, mask: u32, acl: Acl, default_acl: Acl } }
xdr_struct! { pub struct AclAttr { attr: PostOpAttr } }

pub type GetaclRes = NfsRes<GetaclResOk, AclAttr>;
pub type SetaclRes = NfsRes<AclAttr, AclAttr>;

/// The arguments of one NFSACL v3 call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum NfsaclCall {
    Null,
    Getacl(GetaclArgs),
    Setacl(SetaclArgs),
}

impl NfsaclCall {
    pub fn decode(proc_: NfsaclProc, r: &mut Reader<'_>) -> Result<Self> {
        Ok(match proc_ {
            NfsaclProc::Null => NfsaclCall::Null,
            NfsaclProc::Getacl => NfsaclCall::Getacl(GetaclArgs::decode(r)?),
            NfsaclProc::Setacl => NfsaclCall::Setacl(SetaclArgs::decode(r)?),
        })
    }

    pub fn encode(&self, w: &mut Writer) {
        match self {
            NfsaclCall::Null => {}
            NfsaclCall::Getacl(a) => a.encode(w),
            NfsaclCall::Setacl(a) => a.encode(w),
        }
    }
}

/// The results of one NFSACL v3 reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum NfsaclReply {
    Null,
    Getacl(GetaclRes),
    Setacl(SetaclRes),
}

impl NfsaclReply {
    pub fn decode(proc_: NfsaclProc, r: &mut Reader<'_>) -> Result<Self> {
        Ok(match proc_ {
            NfsaclProc::Null => NfsaclReply::Null,
            NfsaclProc::Getacl => NfsaclReply::Getacl(GetaclRes::decode(r)?),
            NfsaclProc::Setacl => NfsaclReply::Setacl(SetaclRes::decode(r)?),
        })
    }

    pub fn encode(&self, w: &mut Writer) {
        match self {
            NfsaclReply::Null => {}
            NfsaclReply::Getacl(r) => r.encode(w),
            NfsaclReply::Setacl(r) => r.encode(w),
        }
    }
}
