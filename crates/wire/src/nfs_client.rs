//! The NFS client layer every requester in the workspace shares (the simulated scenario harness,
//! the scenarios over RDMA, `rig bench-rpc`, the wire fuzzer): building NFSv3 and MOUNT v3 call
//! messages, decoding a reply down to its status, and the server's FSINFO transfer limits.
//!
//! Where a moved argument's Read chunk goes is [`crate::ddp::argument_position`]; the transport
//! (`engine::OutgoingCall`) carries it.

use std::fmt;

use serde::Serialize;

use crate::error::DecodeError;
use crate::mount3::{MntRes, Mount3Call, Mount3Proc, Mount3Reply, Mountstat3, MOUNT_V3};
use crate::nfs3::{Ddp, FileHandle, Nfs3Call, Nfs3Proc, Nfs3Reply, NfsRes, Nfsstat3, NFS_V3};
use crate::rpc::{AcceptStat, CallHeader, RejectedReply, ReplyBody, RpcMessage};
use crate::rpc::{MOUNT_PROGRAM, NFS_PROGRAM};
use crate::xdr::{Reader, Writer, Xdr};

/// The largest READ or WRITE a client sends without asking FSINFO first: Linux nfsd never
/// reports `rtmax`/`wtmax` below 8 KiB (`nfsd_get_default_max_blksize` bottoms out there) and
/// the reference server reports [`crate::nfs3::MAX_DATA`]. Anything larger is capped with
/// [`TransferLimits::cap`] from the server's FSINFO.
pub const UNASKED_TRANSFER_MAX: u32 = 8 * 1024;
const _: () = assert!(UNASKED_TRANSFER_MAX <= crate::nfs3::MAX_DATA);

/// An NFSv3 call message: RPC call header (AUTH_NONE) and the arguments. A [`DdpData::Moved`]
/// argument leaves the message reduced (RFC 8166 §3.4.1); its Read chunk's position is
/// [`crate::ddp::argument_position`] of this message.
///
/// [`DdpData::Moved`]: crate::nfs3::DdpData::Moved
pub fn nfs3_call(xid: u32, args: &Nfs3Call) -> Vec<u8> {
    let mut message = CallHeader::new(xid, NFS_PROGRAM, NFS_V3, args.proc_() as u32).to_bytes();
    message.extend_from_slice(&args.to_bytes());
    message
}

/// A MOUNT v3 call message.
pub fn mount3_call(xid: u32, args: &Mount3Call) -> Vec<u8> {
    let mut w = Writer::new();
    CallHeader::new(xid, MOUNT_PROGRAM, MOUNT_V3, args.proc_() as u32).encode(&mut w);
    args.encode(&mut w);
    w.into_bytes()
}

/// The bytes of a WRITE whose data a test or benchmark does not care about: `length` bytes of
/// a pattern that repeats every 251 bytes (a prime, so it never lines up with pages).
pub fn pattern(length: u32) -> Vec<u8> {
    (0..length).map(|i| (i % 251) as u8).collect()
}

/// The procedure a reply answers (replies do not carry it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Procedure {
    Nfs3(Nfs3Proc),
    Mount3(Mount3Proc),
}

impl fmt::Display for Procedure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Procedure::Nfs3(p) => write!(f, "NFSv3 {}", p.name()),
            Procedure::Mount3(p) => write!(f, "MOUNT {}", p.name()),
        }
    }
}

/// The results of a successful RPC reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Results {
    Nfs3(Nfs3Reply),
    Mount3(Mount3Reply),
}

impl Results {
    /// The status the results carry: `NFS3_OK`, `NFS3ERR_NOENT`, `MNT3_OK`, ... (MOUNT
    /// procedures other than MNT have none and count as `MNT3_OK`).
    pub fn status_name(&self) -> &'static str {
        match self {
            Results::Nfs3(reply) => reply.status().name(),
            Results::Mount3(reply) => reply.status().name(),
        }
    }
}

/// Why a reply carries no usable results.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyError {
    /// The RPC header did not decode (RFC 5531 §9).
    Header(DecodeError),
    /// The message is a call, not a reply.
    NotAReply,
    /// Accepted but not executed: PROG_UNAVAIL, GARBAGE_ARGS, ... (RFC 5531 §9 `accept_stat`).
    Refused(AcceptStat),
    /// Rejected: RPC_MISMATCH or AUTH_ERROR (RFC 5531 §9 `reject_stat`).
    Denied(RejectedReply),
    /// The results did not decode as the procedure's (RFC 1813).
    Results {
        procedure: Procedure,
        error: DecodeError,
    },
    /// The procedure answered, with an error status.
    Status {
        procedure: Procedure,
        status: Status,
    },
}

/// An NFS or MOUNT status, serialised as its name (`"NFS3_OK"`, `"MNT3ERR_NOENT"` ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum Status {
    Nfs3(Nfsstat3),
    Mount3(Mountstat3),
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Nfs3(status) => status.name(),
            Status::Mount3(status) => status.name(),
        }
    }
}

impl ReplyError {
    /// The status a verdict records for this reply: `undecodable`, the `accept_stat` name,
    /// `DENIED`, `undecodable (<rule>)`, or the NFS status name.
    pub fn status_name(&self) -> String {
        match self {
            ReplyError::Header(_) | ReplyError::NotAReply => "undecodable".to_string(),
            ReplyError::Refused(stat) => stat.name().to_string(),
            ReplyError::Denied(_) => "DENIED".to_string(),
            ReplyError::Results { error, .. } => format!("undecodable ({})", error.rule()),
            ReplyError::Status { status, .. } => status.name().to_string(),
        }
    }
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplyError::Header(error) => write!(f, "reply header: {error}"),
            ReplyError::NotAReply => f.write_str("not a reply"),
            ReplyError::Refused(stat) => write!(f, "call not executed: {}", stat.name()),
            ReplyError::Denied(_) => f.write_str("call denied"),
            ReplyError::Results { procedure, error } => {
                write!(f, "undecodable {procedure} reply: {error}")
            }
            ReplyError::Status { procedure, status } => {
                write!(f, "{procedure} failed: {}", status.name())
            }
        }
    }
}

impl std::error::Error for ReplyError {}

/// Decode a reply message to the results of `procedure`. `ddp` says whether the reply's
/// DDP-eligible item travelled in a Write chunk ([`Ddp::moved_if`]).
pub fn decode_reply(message: &[u8], procedure: Procedure, ddp: Ddp) -> Result<Results, ReplyError> {
    let mut r = accepted_results(message)?;
    let results = match procedure {
        Procedure::Nfs3(proc_) => Nfs3Reply::decode_reduced(proc_, &mut r, ddp).map(Results::Nfs3),
        Procedure::Mount3(proc_) => Mount3Reply::decode(proc_, &mut r).map(Results::Mount3),
    };
    results.map_err(|error| ReplyError::Results { procedure, error })
}

/// [`decode_reply`] for an NFSv3 procedure.
pub fn nfs3_reply(message: &[u8], proc_: Nfs3Proc, ddp: Ddp) -> Result<Nfs3Reply, ReplyError> {
    Nfs3Reply::decode_reduced(proc_, &mut accepted_results(message)?, ddp).map_err(|error| {
        ReplyError::Results {
            procedure: Procedure::Nfs3(proc_),
            error,
        }
    })
}

/// The results of an accepted, executed reply (RFC 5531 §9), or why there are none.
fn accepted_results(message: &[u8]) -> Result<Reader<'_>, ReplyError> {
    let (rpc, used) = RpcMessage::decode_prefix(message).map_err(ReplyError::Header)?;
    let RpcMessage::Reply(header) = rpc else {
        return Err(ReplyError::NotAReply);
    };
    match header.body {
        ReplyBody::Accepted {
            stat: AcceptStat::Success,
            ..
        } => Ok(Reader::new(message.get(used..).unwrap_or_default())),
        ReplyBody::Accepted { stat, .. } => Err(ReplyError::Refused(stat)),
        ReplyBody::Denied(rejected) => Err(ReplyError::Denied(rejected)),
    }
}

/// The export's root file handle from a MNT reply message.
pub fn mount_root(message: &[u8]) -> Result<FileHandle, ReplyError> {
    let procedure = Procedure::Mount3(Mount3Proc::Mnt);
    let res = MntRes::decode(&mut accepted_results(message)?)
        .map_err(|error| ReplyError::Results { procedure, error })?;
    match res {
        MntRes::Ok(ok) => Ok(ok.fhandle),
        MntRes::Fail(status) => Err(ReplyError::Status {
            procedure,
            status: Status::Mount3(status),
        }),
    }
}

/// The status a verdict records for a reply to `procedure`: the NFS or MOUNT status name, or
/// why there is none ([`ReplyError::status_name`]); `unknown` for an executed call whose
/// procedure the caller does not know (the results cannot be read without it).
pub fn reply_status(message: &[u8], procedure: Option<Procedure>, ddp: Ddp) -> String {
    let result = match procedure {
        Some(procedure) => decode_reply(message, procedure, ddp).map(|r| r.status_name()),
        None => accepted_results(message).map(|_| "unknown"),
    };
    match result {
        Ok(status) => status.to_string(),
        Err(error) => error.status_name(),
    }
}

/// READ or WRITE, for the transfer limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Transfer {
    Read,
    Write,
}

/// The server's transfer limits from FSINFO (RFC 1813 §3.3.19), as a client must honour them:
/// the kernel client sizes its READs and WRITEs from these, so nfsd never sees larger ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TransferLimits {
    pub rtmax: u32,
    pub wtmax: u32,
}

/// The size a transfer uses: the requested one, capped at the server's FSINFO limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SizeChoice {
    pub used: u32,
    /// `"FSINFO rtmax"` or `"FSINFO wtmax"` when `used` is below the request.
    pub limited_by: Option<&'static str>,
}

/// A server reported a zero transfer maximum: no READ or WRITE is possible at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZeroTransferLimit {
    /// `"FSINFO rtmax"` or `"FSINFO wtmax"`.
    pub limit: &'static str,
}

impl fmt::Display for ZeroTransferLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "server reported {} = 0 (RFC 1813 §3.3.19: the largest transfer it supports)",
            self.limit
        )
    }
}

impl std::error::Error for ZeroTransferLimit {}

impl TransferLimits {
    /// The limits of an FSINFO reply message.
    pub fn from_reply(message: &[u8]) -> Result<TransferLimits, ReplyError> {
        let procedure = Procedure::Nfs3(Nfs3Proc::Fsinfo);
        match nfs3_reply(message, Nfs3Proc::Fsinfo, Ddp::Inline)? {
            Nfs3Reply::Fsinfo(NfsRes::Ok(ok)) => Ok(TransferLimits {
                rtmax: ok.rtmax,
                wtmax: ok.wtmax,
            }),
            other => Err(ReplyError::Status {
                procedure,
                status: Status::Nfs3(other.status()),
            }),
        }
    }

    /// The limit for `transfer` and its name.
    fn limit(self, transfer: Transfer) -> (u32, &'static str) {
        match transfer {
            Transfer::Read => (self.rtmax, "FSINFO rtmax"),
            Transfer::Write => (self.wtmax, "FSINFO wtmax"),
        }
    }

    /// Cap `requested` at the FSINFO maximum for `transfer`: a READ or WRITE above rtmax/wtmax is
    /// never sent. Why: nfsd sizes its request pages from its max block size (from guest RAM,
    /// fs/nfsd/nfssvc.c `nfsd_get_default_max_blksize`), and svcrdma rejects a Read chunk that
    /// does not fit those pages with ERR_CHUNK; FSINFO is where the server states that limit.
    pub fn cap(self, transfer: Transfer, requested: u32) -> Result<SizeChoice, ZeroTransferLimit> {
        let (limit, name) = self.limit(transfer);
        // RFC 1813 §3.3.19: zero would mean no transfer is possible at all.
        if limit == 0 {
            return Err(ZeroTransferLimit { limit: name });
        }
        Ok(if requested > limit {
            SizeChoice {
                used: limit,
                limited_by: Some(name),
            }
        } else {
            SizeChoice {
                used: requested,
                limited_by: None,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mount3::{DirPath, MntResOk};
    use crate::nfs3::{DdpData, StableHow, WriteArgs};
    use crate::rpc::{OpaqueAuth, ReplyHeader};

    fn reply(xid: u32, body: ReplyBody, results: &[u8]) -> Vec<u8> {
        let mut w = Writer::new();
        RpcMessage::Reply(ReplyHeader { xid, body }).encode(&mut w);
        w.raw(results);
        w.into_bytes()
    }

    fn accepted(stat: AcceptStat) -> ReplyBody {
        ReplyBody::Accepted {
            verf: OpaqueAuth::none(),
            stat,
        }
    }

    #[test]
    fn calls_decode_back_with_their_procedure() {
        let write = Nfs3Call::Write(WriteArgs {
            file: FileHandle(vec![7; 8]),
            offset: 0,
            count: 16,
            stable: StableHow::FileSync,
            data: DdpData::Moved { length: 16 },
        });
        let message = nfs3_call(0x42, &write);
        let (rpc, used) = RpcMessage::decode_prefix(&message).unwrap();
        let RpcMessage::Call(call) = rpc else {
            panic!("a call");
        };
        assert_eq!((call.xid, call.prog, call.proc_), (0x42, NFS_PROGRAM, 7));
        let args = Nfs3Call::decode_reduced(
            Nfs3Proc::Write,
            &mut Reader::new(&message[used..]),
            Ddp::Moved,
        )
        .unwrap();
        assert_eq!(args, write);
        let mnt = mount3_call(9, &Mount3Call::Mnt(DirPath(b"/export".to_vec())));
        let (RpcMessage::Call(call), used) = RpcMessage::decode_prefix(&mnt).unwrap() else {
            panic!("a call");
        };
        assert_eq!((call.prog, call.vers, call.proc_), (MOUNT_PROGRAM, 3, 1));
        assert_eq!(
            used + 4 + 8,
            mnt.len(),
            "dirpath: length word and 7 bytes + pad"
        );
    }

    #[test]
    fn statuses_name_what_the_reply_says() {
        let nfs = Procedure::Nfs3(Nfs3Proc::Null);
        let ok = reply(1, accepted(AcceptStat::Success), &[]);
        assert_eq!(reply_status(&ok, Some(nfs), Ddp::Inline), "NFS3_OK");
        let garbage = reply(1, accepted(AcceptStat::GarbageArgs), &[]);
        assert_eq!(
            reply_status(&garbage, Some(nfs), Ddp::Inline),
            "GARBAGE_ARGS"
        );
        let denied = reply(1, ReplyBody::Denied(RejectedReply::AuthError(1)), &[]);
        assert_eq!(reply_status(&denied, Some(nfs), Ddp::Inline), "DENIED");
        assert_eq!(reply_status(&[0, 1], Some(nfs), Ddp::Inline), "undecodable");
        let call = nfs3_call(1, &Nfs3Call::Null);
        assert_eq!(
            decode_reply(&call, nfs, Ddp::Inline),
            Err(ReplyError::NotAReply)
        );
        // A REMOVE reply cut short: the results do not decode, and the status names the rule.
        let remove = Procedure::Nfs3(Nfs3Proc::Remove);
        let status = reply_status(&ok, Some(remove), Ddp::Inline);
        assert!(status.starts_with("undecodable (RFC "), "{status}");
        // MNT: the mountstat3 name; an OK MNT and other MOUNT procedures are MNT3_OK.
        let mut w = Writer::new();
        Mountstat3::Noent.encode(&mut w);
        let failed = reply(1, accepted(AcceptStat::Success), w.as_bytes());
        let mnt = Procedure::Mount3(Mount3Proc::Mnt);
        assert_eq!(
            reply_status(&failed, Some(mnt), Ddp::Inline),
            "MNT3ERR_NOENT"
        );
        let null = Procedure::Mount3(Mount3Proc::Null);
        assert_eq!(reply_status(&ok, Some(null), Ddp::Inline), "MNT3_OK");
        // Without the procedure: the RPC-level status, or unknown when it executed.
        assert_eq!(reply_status(&garbage, None, Ddp::Inline), "GARBAGE_ARGS");
        assert_eq!(reply_status(&ok, None, Ddp::Inline), "unknown");
    }

    #[test]
    fn mnt_replies_give_the_root_handle_or_their_status() {
        let mut w = Writer::new();
        MntRes::Ok(MntResOk {
            fhandle: FileHandle(vec![1, 2, 3, 4]),
            auth_flavors: vec![1],
        })
        .encode(&mut w);
        let ok = reply(1, accepted(AcceptStat::Success), w.as_bytes());
        assert_eq!(mount_root(&ok), Ok(FileHandle(vec![1, 2, 3, 4])));
        let mut w = Writer::new();
        Mountstat3::Acces.encode(&mut w);
        let refused = reply(1, accepted(AcceptStat::Success), w.as_bytes());
        let err = mount_root(&refused).unwrap_err();
        assert_eq!(err.status_name(), "MNT3ERR_ACCES");
        assert_eq!(err.to_string(), "MOUNT MNT failed: MNT3ERR_ACCES");
    }

    #[test]
    fn fsinfo_limits_cap_transfers_and_say_why() {
        let limits = TransferLimits {
            rtmax: 32768,
            wtmax: 16384,
        };
        assert_eq!(
            limits.cap(Transfer::Write, 65536),
            Ok(SizeChoice {
                used: 16384,
                limited_by: Some("FSINFO wtmax")
            })
        );
        assert_eq!(
            limits.cap(Transfer::Read, 65536),
            Ok(SizeChoice {
                used: 32768,
                limited_by: Some("FSINFO rtmax")
            })
        );
        assert_eq!(limits.cap(Transfer::Write, 16384).unwrap().limited_by, None);
        let zero = TransferLimits { rtmax: 0, wtmax: 0 };
        let err = zero.cap(Transfer::Write, 1).unwrap_err();
        assert!(err.to_string().contains("wtmax"), "{err}");
    }

    #[test]
    fn a_failed_fsinfo_is_its_status() {
        let mut w = Writer::new();
        Nfsstat3::Stale.encode(&mut w);
        w.u32(0); // post_op_attr: no attributes
        let stale = reply(1, accepted(AcceptStat::Success), w.as_bytes());
        assert_eq!(
            TransferLimits::from_reply(&stale),
            Err(ReplyError::Status {
                procedure: Procedure::Nfs3(Nfs3Proc::Fsinfo),
                status: Status::Nfs3(Nfsstat3::Stale)
            })
        );
    }

    #[test]
    fn the_pattern_repeats_every_251_bytes() {
        let p = pattern(600);
        assert_eq!(p.len(), 600);
        assert_eq!((p[0], p[250], p[251], p[502]), (0, 250, 0, 0));
    }
}
