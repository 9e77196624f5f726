//! One NFSv3 call's arguments and one reply's results, by procedure.

use super::*;

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
