//! ONC RPC version 2 (RFC 5531): call and reply headers, AUTH_NONE / AUTH_SYS credentials.
//!
//! Only the RPC header is decoded here; procedure arguments and results follow it in the same
//! buffer and are decoded by the program modules ([`crate::nfs3`], [`crate::mount3`],
//! [`crate::nfsacl`]). [`RpcMessage::decode_prefix`] says how many bytes the header took.

use serde::Serialize;

use crate::error::{DecodeError, Result};
use crate::xdr::{Reader, Writer, Xdr};

/// The only RPC protocol version (RFC 5531 §9: `rpcvers` MUST be equal to 2).
pub const RPC_VERSION: u32 = 2;
/// Program numbers (RFC 5531 Appendix C and the programs' own specifications).
pub const PORTMAP_PROGRAM: u32 = 100000;
pub const NFS_PROGRAM: u32 = 100003;
pub const NSM_PROGRAM: u32 = 100024;
pub const MOUNT_PROGRAM: u32 = 100005;
pub const NLM_PROGRAM: u32 = 100021;
pub const NFSACL_PROGRAM: u32 = 100227;

/// Authentication flavor numbers (RFC 5531 §8.2 and Appendix A; RPCSEC_GSS from RFC 2203).
pub const AUTH_NONE: u32 = 0;
pub const AUTH_SYS: u32 = 1;
pub const AUTH_SHORT: u32 = 2;
pub const AUTH_DH: u32 = 3;
pub const RPCSEC_GSS: u32 = 6;
/// RFC 9289: the AUTH_TLS flavor a client uses to probe for RPC-with-TLS support.
pub const AUTH_TLS: u32 = 7;

/// RFC 5531 §8.2: `opaque body<400>` — the body of any credential or verifier.
pub const MAX_AUTH_BYTES: u32 = 400;
/// RFC 5531 Appendix A: `string machinename<255>`.
pub const MAX_MACHINE_NAME: u32 = 255;
/// RFC 5531 Appendix A: `unsigned int gids<16>`.
pub const MAX_AUTH_SYS_GIDS: u32 = 16;

const MSG_CALL: u32 = 0;
const MSG_REPLY: u32 = 1;

/// A human-readable program name for well-known programs.
pub fn program_name(prog: u32) -> Option<&'static str> {
    Some(match prog {
        PORTMAP_PROGRAM => "PORTMAP",
        NFS_PROGRAM => "NFS",
        MOUNT_PROGRAM => "MOUNT",
        NLM_PROGRAM => "NLM",
        NSM_PROGRAM => "NSM",
        NFSACL_PROGRAM => "NFSACL",
        _ => return None,
    })
}

/// A credential or verifier as it appears on the wire (RFC 5531 §8.2 `opaque_auth`).
///
/// The body is kept raw so that any flavor round-trips byte for byte; [`OpaqueAuth::auth_sys`]
/// parses the AUTH_SYS body on demand.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct OpaqueAuth {
    pub flavor: u32,
    #[serde(skip)]
    pub body: Vec<u8>,
}

impl OpaqueAuth {
    /// AUTH_NONE with an empty body.
    pub fn none() -> Self {
        OpaqueAuth {
            flavor: AUTH_NONE,
            body: Vec::new(),
        }
    }

    /// AUTH_SYS carrying `cred`.
    pub fn sys(cred: &AuthSys) -> Self {
        OpaqueAuth {
            flavor: AUTH_SYS,
            body: cred.to_bytes(),
        }
    }

    /// The flavor as an enum.
    pub fn flavor(&self) -> AuthFlavor {
        AuthFlavor::from_u32(self.flavor)
    }

    /// The AUTH_SYS body, if this is an AUTH_SYS credential (decoding errors are reported).
    pub fn auth_sys(&self) -> Option<Result<AuthSys>> {
        (self.flavor == AUTH_SYS).then(|| AuthSys::from_bytes(&self.body))
    }
}

impl Xdr for OpaqueAuth {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let flavor = r.u32("opaque_auth.flavor")?;
        let len = r.u32("opaque_auth.body")?;
        // RFC 5531 §8.2: the body of an opaque_auth is at most 400 bytes.
        if len > MAX_AUTH_BYTES {
            return Err(DecodeError::LengthOverLimit {
                field: "opaque_auth.body",
                length: len.into(),
                limit: MAX_AUTH_BYTES.into(),
                rule: "RFC 5531 §8.2 (opaque_auth body<400>)",
            });
        }
        let body = r.opaque_fixed(len as usize, "opaque_auth.body")?.to_vec();
        Ok(OpaqueAuth { flavor, body })
    }

    fn encode(&self, w: &mut Writer) {
        w.u32(self.flavor).opaque_var(&self.body);
    }
}

/// Authentication flavors this rig knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum AuthFlavor {
    None,
    Sys,
    Short,
    Dh,
    RpcsecGss,
    Tls,
    Other(u32),
}

impl AuthFlavor {
    pub fn from_u32(v: u32) -> Self {
        match v {
            AUTH_NONE => AuthFlavor::None,
            AUTH_SYS => AuthFlavor::Sys,
            AUTH_SHORT => AuthFlavor::Short,
            AUTH_DH => AuthFlavor::Dh,
            RPCSEC_GSS => AuthFlavor::RpcsecGss,
            AUTH_TLS => AuthFlavor::Tls,
            other => AuthFlavor::Other(other),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AuthFlavor::None => "AUTH_NONE",
            AuthFlavor::Sys => "AUTH_SYS",
            AuthFlavor::Short => "AUTH_SHORT",
            AuthFlavor::Dh => "AUTH_DH",
            AuthFlavor::RpcsecGss => "RPCSEC_GSS",
            AuthFlavor::Tls => "AUTH_TLS",
            AuthFlavor::Other(_) => "AUTH_OTHER",
        }
    }
}

/// The AUTH_SYS credential body (RFC 5531 Appendix A `authsys_parms`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct AuthSys {
    pub stamp: u32,
    #[serde(serialize_with = "crate::nfs3::serialize_bytes_as_text")]
    pub machinename: Vec<u8>,
    pub uid: u32,
    pub gid: u32,
    pub gids: Vec<u32>,
}

impl Xdr for AuthSys {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let stamp = r.u32("authsys.stamp")?;
        // RFC 5531 Appendix A: machinename<255>, gids<16>.
        let machinename = r.string(MAX_MACHINE_NAME, "authsys.machinename")?.to_vec();
        let uid = r.u32("authsys.uid")?;
        let gid = r.u32("authsys.gid")?;
        let gids = r.array(MAX_AUTH_SYS_GIDS, 4, "authsys.gids", |r| {
            r.u32("authsys.gid")
        })?;
        Ok(AuthSys {
            stamp,
            machinename,
            uid,
            gid,
            gids,
        })
    }

    fn encode(&self, w: &mut Writer) {
        w.u32(self.stamp)
            .opaque_var(&self.machinename)
            .u32(self.uid)
            .u32(self.gid)
            .array(&self.gids, |w, g| {
                w.u32(*g);
            });
    }
}

/// An RPC call header (RFC 5531 §9 `call_body`, preceded by xid and msg_type CALL).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct CallHeader {
    pub xid: u32,
    pub rpcvers: u32,
    pub prog: u32,
    pub vers: u32,
    pub proc_: u32,
    pub cred: OpaqueAuth,
    pub verf: OpaqueAuth,
}

impl CallHeader {
    /// A version-2 call with AUTH_NONE credential and verifier.
    pub fn new(xid: u32, prog: u32, vers: u32, proc_: u32) -> Self {
        CallHeader {
            xid,
            rpcvers: RPC_VERSION,
            prog,
            vers,
            proc_,
            cred: OpaqueAuth::none(),
            verf: OpaqueAuth::none(),
        }
    }

    /// Decode the call body after xid and msg_type have been read.
    fn decode_body(xid: u32, r: &mut Reader<'_>) -> Result<Self> {
        let rpcvers = r.u32("call.rpcvers")?;
        // RFC 5531 §9: "rpcvers ... MUST be equal to 2".
        if rpcvers != RPC_VERSION {
            return Err(DecodeError::BadValue {
                field: "call.rpcvers",
                value: rpcvers.into(),
                rule: "RFC 5531 §9 (rpcvers MUST be 2)",
            });
        }
        Ok(CallHeader {
            xid,
            rpcvers,
            prog: r.u32("call.prog")?,
            vers: r.u32("call.vers")?,
            proc_: r.u32("call.proc")?,
            cred: OpaqueAuth::decode(r)?,
            verf: OpaqueAuth::decode(r)?,
        })
    }
}

impl Xdr for CallHeader {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        match RpcMessage::decode(r)? {
            RpcMessage::Call(call) => Ok(call),
            RpcMessage::Reply(_) => Err(DecodeError::BadDiscriminant {
                field: "rpc_msg.mtype",
                value: MSG_REPLY,
                rule: "RFC 5531 §9 (expected CALL)",
            }),
        }
    }

    fn encode(&self, w: &mut Writer) {
        w.u32(self.xid)
            .u32(MSG_CALL)
            .u32(self.rpcvers)
            .u32(self.prog)
            .u32(self.vers)
            .u32(self.proc_);
        self.cred.encode(w);
        self.verf.encode(w);
    }
}

/// `accept_stat` with its arm data (RFC 5531 §9 `accepted_reply`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum AcceptStat {
    Success,
    ProgUnavail,
    ProgMismatch { low: u32, high: u32 },
    ProcUnavail,
    GarbageArgs,
    SystemErr,
}

impl AcceptStat {
    pub fn code(self) -> u32 {
        match self {
            AcceptStat::Success => 0,
            AcceptStat::ProgUnavail => 1,
            AcceptStat::ProgMismatch { .. } => 2,
            AcceptStat::ProcUnavail => 3,
            AcceptStat::GarbageArgs => 4,
            AcceptStat::SystemErr => 5,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AcceptStat::Success => "SUCCESS",
            AcceptStat::ProgUnavail => "PROG_UNAVAIL",
            AcceptStat::ProgMismatch { .. } => "PROG_MISMATCH",
            AcceptStat::ProcUnavail => "PROC_UNAVAIL",
            AcceptStat::GarbageArgs => "GARBAGE_ARGS",
            AcceptStat::SystemErr => "SYSTEM_ERR",
        }
    }
}

/// `rejected_reply` (RFC 5531 §9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum RejectedReply {
    /// RPC_MISMATCH: the lowest and highest RPC versions the server supports.
    RpcMismatch { low: u32, high: u32 },
    /// AUTH_ERROR with its `auth_stat` (kept numeric: RPCSEC_GSS adds values, RFC 2203 §5.3.3.3).
    AuthError(u32),
}

/// The name of an `auth_stat` value (RFC 5531 §9; 13 and 14 from RFC 2203).
pub fn auth_stat_name(stat: u32) -> &'static str {
    match stat {
        0 => "AUTH_OK",
        1 => "AUTH_BADCRED",
        2 => "AUTH_REJECTEDCRED",
        3 => "AUTH_BADVERF",
        4 => "AUTH_REJECTEDVERF",
        5 => "AUTH_TOOWEAK",
        6 => "AUTH_INVALIDRESP",
        7 => "AUTH_FAILED",
        13 => "RPCSEC_GSS_CREDPROBLEM",
        14 => "RPCSEC_GSS_CTXPROBLEM",
        _ => "AUTH_UNKNOWN",
    }
}

/// `reply_body` (RFC 5531 §9).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub enum ReplyBody {
    Accepted { verf: OpaqueAuth, stat: AcceptStat },
    Denied(RejectedReply),
}

/// An RPC reply header; for SUCCESS the procedure results follow it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ReplyHeader {
    pub xid: u32,
    pub body: ReplyBody,
}

impl ReplyHeader {
    /// An accepted SUCCESS reply with an AUTH_NONE verifier.
    pub fn success(xid: u32) -> Self {
        ReplyHeader::accepted(xid, AcceptStat::Success)
    }

    /// An accepted reply with `stat` and an AUTH_NONE verifier (RFC 5531 §9, `accepted_reply`).
    pub fn accepted(xid: u32, stat: AcceptStat) -> Self {
        ReplyHeader {
            xid,
            body: ReplyBody::Accepted {
                verf: OpaqueAuth::none(),
                stat,
            },
        }
    }

    /// Whether procedure results follow (accepted with SUCCESS).
    pub fn is_success(&self) -> bool {
        matches!(
            self.body,
            ReplyBody::Accepted {
                stat: AcceptStat::Success,
                ..
            }
        )
    }

    fn decode_body(xid: u32, r: &mut Reader<'_>) -> Result<Self> {
        let body = match r.u32("reply.stat")? {
            // MSG_ACCEPTED
            0 => {
                let verf = OpaqueAuth::decode(r)?;
                let stat = match r.u32("accepted_reply.stat")? {
                    0 => AcceptStat::Success,
                    1 => AcceptStat::ProgUnavail,
                    2 => AcceptStat::ProgMismatch {
                        low: r.u32("accepted_reply.mismatch_info.low")?,
                        high: r.u32("accepted_reply.mismatch_info.high")?,
                    },
                    3 => AcceptStat::ProcUnavail,
                    4 => AcceptStat::GarbageArgs,
                    5 => AcceptStat::SystemErr,
                    value => {
                        return Err(DecodeError::BadDiscriminant {
                            field: "accepted_reply.stat",
                            value,
                            rule: "RFC 5531 §9 (accept_stat)",
                        })
                    }
                };
                ReplyBody::Accepted { verf, stat }
            }
            // MSG_DENIED
            1 => ReplyBody::Denied(match r.u32("rejected_reply.stat")? {
                0 => RejectedReply::RpcMismatch {
                    low: r.u32("rejected_reply.mismatch_info.low")?,
                    high: r.u32("rejected_reply.mismatch_info.high")?,
                },
                1 => RejectedReply::AuthError(r.u32("rejected_reply.auth_stat")?),
                value => {
                    return Err(DecodeError::BadDiscriminant {
                        field: "rejected_reply.stat",
                        value,
                        rule: "RFC 5531 §9 (reject_stat)",
                    })
                }
            }),
            value => {
                return Err(DecodeError::BadDiscriminant {
                    field: "reply.stat",
                    value,
                    rule: "RFC 5531 §9 (reply_stat)",
                })
            }
        };
        Ok(ReplyHeader { xid, body })
    }
}

impl Xdr for ReplyHeader {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        match RpcMessage::decode(r)? {
            RpcMessage::Reply(reply) => Ok(reply),
            RpcMessage::Call(_) => Err(DecodeError::BadDiscriminant {
                field: "rpc_msg.mtype",
                value: MSG_CALL,
                rule: "RFC 5531 §9 (expected REPLY)",
            }),
        }
    }

    fn encode(&self, w: &mut Writer) {
        w.u32(self.xid).u32(MSG_REPLY);
        match &self.body {
            ReplyBody::Accepted { verf, stat } => {
                w.u32(0);
                verf.encode(w);
                w.u32(stat.code());
                if let AcceptStat::ProgMismatch { low, high } = stat {
                    w.u32(*low).u32(*high);
                }
            }
            ReplyBody::Denied(RejectedReply::RpcMismatch { low, high }) => {
                w.u32(1).u32(0).u32(*low).u32(*high);
            }
            ReplyBody::Denied(RejectedReply::AuthError(stat)) => {
                w.u32(1).u32(1).u32(*stat);
            }
        }
    }
}

/// Which way an RPC message goes, by its msg_type word (RFC 5531 §9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MsgType {
    Call,
    Reply,
}

impl MsgType {
    /// The msg_type of the RPC message `bytes` start with (xid, then msg_type), read without
    /// decoding the rest: who sent a Send when nothing else says. `None` for fewer than two
    /// words or a value other than CALL and REPLY.
    pub fn peek(bytes: &[u8]) -> Option<MsgType> {
        let mut r = Reader::new(bytes);
        r.u32("rpc_msg.xid").ok()?;
        match r.u32("rpc_msg.mtype").ok()? {
            MSG_CALL => Some(MsgType::Call),
            MSG_REPLY => Some(MsgType::Reply),
            _ => None,
        }
    }
}

/// An RPC message header: a call or a reply (RFC 5531 §9 `rpc_msg`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub enum RpcMessage {
    Call(CallHeader),
    Reply(ReplyHeader),
}

impl RpcMessage {
    /// Decode the RPC header at the start of `bytes`; returns it and the bytes it consumed (the
    /// procedure arguments or results follow).
    pub fn decode_prefix(bytes: &[u8]) -> Result<(RpcMessage, usize)> {
        let mut r = Reader::new(bytes);
        let msg = RpcMessage::decode(&mut r)?;
        Ok((msg, r.consumed()))
    }

    /// The transaction id.
    pub fn xid(&self) -> u32 {
        match self {
            RpcMessage::Call(c) => c.xid,
            RpcMessage::Reply(r) => r.xid,
        }
    }
}

impl Xdr for RpcMessage {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let xid = r.u32("rpc_msg.xid")?;
        match r.u32("rpc_msg.mtype")? {
            MSG_CALL => CallHeader::decode_body(xid, r).map(RpcMessage::Call),
            MSG_REPLY => ReplyHeader::decode_body(xid, r).map(RpcMessage::Reply),
            value => Err(DecodeError::BadDiscriminant {
                field: "rpc_msg.mtype",
                value,
                rule: "RFC 5531 §9 (msg_type is CALL or REPLY)",
            }),
        }
    }

    fn encode(&self, w: &mut Writer) {
        match self {
            RpcMessage::Call(c) => c.encode(w),
            RpcMessage::Reply(r) => r.encode(w),
        }
    }
}
