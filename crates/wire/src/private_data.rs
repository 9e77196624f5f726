//! RDMA-CM private data for RPC-over-RDMA version 1 (RFC 8797): the 8-byte message a peer puts in
//! its connect request/accept to advertise inline sizes and Send-With-Invalidate support.
//!
//! Layout (RFC 8797 §4), big-endian:
//! ```text
//! | Format Identifier 0xf6ab0e18 (32) | Version (8) | Reserved (7) + W (1) | Send Size (8) | Receive Size (8) |
//! ```
//! Sizes are encoded as `(bytes >> 10) - 1`, so one octet spans 1 KiB ..= 256 KiB.

use serde::Serialize;

use crate::error::{DecodeError, Result};

/// RFC 8797 §4: the Format Identifier that marks RPC-over-RDMA private data.
pub const MAGIC: u32 = 0xf6ab_0e18;
/// RFC 8797 §4: the only defined private-data version.
pub const VERSION: u8 = 1;
/// RFC 8797 §4 / Linux `RPCRDMA_CMP_F_SND_W_INV_OK`: the W flag (lowest bit of the flags octet).
pub const FLAG_SEND_WITH_INVALIDATE: u8 = 0x01;
/// Encoded length in bytes.
pub const ENCODED_LEN: usize = 8;
/// Smallest size an octet can encode (value 0).
pub const MIN_SIZE: u32 = 1024;
/// Largest size an octet can encode (value 255).
pub const MAX_SIZE: u32 = 256 * 1024;

/// Decoded private data. `flags` keeps the reserved bits so a round trip is byte-exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PrivateData {
    pub version: u8,
    pub flags: u8,
    /// Encoded send size octet; see [`PrivateData::send_size`].
    pub send_size_code: u8,
    /// Encoded receive size octet; see [`PrivateData::recv_size`].
    pub recv_size_code: u8,
}

/// Encode a byte size as an RFC 8797 size octet, rounding down to a whole KiB and clamping to
/// the representable range (a peer must never advertise more than it has).
pub fn encode_size(bytes: u32) -> u8 {
    let kib = (bytes.clamp(MIN_SIZE, MAX_SIZE) >> 10) - 1;
    kib as u8
}

/// Decode an RFC 8797 size octet to bytes: `(code + 1) << 10`.
pub fn decode_size(code: u8) -> u32 {
    (u32::from(code) + 1) << 10
}

impl PrivateData {
    /// Private data advertising the given inline sizes (in bytes) and W flag.
    pub fn new(send_size: u32, recv_size: u32, send_with_invalidate: bool) -> Self {
        PrivateData {
            version: VERSION,
            flags: if send_with_invalidate {
                FLAG_SEND_WITH_INVALIDATE
            } else {
                0
            },
            send_size_code: encode_size(send_size),
            recv_size_code: encode_size(recv_size),
        }
    }

    /// Whether the sender can receive Send With Invalidate.
    pub fn send_with_invalidate(&self) -> bool {
        self.flags & FLAG_SEND_WITH_INVALIDATE != 0
    }

    /// The sender's maximum Send size in bytes.
    pub fn send_size(&self) -> u32 {
        decode_size(self.send_size_code)
    }

    /// The sender's Receive buffer size in bytes.
    pub fn recv_size(&self) -> u32 {
        decode_size(self.recv_size_code)
    }

    /// Decode from the start of a CM private-data buffer. The transport pads private data
    /// (InfiniBand CM carries 56 or 92 bytes), so bytes after the first 8 are ignored.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        if bytes.len() < ENCODED_LEN {
            return Err(DecodeError::Truncated {
                field: "private_data",
                needed: ENCODED_LEN,
                available: bytes.len(),
            });
        }
        let magic = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        // RFC 8797 §4: a receiver ignores private data whose Format Identifier does not match
        // (Linux `svc_rdma_parse_connect_private` checks magic and version, nothing else).
        if magic != MAGIC {
            return Err(DecodeError::BadValue {
                field: "private_data.format_identifier",
                value: magic.into(),
                rule: "RFC 8797 §4 (Format Identifier is 0xf6ab0e18)",
            });
        }
        if bytes[4] != VERSION {
            return Err(DecodeError::BadValue {
                field: "private_data.version",
                value: bytes[4].into(),
                rule: "RFC 8797 §4 (Version is 1)",
            });
        }
        Ok(PrivateData {
            version: bytes[4],
            flags: bytes[5],
            send_size_code: bytes[6],
            recv_size_code: bytes[7],
        })
    }

    /// The 8-byte encoding.
    pub fn encode(&self) -> [u8; ENCODED_LEN] {
        let m = MAGIC.to_be_bytes();
        [
            m[0],
            m[1],
            m[2],
            m[3],
            self.version,
            self.flags,
            self.send_size_code,
            self.recv_size_code,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_default_layout() {
        // What a Linux peer with 4 KiB inline buffers and Send-With-Invalidate sends.
        let pd = PrivateData::new(4096, 4096, true);
        assert_eq!(pd.encode(), [0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3]);
        assert_eq!(PrivateData::decode(&pd.encode()).unwrap(), pd);
        assert_eq!((pd.send_size(), pd.recv_size()), (4096, 4096));
        assert!(pd.send_with_invalidate());
    }

    #[test]
    fn sizes_encode_as_kib_minus_one() {
        assert_eq!(encode_size(1024), 0);
        assert_eq!(encode_size(1024 * 64), 63);
        assert_eq!(encode_size(MAX_SIZE), 255);
        assert_eq!(decode_size(0), 1024);
        assert_eq!(decode_size(255), 256 * 1024);
        for code in 0..=255u8 {
            assert_eq!(encode_size(decode_size(code)), code);
        }
        // Out of range or unaligned values clamp / round down, never wrap.
        assert_eq!(encode_size(0), 0);
        assert_eq!(encode_size(1500), 0);
        assert_eq!(encode_size(u32::MAX), 255);
    }

    #[test]
    fn decode_ignores_cm_padding_and_keeps_reserved_bits() {
        let mut bytes = vec![0xf6, 0xab, 0x0e, 0x18, 1, 0xfe, 0, 255];
        bytes.resize(56, 0);
        let pd = PrivateData::decode(&bytes).unwrap();
        assert!(!pd.send_with_invalidate());
        assert_eq!(pd.flags, 0xfe);
        assert_eq!((pd.send_size(), pd.recv_size()), (1024, 256 * 1024));
        assert_eq!(pd.encode().as_slice(), &bytes[..8]);
    }

    #[test]
    fn rejects_wrong_magic_version_and_short_input() {
        let good = PrivateData::new(1024, 1024, false).encode();
        let mut bad_magic = good;
        bad_magic[3] = 0x19;
        assert!(matches!(
            PrivateData::decode(&bad_magic),
            Err(DecodeError::BadValue {
                value: 0xf6ab_0e19,
                ..
            })
        ));
        let mut bad_version = good;
        bad_version[4] = 2;
        let err = PrivateData::decode(&bad_version).unwrap_err();
        assert_eq!(err.field(), "private_data.version");
        assert!(err.rule().starts_with("RFC 8797"));
        assert!(matches!(
            PrivateData::decode(&good[..7]),
            Err(DecodeError::Truncated { available: 7, .. })
        ));
    }
}
