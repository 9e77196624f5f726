//! InfiniBand transport headers (IBTA Vol 1 §9.2–9.4): BTH, RETH, AETH, ImmDt, IETH, DETH.
//!
//! Only the Reliable Connected opcodes and the UD Send used by CM MADs are decoded; the opcode
//! decides which extended headers follow the BTH. Every header is read through a bounded
//! [`wire::Reader`], so a short packet is a typed error, never a panic.

use wire::{DecodeError, Reader};

/// Size of the Base Transport Header.
pub const BTH_LEN: usize = 12;
/// Size of the invariant CRC that ends every RoCE packet.
pub const ICRC_LEN: usize = 4;
/// PSNs are 24-bit sequence numbers (IBTA Vol 1 §9.7.1).
pub const PSN_MASK: u32 = 0x00ff_ffff;

const RULE_OPCODE: &str = "IBTA Vol 1 §9.2.1 (BTH opcode)";
const RULE_PAD: &str = "IBTA Vol 1 §9.2.1 (BTH PadCnt within payload)";

/// What a packet is, from the BTH opcode (IBTA Vol 1 Table 38).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Opcode {
    SendFirst,
    SendMiddle,
    SendLast,
    SendLastImm,
    SendOnly,
    SendOnlyImm,
    WriteFirst,
    WriteMiddle,
    WriteLast,
    WriteLastImm,
    WriteOnly,
    WriteOnlyImm,
    ReadRequest,
    ReadResponseFirst,
    ReadResponseMiddle,
    ReadResponseLast,
    ReadResponseOnly,
    Acknowledge,
    AtomicAcknowledge,
    CompareSwap,
    FetchAdd,
    SendLastInvalidate,
    SendOnlyInvalidate,
    /// Unreliable Datagram SEND Only (CM MADs travel this way to QP1).
    UdSendOnly,
    UdSendOnlyImm,
}

impl Opcode {
    /// Decode the 8-bit opcode; only RC (0x00–0x17) and UD sends (0x64–0x65) are known.
    pub fn from_u8(op: u8) -> Option<Opcode> {
        use Opcode::*;
        Some(match op {
            0x00 => SendFirst,
            0x01 => SendMiddle,
            0x02 => SendLast,
            0x03 => SendLastImm,
            0x04 => SendOnly,
            0x05 => SendOnlyImm,
            0x06 => WriteFirst,
            0x07 => WriteMiddle,
            0x08 => WriteLast,
            0x09 => WriteLastImm,
            0x0a => WriteOnly,
            0x0b => WriteOnlyImm,
            0x0c => ReadRequest,
            0x0d => ReadResponseFirst,
            0x0e => ReadResponseMiddle,
            0x0f => ReadResponseLast,
            0x10 => ReadResponseOnly,
            0x11 => Acknowledge,
            0x12 => AtomicAcknowledge,
            0x13 => CompareSwap,
            0x14 => FetchAdd,
            0x16 => SendLastInvalidate,
            0x17 => SendOnlyInvalidate,
            0x64 => UdSendOnly,
            0x65 => UdSendOnlyImm,
            _ => return None,
        })
    }

    /// Short name as used in trace lines.
    pub fn name(self) -> &'static str {
        use Opcode::*;
        match self {
            SendFirst => "SEND_FIRST",
            SendMiddle => "SEND_MIDDLE",
            SendLast => "SEND_LAST",
            SendLastImm => "SEND_LAST_IMM",
            SendOnly => "SEND_ONLY",
            SendOnlyImm => "SEND_ONLY_IMM",
            WriteFirst => "WRITE_FIRST",
            WriteMiddle => "WRITE_MIDDLE",
            WriteLast => "WRITE_LAST",
            WriteLastImm => "WRITE_LAST_IMM",
            WriteOnly => "WRITE_ONLY",
            WriteOnlyImm => "WRITE_ONLY_IMM",
            ReadRequest => "READ_REQUEST",
            ReadResponseFirst => "READ_RESPONSE_FIRST",
            ReadResponseMiddle => "READ_RESPONSE_MIDDLE",
            ReadResponseLast => "READ_RESPONSE_LAST",
            ReadResponseOnly => "READ_RESPONSE_ONLY",
            Acknowledge => "ACK",
            AtomicAcknowledge => "ATOMIC_ACK",
            CompareSwap => "CMP_SWAP",
            FetchAdd => "FETCH_ADD",
            SendLastInvalidate => "SEND_LAST_INV",
            SendOnlyInvalidate => "SEND_ONLY_INV",
            UdSendOnly => "UD_SEND_ONLY",
            UdSendOnlyImm => "UD_SEND_ONLY_IMM",
        }
    }

    fn has_reth(self) -> bool {
        use Opcode::*;
        matches!(self, WriteFirst | WriteOnly | WriteOnlyImm | ReadRequest)
    }

    fn has_aeth(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            ReadResponseFirst
                | ReadResponseLast
                | ReadResponseOnly
                | Acknowledge
                | AtomicAcknowledge
        )
    }

    fn has_imm(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            SendLastImm | SendOnlyImm | WriteLastImm | WriteOnlyImm | UdSendOnlyImm
        )
    }

    fn has_ieth(self) -> bool {
        matches!(
            self,
            Opcode::SendLastInvalidate | Opcode::SendOnlyInvalidate
        )
    }

    fn has_deth(self) -> bool {
        matches!(self, Opcode::UdSendOnly | Opcode::UdSendOnlyImm)
    }

    /// Whether this packet is one of a multi-packet SEND (or an only-packet SEND).
    pub fn is_send(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            SendFirst
                | SendMiddle
                | SendLast
                | SendLastImm
                | SendOnly
                | SendOnlyImm
                | SendLastInvalidate
                | SendOnlyInvalidate
        )
    }

    /// Whether this is a request the responder acknowledges (carries a request PSN).
    pub fn is_request(self) -> bool {
        use Opcode::*;
        !matches!(
            self,
            ReadResponseFirst
                | ReadResponseMiddle
                | ReadResponseLast
                | ReadResponseOnly
                | Acknowledge
                | AtomicAcknowledge
                | UdSendOnly
                | UdSendOnlyImm
        )
    }
}

/// RDMA Extended Transport Header: the remote buffer of an RDMA WRITE or READ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Reth {
    pub va: u64,
    pub rkey: u32,
    pub dma_length: u32,
}

/// What an ACK Extended Transport Header says (IBTA Vol 1 §9.3.5, Table 43).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum AckSyndrome {
    Ack {
        credits: u8,
    },
    RnrNak {
        timer: u8,
    },
    /// NAK code: 0 PSN sequence error, 1 invalid request, 2 remote access error, 3 remote
    /// operational error, 4 invalid RD request.
    Nak {
        code: u8,
    },
    Reserved {
        syndrome: u8,
    },
}

impl AckSyndrome {
    fn from_u8(s: u8) -> Self {
        match s >> 5 {
            0b000 => AckSyndrome::Ack { credits: s & 0x1f },
            0b001 => AckSyndrome::RnrNak { timer: s & 0x1f },
            0b011 => AckSyndrome::Nak { code: s & 0x1f },
            _ => AckSyndrome::Reserved { syndrome: s },
        }
    }

    /// Name of a NAK code, for reports.
    pub fn describe(self) -> String {
        match self {
            AckSyndrome::Ack { credits } => format!("ACK credits={credits}"),
            AckSyndrome::RnrNak { timer } => format!("RNR_NAK timer={timer}"),
            AckSyndrome::Nak { code } => match code {
                0 => "NAK PSN_SEQUENCE_ERROR".to_string(),
                1 => "NAK INVALID_REQUEST".to_string(),
                2 => "NAK REMOTE_ACCESS_ERROR".to_string(),
                3 => "NAK REMOTE_OPERATIONAL_ERROR".to_string(),
                4 => "NAK INVALID_RD_REQUEST".to_string(),
                other => format!("NAK code={other}"),
            },
            AckSyndrome::Reserved { syndrome } => format!("AETH reserved syndrome={syndrome:#x}"),
        }
    }
}

/// ACK Extended Transport Header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Aeth {
    pub syndrome: AckSyndrome,
    pub msn: u32,
}

/// One decoded IB transport packet.
#[derive(Debug, Clone)]
pub struct IbPacket<'a> {
    pub opcode: Opcode,
    pub solicited: bool,
    pub pad_count: u8,
    pub pkey: u16,
    pub dest_qp: u32,
    pub ack_request: bool,
    pub psn: u32,
    pub reth: Option<Reth>,
    pub aeth: Option<Aeth>,
    pub immediate: Option<u32>,
    /// IETH: the R_Key the responder invalidates (Send with Invalidate).
    pub invalidate_rkey: Option<u32>,
    /// DETH: Q_Key and source QP (UD only).
    pub deth: Option<(u32, u32)>,
    /// The packet payload without pad bytes and without the ICRC.
    pub payload: &'a [u8],
    /// The trailing ICRC as it appears on the wire.
    pub icrc: [u8; 4],
    /// Length of BTH plus extended headers (what the ICRC covers before the payload).
    pub header_len: usize,
}

/// Decode the transport bytes of a RoCE packet (BTH through ICRC).
pub fn decode(transport: &[u8]) -> Result<IbPacket<'_>, DecodeError> {
    if transport.len() < BTH_LEN + ICRC_LEN {
        return Err(DecodeError::Truncated {
            field: "ib.bth",
            needed: BTH_LEN + ICRC_LEN,
            available: transport.len(),
        });
    }
    let (body, icrc) = transport.split_at(transport.len() - ICRC_LEN);
    let icrc: [u8; 4] = [icrc[0], icrc[1], icrc[2], icrc[3]];
    let mut r = Reader::new(body);
    let word0 = r.u32("ib.bth.opcode")?;
    let raw_opcode = (word0 >> 24) as u8;
    let opcode = Opcode::from_u8(raw_opcode).ok_or(DecodeError::BadDiscriminant {
        field: "ib.bth.opcode",
        value: u32::from(raw_opcode),
        rule: RULE_OPCODE,
    })?;
    let flags = (word0 >> 16) as u8;
    let word1 = r.u32("ib.bth.dest_qp")?;
    let word2 = r.u32("ib.bth.psn")?;
    let reth = if opcode.has_reth() {
        Some(Reth {
            va: r.u64("ib.reth.va")?,
            rkey: r.u32("ib.reth.rkey")?,
            dma_length: r.u32("ib.reth.dma_length")?,
        })
    } else {
        None
    };
    let deth = if opcode.has_deth() {
        let qkey = r.u32("ib.deth.qkey")?;
        let src_qp = r.u32("ib.deth.src_qp")? & PSN_MASK;
        Some((qkey, src_qp))
    } else {
        None
    };
    let aeth = if opcode.has_aeth() {
        let w = r.u32("ib.aeth")?;
        Some(Aeth {
            syndrome: AckSyndrome::from_u8((w >> 24) as u8),
            msn: w & PSN_MASK,
        })
    } else {
        None
    };
    if matches!(opcode, Opcode::AtomicAcknowledge) {
        r.take(8, "ib.atomic_ack_eth")?;
    }
    if matches!(opcode, Opcode::CompareSwap | Opcode::FetchAdd) {
        r.take(28, "ib.atomic_eth")?;
    }
    let immediate = if opcode.has_imm() {
        Some(r.u32("ib.immdt")?)
    } else {
        None
    };
    let invalidate_rkey = if opcode.has_ieth() {
        Some(r.u32("ib.ieth")?)
    } else {
        None
    };
    let header_len = r.consumed();
    let pad_count = (flags >> 4) & 0x3;
    let rest = r.rest();
    let payload_len =
        rest.len()
            .checked_sub(usize::from(pad_count))
            .ok_or(DecodeError::BadValue {
                field: "ib.bth.pad_count",
                value: u64::from(pad_count),
                rule: RULE_PAD,
            })?;
    Ok(IbPacket {
        opcode,
        solicited: flags & 0x80 != 0,
        pad_count,
        pkey: (word0 & 0xffff) as u16,
        dest_qp: word1 & PSN_MASK,
        ack_request: word2 & 0x8000_0000 != 0,
        psn: word2 & PSN_MASK,
        reth,
        aeth,
        immediate,
        invalidate_rkey,
        deth,
        payload: &rest[..payload_len],
        icrc,
        header_len,
    })
}

/// `a - b` in 24-bit PSN space, as a signed distance in (-2^23, 2^23].
pub fn psn_distance(a: u32, b: u32) -> i32 {
    let d = a.wrapping_sub(b) & PSN_MASK;
    if d > 0x0080_0000 {
        d as i32 - 0x0100_0000
    } else {
        d as i32
    }
}

/// `psn + n` in 24-bit PSN space.
pub fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Build transport bytes: BTH, extra header words, payload, pad and a zero ICRC.
    pub(crate) fn packet(op: u8, qp: u32, psn: u32, ext: &[u8], payload: &[u8]) -> Vec<u8> {
        let pad = (4 - payload.len() % 4) % 4;
        let mut out = vec![op, (pad as u8) << 4, 0xff, 0xff];
        out.extend_from_slice(&qp.to_be_bytes());
        out.extend_from_slice(&(psn | 0x8000_0000).to_be_bytes());
        out.extend_from_slice(ext);
        out.extend_from_slice(payload);
        out.extend(std::iter::repeat_n(0, pad + ICRC_LEN));
        out
    }

    pub(crate) fn reth(va: u64, rkey: u32, len: u32) -> Vec<u8> {
        let mut v = va.to_be_bytes().to_vec();
        v.extend_from_slice(&rkey.to_be_bytes());
        v.extend_from_slice(&len.to_be_bytes());
        v
    }

    #[test]
    fn decodes_write_only_with_reth_and_pad() {
        let bytes = packet(0x0a, 0x11, 7, &reth(0x1000, 0xabcd, 5), b"hello");
        let p = decode(&bytes).unwrap();
        assert_eq!(p.opcode, Opcode::WriteOnly);
        assert_eq!(p.dest_qp, 0x11);
        assert_eq!(p.psn, 7);
        assert!(p.ack_request);
        assert_eq!(p.pad_count, 3);
        assert_eq!(
            p.reth,
            Some(Reth {
                va: 0x1000,
                rkey: 0xabcd,
                dma_length: 5
            })
        );
        assert_eq!(p.payload, b"hello");
        assert_eq!(p.header_len, BTH_LEN + 16);
    }

    #[test]
    fn decodes_aeth_nak_and_send_with_invalidate() {
        let nak = packet(0x11, 1, 9, &[0x60, 0, 0, 3], b"");
        let p = decode(&nak).unwrap();
        assert_eq!(
            p.aeth,
            Some(Aeth {
                syndrome: AckSyndrome::Nak { code: 0 },
                msn: 3
            })
        );
        let inv = packet(0x17, 1, 9, &[0, 0, 0x12, 0x34], b"abcd");
        let p = decode(&inv).unwrap();
        assert_eq!(p.invalidate_rkey, Some(0x1234));
        assert_eq!(p.payload, b"abcd");
    }

    #[test]
    fn short_and_unknown_packets_are_typed_errors() {
        let full = packet(0x0c, 1, 1, &reth(0, 0, 0), b"");
        for cut in 0..full.len() {
            assert!(decode(&full[..cut]).is_err(), "cut {cut}");
        }
        let err = decode(&packet(0x40, 1, 1, &[], b"")).unwrap_err();
        assert!(matches!(
            err,
            DecodeError::BadDiscriminant { value: 0x40, .. }
        ));
        // pad count larger than what follows the headers
        let mut bad = packet(0x04, 1, 1, &[], b"");
        bad[1] = 0x30;
        assert!(matches!(
            decode(&bad).unwrap_err(),
            DecodeError::BadValue { .. }
        ));
    }

    #[test]
    fn psn_arithmetic_wraps_at_24_bits() {
        assert_eq!(psn_add(PSN_MASK, 1), 0);
        assert_eq!(psn_distance(0, PSN_MASK), 1);
        assert_eq!(psn_distance(PSN_MASK, 0), -1);
        assert_eq!(psn_distance(10, 4), 6);
    }
}
