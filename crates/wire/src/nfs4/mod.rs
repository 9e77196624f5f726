//! NFSv4.1 COMPOUND (RFC 8881 §16.2, §18; minor version 2, RFC 7862, with the same operations):
//! call and reply decode and encode for the operations the Linux client and nfsd use, and the
//! RFC 8267 §6 upper-layer binding (WRITE data, CREATE link text, READ data, READLINK link text
//! are DDP-eligible; their reduced-stream decode goes through [`crate::ddp::Reduction`], the
//! same function NFSv3's items go through).
//!
//! Operations outside the typed set are kept opaque with their opcode when their length is
//! known from their XDR shape ([`Nfs4Op::Opaque`], [`OpResult::Opaque`]); any other operation
//! stops decoding with [`DecodeError::UndecodedOperation`] — never a guess at where the next one
//! begins.

pub mod ops;
pub mod types;

use std::fmt::Write as _;

use serde::Serialize;

use crate::ddp::{DdpData, Reduction};
use crate::error::{DecodeError, Result};
use crate::nfs3::serialize_bytes_as_text;
use crate::xdr::{Reader, Writer, Xdr};
pub use ops::*;
pub use types::*;

/// NFS version 4 (RFC 8881 §16.1: program 100003, version 4).
pub const NFS_V4: u32 = 4;
/// The COMPOUND procedure (RFC 8881 §16.2); procedure 0 is NULL.
pub const NFSPROC4_COMPOUND: u32 = 1;
/// Decoder limit on the operations of one COMPOUND (RFC 8881 leaves it to the session's
/// `ca_maxoperations`; Linux nfsd allows 50 per session and the client sends fewer than 10).
pub const MAX_OPS: u32 = 256;
/// Decoder limit on the COMPOUND tag (`utf8str_cs`, unbounded in RFC 8881 §16.2.3; Linux sends
/// an empty one).
pub const MAX_TAG: u32 = NFS4_OPAQUE_LIMIT;

/// RFC 8881 §16.2.3 with RFC 7862 §1.1: this decoder implements minor versions 1 and 2 (a
/// server answers any other with NFS4ERR_MINOR_VERS_MISMATCH).
pub const RULE_MINOR_VERSION: &str =
    "RFC 8881 §16.2.3, RFC 7862 §1.1 (COMPOUND minorversion 1 or 2; else NFS4ERR_MINOR_VERS_MISMATCH)";
/// RFC 8881 §16.2.3: an operation is decoded by the arm of `nfs_argop4`/`nfs_resop4` its number
/// selects; one outside the decoded set, of unknown length, stops decoding.
pub const RULE_UNDECODED_OP: &str =
    "RFC 8881 §16.2.3 (nfs_argop4/nfs_resop4 arm; operation not decoded here, its length unknown)";

crate::nfs3::bounded_bytes!(
    /// `COMPOUND4args.tag` / `COMPOUND4res.tag` (RFC 8881 §16.2.3), bounded by [`MAX_TAG`].
    Tag4,
    MAX_TAG,
    "RFC 8881 §16.2.3 (COMPOUND tag; decoder limit 1024)",
    serialize_bytes_as_text
);

/// Operation numbers (RFC 8881 §16.2.3 `nfs_opnum4`, RFC 7862 §11.2 for NFSv4.2).
pub mod opnum {
    pub const ACCESS: u32 = 3;
    pub const CLOSE: u32 = 4;
    pub const COMMIT: u32 = 5;
    pub const CREATE: u32 = 6;
    pub const DELEGRETURN: u32 = 8;
    pub const GETATTR: u32 = 9;
    pub const GETFH: u32 = 10;
    pub const LINK: u32 = 11;
    pub const LOOKUP: u32 = 15;
    pub const LOOKUPP: u32 = 16;
    pub const NVERIFY: u32 = 17;
    pub const OPEN: u32 = 18;
    pub const OPENATTR: u32 = 19;
    pub const OPEN_DOWNGRADE: u32 = 21;
    pub const PUTFH: u32 = 22;
    pub const PUTPUBFH: u32 = 23;
    pub const PUTROOTFH: u32 = 24;
    pub const READ: u32 = 25;
    pub const READDIR: u32 = 26;
    pub const READLINK: u32 = 27;
    pub const REMOVE: u32 = 28;
    pub const RENAME: u32 = 29;
    pub const RESTOREFH: u32 = 31;
    pub const SAVEFH: u32 = 32;
    pub const SECINFO: u32 = 33;
    pub const SETATTR: u32 = 34;
    pub const VERIFY: u32 = 37;
    pub const WRITE: u32 = 38;
    pub const BIND_CONN_TO_SESSION: u32 = 41;
    pub const EXCHANGE_ID: u32 = 42;
    pub const CREATE_SESSION: u32 = 43;
    pub const DESTROY_SESSION: u32 = 44;
    pub const FREE_STATEID: u32 = 45;
    pub const GET_DIR_DELEGATION: u32 = 46;
    pub const LAYOUTGET: u32 = 50;
    pub const SECINFO_NO_NAME: u32 = 52;
    pub const SEQUENCE: u32 = 53;
    pub const TEST_STATEID: u32 = 55;
    pub const DESTROY_CLIENTID: u32 = 57;
    pub const RECLAIM_COMPLETE: u32 = 58;
    pub const ALLOCATE: u32 = 59;
    pub const DEALLOCATE: u32 = 62;
    pub const SEEK: u32 = 69;
    pub const CLONE: u32 = 71;
    pub const ILLEGAL: u32 = 10044;
}

/// The operation's name as RFC 8881 §16.2.3 / RFC 7862 §11.2 spell it, or `OP<n>`.
pub fn op_name(op: u32) -> std::borrow::Cow<'static, str> {
    const NAMES: [&str; 76] = [
        "",
        "",
        "",
        "ACCESS",
        "CLOSE",
        "COMMIT",
        "CREATE",
        "DELEGPURGE",
        "DELEGRETURN",
        "GETATTR",
        "GETFH",
        "LINK",
        "LOCK",
        "LOCKT",
        "LOCKU",
        "LOOKUP",
        "LOOKUPP",
        "NVERIFY",
        "OPEN",
        "OPENATTR",
        "OPEN_CONFIRM",
        "OPEN_DOWNGRADE",
        "PUTFH",
        "PUTPUBFH",
        "PUTROOTFH",
        "READ",
        "READDIR",
        "READLINK",
        "REMOVE",
        "RENAME",
        "RENEW",
        "RESTOREFH",
        "SAVEFH",
        "SECINFO",
        "SETATTR",
        "SETCLIENTID",
        "SETCLIENTID_CONFIRM",
        "VERIFY",
        "WRITE",
        "RELEASE_LOCKOWNER",
        "BACKCHANNEL_CTL",
        "BIND_CONN_TO_SESSION",
        "EXCHANGE_ID",
        "CREATE_SESSION",
        "DESTROY_SESSION",
        "FREE_STATEID",
        "GET_DIR_DELEGATION",
        "GETDEVICEINFO",
        "GETDEVICELIST",
        "LAYOUTCOMMIT",
        "LAYOUTGET",
        "LAYOUTRETURN",
        "SECINFO_NO_NAME",
        "SEQUENCE",
        "SET_SSV",
        "TEST_STATEID",
        "WANT_DELEGATION",
        "DESTROY_CLIENTID",
        "RECLAIM_COMPLETE",
        "ALLOCATE",
        "COPY",
        "COPY_NOTIFY",
        "DEALLOCATE",
        "IO_ADVISE",
        "LAYOUTERROR",
        "LAYOUTSTATS",
        "OFFLOAD_CANCEL",
        "OFFLOAD_STATUS",
        "READ_PLUS",
        "SEEK",
        "WRITE_SAME",
        "CLONE",
        "GETXATTR",
        "SETXATTR",
        "LISTXATTRS",
        "REMOVEXATTR",
    ];
    match NAMES.get(op as usize) {
        Some(name) if !name.is_empty() => (*name).into(),
        _ if op == opnum::ILLEGAL => "ILLEGAL".into(),
        _ => format!("OP{op}").into(),
    }
}

/// One operation's arguments (`nfs_argop4`, RFC 8881 §16.2.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", content = "args", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Nfs4Op {
    Access(u32),
    Close(CloseArgs),
    Commit(CommitArgs),
    Create(CreateArgs),
    Getattr(Bitmap4),
    Getfh,
    Link(Component4),
    Lookup(Component4),
    Open(OpenArgs),
    Putfh(FileHandle4),
    Putrootfh,
    Read(ReadArgs),
    Readdir(ReaddirArgs),
    Readlink,
    Remove(Component4),
    Rename(RenameArgs),
    Write(WriteArgs),
    ExchangeId(Box<ExchangeIdArgs>),
    CreateSession(Box<CreateSessionArgs>),
    DestroySession(SessionId4),
    FreeStateid(Stateid4),
    SecinfoNoName(u32),
    Sequence(SequenceArgs),
    TestStateid(Array<Stateid4, MAX_SHORT_ARRAY>),
    DestroyClientid(u64),
    ReclaimComplete(bool),
    /// An operation kept as its bytes (LAYOUTGET, and the others whose length its XDR shape
    /// gives: SETATTR, SAVEFH, ...).
    Opaque {
        opnum: u32,
        #[serde(serialize_with = "crate::nfs3::serialize_hex")]
        body: Vec<u8>,
    },
}

impl Nfs4Op {
    /// The operation number.
    pub fn opnum(&self) -> u32 {
        use opnum::*;
        match self {
            Nfs4Op::Access(_) => ACCESS,
            Nfs4Op::Close(_) => CLOSE,
            Nfs4Op::Commit(_) => COMMIT,
            Nfs4Op::Create(_) => CREATE,
            Nfs4Op::Getattr(_) => GETATTR,
            Nfs4Op::Getfh => GETFH,
            Nfs4Op::Link(_) => LINK,
            Nfs4Op::Lookup(_) => LOOKUP,
            Nfs4Op::Open(_) => OPEN,
            Nfs4Op::Putfh(_) => PUTFH,
            Nfs4Op::Putrootfh => PUTROOTFH,
            Nfs4Op::Read(_) => READ,
            Nfs4Op::Readdir(_) => READDIR,
            Nfs4Op::Readlink => READLINK,
            Nfs4Op::Remove(_) => REMOVE,
            Nfs4Op::Rename(_) => RENAME,
            Nfs4Op::Write(_) => WRITE,
            Nfs4Op::ExchangeId(_) => EXCHANGE_ID,
            Nfs4Op::CreateSession(_) => CREATE_SESSION,
            Nfs4Op::DestroySession(_) => DESTROY_SESSION,
            Nfs4Op::FreeStateid(_) => FREE_STATEID,
            Nfs4Op::SecinfoNoName(_) => SECINFO_NO_NAME,
            Nfs4Op::Sequence(_) => SEQUENCE,
            Nfs4Op::TestStateid(_) => TEST_STATEID,
            Nfs4Op::DestroyClientid(_) => DESTROY_CLIENTID,
            Nfs4Op::ReclaimComplete(_) => RECLAIM_COMPLETE,
            Nfs4Op::Opaque { opnum, .. } => *opnum,
        }
    }

    /// Decode one `nfs_argop4`; DDP-eligible arguments (WRITE data, CREATE link text) through
    /// `reduction` (RFC 8267 §6).
    pub fn decode_with(r: &mut Reader<'_>, reduction: &mut Reduction) -> Result<Self> {
        use opnum::*;
        let op = r.u32("nfs_argop4.argop")?;
        Ok(match op {
            ACCESS => Nfs4Op::Access(r.u32("ACCESS4args.access")?),
            CLOSE => Nfs4Op::Close(Xdr::decode(r)?),
            COMMIT => Nfs4Op::Commit(Xdr::decode(r)?),
            CREATE => Nfs4Op::Create(CreateArgs::decode_with(r, reduction)?),
            GETATTR => Nfs4Op::Getattr(Xdr::decode(r)?),
            GETFH => Nfs4Op::Getfh,
            LINK => Nfs4Op::Link(Xdr::decode(r)?),
            LOOKUP => Nfs4Op::Lookup(Xdr::decode(r)?),
            OPEN => Nfs4Op::Open(Xdr::decode(r)?),
            PUTFH => Nfs4Op::Putfh(Xdr::decode(r)?),
            PUTROOTFH => Nfs4Op::Putrootfh,
            READ => Nfs4Op::Read(Xdr::decode(r)?),
            READDIR => Nfs4Op::Readdir(Xdr::decode(r)?),
            READLINK => Nfs4Op::Readlink,
            REMOVE => Nfs4Op::Remove(Xdr::decode(r)?),
            RENAME => Nfs4Op::Rename(Xdr::decode(r)?),
            WRITE => Nfs4Op::Write(WriteArgs::decode_with(r, reduction)?),
            EXCHANGE_ID => Nfs4Op::ExchangeId(Box::new(Xdr::decode(r)?)),
            CREATE_SESSION => Nfs4Op::CreateSession(Box::new(Xdr::decode(r)?)),
            DESTROY_SESSION => Nfs4Op::DestroySession(Xdr::decode(r)?),
            FREE_STATEID => Nfs4Op::FreeStateid(Xdr::decode(r)?),
            SECINFO_NO_NAME => Nfs4Op::SecinfoNoName(r.u32("secinfo_style4")?),
            SEQUENCE => Nfs4Op::Sequence(Xdr::decode(r)?),
            TEST_STATEID => Nfs4Op::TestStateid(Xdr::decode(r)?),
            DESTROY_CLIENTID => Nfs4Op::DestroyClientid(r.u64("DESTROY_CLIENTID4args")?),
            RECLAIM_COMPLETE => Nfs4Op::ReclaimComplete(r.bool("RECLAIM_COMPLETE4args")?),
            other => {
                let body = opaque_by_shape(r, |r| skip_other_args(other, r))?;
                Nfs4Op::Opaque { opnum: other, body }
            }
        })
    }

    /// Append the `nfs_argop4` (reduced when a DDP-eligible item is [`DdpData::Moved`]).
    pub fn encode(&self, w: &mut Writer) {
        w.u32(self.opnum());
        match self {
            Nfs4Op::Access(a) | Nfs4Op::SecinfoNoName(a) => {
                w.u32(*a);
            }
            Nfs4Op::Close(a) => a.encode(w),
            Nfs4Op::Commit(a) => a.encode(w),
            Nfs4Op::Create(a) => a.encode(w),
            Nfs4Op::Getattr(a) => a.encode(w),
            Nfs4Op::Getfh | Nfs4Op::Putrootfh | Nfs4Op::Readlink => {}
            Nfs4Op::Link(a) | Nfs4Op::Lookup(a) | Nfs4Op::Remove(a) => a.encode(w),
            Nfs4Op::Open(a) => a.encode(w),
            Nfs4Op::Putfh(a) => a.encode(w),
            Nfs4Op::Read(a) => a.encode(w),
            Nfs4Op::Readdir(a) => a.encode(w),
            Nfs4Op::Rename(a) => a.encode(w),
            Nfs4Op::Write(a) => a.encode(w),
            Nfs4Op::ExchangeId(a) => a.encode(w),
            Nfs4Op::CreateSession(a) => a.encode(w),
            Nfs4Op::DestroySession(a) => a.encode(w),
            Nfs4Op::FreeStateid(a) => a.encode(w),
            Nfs4Op::Sequence(a) => a.encode(w),
            Nfs4Op::TestStateid(a) => a.encode(w),
            Nfs4Op::DestroyClientid(a) => {
                w.u64(*a);
            }
            Nfs4Op::ReclaimComplete(a) => {
                w.bool(*a);
            }
            Nfs4Op::Opaque { body, .. } => {
                w.raw(body);
            }
        }
    }

    /// The DDP-eligible argument (RFC 8267 §6), if this operation has one.
    pub fn ddp_data(&self) -> Option<&DdpData> {
        match self {
            Nfs4Op::Write(a) => Some(&a.data),
            Nfs4Op::Create(CreateArgs {
                objtype: CreateType4::Link(data),
                ..
            }) => Some(data),
            _ => None,
        }
    }

    /// `NAME` or `NAME(key arguments)`; volatile values (stateids, file handles, verifiers,
    /// client and session ids) are left out so the line is stable across runs.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        self.write_summary(&mut out, true);
        out
    }

    /// [`Nfs4Op::summary`] of the operation as it reads once its Read chunk is reinserted
    /// (RFC 8166 §3.4.5.2): a moved argument is shown as inline, its bytes being back in the
    /// stream. What a decoder that kept the chunk data aside (and only checked that the chunk
    /// sits exactly on the argument) reports in place of decoding the rebuilt message.
    pub fn summary_reinserted(&self) -> String {
        let mut out = String::new();
        self.write_summary(&mut out, false);
        out
    }

    /// Append the summary to `out` (one buffer for a whole COMPOUND, not a string per part),
    /// a moved argument marked ` chunk` when `show_moved`.
    fn write_summary(&self, out: &mut String, show_moved: bool) {
        let placement = |data: &DdpData| if show_moved { placement(data) } else { "" };
        out.push_str(&op_name(self.opnum()));
        let bare = out.len();
        out.push('(');
        let text = |out: &mut String, b: &[u8]| out.push_str(&String::from_utf8_lossy(b));
        // Writing to a String cannot fail.
        let args = match self {
            Nfs4Op::Sequence(a) => write!(out, "slot={} seq={}", a.slotid, a.sequenceid).is_ok(),
            Nfs4Op::Access(a) => write!(out, "{a:#x}").is_ok(),
            Nfs4Op::Lookup(n) | Nfs4Op::Link(n) | Nfs4Op::Remove(n) => {
                out.push_str("name=");
                text(out, &n.0);
                true
            }
            Nfs4Op::Rename(a) => {
                out.push_str("from=");
                text(out, &a.oldname.0);
                out.push_str(" to=");
                text(out, &a.newname.0);
                true
            }
            Nfs4Op::Read(a) => write!(out, "off={} len={}", a.offset, a.count).is_ok(),
            Nfs4Op::Write(a) => write!(
                out,
                "off={} len={} {}{}",
                a.offset,
                a.data.len(),
                a.stable.name(),
                placement(&a.data)
            )
            .is_ok(),
            Nfs4Op::Commit(a) => write!(out, "off={} len={}", a.offset, a.count).is_ok(),
            Nfs4Op::Create(a) => {
                out.push_str(a.objtype.name());
                out.push_str(" name=");
                text(out, &a.objname.0);
                true
            }
            Nfs4Op::Open(a) => {
                match &a.claim {
                    OpenClaim4::Null(f) | OpenClaim4::DelegatePrev(f) => {
                        out.push_str(a.claim.name());
                        out.push_str(" name=");
                        text(out, &f.0);
                    }
                    OpenClaim4::DelegateCur { file, .. } => {
                        out.push_str(a.claim.name());
                        out.push_str(" name=");
                        text(out, &file.0);
                    }
                    other => out.push_str(other.name()),
                }
                if let OpenFlag4::Create(_) = a.openhow {
                    out.push_str(" CREATE");
                }
                true
            }
            Nfs4Op::SecinfoNoName(style) => {
                out.push_str(match style {
                    0 => "CURRENT_FH",
                    1 => "PARENT",
                    _ => "?",
                });
                true
            }
            Nfs4Op::TestStateid(ids) => write!(out, "n={}", ids.0.len()).is_ok(),
            Nfs4Op::ReclaimComplete(one_fs) => write!(out, "one_fs={one_fs}").is_ok(),
            _ => false,
        };
        if args {
            out.push(')');
        } else {
            out.truncate(bare);
        }
    }
}

/// " chunk" when a DDP-eligible item went through a chunk.
fn placement(data: &DdpData) -> &'static str {
    if data.is_moved() {
        " chunk"
    } else {
        ""
    }
}

/// The bytes an operation of known shape occupies: `walk` steps over them on a copy of the
/// reader, then exactly those bytes are taken.
fn opaque_by_shape(
    r: &mut Reader<'_>,
    walk: impl FnOnce(&mut Reader<'_>) -> Result<()>,
) -> Result<Vec<u8>> {
    let mut probe = r.clone();
    let start = probe.consumed();
    walk(&mut probe)?;
    let len = probe.consumed() - start;
    Ok(r.take(len, "nfs4 opaque operation")?.to_vec())
}

fn skip<T: Xdr>(r: &mut Reader<'_>) -> Result<()> {
    T::decode(r).map(|_| ())
}

/// Step over the arguments of an operation outside the typed set whose shape is known
/// (RFC 8881 §18, RFC 7862 §15); any other stops with [`DecodeError::UndecodedOperation`].
fn skip_other_args(op: u32, r: &mut Reader<'_>) -> Result<()> {
    use opnum::*;
    match op {
        // void arguments
        LOOKUPP | PUTPUBFH | RESTOREFH | SAVEFH | ILLEGAL => Ok(()),
        DELEGRETURN => skip::<Stateid4>(r),
        OPENATTR => r.bool("OPENATTR4args.createdir").map(|_| ()),
        SECINFO => skip::<Component4>(r),
        SETATTR => {
            skip::<Stateid4>(r)?;
            skip::<Fattr4>(r)
        }
        NVERIFY | VERIFY => skip::<Fattr4>(r),
        // stateid, seqid, share_access, share_deny
        OPEN_DOWNGRADE => r.take(28, "OPEN_DOWNGRADE4args").map(|_| ()),
        // sessionid, channel_dir_from_client4, use_conn_in_rdma_mode
        BIND_CONN_TO_SESSION => r.take(24, "BIND_CONN_TO_SESSION4args").map(|_| ()),
        // signal_layout_avail, layout_type, iomode, offset, length, minlength, stateid, maxcount
        LAYOUTGET => r.take(56, "LAYOUTGET4args").map(|_| ()),
        // RFC 8881 §18.39.1: signal_deleg_avail, notification_types, two attr_notice4
        // (nfstime4), child_attributes, dir_attributes.
        GET_DIR_DELEGATION => {
            r.bool("gdda_signal_deleg_avail")?;
            skip::<Bitmap4>(r)?;
            skip::<Nfstime4>(r)?;
            skip::<Nfstime4>(r)?;
            skip::<Bitmap4>(r)?;
            skip::<Bitmap4>(r)
        }
        // stateid, offset, length
        ALLOCATE | DEALLOCATE => r.take(32, "ALLOCATE4args").map(|_| ()),
        // stateid, offset, data_content4
        SEEK => r.take(28, "SEEK4args").map(|_| ()),
        // two stateids, two offsets, a count
        CLONE => r.take(56, "CLONE4args").map(|_| ()),
        _ => Err(DecodeError::UndecodedOperation {
            field: "nfs_argop4.argop",
            opnum: op,
            rule: RULE_UNDECODED_OP,
        }),
    }
}

/// Step over the results (after the status) of an operation outside the typed set whose shape
/// is known; any other stops with [`DecodeError::UndecodedOperation`].
fn skip_other_results(op: u32, status: Nfsstat4, r: &mut Reader<'_>) -> Result<()> {
    use opnum::*;
    // SETATTR4res carries `attrsset` whatever the status (RFC 8881 §18.30.2).
    if op == SETATTR {
        return skip::<Bitmap4>(r);
    }
    if !status.is_ok() {
        return match op {
            // LAYOUTGET4res: NFS4ERR_LAYOUTTRYLATER carries a boolean (RFC 8881 §18.43.2).
            LAYOUTGET if status.0 == 10058 => r.bool("logr_will_signal_layout_avail").map(|_| ()),
            LOOKUPP | PUTPUBFH | RESTOREFH | SAVEFH | ILLEGAL | DELEGRETURN | OPENATTR
            | SECINFO | NVERIFY | VERIFY | OPEN_DOWNGRADE | BIND_CONN_TO_SESSION | LAYOUTGET
            | ALLOCATE | DEALLOCATE | SEEK | CLONE | GET_DIR_DELEGATION => Ok(()),
            _ => Err(undecoded_result(op)),
        };
    }
    match op {
        LOOKUPP | PUTPUBFH | RESTOREFH | SAVEFH | ILLEGAL | DELEGRETURN | OPENATTR | NVERIFY
        | VERIFY | ALLOCATE | DEALLOCATE | CLONE => Ok(()),
        SECINFO => skip::<Array<Secinfo4, MAX_SHORT_ARRAY>>(r),
        OPEN_DOWNGRADE => skip::<Stateid4>(r),
        BIND_CONN_TO_SESSION => r.take(24, "BIND_CONN_TO_SESSION4resok").map(|_| ()),
        // sr_eof, sr_offset
        SEEK => r.take(12, "SEEK4resok").map(|_| ()),
        // RFC 8881 §18.39.2: GDD4_OK (0) the delegation, GDD4_UNAVAIL (1) a boolean.
        GET_DIR_DELEGATION => match r.u32("gddrnf4_status")? {
            0 => {
                skip::<Verifier4>(r)?;
                skip::<Stateid4>(r)?;
                skip::<Bitmap4>(r)?;
                skip::<Bitmap4>(r)?;
                skip::<Bitmap4>(r)
            }
            1 => r.bool("gddrnf_will_signal_deleg_avail").map(|_| ()),
            v => Err(DecodeError::BadDiscriminant {
                field: "gddrnf4_status",
                value: v,
                rule: "RFC 8881 §18.39.2 (gddrnf4_status: GDD4_OK, GDD4_UNAVAIL)",
            }),
        },
        LAYOUTGET => {
            r.bool("logr_return_on_close")?;
            skip::<Stateid4>(r)?;
            let n = r.count(MAX_SHORT_ARRAY, 24, "logr_layout")?;
            for _ in 0..n {
                // lo_offset, lo_length, lo_iomode, loc_type, then loc_body.
                r.take(24, "layout4")?;
                r.opaque_var(MAX_ATTR_VALS, "layout_content4.loc_body")?;
            }
            Ok(())
        }
        _ => Err(undecoded_result(op)),
    }
}

fn undecoded_result(op: u32) -> DecodeError {
    DecodeError::UndecodedOperation {
        field: "nfs_resop4.resop",
        opnum: op,
        rule: RULE_UNDECODED_OP,
    }
}

/// The results of one operation past its status (`nfs_resop4`, RFC 8881 §16.2.3). A failed
/// operation's results are void ([`OpResult::Void`]) except where its XDR says otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "res", rename_all = "snake_case")]
pub enum OpResult {
    Void,
    Access {
        supported: u32,
        access: u32,
    },
    Close(Stateid4),
    Commit(Verifier4),
    Create(CreateResOk),
    Getattr(Fattr4),
    Getfh(FileHandle4),
    /// LINK and REMOVE: the directory's change info.
    ChangeInfo(ChangeInfo4),
    Open(Box<OpenResOk>),
    Read(ReadResOk),
    Readdir(ReaddirResOk),
    Readlink(DdpData),
    Rename(RenameResOk),
    Write(WriteResOk),
    ExchangeId(Box<ExchangeIdResOk>),
    CreateSession(Box<CreateSessionResOk>),
    Sequence(SequenceResOk),
    SecinfoNoName(Array<Secinfo4, MAX_SHORT_ARRAY>),
    TestStateid(Array<Nfsstat4, MAX_SHORT_ARRAY>),
    /// An operation outside the typed set, kept as its bytes.
    Opaque(#[serde(serialize_with = "crate::nfs3::serialize_hex")] Vec<u8>),
}

/// One `nfs_resop4`: the operation, its status, its results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Nfs4OpReply {
    pub opnum: u32,
    pub status: Nfsstat4,
    pub result: OpResult,
}

impl Nfs4OpReply {
    /// Decode one `nfs_resop4`; DDP-eligible results (READ data, READLINK link text) through
    /// `reduction` (RFC 8267 §6).
    pub fn decode_with(r: &mut Reader<'_>, reduction: &mut Reduction) -> Result<Self> {
        use opnum::*;
        let op = r.u32("nfs_resop4.resop")?;
        let status = Nfsstat4::decode(r)?;
        let typed = matches!(
            op,
            ACCESS
                | CLOSE
                | COMMIT
                | CREATE
                | GETATTR
                | GETFH
                | LINK
                | LOOKUP
                | OPEN
                | PUTFH
                | PUTROOTFH
                | READ
                | READDIR
                | READLINK
                | REMOVE
                | RENAME
                | WRITE
                | EXCHANGE_ID
                | CREATE_SESSION
                | DESTROY_SESSION
                | FREE_STATEID
                | SECINFO_NO_NAME
                | SEQUENCE
                | TEST_STATEID
                | DESTROY_CLIENTID
                | RECLAIM_COMPLETE
        );
        let result = if !typed {
            OpResult::Opaque(opaque_by_shape(r, |r| skip_other_results(op, status, r))?)
        } else if !status.is_ok() {
            // RFC 8881 §18: every typed operation's failure arm is `default: void`.
            OpResult::Void
        } else {
            match op {
                ACCESS => OpResult::Access {
                    supported: r.u32("ACCESS4resok.supported")?,
                    access: r.u32("ACCESS4resok.access")?,
                },
                CLOSE => OpResult::Close(Xdr::decode(r)?),
                COMMIT => OpResult::Commit(Xdr::decode(r)?),
                CREATE => OpResult::Create(Xdr::decode(r)?),
                GETATTR => OpResult::Getattr(Xdr::decode(r)?),
                GETFH => OpResult::Getfh(Xdr::decode(r)?),
                LINK | REMOVE => OpResult::ChangeInfo(Xdr::decode(r)?),
                OPEN => OpResult::Open(Box::new(Xdr::decode(r)?)),
                READ => OpResult::Read(ReadResOk::decode_with(r, reduction)?),
                READDIR => OpResult::Readdir(Xdr::decode(r)?),
                READLINK => OpResult::Readlink(ops::decode_readlink(r, reduction)?),
                RENAME => OpResult::Rename(Xdr::decode(r)?),
                WRITE => OpResult::Write(Xdr::decode(r)?),
                EXCHANGE_ID => OpResult::ExchangeId(Box::new(Xdr::decode(r)?)),
                CREATE_SESSION => OpResult::CreateSession(Box::new(Xdr::decode(r)?)),
                SECINFO_NO_NAME => OpResult::SecinfoNoName(Xdr::decode(r)?),
                SEQUENCE => OpResult::Sequence(Xdr::decode(r)?),
                TEST_STATEID => OpResult::TestStateid(Xdr::decode(r)?),
                // LOOKUP, PUTFH, PUTROOTFH, DESTROY_SESSION, FREE_STATEID, DESTROY_CLIENTID,
                // RECLAIM_COMPLETE: the status alone.
                _ => OpResult::Void,
            }
        };
        Ok(Nfs4OpReply {
            opnum: op,
            status,
            result,
        })
    }

    /// Append the `nfs_resop4` (reduced when a DDP-eligible item is [`DdpData::Moved`]).
    pub fn encode(&self, w: &mut Writer) {
        w.u32(self.opnum);
        self.status.encode(w);
        match &self.result {
            OpResult::Void => {}
            OpResult::Access { supported, access } => {
                w.u32(*supported).u32(*access);
            }
            OpResult::Close(s) => s.encode(w),
            OpResult::Commit(v) => v.encode(w),
            OpResult::Create(c) => c.encode(w),
            OpResult::Getattr(a) => a.encode(w),
            OpResult::Getfh(fh) => fh.encode(w),
            OpResult::ChangeInfo(c) => c.encode(w),
            OpResult::Open(o) => o.encode(w),
            OpResult::Read(res) => res.encode(w),
            OpResult::Readdir(res) => res.encode(w),
            OpResult::Readlink(data) => data.encode(w),
            OpResult::Rename(res) => res.encode(w),
            OpResult::Write(res) => res.encode(w),
            OpResult::ExchangeId(res) => res.encode(w),
            OpResult::CreateSession(res) => res.encode(w),
            OpResult::Sequence(res) => res.encode(w),
            OpResult::SecinfoNoName(res) => res.encode(w),
            OpResult::TestStateid(res) => res.encode(w),
            OpResult::Opaque(body) => {
                w.raw(body);
            }
        }
    }

    /// The DDP-eligible result (RFC 8267 §6), if this operation has one.
    pub fn ddp_data(&self) -> Option<&DdpData> {
        match &self.result {
            OpResult::Read(res) => Some(&res.data),
            OpResult::Readlink(data) => Some(data),
            _ => None,
        }
    }

    /// `NAME`, `NAME(key results)` or `NAME:STATUS` for a failed operation; volatile values
    /// (stateids, handles, verifiers, ids) are left out.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        self.write_summary(&mut out);
        out
    }

    /// Append the summary to `out` (one buffer for a whole COMPOUND).
    fn write_summary(&self, out: &mut String) {
        out.push_str(&op_name(self.opnum));
        if !self.status.is_ok() {
            out.push(':');
            out.push_str(&self.status.name());
            return;
        }
        let bare = out.len();
        out.push('(');
        // Writing to a String cannot fail.
        let results = match &self.result {
            OpResult::Sequence(s) => write!(out, "slot={} seq={}", s.slotid, s.sequenceid).is_ok(),
            OpResult::Access { access, .. } => write!(out, "{access:#x}").is_ok(),
            OpResult::Read(res) => write!(
                out,
                "len={}{}{}",
                res.data.len(),
                if res.eof { " eof" } else { "" },
                placement(&res.data)
            )
            .is_ok(),
            OpResult::Readlink(data) => {
                write!(out, "len={}{}", data.len(), placement(data)).is_ok()
            }
            OpResult::Write(res) => {
                write!(out, "len={} {}", res.count, res.committed.name()).is_ok()
            }
            OpResult::Readdir(res) => write!(
                out,
                "entries={}{}",
                res.entries.len(),
                if res.eof { " eof" } else { "" }
            )
            .is_ok(),
            OpResult::Open(res) => write!(out, "deleg={}", res.delegation.name()).is_ok(),
            OpResult::TestStateid(res) => {
                for (i, s) in res.0.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&s.name());
                }
                true
            }
            _ => false,
        };
        if results {
            out.push(')');
        } else {
            out.truncate(bare);
        }
    }
}

/// COMPOUND4args (RFC 8881 §16.2.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Compound4Args {
    pub tag: Tag4,
    pub minorversion: u32,
    pub ops: Vec<Nfs4Op>,
}

impl Compound4Args {
    /// Decode a COMPOUND call's arguments; DDP-eligible items through `reduction`.
    pub fn decode_with(r: &mut Reader<'_>, reduction: &mut Reduction) -> Result<Self> {
        let tag = Tag4::decode(r)?;
        let minorversion = r.u32("COMPOUND4args.minorversion")?;
        // RFC 8881 §16.2.3: the minor version selects the operations; this decoder knows 1 and
        // 2 (RFC 7862 adds operations, changes none of these).
        if !(1..=2).contains(&minorversion) {
            return Err(DecodeError::BadValue {
                field: "COMPOUND4args.minorversion",
                value: minorversion.into(),
                rule: RULE_MINOR_VERSION,
            });
        }
        let n = r.count(MAX_OPS, 4, "COMPOUND4args.argarray")?;
        let mut ops = Vec::with_capacity(n);
        for _ in 0..n {
            ops.push(Nfs4Op::decode_with(r, reduction)?);
        }
        Ok(Compound4Args {
            tag,
            minorversion,
            ops,
        })
    }

    /// Append the encoding (a reduced stream when a DDP-eligible item is moved).
    pub fn encode(&self, w: &mut Writer) {
        self.tag.encode(w);
        w.u32(self.minorversion);
        w.u32(self.ops.len() as u32);
        for op in &self.ops {
            op.encode(w);
        }
    }

    /// "SEQUENCE(slot=0 seq=5) PUTFH WRITE(off=0 len=32768 UNSTABLE4)".
    pub fn summary(&self) -> String {
        self.summary_placed(true)
    }

    /// [`Compound4Args::summary`] with every moved argument shown as reinserted
    /// ([`Nfs4Op::summary_reinserted`]).
    pub fn summary_reinserted(&self) -> String {
        self.summary_placed(false)
    }

    /// The operations' summaries, space separated, written into one buffer.
    fn summary_placed(&self, show_moved: bool) -> String {
        let mut out = String::new();
        for (i, op) in self.ops.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            op.write_summary(&mut out, show_moved);
        }
        out
    }
}

impl Xdr for Compound4Args {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Compound4Args::decode_with(r, &mut Reduction::inline())
    }
    fn encode(&self, w: &mut Writer) {
        Compound4Args::encode(self, w)
    }
}

/// COMPOUND4res (RFC 8881 §16.2.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Compound4Res {
    pub status: Nfsstat4,
    pub tag: Tag4,
    pub results: Vec<Nfs4OpReply>,
}

impl Compound4Res {
    /// Decode a COMPOUND reply's results; DDP-eligible items through `reduction`.
    pub fn decode_with(r: &mut Reader<'_>, reduction: &mut Reduction) -> Result<Self> {
        let status = Nfsstat4::decode(r)?;
        let tag = Tag4::decode(r)?;
        let n = r.count(MAX_OPS, 8, "COMPOUND4res.resarray")?;
        let mut results = Vec::with_capacity(n);
        for _ in 0..n {
            results.push(Nfs4OpReply::decode_with(r, reduction)?);
        }
        Ok(Compound4Res {
            status,
            tag,
            results,
        })
    }

    /// Append the encoding (a reduced stream when a DDP-eligible item is moved).
    pub fn encode(&self, w: &mut Writer) {
        self.status.encode(w);
        self.tag.encode(w);
        w.u32(self.results.len() as u32);
        for res in &self.results {
            res.encode(w);
        }
    }

    /// "SEQUENCE(slot=0 seq=5) PUTFH WRITE(len=32768 UNSTABLE4)"; a failed operation as
    /// "LOOKUP:NFS4ERR_NOENT". The COMPOUND's own status is [`Compound4Res::status`].
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for (i, result) in self.results.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            result.write_summary(&mut out);
        }
        out
    }
}

impl Xdr for Compound4Res {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Compound4Res::decode_with(r, &mut Reduction::inline())
    }
    fn encode(&self, w: &mut Writer) {
        Compound4Res::encode(self, w)
    }
}

#[cfg(test)]
mod tests;
