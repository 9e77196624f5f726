//! MPA (RFC 5044) framing of a TCP byte stream: the Request/Reply frames that open an iWARP
//! connection (with RFC 6581's IRD/ORD field at the head of the private data in Rev 2, as Linux
//! siw sends it), then FPDUs: ULPDU_Length, the ULPDU (a DDP segment), pad to a multiple of 4
//! and the CRC32c. Parse and emit pairs over a bounded slice: a parser returns `Ok(None)` when
//! the slice holds only part of a frame, and no length read from the stream sizes an allocation.

use std::fmt;

use crate::crc32c::crc32c;

/// Key of an MPA Request frame (RFC 5044 §7.1).
pub const REQUEST_KEY: &[u8; 16] = b"MPA ID Req Frame";
/// Key of an MPA Reply frame (RFC 5044 §7.1).
pub const REPLY_KEY: &[u8; 16] = b"MPA ID Rep Frame";
/// Key, flags, revision and private data length.
pub const START_HEADER_LEN: usize = 20;
/// RFC 5044 §7.1: "Private Data Length ... MUST NOT be larger than 512".
pub const MAX_PRIVATE_DATA: usize = 512;
/// The IRD/ORD field RFC 6581 puts at the head of the private data in Rev 2 frames.
pub const IRD_ORD_LEN: usize = 4;
/// Bytes of the CRC field (RFC 5044 §4.1: present whether or not CRCs were negotiated).
pub const CRC_LEN: usize = 4;
/// The largest ULPDU_Length (a 16-bit field, RFC 5044 §4.1).
pub const MAX_ULPDU: usize = 0xffff;

const M_FLAG: u8 = 0x80;
const C_FLAG: u8 = 0x40;
const R_FLAG: u8 = 0x20;
/// Linux siw's "enhanced" flag beside Rev 2.
const ENHANCED_FLAG: u8 = 0x10;
/// RFC 6581 IRD/ORD field bits.
const PEER_TO_PEER: u16 = 0x8000;
const IRD_ORD_MASK: u16 = 0x3fff;

/// Which start frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartKind {
    Request,
    Reply,
}

impl StartKind {
    fn key(self) -> &'static [u8; 16] {
        match self {
            StartKind::Request => REQUEST_KEY,
            StartKind::Reply => REPLY_KEY,
        }
    }
}

/// RFC 6581's IRD/ORD field (Rev 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrdOrd {
    pub ird: u16,
    pub ord: u16,
    /// P2P: the initiator sends a zero-length ready-to-receive message after the Reply.
    pub peer_to_peer: bool,
    /// The RTR type bits (zero-length Send, Write, Read) of both words: `ird >> 14`, `ord >> 14`.
    pub rtr: (u8, u8),
}

impl IrdOrd {
    pub fn emit(&self) -> [u8; IRD_ORD_LEN] {
        let ird = (self.ird & IRD_ORD_MASK)
            | if self.peer_to_peer { PEER_TO_PEER } else { 0 }
            | (u16::from(self.rtr.0 & 1) << 14);
        let ord = (self.ord & IRD_ORD_MASK) | (u16::from(self.rtr.1 & 3) << 14);
        let mut b = [0; IRD_ORD_LEN];
        b[..2].copy_from_slice(&ird.to_be_bytes());
        b[2..].copy_from_slice(&ord.to_be_bytes());
        b
    }
}

/// An MPA Request or Reply frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartFrame<'a> {
    pub kind: StartKind,
    /// M: the sender wants to receive markers.
    pub markers: bool,
    /// C: the sender wants CRCs (in a Reply: CRCs are used both ways).
    pub crc: bool,
    /// R: a Reply rejecting the connection.
    pub reject: bool,
    pub revision: u8,
    /// RFC 6581's field, when Rev 2 and the private data holds it.
    pub ird_ord: Option<IrdOrd>,
    /// The consumer's private data (after the IRD/ORD field).
    pub private_data: &'a [u8],
}

/// Why a stream is not (or stops being) MPA this decoder follows.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MpaError {
    /// The stream does not start with the frame key (RFC 5044 §7.1): byte `at` is `byte`.
    NotStartFrame {
        kind: StartKind,
        at: usize,
        byte: u8,
    },
    /// A Rev other than 1 (RFC 5044 §7.1) or 2 (RFC 6581).
    Revision { revision: u8 },
    /// Private data longer than 512 bytes (RFC 5044 §7.1: MUST NOT be larger).
    PrivateData { length: u16 },
    /// Markers negotiated (RFC 5044 §4.3): not decoded here (Linux siw does not negotiate them).
    MarkersUnsupported,
    /// A ULPDU_Length above the decoder's limit (RFC 5044 §4.1 bounds it by the MULPDU).
    UlpduTooLong { length: usize, limit: usize },
}

impl fmt::Display for MpaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MpaError::NotStartFrame { kind, at, byte } => write!(
                f,
                "not an MPA {kind:?} frame: byte {at} is {byte:#04x} (RFC 5044 §7.1)"
            ),
            MpaError::Revision { revision } => {
                write!(f, "MPA revision {revision} (RFC 5044 §7.1: 1; RFC 6581: 2)")
            }
            MpaError::PrivateData { length } => write!(
                f,
                "MPA private data length {length} > {MAX_PRIVATE_DATA} (RFC 5044 §7.1)"
            ),
            MpaError::MarkersUnsupported => {
                f.write_str("MPA markers negotiated (RFC 5044 §4.3): not supported")
            }
            MpaError::UlpduTooLong { length, limit } => write!(
                f,
                "MPA ULPDU_Length {length} > limit {limit} (RFC 5044 §4.1: at most the MULPDU)"
            ),
        }
    }
}

impl std::error::Error for MpaError {}

/// Parse a start frame of `kind` at the head of `bytes`: `Ok(None)` while incomplete (the key
/// is checked on the bytes there are), else the frame and the bytes it takes.
pub fn parse_start(
    kind: StartKind,
    bytes: &[u8],
) -> Result<Option<(StartFrame<'_>, usize)>, MpaError> {
    let key = kind.key();
    if let Some((at, &byte)) = bytes
        .iter()
        .zip(key.iter())
        .enumerate()
        .find_map(|(i, (b, k))| (b != k).then_some((i, b)))
    {
        return Err(MpaError::NotStartFrame { kind, at, byte });
    }
    let Some(header) = bytes.get(..START_HEADER_LEN) else {
        return Ok(None);
    };
    let (flags, revision) = (header[16], header[17]);
    let length = u16::from_be_bytes([header[18], header[19]]);
    if !(1..=2).contains(&revision) {
        return Err(MpaError::Revision { revision });
    }
    if usize::from(length) > MAX_PRIVATE_DATA {
        return Err(MpaError::PrivateData { length });
    }
    let end = START_HEADER_LEN + usize::from(length);
    let Some(mut private_data) = bytes.get(START_HEADER_LEN..end) else {
        return Ok(None);
    };
    let mut ird_ord = None;
    if revision == 2 && private_data.len() >= IRD_ORD_LEN {
        let ird = u16::from_be_bytes([private_data[0], private_data[1]]);
        let ord = u16::from_be_bytes([private_data[2], private_data[3]]);
        ird_ord = Some(IrdOrd {
            ird: ird & IRD_ORD_MASK,
            ord: ord & IRD_ORD_MASK,
            peer_to_peer: ird & PEER_TO_PEER != 0,
            rtr: (((ird >> 14) & 1) as u8, (ord >> 14) as u8),
        });
        private_data = &private_data[IRD_ORD_LEN..];
    }
    let frame = StartFrame {
        kind,
        markers: flags & M_FLAG != 0,
        crc: flags & C_FLAG != 0,
        reject: flags & R_FLAG != 0,
        revision,
        ird_ord,
        private_data,
    };
    Ok(Some((frame, end)))
}

/// Emit a start frame (private data over 512 bytes is cut to 512).
pub fn emit_start(frame: &StartFrame<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(frame.kind.key());
    let mut flags = 0;
    for (on, bit) in [
        (frame.markers, M_FLAG),
        (frame.crc, C_FLAG),
        (frame.reject, R_FLAG),
        (frame.ird_ord.is_some(), ENHANCED_FLAG),
    ] {
        if on {
            flags |= bit;
        }
    }
    out.extend([flags, frame.revision]);
    let ird_ord = frame.ird_ord.map(|f| f.emit());
    let extra = if ird_ord.is_some() { IRD_ORD_LEN } else { 0 };
    let data = &frame.private_data[..frame.private_data.len().min(MAX_PRIVATE_DATA - extra)];
    out.extend(((data.len() + extra) as u16).to_be_bytes());
    if let Some(b) = ird_ord {
        out.extend(b);
    }
    out.extend_from_slice(data);
}

/// One FPDU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fpdu<'a> {
    pub ulpdu: &'a [u8],
    /// The CRC as sent, and whether it matches (`None` when CRCs were not negotiated).
    pub crc_ok: Option<bool>,
    /// Bytes of the stream the FPDU takes.
    pub len: usize,
}

/// Pad after the header and ULPDU to a multiple of 4 (RFC 5044 §4.1).
pub fn pad_len(ulpdu_len: usize) -> usize {
    (4 - (2 + ulpdu_len) % 4) % 4
}

/// Parse the FPDU at the head of `bytes` (no markers): `Ok(None)` while incomplete. `crc`: CRCs
/// negotiated (RFC 5044 §4.4: the CRC covers the header, ULPDU and pad; the wire carries the
/// CRC32c least significant byte first, as iSCSI does). `limit` bounds ULPDU_Length.
pub fn parse_fpdu(bytes: &[u8], crc: bool, limit: usize) -> Result<Option<Fpdu<'_>>, MpaError> {
    let Some(header) = bytes.get(..2) else {
        return Ok(None);
    };
    let length = usize::from(u16::from_be_bytes([header[0], header[1]]));
    if length > limit {
        return Err(MpaError::UlpduTooLong { length, limit });
    }
    let covered = 2 + length + pad_len(length);
    let total = covered + CRC_LEN;
    let Some(frame) = bytes.get(..total) else {
        return Ok(None);
    };
    let crc_ok = crc.then(|| {
        let sent = [
            frame[covered],
            frame[covered + 1],
            frame[covered + 2],
            frame[covered + 3],
        ];
        crc32c(&frame[..covered]).to_le_bytes() == sent
    });
    Ok(Some(Fpdu {
        ulpdu: &frame[2..2 + length],
        crc_ok,
        len: total,
    }))
}

/// Emit an FPDU carrying `ulpdu` (at most [`MAX_ULPDU`] bytes: the rest is cut), with its CRC
/// when `crc`, else a zero CRC field.
pub fn emit_fpdu(ulpdu: &[u8], crc: bool, out: &mut Vec<u8>) {
    let ulpdu = &ulpdu[..ulpdu.len().min(MAX_ULPDU)];
    let start = out.len();
    out.extend((ulpdu.len() as u16).to_be_bytes());
    out.extend_from_slice(ulpdu);
    out.extend(std::iter::repeat_n(0, pad_len(ulpdu.len())));
    let value = if crc { crc32c(&out[start..]) } else { 0 };
    out.extend(value.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_frames_round_trip_and_parse_incrementally() {
        let f = StartFrame {
            kind: StartKind::Request,
            markers: false,
            crc: true,
            reject: false,
            revision: 2,
            ird_ord: Some(IrdOrd {
                ird: 16,
                ord: 16,
                peer_to_peer: true,
                rtr: (0, 1),
            }),
            private_data: b"rfc8797!",
        };
        let mut out = Vec::new();
        emit_start(&f, &mut out);
        assert_eq!(out.len(), START_HEADER_LEN + 4 + 8);
        for cut in 0..out.len() {
            assert_eq!(parse_start(StartKind::Request, &out[..cut]), Ok(None));
        }
        let (g, used) = parse_start(StartKind::Request, &out).unwrap().unwrap();
        assert_eq!((g, used), (f, out.len()));
        assert!(matches!(
            parse_start(StartKind::Reply, &out),
            Err(MpaError::NotStartFrame { at: 9, .. })
        ));
        assert_eq!(
            parse_start(StartKind::Request, b"GET / HTTP/1.1\r\n"),
            Err(MpaError::NotStartFrame {
                kind: StartKind::Request,
                at: 0,
                byte: b'G'
            })
        );
        let mut long = out.clone();
        long[18..20].copy_from_slice(&513u16.to_be_bytes());
        assert_eq!(
            parse_start(StartKind::Request, &long),
            Err(MpaError::PrivateData { length: 513 })
        );
        long[17] = 3;
        assert_eq!(
            parse_start(StartKind::Request, &long),
            Err(MpaError::Revision { revision: 3 })
        );
    }

    #[test]
    fn fpdus_round_trip_crc_checked_and_length_bounded() {
        for n in [0, 1, 2, 3, 4, 17, 1000] {
            let ulpdu: Vec<u8> = (0..n).map(|i| i as u8).collect();
            let mut out = Vec::new();
            emit_fpdu(&ulpdu, true, &mut out);
            assert_eq!(out.len() % 4, 0);
            for cut in 0..out.len() {
                assert_eq!(parse_fpdu(&out[..cut], true, MAX_ULPDU), Ok(None));
            }
            let f = parse_fpdu(&out, true, MAX_ULPDU).unwrap().unwrap();
            assert_eq!(
                (f.ulpdu, f.crc_ok, f.len),
                (&ulpdu[..], Some(true), out.len())
            );
            let last = out.len() - 1;
            out[last] ^= 1;
            assert_eq!(
                parse_fpdu(&out, true, MAX_ULPDU).unwrap().unwrap().crc_ok,
                Some(false)
            );
            assert_eq!(
                parse_fpdu(&out, false, MAX_ULPDU).unwrap().unwrap().crc_ok,
                None
            );
        }
        assert_eq!(
            parse_fpdu(&[0xff, 0xff], true, 1 << 14),
            Err(MpaError::UlpduTooLong {
                length: 0xffff,
                limit: 1 << 14
            })
        );
    }
}
