//! Raw RPC-over-RDMA header builder that can emit any byte sequence, valid or not, for fuzzing
//! and negative tests (wrong version, unknown proc, bad discriminators, truncated lists, huge
//! segment counts, unaligned or overlapping positions, trailing garbage).
//!
//! It is deterministic and free of `arbitrary`: every word is written exactly as asked. The
//! typed encoder in [`crate::rpcrdma`] only produces valid headers; use this when the point is
//! to break a rule. Example: a Write chunk claiming a billion segments:
//! ```
//! use wire::raw::RawBuilder;
//! let bytes = RawBuilder::new()
//!     .fixed(7, 1, 32, 0) // xid, vers, credits, RDMA_MSG
//!     .end_list()         // empty Read list
//!     .write_chunk(1_000_000_000)
//!     .segment(0x1234, 4096, 0x10_0000)
//!     .end_list()
//!     .no_reply()
//!     .bytes();
//! assert!(wire::rpcrdma::Header::decode_prefix(&bytes).is_err());
//! ```

use crate::rpcrdma::Header;
use crate::xdr::Xdr;

/// `rdma_proc` wire values, for readability at call sites.
pub mod proc_value {
    pub const MSG: u32 = 0;
    pub const NOMSG: u32 = 1;
    pub const MSGP: u32 = 2;
    pub const DONE: u32 = 3;
    pub const ERROR: u32 = 4;
}

/// Appends big-endian words; nothing is validated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawBuilder {
    buf: Vec<u8>,
}

impl RawBuilder {
    /// An empty buffer.
    pub fn new() -> Self {
        RawBuilder::default()
    }

    /// Start from the valid encoding of `header` (then append, truncate or patch).
    pub fn from_header(header: &Header) -> Self {
        RawBuilder {
            buf: header.to_bytes(),
        }
    }

    /// The four fixed words: xid, vers, credits, proc (any values).
    pub fn fixed(self, xid: u32, vers: u32, credits: u32, proc_: u32) -> Self {
        self.word(xid).word(vers).word(credits).word(proc_)
    }

    /// One 32-bit word.
    pub fn word(mut self, value: u32) -> Self {
        self.buf.extend_from_slice(&value.to_be_bytes());
        self
    }

    /// Several 32-bit words.
    pub fn words(self, values: &[u32]) -> Self {
        values.iter().fold(self, |b, v| b.word(*v))
    }

    /// One 64-bit hyper.
    pub fn hyper(mut self, value: u64) -> Self {
        self.buf.extend_from_slice(&value.to_be_bytes());
        self
    }

    /// Raw bytes, unpadded (so also unaligned garbage).
    pub fn raw(mut self, bytes: &[u8]) -> Self {
        self.buf.extend_from_slice(bytes);
        self
    }

    /// A list/optional discriminator with any value (1 = present, 0 = end, others invalid).
    pub fn discriminator(self, value: u32) -> Self {
        self.word(value)
    }

    /// One Read list entry: discriminator 1, position, then the segment.
    pub fn read(self, position: u32, handle: u32, length: u32, offset: u64) -> Self {
        self.word(1).word(position).segment(handle, length, offset)
    }

    /// A list terminator (discriminator 0); also "no Reply chunk".
    pub fn end_list(self) -> Self {
        self.word(0)
    }

    /// Three empty lists: no Read, Write or Reply chunk.
    pub fn empty_lists(self) -> Self {
        self.end_list().end_list().end_list()
    }

    /// Start a Write chunk: discriminator 1 and a segment count (segments follow separately, so
    /// the count can disagree with them).
    pub fn write_chunk(self, segcount: u32) -> Self {
        self.word(1).word(segcount)
    }

    /// Start the Reply chunk: discriminator 1 and a segment count.
    pub fn reply_chunk(self, segcount: u32) -> Self {
        self.word(1).word(segcount)
    }

    /// No Reply chunk.
    pub fn no_reply(self) -> Self {
        self.word(0)
    }

    /// One `rdma_segment`: handle, length, offset.
    pub fn segment(self, handle: u32, length: u32, offset: u64) -> Self {
        self.word(handle).word(length).hyper(offset)
    }

    /// `count` distinct segments of `length` bytes each (handles 0x100.., offsets 0x10000 apart).
    pub fn segments(self, count: u32, length: u32) -> Self {
        (0..count).fold(self, |b, i| {
            b.segment(0x100 + i, length, 0x1_0000 * u64::from(i))
        })
    }

    /// RDMA_MSGP's align and thresh words.
    pub fn msgp(self, align: u32, thresh: u32) -> Self {
        self.word(align).word(thresh)
    }

    /// RDMA_ERROR body with ERR_VERS.
    pub fn err_vers(self, low: u32, high: u32) -> Self {
        self.word(crate::rpcrdma::ERR_VERS).word(low).word(high)
    }

    /// RDMA_ERROR body with ERR_CHUNK.
    pub fn err_chunk(self) -> Self {
        self.word(crate::rpcrdma::ERR_CHUNK)
    }

    /// Keep only the first `len` bytes (no-op if shorter).
    pub fn truncate(mut self, len: usize) -> Self {
        self.buf.truncate(len);
        self
    }

    /// Drop the last `count` bytes.
    pub fn drop_last(mut self, count: usize) -> Self {
        let keep = self.buf.len().saturating_sub(count);
        self.buf.truncate(keep);
        self
    }

    /// Overwrite the 32-bit word at byte offset `at` (no-op if out of range).
    pub fn patch_word(mut self, at: usize, value: u32) -> Self {
        if let Some(slot) = self.buf.get_mut(at..at.saturating_add(4)) {
            if slot.len() == 4 {
                slot.copy_from_slice(&value.to_be_bytes());
            }
        }
        self
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The finished bytes.
    pub fn bytes(self) -> Vec<u8> {
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::DecodeError;
    use crate::rpcrdma::{Body, ChunkLists, ReadSegment, Segment};

    #[test]
    fn builds_the_same_bytes_as_the_typed_encoder() {
        let header = Header {
            xid: 0x0102_0304,
            vers: 1,
            credits: 64,
            body: Body::Msg(ChunkLists {
                reads: vec![ReadSegment {
                    position: 40,
                    target: Segment {
                        handle: 9,
                        length: 8192,
                        offset: 0xdead_0000,
                    },
                }],
                writes: vec![vec![
                    Segment {
                        handle: 0x100,
                        length: 4096,
                        offset: 0,
                    },
                    Segment {
                        handle: 0x101,
                        length: 4096,
                        offset: 0x1_0000,
                    },
                ]],
                reply: None,
            }),
        };
        let raw = RawBuilder::new()
            .fixed(0x0102_0304, 1, 64, proc_value::MSG)
            .read(40, 9, 8192, 0xdead_0000)
            .end_list()
            .write_chunk(2)
            .segments(2, 4096)
            .end_list()
            .no_reply()
            .bytes();
        assert_eq!(raw, header.to_bytes());
        assert_eq!(RawBuilder::from_header(&header).bytes(), raw);
    }

    #[test]
    fn emits_invalid_encodings_on_purpose() {
        let wrong_vers = RawBuilder::new().fixed(1, 2, 1, 0).empty_lists().bytes();
        assert!(matches!(
            Header::decode_prefix(&wrong_vers),
            Err(DecodeError::BadValue { value: 2, .. })
        ));
        let bad_disc = RawBuilder::new().fixed(1, 1, 1, 0).discriminator(2).bytes();
        assert!(matches!(
            Header::decode_prefix(&bad_disc),
            Err(DecodeError::BadDiscriminant { value: 2, .. })
        ));
        let truncated = RawBuilder::new()
            .fixed(1, 1, 1, 0)
            .read(4, 1, 1, 1)
            .drop_last(3)
            .bytes();
        assert!(matches!(
            Header::decode_prefix(&truncated),
            Err(DecodeError::Truncated { .. })
        ));
    }

    #[test]
    fn patch_and_truncate_are_bounded() {
        let b = RawBuilder::new().fixed(1, 1, 1, 0);
        assert_eq!(b.len(), 16);
        let patched = b.clone().patch_word(4, 7).bytes();
        assert_eq!(&patched[4..8], &[0, 0, 0, 7]);
        // Out-of-range patches and over-long truncations change nothing.
        assert_eq!(b.clone().patch_word(14, 7), b);
        assert_eq!(b.clone().patch_word(usize::MAX, 7), b);
        assert_eq!(b.clone().truncate(100), b);
        assert!(b.clone().drop_last(100).is_empty());
    }
}
