//! NFSv4.1 data types shared by the COMPOUND operations (RFC 8881 §3.2 and its XDR): file
//! handles, names, bitmaps, attributes as opaque, stateids, session ids, change info, status.

use serde::{Serialize, Serializer};

use crate::error::{DecodeError, Result};
use crate::nfs3::{
    bounded_bytes, serialize_bytes_as_text, serialize_hex, serialize_verifier, xdr_struct, Wire,
};
use crate::xdr::{Reader, Writer, Xdr};

/// RFC 8881 §3.2 (constants): `NFS4_FHSIZE = 128`, the largest file handle.
pub const NFS4_FHSIZE: u32 = 128;
/// RFC 8881 §3.2 (constants): `NFS4_OPAQUE_LIMIT = 1024` (client and server owner ids, scope).
pub const NFS4_OPAQUE_LIMIT: u32 = 1024;
/// Decoder limit for `component4` and `utf8str_*` names (RFC 8881 leaves them unbounded; Linux
/// NFS4_MAXNAMLEN is 255).
pub const MAX_NAME: u32 = 1024;
/// Decoder limit for `linktext4` (RFC 8881 leaves it unbounded; Linux PATH_MAX is 4096).
pub const MAX_LINKTEXT: u32 = 4096;
/// Decoder limit on `bitmap4` words (RFC 8881 §3.3.7 leaves it unbounded; the attributes defined
/// through NFSv4.2 fit in 3 words).
pub const MAX_BITMAP_WORDS: u32 = 8;
/// Decoder limit on `attrlist4` (an ACL can be large; bounded like the data of READ and WRITE).
pub const MAX_ATTR_VALS: u32 = 1 << 20;
/// Decoder limit on the short arrays of the session operations (GSS handles, security
/// parameters, stateids to test).
pub const MAX_SHORT_ARRAY: u32 = 1024;

bounded_bytes!(
    /// `nfs_fh4` (RFC 8881 §3.2, §4): at most NFS4_FHSIZE = 128 bytes; serialised as hex.
    FileHandle4,
    NFS4_FHSIZE,
    "RFC 8881 §4.2 (nfs_fh4 opaque<NFS4_FHSIZE=128>)",
    serialize_hex
);
bounded_bytes!(
    /// `component4` / `utf8str_cs` (RFC 8881 §3.2), bounded by [`MAX_NAME`].
    Component4,
    MAX_NAME,
    "RFC 8881 §3.2 (component4; decoder limit 1024)",
    serialize_bytes_as_text
);
bounded_bytes!(
    /// An opaque of at most NFS4_OPAQUE_LIMIT bytes (`co_ownerid`, `so_major_id`,
    /// `eir_server_scope`, `open_owner4.owner`); serialised as hex.
    OpaqueLimited,
    NFS4_OPAQUE_LIMIT,
    "RFC 8881 §3.2 (opaque<NFS4_OPAQUE_LIMIT=1024>)",
    serialize_hex
);
bounded_bytes!(
    /// `attrlist4` (RFC 8881 §3.3.8): the attribute values, kept opaque.
    AttrVals,
    MAX_ATTR_VALS,
    "RFC 8881 §3.3.8 (attrlist4; decoder limit 1 MiB)",
    serialize_hex
);
bounded_bytes!(
    /// `sec_oid4` and `gsshandle4_t` (RFC 8881 §3.2, §18.36): GSS mechanism OIDs and handles.
    SecOpaque,
    NFS4_OPAQUE_LIMIT,
    "RFC 8881 §18.35 (sec_oid4 / gsshandle4_t; decoder limit 1024)",
    serialize_hex
);
bounded_bytes!(
    /// `authsys_parms.machinename` (RFC 5531 §14: `string machinename<255>`).
    MachineName,
    255u32,
    "RFC 5531 §14 (authsys_parms machinename<255>)",
    serialize_bytes_as_text
);

/// An XDR counted array of at most `MAX` elements (RFC 4506 §4.13), each at least 4 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize)]
pub struct Array<T, const MAX: u32>(pub Vec<T>);

impl<T: Xdr, const MAX: u32> Xdr for Array<T, MAX> {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        r.array(MAX, 4, "array", T::decode).map(Array)
    }
    fn encode(&self, w: &mut Writer) {
        w.array(&self.0, |w, v| v.encode(w));
    }
}

/// A plain `uint32_t` as an [`Xdr`] item, for arrays of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(transparent)]
pub struct Uint32(pub u32);

impl Xdr for Uint32 {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        r.u32("uint32_t").map(Uint32)
    }
    fn encode(&self, w: &mut Writer) {
        w.u32(self.0);
    }
}

/// `bitmap4` (RFC 8881 §3.3.7): attribute (or operation) numbers as bits, word 0 first.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(transparent)]
pub struct Bitmap4(pub Vec<u32>);

impl Bitmap4 {
    /// Whether bit `n` is set.
    pub fn contains(&self, n: u32) -> bool {
        self.0
            .get((n / 32) as usize)
            .is_some_and(|word| word & (1 << (n % 32)) != 0)
    }

    /// How many bits are set.
    pub fn count(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }
}

impl Xdr for Bitmap4 {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let n = r.u32("bitmap4")?;
        if n > MAX_BITMAP_WORDS {
            return Err(DecodeError::LengthOverLimit {
                field: "bitmap4",
                length: n.into(),
                limit: MAX_BITMAP_WORDS.into(),
                rule: "RFC 8881 §3.3.7 (bitmap4; decoder limit 8 words)",
            });
        }
        let mut words = Vec::with_capacity(n as usize);
        for _ in 0..n {
            words.push(r.u32("bitmap4")?);
        }
        Ok(Bitmap4(words))
    }
    fn encode(&self, w: &mut Writer) {
        w.array(&self.0, |w, v| {
            w.u32(*v);
        });
    }
}

xdr_struct! {
    /// `fattr4` (RFC 8881 §3.3.9): the mask decoded, the values kept opaque.
    pub struct Fattr4 {
        attrmask: Bitmap4,
        attr_vals: AttrVals,
    }
}

xdr_struct! {
    /// `change_info4` (RFC 8881 §3.3.10).
    pub struct ChangeInfo4 {
        atomic: bool,
        before: u64,
        after: u64,
    }
}

xdr_struct! {
    /// `nfstime4` (RFC 8881 §3.3.1): `int64_t seconds` (kept as its bits), nanoseconds.
    pub struct Nfstime4 {
        seconds: u64,
        nseconds: u32,
    }
}

xdr_struct! {
    /// `specdata4` (RFC 8881 §3.3.5): device numbers of a block or character special file.
    pub struct Specdata4 {
        specdata1: u32,
        specdata2: u32,
    }
}

/// `verifier4` (RFC 8881 §3.2): 8 opaque bytes; serialised as hex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct Verifier4(#[serde(serialize_with = "serialize_verifier")] pub [u8; 8]);

impl Xdr for Verifier4 {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        <[u8; 8]>::get(r, "verifier4").map(Verifier4)
    }
    fn encode(&self, w: &mut Writer) {
        w.opaque_fixed(&self.0);
    }
}

/// `stateid4` (RFC 8881 §3.3.12): a sequence id and 12 opaque bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Stateid4 {
    pub seqid: u32,
    pub other: [u8; 12],
}

impl Xdr for Stateid4 {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let seqid = r.u32("stateid4.seqid")?;
        let mut other = [0u8; 12];
        other.copy_from_slice(r.opaque_fixed(12, "stateid4.other")?);
        Ok(Stateid4 { seqid, other })
    }
    fn encode(&self, w: &mut Writer) {
        w.u32(self.seqid).opaque_fixed(&self.other);
    }
}

impl Serialize for Stateid4 {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&format!(
            "{}:{}",
            self.seqid,
            crate::hex::encode(&self.other)
        ))
    }
}

/// `sessionid4` (RFC 8881 §3.2: `opaque sessionid4[NFS4_SESSIONID_SIZE = 16]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SessionId4(pub [u8; 16]);

impl Xdr for SessionId4 {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let mut id = [0u8; 16];
        id.copy_from_slice(r.opaque_fixed(16, "sessionid4")?);
        Ok(SessionId4(id))
    }
    fn encode(&self, w: &mut Writer) {
        w.opaque_fixed(&self.0);
    }
}

impl Serialize for SessionId4 {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&crate::hex::encode(&self.0))
    }
}

/// `nfsstat4` (RFC 8881 §15.1): kept as its number, so a status added by a later minor version
/// still decodes; [`Nfsstat4::name`] spells the known ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Nfsstat4(pub u32);

impl Nfsstat4 {
    /// `NFS4_OK`.
    pub const OK: Nfsstat4 = Nfsstat4(0);

    /// Whether this is NFS4_OK.
    pub fn is_ok(self) -> bool {
        self == Nfsstat4::OK
    }

    /// The name as RFC 8881 §15.1 (and RFC 7862 §11.1 for NFSv4.2) spells it, or
    /// `NFS4ERR(<n>)` for a value neither defines.
    pub fn name(self) -> std::borrow::Cow<'static, str> {
        match self.known_name() {
            Some(name) => name.into(),
            None => format!("NFS4ERR({})", self.0).into(),
        }
    }
}

impl Nfsstat4 {
    /// The name, when RFC 8881 §15.1 or RFC 7862 §11.1 defines the value.
    pub fn known_name(self) -> Option<&'static str> {
        status_name(self.0)
    }
}

impl Xdr for Nfsstat4 {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        r.u32("nfsstat4").map(Nfsstat4)
    }
    fn encode(&self, w: &mut Writer) {
        w.u32(self.0);
    }
}

impl Serialize for Nfsstat4 {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

fn status_name(value: u32) -> Option<&'static str> {
    Some(match value {
        0 => "NFS4_OK",
        1 => "NFS4ERR_PERM",
        2 => "NFS4ERR_NOENT",
        5 => "NFS4ERR_IO",
        6 => "NFS4ERR_NXIO",
        13 => "NFS4ERR_ACCESS",
        17 => "NFS4ERR_EXIST",
        18 => "NFS4ERR_XDEV",
        20 => "NFS4ERR_NOTDIR",
        21 => "NFS4ERR_ISDIR",
        22 => "NFS4ERR_INVAL",
        27 => "NFS4ERR_FBIG",
        28 => "NFS4ERR_NOSPC",
        30 => "NFS4ERR_ROFS",
        31 => "NFS4ERR_MLINK",
        63 => "NFS4ERR_NAMETOOLONG",
        66 => "NFS4ERR_NOTEMPTY",
        69 => "NFS4ERR_DQUOT",
        70 => "NFS4ERR_STALE",
        10001 => "NFS4ERR_BADHANDLE",
        10003 => "NFS4ERR_BAD_COOKIE",
        10004 => "NFS4ERR_NOTSUPP",
        10005 => "NFS4ERR_TOOSMALL",
        10006 => "NFS4ERR_SERVERFAULT",
        10007 => "NFS4ERR_BADTYPE",
        10008 => "NFS4ERR_DELAY",
        10009 => "NFS4ERR_SAME",
        10010 => "NFS4ERR_DENIED",
        10011 => "NFS4ERR_EXPIRED",
        10012 => "NFS4ERR_LOCKED",
        10013 => "NFS4ERR_GRACE",
        10014 => "NFS4ERR_FHEXPIRED",
        10015 => "NFS4ERR_SHARE_DENIED",
        10016 => "NFS4ERR_WRONGSEC",
        10017 => "NFS4ERR_CLID_INUSE",
        10018 => "NFS4ERR_RESOURCE",
        10019 => "NFS4ERR_MOVED",
        10020 => "NFS4ERR_NOFILEHANDLE",
        10021 => "NFS4ERR_MINOR_VERS_MISMATCH",
        10022 => "NFS4ERR_STALE_CLIENTID",
        10023 => "NFS4ERR_STALE_STATEID",
        10024 => "NFS4ERR_OLD_STATEID",
        10025 => "NFS4ERR_BAD_STATEID",
        10026 => "NFS4ERR_BAD_SEQID",
        10027 => "NFS4ERR_NOT_SAME",
        10028 => "NFS4ERR_LOCK_RANGE",
        10029 => "NFS4ERR_SYMLINK",
        10030 => "NFS4ERR_RESTOREFH",
        10031 => "NFS4ERR_LEASE_MOVED",
        10032 => "NFS4ERR_ATTRNOTSUPP",
        10033 => "NFS4ERR_NO_GRACE",
        10034 => "NFS4ERR_RECLAIM_BAD",
        10035 => "NFS4ERR_RECLAIM_CONFLICT",
        10036 => "NFS4ERR_BADXDR",
        10037 => "NFS4ERR_LOCKS_HELD",
        10038 => "NFS4ERR_OPENMODE",
        10039 => "NFS4ERR_BADOWNER",
        10040 => "NFS4ERR_BADCHAR",
        10041 => "NFS4ERR_BADNAME",
        10042 => "NFS4ERR_BAD_RANGE",
        10043 => "NFS4ERR_LOCK_NOTSUPP",
        10044 => "NFS4ERR_OP_ILLEGAL",
        10045 => "NFS4ERR_DEADLOCK",
        10046 => "NFS4ERR_FILE_OPEN",
        10047 => "NFS4ERR_ADMIN_REVOKED",
        10048 => "NFS4ERR_CB_PATH_DOWN",
        10049 => "NFS4ERR_BADIOMODE",
        10050 => "NFS4ERR_BADLAYOUT",
        10051 => "NFS4ERR_BAD_SESSION_DIGEST",
        10052 => "NFS4ERR_BADSESSION",
        10053 => "NFS4ERR_BADSLOT",
        10054 => "NFS4ERR_COMPLETE_ALREADY",
        10055 => "NFS4ERR_CONN_NOT_BOUND_TO_SESSION",
        10056 => "NFS4ERR_DELEG_ALREADY_WANTED",
        10057 => "NFS4ERR_BACK_CHAN_BUSY",
        10058 => "NFS4ERR_LAYOUTTRYLATER",
        10059 => "NFS4ERR_LAYOUTUNAVAILABLE",
        10060 => "NFS4ERR_NOMATCHING_LAYOUT",
        10061 => "NFS4ERR_RECALLCONFLICT",
        10062 => "NFS4ERR_UNKNOWN_LAYOUTTYPE",
        10063 => "NFS4ERR_SEQ_MISORDERED",
        10064 => "NFS4ERR_SEQUENCE_POS",
        10065 => "NFS4ERR_REQ_TOO_BIG",
        10066 => "NFS4ERR_REP_TOO_BIG",
        10067 => "NFS4ERR_REP_TOO_BIG_TO_CACHE",
        10068 => "NFS4ERR_RETRY_UNCACHED_REP",
        10069 => "NFS4ERR_UNSAFE_COMPOUND",
        10070 => "NFS4ERR_TOO_MANY_OPS",
        10071 => "NFS4ERR_OP_NOT_IN_SESSION",
        10072 => "NFS4ERR_HASH_ALG_UNSUPP",
        10074 => "NFS4ERR_CLIENTID_BUSY",
        10075 => "NFS4ERR_PNFS_IO_HOLE",
        10076 => "NFS4ERR_SEQ_FALSE_RETRY",
        10077 => "NFS4ERR_BAD_HIGH_SLOT",
        10078 => "NFS4ERR_DEADSESSION",
        10079 => "NFS4ERR_ENCR_ALG_UNSUPP",
        10080 => "NFS4ERR_PNFS_NO_LAYOUT",
        10081 => "NFS4ERR_NOT_ONLY_OP",
        10082 => "NFS4ERR_WRONG_CRED",
        10083 => "NFS4ERR_WRONG_TYPE",
        10084 => "NFS4ERR_DIRDELEG_UNAVAIL",
        10085 => "NFS4ERR_REJECT_DELEG",
        10086 => "NFS4ERR_RETURNCONFLICT",
        10087 => "NFS4ERR_DELEG_REVOKED",
        10088 => "NFS4ERR_PARTNER_NOTSUPP",
        10089 => "NFS4ERR_PARTNER_NO_AUTH",
        10090 => "NFS4ERR_UNION_NOTSUPP",
        10091 => "NFS4ERR_OFFLOAD_DENIED",
        10092 => "NFS4ERR_WRONG_LFS",
        10093 => "NFS4ERR_BADLABEL",
        10094 => "NFS4ERR_OFFLOAD_NO_REQS",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmaps_are_bounded_and_answer_bits() {
        let b = Bitmap4(vec![0b1010, 1]);
        assert!(b.contains(1) && b.contains(3) && b.contains(32));
        assert!(!b.contains(0) && !b.contains(64));
        assert_eq!(b.count(), 3);
        assert_eq!(Bitmap4::from_bytes(&b.to_bytes()).unwrap(), b);
        let err = Bitmap4::from_bytes(&[0, 0, 0, 9]).unwrap_err();
        assert!(matches!(
            err,
            DecodeError::LengthOverLimit { length: 9, .. }
        ));
        assert!(err.rule().starts_with("RFC 8881 §3.3.7"));
    }

    #[test]
    fn statuses_keep_unknown_values() {
        assert_eq!(Nfsstat4(10063).name(), "NFS4ERR_SEQ_MISORDERED");
        assert_eq!(Nfsstat4(99999).name(), "NFS4ERR(99999)");
        let s = Stateid4 {
            seqid: 1,
            other: [7; 12],
        };
        assert_eq!(Stateid4::from_bytes(&s.to_bytes()).unwrap(), s);
        assert!(
            FileHandle4::from_bytes(&Writer::new().opaque_var(&[0; 129]).clone().into_bytes())
                .is_err()
        );
    }
}
