//! The arguments and results of the NFSv4.1 operations the Linux client and nfsd use (RFC 8881
//! §18), in XDR order. DDP-eligible items (RFC 8267 §6) decode through a
//! [`Reduction`](crate::ddp::Reduction).

use serde::Serialize;

use super::types::*;
use crate::ddp::{DdpData, Reduction};
use crate::error::{DecodeError, Result};
use crate::nfs3::{xdr_enum, xdr_struct};
use crate::xdr::{Reader, Writer, Xdr};

/// Decoder limit for READ and WRITE data (Linux nfsd's largest payload is 1 MiB).
pub const MAX_DATA: u32 = 1 << 20;
/// Decoder limit on READDIR entries in one reply.
pub const MAX_DIR_ENTRIES: usize = 65536;

/// RFC 8267 §6: the DDP-eligible data of WRITE4args.
pub const ITEM_WRITE_DATA: &str = "WRITE4args.data";
/// RFC 8267 §6: the DDP-eligible link text of CREATE4args (NF4LNK arm of createtype4).
pub const ITEM_CREATE_LINKDATA: &str = "CREATE4args.objtype.linkdata";
/// RFC 8267 §6: the DDP-eligible data of READ4resok.
pub const ITEM_READ_DATA: &str = "READ4resok.data";
/// RFC 8267 §6: the DDP-eligible link text of READLINK4resok.
pub const ITEM_READLINK_LINK: &str = "READLINK4resok.link";

const RULE_DATA: &str = "RFC 8881 §18.22, §18.32 (READ/WRITE data; decoder limit 1 MiB)";
const RULE_LINKTEXT: &str = "RFC 8881 §18.4, §18.24 (linktext4; decoder limit 4096)";

/// An XDR union discriminant outside its definition.
fn bad_arm(field: &'static str, value: u32, rule: &'static str) -> DecodeError {
    DecodeError::BadDiscriminant { field, value, rule }
}

xdr_enum! {
    /// `stable_how4` (RFC 8881 §18.32.1).
    pub enum StableHow4 ("RFC 8881 §18.32.1 (stable_how4)") {
        Unstable = 0 => "UNSTABLE4",
        DataSync = 1 => "DATA_SYNC4",
        FileSync = 2 => "FILE_SYNC4",
    }
}

// ---- SEQUENCE (RFC 8881 §18.46) ----

xdr_struct! {
    /// SEQUENCE4args (RFC 8881 §18.46.1).
    pub struct SequenceArgs {
        sessionid: SessionId4,
        sequenceid: u32,
        slotid: u32,
        highest_slotid: u32,
        cachethis: bool,
    }
}

xdr_struct! {
    /// SEQUENCE4resok (RFC 8881 §18.46.2).
    pub struct SequenceResOk {
        sessionid: SessionId4,
        sequenceid: u32,
        slotid: u32,
        highest_slotid: u32,
        target_highest_slotid: u32,
        status_flags: u32,
    }
}

// ---- EXCHANGE_ID (RFC 8881 §18.35) ----

xdr_struct! {
    /// `client_owner4` (RFC 8881 §2.4).
    pub struct ClientOwner4 {
        verifier: Verifier4,
        ownerid: OpaqueLimited,
    }
}

xdr_struct! {
    /// `state_protect_ops4` (RFC 8881 §18.35.1).
    pub struct StateProtectOps4 {
        must_enforce: Bitmap4,
        must_allow: Bitmap4,
    }
}

xdr_struct! {
    /// `ssv_sp_parms4` (RFC 8881 §18.35.1).
    pub struct SsvSpParms4 {
        ops: StateProtectOps4,
        hash_algs: Array<SecOpaque, MAX_SHORT_ARRAY>,
        encr_algs: Array<SecOpaque, MAX_SHORT_ARRAY>,
        window: u32,
        num_gss_handles: u32,
    }
}

xdr_struct! {
    /// `ssv_prot_info4` (RFC 8881 §18.35.2).
    pub struct SsvProtInfo4 {
        ops: StateProtectOps4,
        hash_alg: u32,
        encr_alg: u32,
        ssv_len: u32,
        window: u32,
        handles: Array<SecOpaque, MAX_SHORT_ARRAY>,
    }
}

xdr_struct! {
    /// `nfs_impl_id4` (RFC 8881 §18.35.1).
    pub struct NfsImplId4 {
        domain: Component4,
        name: Component4,
        date: Nfstime4,
    }
}

const RULE_STATE_PROTECT: &str =
    "RFC 8881 §18.35.1 (state_protect_how4: SP4_NONE, SP4_MACH_CRED, SP4_SSV)";

/// `state_protect4_a` and `state_protect4_r` (RFC 8881 §18.35): the SP4_SSV arm differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum StateProtect<Ssv> {
    None,
    MachCred(StateProtectOps4),
    Ssv(Ssv),
}

impl<Ssv: Xdr> Xdr for StateProtect<Ssv> {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Ok(match r.u32("state_protect_how4")? {
            0 => StateProtect::None,
            1 => StateProtect::MachCred(Xdr::decode(r)?),
            2 => StateProtect::Ssv(Xdr::decode(r)?),
            v => return Err(bad_arm("state_protect_how4", v, RULE_STATE_PROTECT)),
        })
    }
    fn encode(&self, w: &mut Writer) {
        match self {
            StateProtect::None => {
                w.u32(0);
            }
            StateProtect::MachCred(ops) => {
                w.u32(1);
                ops.encode(w);
            }
            StateProtect::Ssv(ssv) => {
                w.u32(2);
                ssv.encode(w);
            }
        }
    }
}

xdr_struct! {
    /// EXCHANGE_ID4args (RFC 8881 §18.35.1).
    pub struct ExchangeIdArgs {
        clientowner: ClientOwner4,
        flags: u32,
        state_protect: StateProtect<SsvSpParms4>,
        client_impl_id: Array<NfsImplId4, 1>,
    }
}

xdr_struct! {
    /// `server_owner4` (RFC 8881 §2.5).
    pub struct ServerOwner4 {
        minor_id: u64,
        major_id: OpaqueLimited,
    }
}

xdr_struct! {
    /// EXCHANGE_ID4resok (RFC 8881 §18.35.2).
    pub struct ExchangeIdResOk {
        clientid: u64,
        sequenceid: u32,
        flags: u32,
        state_protect: StateProtect<SsvProtInfo4>,
        server_owner: ServerOwner4,
        server_scope: OpaqueLimited,
        server_impl_id: Array<NfsImplId4, 1>,
    }
}

// ---- CREATE_SESSION (RFC 8881 §18.36) ----

xdr_struct! {
    /// `channel_attrs4` (RFC 8881 §18.36.1).
    pub struct ChannelAttrs4 {
        headerpadsize: u32,
        maxrequestsize: u32,
        maxresponsesize: u32,
        maxresponsesize_cached: u32,
        maxoperations: u32,
        maxrequests: u32,
        rdma_ird: Array<Uint32, 1>,
    }
}

xdr_struct! {
    /// `authsys_parms` (RFC 5531 §14), in `callback_sec_parms4`.
    pub struct AuthsysParms {
        stamp: u32,
        machinename: MachineName,
        uid: u32,
        gid: u32,
        gids: Array<Uint32, 16>,
    }
}

xdr_struct! {
    /// `gss_cb_handles4` (RFC 8881 §18.36.1).
    pub struct GssCbHandles4 {
        service: u32,
        handle_from_server: SecOpaque,
        handle_from_client: SecOpaque,
    }
}

const RULE_CB_SEC: &str =
    "RFC 8881 §18.36.1 (callback_sec_parms4: AUTH_NONE, AUTH_SYS or RPCSEC_GSS)";

/// `callback_sec_parms4` (RFC 8881 §18.36.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum CallbackSecParms4 {
    AuthNone,
    AuthSys(AuthsysParms),
    RpcsecGss(GssCbHandles4),
}

impl Xdr for CallbackSecParms4 {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Ok(match r.u32("callback_sec_parms4.cb_secflavor")? {
            0 => CallbackSecParms4::AuthNone,
            1 => CallbackSecParms4::AuthSys(Xdr::decode(r)?),
            6 => CallbackSecParms4::RpcsecGss(Xdr::decode(r)?),
            v => return Err(bad_arm("callback_sec_parms4.cb_secflavor", v, RULE_CB_SEC)),
        })
    }
    fn encode(&self, w: &mut Writer) {
        match self {
            CallbackSecParms4::AuthNone => {
                w.u32(0);
            }
            CallbackSecParms4::AuthSys(p) => {
                w.u32(1);
                p.encode(w);
            }
            CallbackSecParms4::RpcsecGss(p) => {
                w.u32(6);
                p.encode(w);
            }
        }
    }
}

xdr_struct! {
    /// CREATE_SESSION4args (RFC 8881 §18.36.1).
    pub struct CreateSessionArgs {
        clientid: u64,
        sequence: u32,
        flags: u32,
        fore_chan_attrs: ChannelAttrs4,
        back_chan_attrs: ChannelAttrs4,
        cb_program: u32,
        sec_parms: Array<CallbackSecParms4, MAX_SHORT_ARRAY>,
    }
}

xdr_struct! {
    /// CREATE_SESSION4resok (RFC 8881 §18.36.2).
    pub struct CreateSessionResOk {
        sessionid: SessionId4,
        sequence: u32,
        flags: u32,
        fore_chan_attrs: ChannelAttrs4,
        back_chan_attrs: ChannelAttrs4,
    }
}

// ---- OPEN (RFC 8881 §18.16) ----

xdr_struct! {
    /// `open_owner4` (RFC 8881 §3.3.15).
    pub struct OpenOwner4 {
        clientid: u64,
        owner: OpaqueLimited,
    }
}

const RULE_CREATEHOW: &str =
    "RFC 8881 §18.16.1 (createmode4: UNCHECKED4, GUARDED4, EXCLUSIVE4, EXCLUSIVE4_1)";
const RULE_OPENFLAG: &str = "RFC 8881 §18.16.1 (opentype4: OPEN4_NOCREATE, OPEN4_CREATE)";
const RULE_CLAIM: &str = "RFC 8881 §18.16.1 (open_claim_type4 is 0..6)";
const RULE_DELEGATION: &str = "RFC 8881 §18.16.2, RFC 9754 §5 (open_delegation_type4 is 0..5)";
const RULE_LIMIT: &str = "RFC 8881 §18.16.2 (limit_by4: NFS_LIMIT_SIZE, NFS_LIMIT_BLOCKS)";

/// `createhow4` (RFC 8881 §18.16.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum CreateHow4 {
    Unchecked(Fattr4),
    Guarded(Fattr4),
    Exclusive(Verifier4),
    Exclusive41 { verf: Verifier4, attrs: Fattr4 },
}

/// `openflag4` (RFC 8881 §18.16.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum OpenFlag4 {
    NoCreate,
    Create(CreateHow4),
}

impl Xdr for OpenFlag4 {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Ok(match r.u32("openflag4.opentype")? {
            0 => OpenFlag4::NoCreate,
            1 => OpenFlag4::Create(match r.u32("createhow4.mode")? {
                0 => CreateHow4::Unchecked(Xdr::decode(r)?),
                1 => CreateHow4::Guarded(Xdr::decode(r)?),
                2 => CreateHow4::Exclusive(Xdr::decode(r)?),
                3 => CreateHow4::Exclusive41 {
                    verf: Xdr::decode(r)?,
                    attrs: Xdr::decode(r)?,
                },
                v => return Err(bad_arm("createhow4.mode", v, RULE_CREATEHOW)),
            }),
            v => return Err(bad_arm("openflag4.opentype", v, RULE_OPENFLAG)),
        })
    }
    fn encode(&self, w: &mut Writer) {
        match self {
            OpenFlag4::NoCreate => {
                w.u32(0);
            }
            OpenFlag4::Create(how) => {
                w.u32(1);
                match how {
                    CreateHow4::Unchecked(a) => {
                        w.u32(0);
                        a.encode(w);
                    }
                    CreateHow4::Guarded(a) => {
                        w.u32(1);
                        a.encode(w);
                    }
                    CreateHow4::Exclusive(v) => {
                        w.u32(2);
                        v.encode(w);
                    }
                    CreateHow4::Exclusive41 { verf, attrs } => {
                        w.u32(3);
                        verf.encode(w);
                        attrs.encode(w);
                    }
                }
            }
        }
    }
}

/// `open_claim4` (RFC 8881 §18.16.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum OpenClaim4 {
    Null(Component4),
    Previous(u32),
    DelegateCur {
        delegate_stateid: Stateid4,
        file: Component4,
    },
    DelegatePrev(Component4),
    Fh,
    DelegCurFh(Stateid4),
    DelegPrevFh,
}

impl OpenClaim4 {
    /// The claim type's name (RFC 8881 §18.16.1).
    pub fn name(&self) -> &'static str {
        match self {
            OpenClaim4::Null(_) => "CLAIM_NULL",
            OpenClaim4::Previous(_) => "CLAIM_PREVIOUS",
            OpenClaim4::DelegateCur { .. } => "CLAIM_DELEGATE_CUR",
            OpenClaim4::DelegatePrev(_) => "CLAIM_DELEGATE_PREV",
            OpenClaim4::Fh => "CLAIM_FH",
            OpenClaim4::DelegCurFh(_) => "CLAIM_DELEG_CUR_FH",
            OpenClaim4::DelegPrevFh => "CLAIM_DELEG_PREV_FH",
        }
    }
}

impl Xdr for OpenClaim4 {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Ok(match r.u32("open_claim4.claim")? {
            0 => OpenClaim4::Null(Xdr::decode(r)?),
            1 => OpenClaim4::Previous(r.u32("open_claim4.delegate_type")?),
            2 => OpenClaim4::DelegateCur {
                delegate_stateid: Xdr::decode(r)?,
                file: Xdr::decode(r)?,
            },
            3 => OpenClaim4::DelegatePrev(Xdr::decode(r)?),
            4 => OpenClaim4::Fh,
            5 => OpenClaim4::DelegCurFh(Xdr::decode(r)?),
            6 => OpenClaim4::DelegPrevFh,
            v => return Err(bad_arm("open_claim4.claim", v, RULE_CLAIM)),
        })
    }
    fn encode(&self, w: &mut Writer) {
        match self {
            OpenClaim4::Null(file) => {
                w.u32(0);
                file.encode(w);
            }
            OpenClaim4::Previous(t) => {
                w.u32(1).u32(*t);
            }
            OpenClaim4::DelegateCur {
                delegate_stateid,
                file,
            } => {
                w.u32(2);
                delegate_stateid.encode(w);
                file.encode(w);
            }
            OpenClaim4::DelegatePrev(file) => {
                w.u32(3);
                file.encode(w);
            }
            OpenClaim4::Fh => {
                w.u32(4);
            }
            OpenClaim4::DelegCurFh(s) => {
                w.u32(5);
                s.encode(w);
            }
            OpenClaim4::DelegPrevFh => {
                w.u32(6);
            }
        }
    }
}

xdr_struct! {
    /// OPEN4args (RFC 8881 §18.16.1).
    pub struct OpenArgs {
        seqid: u32,
        share_access: u32,
        share_deny: u32,
        owner: OpenOwner4,
        openhow: OpenFlag4,
        claim: OpenClaim4,
    }
}

xdr_struct! {
    /// `nfsace4` (RFC 8881 §6.2.1).
    pub struct Nfsace4 {
        acetype: u32,
        flag: u32,
        access_mask: u32,
        who: Component4,
    }
}

/// `nfs_space_limit4` (RFC 8881 §18.16.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum SpaceLimit4 {
    Size(u64),
    Blocks {
        num_blocks: u32,
        bytes_per_block: u32,
    },
}

impl Xdr for SpaceLimit4 {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Ok(match r.u32("nfs_space_limit4.limitby")? {
            1 => SpaceLimit4::Size(r.u64("nfs_space_limit4.filesize")?),
            2 => SpaceLimit4::Blocks {
                num_blocks: r.u32("nfs_modified_limit4.num_blocks")?,
                bytes_per_block: r.u32("nfs_modified_limit4.bytes_per_block")?,
            },
            v => return Err(bad_arm("nfs_space_limit4.limitby", v, RULE_LIMIT)),
        })
    }
    fn encode(&self, w: &mut Writer) {
        match self {
            SpaceLimit4::Size(s) => {
                w.u32(1).u64(*s);
            }
            SpaceLimit4::Blocks {
                num_blocks,
                bytes_per_block,
            } => {
                w.u32(2).u32(*num_blocks).u32(*bytes_per_block);
            }
        }
    }
}

/// `open_delegation4` (RFC 8881 §18.16.2; the two `*_ATTRS_DELEG` arms of RFC 9754 §5 share
/// the READ and WRITE shapes and are kept apart by `attrs_deleg`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum OpenDelegation4 {
    None,
    Read {
        attrs_deleg: bool,
        stateid: Stateid4,
        recall: bool,
        permissions: Nfsace4,
    },
    Write {
        attrs_deleg: bool,
        stateid: Stateid4,
        recall: bool,
        space_limit: SpaceLimit4,
        permissions: Nfsace4,
    },
    /// OPEN_DELEGATE_NONE_EXT: why, and for WND4_CONTENTION / WND4_RESOURCE a boolean.
    NoneExt {
        why: u32,
        will_push_or_signal: Option<bool>,
    },
}

impl OpenDelegation4 {
    /// The delegation type's name (RFC 8881 §18.16.2, RFC 9754 §5).
    pub fn name(&self) -> &'static str {
        match self {
            OpenDelegation4::None => "NONE",
            OpenDelegation4::Read {
                attrs_deleg: false, ..
            } => "READ",
            OpenDelegation4::Read { .. } => "READ_ATTRS",
            OpenDelegation4::Write {
                attrs_deleg: false, ..
            } => "WRITE",
            OpenDelegation4::Write { .. } => "WRITE_ATTRS",
            OpenDelegation4::NoneExt { .. } => "NONE_EXT",
        }
    }
}

impl Xdr for OpenDelegation4 {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let kind = r.u32("open_delegation4.delegation_type")?;
        Ok(match kind {
            0 => OpenDelegation4::None,
            1 | 4 => OpenDelegation4::Read {
                attrs_deleg: kind == 4,
                stateid: Xdr::decode(r)?,
                recall: r.bool("open_read_delegation4.recall")?,
                permissions: Xdr::decode(r)?,
            },
            2 | 5 => OpenDelegation4::Write {
                attrs_deleg: kind == 5,
                stateid: Xdr::decode(r)?,
                recall: r.bool("open_write_delegation4.recall")?,
                space_limit: Xdr::decode(r)?,
                permissions: Xdr::decode(r)?,
            },
            3 => {
                let why = r.u32("open_none_delegation4.ond_why")?;
                // WND4_CONTENTION (5) and WND4_RESOURCE (6) carry a boolean; the others void.
                let will_push_or_signal = match why {
                    5 | 6 => Some(r.bool("open_none_delegation4")?),
                    _ => None,
                };
                OpenDelegation4::NoneExt {
                    why,
                    will_push_or_signal,
                }
            }
            v => {
                return Err(bad_arm(
                    "open_delegation4.delegation_type",
                    v,
                    RULE_DELEGATION,
                ))
            }
        })
    }
    fn encode(&self, w: &mut Writer) {
        match self {
            OpenDelegation4::None => {
                w.u32(0);
            }
            OpenDelegation4::Read {
                attrs_deleg,
                stateid,
                recall,
                permissions,
            } => {
                w.u32(if *attrs_deleg { 4 } else { 1 });
                stateid.encode(w);
                w.bool(*recall);
                permissions.encode(w);
            }
            OpenDelegation4::Write {
                attrs_deleg,
                stateid,
                recall,
                space_limit,
                permissions,
            } => {
                w.u32(if *attrs_deleg { 5 } else { 2 });
                stateid.encode(w);
                w.bool(*recall);
                space_limit.encode(w);
                permissions.encode(w);
            }
            OpenDelegation4::NoneExt {
                why,
                will_push_or_signal,
            } => {
                w.u32(3).u32(*why);
                // The boolean's presence follows `why` on decode; encode it for those arms only.
                if matches!(why, 5 | 6) {
                    w.bool(will_push_or_signal.unwrap_or(false));
                }
            }
        }
    }
}

xdr_struct! {
    /// OPEN4resok (RFC 8881 §18.16.2).
    pub struct OpenResOk {
        stateid: Stateid4,
        cinfo: ChangeInfo4,
        rflags: u32,
        attrset: Bitmap4,
        delegation: OpenDelegation4,
    }
}

// ---- CLOSE, READ, WRITE, COMMIT (RFC 8881 §18.2, §18.22, §18.32, §18.3) ----

xdr_struct! {
    /// CLOSE4args (RFC 8881 §18.2.1).
    pub struct CloseArgs {
        seqid: u32,
        open_stateid: Stateid4,
    }
}

xdr_struct! {
    /// READ4args (RFC 8881 §18.22.1).
    pub struct ReadArgs {
        stateid: Stateid4,
        offset: u64,
        count: u32,
    }
}

/// READ4resok (RFC 8881 §18.22.2): `data` is DDP-eligible (RFC 8267 §6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadResOk {
    pub eof: bool,
    pub data: DdpData,
}

impl ReadResOk {
    /// Decode, the DDP-eligible item through `reduction` (RFC 8267 §6).
    pub fn decode_with(r: &mut Reader<'_>, reduction: &mut Reduction) -> Result<Self> {
        Ok(ReadResOk {
            eof: r.bool("READ4resok.eof")?,
            data: reduction.decode_item(r, MAX_DATA, ITEM_READ_DATA, RULE_DATA)?,
        })
    }
    /// Encode (the item's length word alone when it was moved: a reduced stream).
    pub fn encode(&self, w: &mut Writer) {
        w.bool(self.eof);
        self.data.encode(w);
    }
}

/// WRITE4args (RFC 8881 §18.32.1): `data` is DDP-eligible (RFC 8267 §6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WriteArgs {
    pub stateid: Stateid4,
    pub offset: u64,
    pub stable: StableHow4,
    pub data: DdpData,
}

impl WriteArgs {
    /// Decode, the DDP-eligible item through `reduction` (RFC 8267 §6).
    pub fn decode_with(r: &mut Reader<'_>, reduction: &mut Reduction) -> Result<Self> {
        Ok(WriteArgs {
            stateid: Xdr::decode(r)?,
            offset: r.u64("WRITE4args.offset")?,
            stable: Xdr::decode(r)?,
            data: reduction.decode_item(r, MAX_DATA, ITEM_WRITE_DATA, RULE_DATA)?,
        })
    }
    /// Encode (the data's length word alone when it was moved: a reduced stream).
    pub fn encode(&self, w: &mut Writer) {
        self.stateid.encode(w);
        w.u64(self.offset);
        self.stable.encode(w);
        self.data.encode(w);
    }
}

xdr_struct! {
    /// WRITE4resok (RFC 8881 §18.32.2).
    pub struct WriteResOk {
        count: u32,
        committed: StableHow4,
        writeverf: Verifier4,
    }
}

xdr_struct! {
    /// COMMIT4args (RFC 8881 §18.3.1).
    pub struct CommitArgs {
        offset: u64,
        count: u32,
    }
}

// ---- CREATE, RENAME, READDIR (RFC 8881 §18.4, §18.26, §18.23) ----

/// `createtype4` (RFC 8881 §18.4.1): the NF4LNK arm's link text is DDP-eligible (RFC 8267 §6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum CreateType4 {
    Link(DdpData),
    Block(Specdata4),
    Char(Specdata4),
    /// NF4DIR, NF4SOCK, NF4FIFO and the `default: void` arm: the type alone.
    Other(u32),
}

impl CreateType4 {
    /// The file type's name (RFC 8881 §3.3.5 `nfs_ftype4`).
    pub fn name(&self) -> &'static str {
        match self {
            CreateType4::Link(_) => "NF4LNK",
            CreateType4::Block(_) => "NF4BLK",
            CreateType4::Char(_) => "NF4CHR",
            CreateType4::Other(2) => "NF4DIR",
            CreateType4::Other(6) => "NF4SOCK",
            CreateType4::Other(7) => "NF4FIFO",
            CreateType4::Other(_) => "NF4(other)",
        }
    }
}

/// CREATE4args (RFC 8881 §18.4.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreateArgs {
    pub objtype: CreateType4,
    pub objname: Component4,
    pub createattrs: Fattr4,
}

impl CreateArgs {
    /// Decode, the DDP-eligible item through `reduction` (RFC 8267 §6).
    pub fn decode_with(r: &mut Reader<'_>, reduction: &mut Reduction) -> Result<Self> {
        let objtype = match r.u32("createtype4.type")? {
            5 => CreateType4::Link(reduction.decode_item(
                r,
                MAX_LINKTEXT,
                ITEM_CREATE_LINKDATA,
                RULE_LINKTEXT,
            )?),
            3 => CreateType4::Block(Xdr::decode(r)?),
            4 => CreateType4::Char(Xdr::decode(r)?),
            other => CreateType4::Other(other),
        };
        Ok(CreateArgs {
            objtype,
            objname: Xdr::decode(r)?,
            createattrs: Xdr::decode(r)?,
        })
    }
    /// Encode (the link text's length word alone when it was moved: a reduced stream).
    pub fn encode(&self, w: &mut Writer) {
        match &self.objtype {
            CreateType4::Link(data) => {
                w.u32(5);
                data.encode(w);
            }
            CreateType4::Block(d) => {
                w.u32(3);
                d.encode(w);
            }
            CreateType4::Char(d) => {
                w.u32(4);
                d.encode(w);
            }
            CreateType4::Other(t) => {
                w.u32(*t);
            }
        }
        self.objname.encode(w);
        self.createattrs.encode(w);
    }
}

xdr_struct! {
    /// CREATE4resok (RFC 8881 §18.4.2).
    pub struct CreateResOk {
        cinfo: ChangeInfo4,
        attrset: Bitmap4,
    }
}

xdr_struct! {
    /// RENAME4args (RFC 8881 §18.26.1).
    pub struct RenameArgs {
        oldname: Component4,
        newname: Component4,
    }
}

xdr_struct! {
    /// RENAME4resok (RFC 8881 §18.26.2).
    pub struct RenameResOk {
        source_cinfo: ChangeInfo4,
        target_cinfo: ChangeInfo4,
    }
}

xdr_struct! {
    /// READDIR4args (RFC 8881 §18.23.1).
    pub struct ReaddirArgs {
        cookie: u64,
        cookieverf: Verifier4,
        dircount: u32,
        maxcount: u32,
        attr_request: Bitmap4,
    }
}

xdr_struct! {
    /// `entry4` (RFC 8881 §18.23.2), without its `nextentry` link.
    pub struct Entry4 {
        cookie: u64,
        name: Component4,
        attrs: Fattr4,
    }
}

/// READDIR4resok (RFC 8881 §18.23.2): the entry list is an XDR optional-data chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReaddirResOk {
    pub cookieverf: Verifier4,
    pub entries: Vec<Entry4>,
    pub eof: bool,
}

impl Xdr for ReaddirResOk {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Ok(ReaddirResOk {
            cookieverf: Xdr::decode(r)?,
            entries: r.list(MAX_DIR_ENTRIES, "dirlist4.entries", Entry4::decode)?,
            eof: r.bool("dirlist4.eof")?,
        })
    }
    fn encode(&self, w: &mut Writer) {
        self.cookieverf.encode(w);
        w.list(&self.entries, |w, e| e.encode(w));
        w.bool(self.eof);
    }
}

// ---- SECINFO_NO_NAME (RFC 8881 §18.45, result of §18.29) ----

xdr_struct! {
    /// `rpcsec_gss_info` (RFC 8881 §18.29.2).
    pub struct RpcsecGssInfo {
        oid: SecOpaque,
        qop: u32,
        service: u32,
    }
}

/// `secinfo4` (RFC 8881 §18.29.2): RPCSEC_GSS carries its mechanism, other flavors nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Secinfo4 {
    RpcsecGss(RpcsecGssInfo),
    Flavor(u32),
}

impl Xdr for Secinfo4 {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Ok(match r.u32("secinfo4.flavor")? {
            6 => Secinfo4::RpcsecGss(Xdr::decode(r)?),
            flavor => Secinfo4::Flavor(flavor),
        })
    }
    fn encode(&self, w: &mut Writer) {
        match self {
            Secinfo4::RpcsecGss(info) => {
                w.u32(6);
                info.encode(w);
            }
            Secinfo4::Flavor(f) => {
                w.u32(*f);
            }
        }
    }
}

/// READLINK4resok (RFC 8881 §18.24.2): the link text is DDP-eligible (RFC 8267 §6).
pub(crate) fn decode_readlink(r: &mut Reader<'_>, reduction: &mut Reduction) -> Result<DdpData> {
    reduction.decode_item(r, MAX_LINKTEXT, ITEM_READLINK_LINK, RULE_LINKTEXT)
}
