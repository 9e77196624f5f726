//! NFSACL (program 100227, version 3): the POSIX-ACL side protocol of Linux/Solaris NFSv3.
//!
//! There is no RFC; the layout follows draft-ietf-nfsv4-nfs-acl (from Solaris `nfs_acl.x`) and
//! Linux `fs/nfsd/nfs3acl.c`: a `secattr` is `mask`, then for the access and the default ACL an
//! entry count and an array of `aclent { type, id, perm }`. RFC 8267 §5 treats the program as a
//! de facto standard carried on the NFS connection, with no DDP-eligible item. The draft's
//! GETXATTRDIR (procedure 3) is not implemented by Linux and not decoded here.

use serde::Serialize;

use crate::error::{DecodeError, Result};
#[cfg(doc)]
use crate::nfs3::Nfsstat3;
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
    /// One `aclent`: `tag` is the draft's `type` bit mask (NA_USER_OBJ ...), `perm` an
    /// `unsigned short` carried in a 32-bit XDR word.
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

/// Results carry `aclstat3`, whose values are a subset of `nfsstat3` (decoded as [`Nfsstat3`]
/// so that an out-of-subset status is still shown rather than refused).
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
