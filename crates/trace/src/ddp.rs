//! DDP segment headers (RFC 5041 §4) and the RDMAP headers inside them (RFC 5040 §4): what one
//! MPA FPDU's ULPDU carries. Parse and emit pairs over a bounded byte slice; no allocation.
//!
//! Layout (network byte order): DDP control (T tagged, L last, DV version), RDMAP control (RV
//! version, opcode); then a tagged header (STag 4, TO 8) or an untagged one (4 bytes reserved for
//! the ULP, which RDMAP uses for the Invalidate STag; QN 4, MSN 4, MO 4); then, for an RDMA Read
//! Request, its 28-byte header (RFC 5040 §4.4), for a Terminate its 4-byte control (§4.8).

use std::fmt;

/// DDP version of RFC 5041 (DV, §4.2: "MUST be set to one").
pub const DDP_VERSION: u8 = 1;
/// RDMAP version of RFC 5040 (RV, §4.2: "MUST be set to one").
pub const RDMAP_VERSION: u8 = 1;
/// Tagged buffer header length: control 2, STag 4, TO 8 (RFC 5041 §4.3).
pub const TAGGED_HEADER_LEN: usize = 14;
/// Untagged buffer header length: control 2, reserved for the ULP 4, QN 4, MSN 4, MO 4 (§4.4).
pub const UNTAGGED_HEADER_LEN: usize = 18;
/// RDMA Read Request header after the DDP header (RFC 5040 §4.4).
pub const READ_REQUEST_LEN: usize = 28;
/// Queue numbers of RDMAP (RFC 5040 §5.1): Sends, RDMA Read Requests, Terminates.
pub const QN_SEND: u32 = 0;
pub const QN_READ_REQUEST: u32 = 1;
pub const QN_TERMINATE: u32 = 2;

const T_FLAG: u8 = 0x80;
const L_FLAG: u8 = 0x40;

/// RDMAP opcodes (RFC 5040 §4.3, Table 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum RdmapOpcode {
    Write,
    ReadRequest,
    ReadResponse,
    Send,
    SendInvalidate,
    SendSe,
    SendSeInvalidate,
    Terminate,
}

impl RdmapOpcode {
    pub fn from_u8(op: u8) -> Option<Self> {
        use RdmapOpcode::*;
        Some(match op {
            0 => Write,
            1 => ReadRequest,
            2 => ReadResponse,
            3 => Send,
            4 => SendInvalidate,
            5 => SendSe,
            6 => SendSeInvalidate,
            7 => Terminate,
            _ => return None,
        })
    }

    pub fn to_u8(self) -> u8 {
        self as u8
    }

    /// Whether the opcode travels in tagged DDP segments (RFC 5040 §4.3, Table 1).
    pub fn tagged(self) -> bool {
        matches!(self, RdmapOpcode::Write | RdmapOpcode::ReadResponse)
    }

    /// The queue an untagged opcode uses (RFC 5040 §5.1).
    pub fn queue(self) -> Option<u32> {
        match self {
            RdmapOpcode::Write | RdmapOpcode::ReadResponse => None,
            RdmapOpcode::ReadRequest => Some(QN_READ_REQUEST),
            RdmapOpcode::Terminate => Some(QN_TERMINATE),
            _ => Some(QN_SEND),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RdmapOpcode::Write => "RDMA_WRITE",
            RdmapOpcode::ReadRequest => "RDMA_READ_REQUEST",
            RdmapOpcode::ReadResponse => "RDMA_READ_RESPONSE",
            RdmapOpcode::Send => "SEND",
            RdmapOpcode::SendInvalidate => "SEND_INVALIDATE",
            RdmapOpcode::SendSe => "SEND_SE",
            RdmapOpcode::SendSeInvalidate => "SEND_SE_INVALIDATE",
            RdmapOpcode::Terminate => "TERMINATE",
        }
    }
}

/// Where a segment's payload goes (RFC 5041 §4.3, §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Tagged: into the buffer named by the STag, at tagged offset `to`.
    Tagged { stag: u32, to: u64 },
    /// Untagged: message `msn` of queue `qn`, at message offset `mo`; `ulp` is the reserved ULP
    /// field (the Invalidate STag of a Send with Invalidate, RFC 5040 §4.1).
    Untagged {
        ulp: u32,
        qn: u32,
        msn: u32,
        mo: u32,
    },
}

/// One DDP segment with its RDMAP control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment<'a> {
    /// L: the last segment of its DDP message (RFC 5041 §4.2).
    pub last: bool,
    pub opcode: RdmapOpcode,
    pub placement: Placement,
    /// The bytes after the DDP header (for a Read Request: its header; for a Terminate: its
    /// control and the headers it quotes).
    pub payload: &'a [u8],
}

/// An RDMA Read Request's header (RFC 5040 §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadRequest {
    pub sink_stag: u32,
    pub sink_to: u64,
    /// RDMA Read Message Size.
    pub size: u32,
    pub source_stag: u32,
    pub source_to: u64,
}

/// A Terminate's control field (RFC 5040 §4.8): layer, error type, error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terminate {
    pub layer: u8,
    pub error_type: u8,
    pub error_code: u8,
}

/// Why a ULPDU is not a DDP segment RDMAP accepts.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DdpError {
    /// Fewer bytes than the header `what` needs.
    Truncated {
        what: &'static str,
        needed: usize,
        available: usize,
    },
    /// DV is not 1 (RFC 5041 §4.2: "DDP_Version MUST be set to one").
    DdpVersion { version: u8 },
    /// RV is not 1 (RFC 5040 §4.2: "RDMAP_Version MUST be set to one").
    RdmapVersion { version: u8 },
    /// An opcode RFC 5040 §4.3 does not define (8..15 are reserved).
    Opcode { opcode: u8 },
    /// The T flag disagrees with the opcode (RFC 5040 §4.3 Table 1: Write and Read Response are
    /// tagged, the others untagged).
    TaggedMismatch { opcode: RdmapOpcode, tagged: bool },
    /// An untagged opcode on the wrong queue (RFC 5040 §5.1: Sends on QN 0, Read Requests on 1,
    /// Terminates on 2).
    Queue { opcode: RdmapOpcode, qn: u32 },
    /// A Read Request or Terminate not in one segment (RFC 5040 §4.4/§4.8: L MUST be set, MO 0).
    NotOneSegment { opcode: RdmapOpcode, mo: u32 },
}

impl fmt::Display for DdpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DdpError::Truncated {
                what,
                needed,
                available,
            } => {
                write!(
                    f,
                    "{what} truncated: {available} of {needed} bytes (RFC 5041 §4)"
                )
            }
            DdpError::DdpVersion { version } => {
                write!(f, "DDP version {version}, not 1 (RFC 5041 §4.2)")
            }
            DdpError::RdmapVersion { version } => {
                write!(f, "RDMAP version {version}, not 1 (RFC 5040 §4.2)")
            }
            DdpError::Opcode { opcode } => {
                write!(f, "RDMAP opcode {opcode} reserved (RFC 5040 §4.3)")
            }
            DdpError::TaggedMismatch { opcode, tagged } => write!(
                f,
                "{} in a{} segment (RFC 5040 §4.3 Table 1)",
                opcode.name(),
                if *tagged { " tagged" } else { "n untagged" }
            ),
            DdpError::Queue { opcode, qn } => {
                write!(f, "{} on queue {qn} (RFC 5040 §5.1)", opcode.name())
            }
            DdpError::NotOneSegment { opcode, mo } => write!(
                f,
                "{} not a single segment (MO {mo}; RFC 5040 §4.4/§4.8)",
                opcode.name()
            ),
        }
    }
}

impl std::error::Error for DdpError {}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be64(b: &[u8], at: usize) -> u64 {
    (u64::from(be32(b, at)) << 32) | u64::from(be32(b, at + 4))
}

fn need(what: &'static str, b: &[u8], needed: usize) -> Result<(), DdpError> {
    if b.len() < needed {
        return Err(DdpError::Truncated {
            what,
            needed,
            available: b.len(),
        });
    }
    Ok(())
}

/// Parse one ULPDU (the FPDU without its MPA length, pad and CRC).
pub fn parse(ulpdu: &[u8]) -> Result<Segment<'_>, DdpError> {
    need("DDP control", ulpdu, 2)?;
    let (ddp, rdmap) = (ulpdu[0], ulpdu[1]);
    if ddp & 0x03 != DDP_VERSION {
        return Err(DdpError::DdpVersion {
            version: ddp & 0x03,
        });
    }
    if rdmap >> 6 != RDMAP_VERSION {
        return Err(DdpError::RdmapVersion {
            version: rdmap >> 6,
        });
    }
    let opcode = RdmapOpcode::from_u8(rdmap & 0x0f).ok_or(DdpError::Opcode {
        opcode: rdmap & 0x0f,
    })?;
    let tagged = ddp & T_FLAG != 0;
    let last = ddp & L_FLAG != 0;
    if tagged != opcode.tagged() {
        return Err(DdpError::TaggedMismatch { opcode, tagged });
    }
    let (placement, payload) = if tagged {
        need("DDP tagged header", ulpdu, TAGGED_HEADER_LEN)?;
        (
            Placement::Tagged {
                stag: be32(ulpdu, 2),
                to: be64(ulpdu, 6),
            },
            &ulpdu[TAGGED_HEADER_LEN..],
        )
    } else {
        need("DDP untagged header", ulpdu, UNTAGGED_HEADER_LEN)?;
        let (qn, mo) = (be32(ulpdu, 6), be32(ulpdu, 14));
        if opcode.queue() != Some(qn) {
            return Err(DdpError::Queue { opcode, qn });
        }
        if matches!(opcode, RdmapOpcode::ReadRequest | RdmapOpcode::Terminate) && (!last || mo != 0)
        {
            return Err(DdpError::NotOneSegment { opcode, mo });
        }
        (
            Placement::Untagged {
                ulp: be32(ulpdu, 2),
                qn,
                msn: be32(ulpdu, 10),
                mo,
            },
            &ulpdu[UNTAGGED_HEADER_LEN..],
        )
    };
    Ok(Segment {
        last,
        opcode,
        placement,
        payload,
    })
}

/// Emit a DDP segment (header then `payload`) into `out`. The placement's kind must agree with
/// the opcode; a mismatch is emitted as asked (for hostile tests).
pub fn emit(
    last: bool,
    opcode: RdmapOpcode,
    placement: Placement,
    payload: &[u8],
    out: &mut Vec<u8>,
) {
    let mut ddp = DDP_VERSION;
    if last {
        ddp |= L_FLAG;
    }
    match placement {
        Placement::Tagged { stag, to } => {
            out.extend([ddp | T_FLAG, (RDMAP_VERSION << 6) | opcode.to_u8()]);
            out.extend(stag.to_be_bytes());
            out.extend(to.to_be_bytes());
        }
        Placement::Untagged { ulp, qn, msn, mo } => {
            out.extend([ddp, (RDMAP_VERSION << 6) | opcode.to_u8()]);
            for v in [ulp, qn, msn, mo] {
                out.extend(v.to_be_bytes());
            }
        }
    }
    out.extend_from_slice(payload);
}

impl ReadRequest {
    pub fn parse(b: &[u8]) -> Result<Self, DdpError> {
        need("RDMA Read Request header", b, READ_REQUEST_LEN)?;
        Ok(ReadRequest {
            sink_stag: be32(b, 0),
            sink_to: be64(b, 4),
            size: be32(b, 12),
            source_stag: be32(b, 16),
            source_to: be64(b, 20),
        })
    }

    pub fn emit(&self) -> [u8; READ_REQUEST_LEN] {
        let mut b = [0u8; READ_REQUEST_LEN];
        b[0..4].copy_from_slice(&self.sink_stag.to_be_bytes());
        b[4..12].copy_from_slice(&self.sink_to.to_be_bytes());
        b[12..16].copy_from_slice(&self.size.to_be_bytes());
        b[16..20].copy_from_slice(&self.source_stag.to_be_bytes());
        b[20..28].copy_from_slice(&self.source_to.to_be_bytes());
        b
    }
}

impl Terminate {
    pub fn parse(b: &[u8]) -> Result<Self, DdpError> {
        need("Terminate control", b, 4)?;
        Ok(Terminate {
            layer: b[0] >> 4,
            error_type: b[0] & 0x0f,
            error_code: b[1],
        })
    }

    pub fn emit(&self) -> [u8; 4] {
        [
            (self.layer << 4) | (self.error_type & 0x0f),
            self.error_code,
            0,
            0,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let mut out = Vec::new();
        let tagged = Placement::Tagged {
            stag: 0x1086,
            to: 0x7f00_0000,
        };
        emit(true, RdmapOpcode::Write, tagged, b"data", &mut out);
        assert_eq!(out.len(), TAGGED_HEADER_LEN + 4);
        let s = parse(&out).unwrap();
        assert_eq!(
            (s.last, s.opcode, s.placement, s.payload),
            (true, RdmapOpcode::Write, tagged, &b"data"[..])
        );

        let rr = ReadRequest {
            sink_stag: 1,
            sink_to: 2,
            size: 3,
            source_stag: 4,
            source_to: 5,
        };
        let untagged = Placement::Untagged {
            ulp: 0,
            qn: QN_READ_REQUEST,
            msn: 9,
            mo: 0,
        };
        out.clear();
        emit(
            true,
            RdmapOpcode::ReadRequest,
            untagged,
            &rr.emit(),
            &mut out,
        );
        let s = parse(&out).unwrap();
        assert_eq!(s.placement, untagged);
        assert_eq!(ReadRequest::parse(s.payload).unwrap(), rr);
        let t = Terminate {
            layer: 1,
            error_type: 2,
            error_code: 3,
        };
        assert_eq!(Terminate::parse(&t.emit()).unwrap(), t);
    }

    #[test]
    fn rejects_what_the_rfcs_forbid_without_panicking() {
        let mut out = Vec::new();
        emit(
            true,
            RdmapOpcode::Send,
            Placement::Untagged {
                ulp: 0,
                qn: 1,
                msn: 1,
                mo: 0,
            },
            &[],
            &mut out,
        );
        assert_eq!(
            parse(&out),
            Err(DdpError::Queue {
                opcode: RdmapOpcode::Send,
                qn: 1
            })
        );
        out.clear();
        emit(
            true,
            RdmapOpcode::Send,
            Placement::Tagged { stag: 1, to: 0 },
            &[],
            &mut out,
        );
        assert!(matches!(parse(&out), Err(DdpError::TaggedMismatch { .. })));
        assert_eq!(parse(&[0x41, 0x48]), Err(DdpError::Opcode { opcode: 8 }));
        assert_eq!(
            parse(&[0x40, 0x43]),
            Err(DdpError::DdpVersion { version: 0 })
        );
        assert_eq!(
            parse(&[0x41, 0x83]),
            Err(DdpError::RdmapVersion { version: 2 })
        );
        for cut in 0..out.len() {
            let _ = parse(&out[..cut]);
        }
        assert!(ReadRequest::parse(&[0; 27]).is_err());
        assert!(parse(&[0x41, 0x43, 0, 0])
            .unwrap_err()
            .to_string()
            .contains("RFC 5041"));
    }
}
