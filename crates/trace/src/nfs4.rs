//! NFSv4.x COMPOUND by operation names (RFC 7530 §16.2, RFC 8881 §16.2): each operation's
//! arguments (or results) are skipped by their XDR shape so the next operation can be named.
//!
//! Only the shapes of the common operations are known; at the first operation whose shape is
//! not, naming stops and the number of operations left unnamed is reported. Every count and
//! length is bounded by the [`Reader`] (and by [`MAX_OPS`]), so no input loops or allocates
//! without limit.

use wire::{DecodeError, Reader};

/// Most operations named from one COMPOUND.
pub const MAX_OPS: u32 = 256;
const MAX_OPAQUE: u32 = 1 << 20;
const MAX_BITMAP_WORDS: u32 = 64;
const MAX_ARRAY: u32 = 1024;

/// The operations of one COMPOUND call or reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompoundOps {
    pub minor_version: Option<u32>,
    /// COMPOUND4res.status for a reply.
    pub status: Option<u32>,
    /// Named operations, in order; for a reply each with its status.
    pub ops: Vec<(&'static str, Option<u32>)>,
    /// Operations after the first one whose shape we do not know.
    pub unnamed: u32,
}

impl CompoundOps {
    /// "SEQUENCE PUTFH READ" (reply: "SEQUENCE PUTFH READ:NFS4ERR(10008)"), plus "+N" unnamed.
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = self
            .ops
            .iter()
            .map(|(name, status)| match status {
                Some(0) | None => (*name).to_string(),
                Some(s) => format!("{name}:{}", status_name(*s)),
            })
            .collect();
        if self.unnamed > 0 {
            parts.push(format!("+{}", self.unnamed));
        }
        parts.join(" ")
    }
}

/// `nfsstat4` name for the few values worth spelling out; others numerically.
pub fn status_name(status: u32) -> String {
    match status {
        0 => "NFS4_OK".into(),
        2 => "NFS4ERR_NOENT".into(),
        13 => "NFS4ERR_ACCESS".into(),
        10008 => "NFS4ERR_DELAY".into(),
        10052 => "NFS4ERR_BADSESSION".into(),
        10063 => "NFS4ERR_SEQ_MISORDERED".into(),
        other => format!("NFS4ERR({other})"),
    }
}

/// Operation names (RFC 8881 §16.2 `nfs_opnum4`).
pub fn op_name(op: u32) -> &'static str {
    const NAMES: [&str; 59] = [
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
    ];
    match NAMES.get(op as usize) {
        Some(name) if !name.is_empty() => name,
        _ => match op {
            10044 => "ILLEGAL",
            _ => "OP_UNKNOWN",
        },
    }
}

fn opaque(r: &mut Reader<'_>, field: &'static str) -> Result<(), DecodeError> {
    r.opaque_var(MAX_OPAQUE, field).map(|_| ())
}

fn words(r: &mut Reader<'_>, n: usize, field: &'static str) -> Result<(), DecodeError> {
    r.take(n * 4, field).map(|_| ())
}

fn stateid(r: &mut Reader<'_>) -> Result<(), DecodeError> {
    words(r, 4, "stateid4")
}

fn bitmap(r: &mut Reader<'_>) -> Result<(), DecodeError> {
    let n = r.count(MAX_BITMAP_WORDS, 4, "bitmap4")?;
    words(r, n, "bitmap4")
}

fn fattr(r: &mut Reader<'_>) -> Result<(), DecodeError> {
    bitmap(r)?;
    opaque(r, "fattr4.attr_vals")
}

fn change_info(r: &mut Reader<'_>) -> Result<(), DecodeError> {
    words(r, 5, "change_info4")
}

fn secinfo_list(r: &mut Reader<'_>) -> Result<(), DecodeError> {
    let n = r.count(MAX_ARRAY, 4, "SECINFO4resok")?;
    for _ in 0..n {
        // RPCSEC_GSS (6) carries the mechanism OID, QOP and service.
        if r.u32("secinfo4.flavor")? == 6 {
            opaque(r, "rpcsec_gss_info.oid")?;
            words(r, 2, "rpcsec_gss_info")?;
        }
    }
    Ok(())
}

/// Skip one operation's arguments; `Ok(false)` when its shape is not known.
fn skip_args(op: u32, r: &mut Reader<'_>) -> Result<bool, DecodeError> {
    match op {
        10 | 16 | 23 | 24 | 27 | 31 | 32 => {} // GETFH LOOKUPP PUTPUBFH PUTROOTFH READLINK RESTOREFH SAVEFH
        3 | 19 | 52 | 58 => words(r, 1, "args")?, // ACCESS OPENATTR SECINFO_NO_NAME RECLAIM_COMPLETE
        7 | 30 | 57 => words(r, 2, "clientid4")?, // DELEGPURGE RENEW DESTROY_CLIENTID
        5 => words(r, 3, "COMMIT4args")?,         // offset, count
        4 => words(r, 5, "CLOSE4args")?,          // seqid, stateid
        8 | 45 => stateid(r)?,                    // DELEGRETURN FREE_STATEID
        9 => bitmap(r)?,                          // GETATTR
        11 | 15 | 28 | 33 => opaque(r, "component4")?, // LINK LOOKUP REMOVE SECINFO
        29 => {
            opaque(r, "RENAME4args.oldname")?;
            opaque(r, "RENAME4args.newname")?;
        }
        17 | 37 => fattr(r)?, // NVERIFY VERIFY
        20 => words(r, 5, "OPEN_CONFIRM4args")?,
        21 => words(r, 7, "OPEN_DOWNGRADE4args")?,
        22 => opaque(r, "PUTFH4args.object")?,
        25 => words(r, 7, "READ4args")?, // stateid, offset, count
        26 => {
            words(r, 8, "READDIR4args")?; // cookie, verifier, dircount, maxcount
            bitmap(r)?;
        }
        34 => {
            stateid(r)?;
            fattr(r)?;
        }
        36 => words(r, 4, "SETCLIENTID_CONFIRM4args")?,
        38 => {
            words(r, 8, "WRITE4args")?; // stateid, offset, stable
            opaque(r, "WRITE4args.data")?;
        }
        39 => {
            words(r, 2, "lock_owner4.clientid")?;
            opaque(r, "lock_owner4.owner")?;
        }
        41 => words(r, 6, "BIND_CONN_TO_SESSION4args")?,
        44 => words(r, 4, "sessionid4")?,
        53 => words(r, 8, "SEQUENCE4args")?, // sessionid, seq, slot, highest, cachethis
        55 => {
            let n = r.count(MAX_ARRAY, 16, "TEST_STATEID4args")?;
            words(r, n * 4, "TEST_STATEID4args")?;
        }
        6 => {
            match r.u32("createtype4")? {
                5 => opaque(r, "createtype4.linkdata")?, // NF4LNK
                3 | 4 => words(r, 2, "specdata4")?,      // NF4BLK NF4CHR
                _ => {}
            }
            opaque(r, "CREATE4args.objname")?;
            fattr(r)?;
        }
        18 => {
            words(r, 3, "OPEN4args")?; // seqid, share_access, share_deny
            words(r, 2, "open_owner4.clientid")?;
            opaque(r, "open_owner4.owner")?;
            if r.u32("openflag4")? == 1 {
                match r.u32("createhow4")? {
                    0 | 1 => fattr(r)?,
                    2 => words(r, 2, "verifier4")?,
                    3 => {
                        words(r, 2, "verifier4")?;
                        fattr(r)?;
                    }
                    _ => return Ok(false),
                }
            }
            match r.u32("open_claim4")? {
                0 | 4 => opaque(r, "open_claim4.file")?,
                1 => words(r, 1, "open_claim4.delegate_type")?,
                2 => {
                    stateid(r)?;
                    opaque(r, "open_claim4.file")?;
                }
                3 | 5 | 7 => {}
                6 => stateid(r)?,
                _ => return Ok(false),
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Skip one operation's results after its status; `Ok(false)` when the shape is not known.
fn skip_results(op: u32, status: u32, r: &mut Reader<'_>) -> Result<bool, DecodeError> {
    if op == 34 {
        bitmap(r)?; // SETATTR4res.attrsset is there whatever the status
        return Ok(true);
    }
    if status != 0 {
        // LOCK/LOCKT denied carry LOCK4denied; every other failure is void.
        return Ok(!matches!(op, 12 | 13));
    }
    match op {
        7 | 8 | 15 | 16 | 17 | 19 | 22 | 23 | 24 | 30 | 31 | 32 | 36 | 37 | 39 | 44 | 45 | 57
        | 58 => {}
        3 => words(r, 2, "ACCESS4resok")?,
        4 | 20 | 21 => stateid(r)?,
        5 => words(r, 2, "verifier4")?,
        6 => {
            change_info(r)?;
            bitmap(r)?;
        }
        9 => fattr(r)?,
        10 | 27 => opaque(r, "nfs_fh4")?,
        11 | 28 => change_info(r)?,
        29 => words(r, 10, "RENAME4resok")?,
        25 => {
            words(r, 1, "READ4resok.eof")?;
            opaque(r, "READ4resok.data")?;
        }
        26 => {
            words(r, 2, "verifier4")?;
            let mut entries = 0u32;
            while r.bool("entry4")? {
                entries += 1;
                if entries > MAX_ARRAY * 64 {
                    return Ok(false);
                }
                words(r, 2, "entry4.cookie")?;
                opaque(r, "entry4.name")?;
                fattr(r)?;
            }
            words(r, 1, "dirlist4.eof")?;
        }
        33 | 52 => secinfo_list(r)?,
        38 => words(r, 4, "WRITE4resok")?,
        41 => words(r, 6, "BIND_CONN_TO_SESSION4resok")?,
        53 => words(r, 9, "SEQUENCE4resok")?,
        55 => {
            let n = r.count(MAX_ARRAY, 4, "TEST_STATEID4resok")?;
            words(r, n, "TEST_STATEID4resok")?;
        }
        18 => {
            stateid(r)?;
            change_info(r)?;
            words(r, 1, "OPEN4resok.rflags")?;
            bitmap(r)?;
            match r.u32("open_delegation_type4")? {
                0 => {}
                delegation @ (1 | 2) => {
                    stateid(r)?;
                    words(r, 1, "open_delegation4.recall")?;
                    if delegation == 2 {
                        // nfs_space_limit4: NFS_LIMIT_SIZE (1) a size, NFS_LIMIT_BLOCKS (2) two words.
                        match r.u32("limit_by4")? {
                            1 | 2 => words(r, 2, "nfs_space_limit4")?,
                            _ => return Ok(false),
                        }
                    }
                    words(r, 3, "nfsace4")?;
                    opaque(r, "nfsace4.who")?;
                }
                3 => {
                    // OPEN_DELEGATE_NONE_EXT: why, and for two reasons a boolean.
                    let why = r.u32("why_no_delegation4")?;
                    if why == 5 || why == 6 {
                        words(r, 1, "ond_server_will_push_deleg")?;
                    }
                }
                _ => return Ok(false),
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Name the operations of a COMPOUND4args (after the RPC call header).
pub fn call_ops(body: &[u8]) -> Result<CompoundOps, DecodeError> {
    let mut r = Reader::new(body);
    r.opaque_var(MAX_OPAQUE, "COMPOUND4args.tag")?;
    let minor = r.u32("COMPOUND4args.minorversion")?;
    let count = r.count(MAX_OPS, 4, "COMPOUND4args.argarray")? as u32;
    let mut out = CompoundOps {
        minor_version: Some(minor),
        status: None,
        ops: Vec::new(),
        unnamed: 0,
    };
    for i in 0..count {
        let op = r.u32("nfs_argop4.argop")?;
        out.ops.push((op_name(op), None));
        if !skip_args(op, &mut r)? {
            out.unnamed = count - i - 1;
            break;
        }
    }
    Ok(out)
}

/// Name the operations of a COMPOUND4res (after the RPC reply header).
pub fn reply_ops(body: &[u8]) -> Result<CompoundOps, DecodeError> {
    let mut r = Reader::new(body);
    let status = r.u32("COMPOUND4res.status")?;
    r.opaque_var(MAX_OPAQUE, "COMPOUND4res.tag")?;
    let count = r.count(MAX_OPS, 8, "COMPOUND4res.resarray")? as u32;
    let mut out = CompoundOps {
        minor_version: None,
        status: Some(status),
        ops: Vec::new(),
        unnamed: 0,
    };
    for i in 0..count {
        let op = r.u32("nfs_resop4.resop")?;
        let op_status = r.u32("nfs_resop4.status")?;
        out.ops.push((op_name(op), Some(op_status)));
        if !skip_results(op, op_status, &mut r)? {
            out.unnamed = count - i - 1;
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::Writer;

    #[test]
    fn names_a_sequence_putfh_read_compound_both_ways() {
        let mut w = Writer::new();
        w.opaque_var(b"tag").u32(1).u32(4);
        w.u32(53).raw(&[0; 16]).u32(1).u32(0).u32(0).u32(0); // SEQUENCE
        w.u32(22).opaque_var(&[9; 28]); // PUTFH
        w.u32(25).raw(&[0; 16]).u64(0).u32(4096); // READ
        w.u32(9).u32(2).u32(0x10).u32(0x20); // GETATTR bitmap of 2 words
        let call = call_ops(w.as_bytes()).unwrap();
        assert_eq!(call.summary(), "SEQUENCE PUTFH READ GETATTR");
        assert_eq!(call.minor_version, Some(1));

        let mut w = Writer::new();
        w.u32(0).opaque_var(b"").u32(3);
        w.u32(53)
            .u32(0)
            .raw(&[0; 16])
            .u32(1)
            .u32(0)
            .u32(9)
            .u32(9)
            .u32(0);
        w.u32(22).u32(0);
        w.u32(25).u32(0).u32(1).opaque_var(b"hello");
        let reply = reply_ops(w.as_bytes()).unwrap();
        assert_eq!(reply.summary(), "SEQUENCE PUTFH READ");
        assert_eq!(reply.status, Some(0));
    }

    #[test]
    fn unknown_shape_stops_naming_and_counts_the_rest() {
        let mut w = Writer::new();
        w.opaque_var(b"").u32(0).u32(3).u32(35).u32(0).u32(0); // SETCLIENTID (complex)
        let ops = call_ops(w.as_bytes()).unwrap();
        assert_eq!(ops.summary(), "SETCLIENTID +2");
    }

    #[test]
    fn failed_op_ends_reply_and_hostile_counts_are_errors() {
        let mut w = Writer::new();
        w.u32(2)
            .opaque_var(b"")
            .u32(2)
            .u32(22)
            .u32(0)
            .u32(15)
            .u32(2);
        assert_eq!(
            reply_ops(w.as_bytes()).unwrap().summary(),
            "PUTFH LOOKUP:NFS4ERR_NOENT"
        );
        let mut w = Writer::new();
        w.opaque_var(b"").u32(1).u32(u32::MAX);
        assert!(call_ops(w.as_bytes()).is_err());
        for cut in 0..12 {
            let mut w = Writer::new();
            w.opaque_var(b"").u32(1).u32(1).u32(22).opaque_var(&[1; 8]);
            assert!(call_ops(&w.as_bytes()[..cut]).is_err(), "cut {cut}");
        }
    }
}
