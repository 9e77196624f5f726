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

/// Which fixture directory a corpus entry belongs in: whether the strict codec decodes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// `fixtures/ok/`: [`Header::decode_prefix`] succeeds and re-encodes to the same bytes.
    Decodes,
    /// `fixtures/err/`: [`Header::decode_prefix`] fails.
    Rejected,
}

/// One named message of the fixture / fuzz seed corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixture {
    /// File stem, named by message kind (e.g. `msg-write-read-chunk`).
    pub name: &'static str,
    pub expect: Expect,
    /// The whole Send payload: transport header and, where sensible, the inline RPC message.
    pub bytes: Vec<u8>,
}

impl Fixture {
    /// `"ok"` or `"err"`.
    pub fn dir(&self) -> &'static str {
        match self.expect {
            Expect::Decodes => "ok",
            Expect::Rejected => "err",
        }
    }
}

/// ONC RPC v2 program numbers used by the corpus (RFC 1813).
const NFS_PROGRAM: u32 = 100_003;
const NFS_V3: u32 = 3;
/// AUTH_NONE and AUTH_SYS flavors (RFC 5531 §8.2).
const AUTH_NONE: u32 = 0;
const AUTH_SYS: u32 = 1;

/// An NFSv3 call header (RFC 5531 §9): xid, CALL, rpcvers 2, prog, vers, proc, cred, verf.
/// With `auth_sys`, the credential is AUTH_SYS for root on host "rig" (RFC 5531 §A.1).
fn nfs3_call(builder: RawBuilder, xid: u32, proc_: u32, auth_sys: bool) -> RawBuilder {
    let b = builder.words(&[xid, 0, 2, NFS_PROGRAM, NFS_V3, proc_]);
    let b = if auth_sys {
        // stamp, machinename<255> "rig", uid 0, gid 0, gids<16> = []
        b.words(&[AUTH_SYS, 24, 0x0000_5eed, 3])
            .raw(b"rig\0")
            .words(&[0, 0, 0])
    } else {
        b.words(&[AUTH_NONE, 0])
    };
    b.words(&[AUTH_NONE, 0])
}

/// An NFSv3 file handle (`nfs_fh3`, opaque<64>) of 32 recognisable bytes.
fn file_handle(builder: RawBuilder) -> RawBuilder {
    let fh: Vec<u8> = (0u8..32).map(|i| 0xf0 ^ i).collect();
    builder.word(32).raw(&fh)
}

/// The deterministic corpus behind `fixtures/{ok,err}/*.bin` (written by
/// `cargo run -p rpcrdma-wire --example gen_fixtures`) and the fuzz seed corpus.
pub fn fixture_corpus() -> Vec<Fixture> {
    use proc_value::{DONE, ERROR, MSG, MSGP, NOMSG};
    let xid = 0x0000_0b01;
    let msg = || RawBuilder::new().fixed(xid, 1, 32, MSG);
    let ok = |name, b: RawBuilder| Fixture {
        name,
        expect: Expect::Decodes,
        bytes: b.bytes(),
    };
    let err = |name, b: RawBuilder| Fixture {
        name,
        expect: Expect::Rejected,
        bytes: b.bytes(),
    };
    // NFSv3 WRITE3args up to the data length word: fh, offset, count, stable=FILE_SYNC, length.
    // The data item itself travels in the Read chunk, positioned right after its length word.
    let write_args = |b| file_handle(b).hyper(0).word(8192).word(2).word(8192);
    let write_call = write_args(nfs3_call(RawBuilder::new(), xid, 7, true));
    let write_position = crate::ddp::argument_position(write_call.len());
    vec![
        ok("msg-null", nfs3_call(msg().empty_lists(), xid, 0, false)),
        ok(
            "msg-getattr",
            file_handle(nfs3_call(msg().empty_lists(), xid, 1, true)),
        ),
        ok(
            "msg-write-read-chunk",
            msg()
                .read(write_position, 0x1001, 4096, 0x7f00_0000_0000)
                .read(write_position, 0x1002, 4096, 0x7f00_0000_2000)
                .end_list()
                .end_list()
                .no_reply()
                .raw(&write_call.bytes()),
        ),
        ok(
            "msg-read-write-chunk",
            // READ3args: fh, offset, count; the reply's data lands in the Write chunk.
            file_handle(nfs3_call(
                msg()
                    .end_list()
                    .write_chunk(1)
                    .segment(0x2001, 8192, 0x7f00_0001_0000)
                    .end_list()
                    .no_reply(),
                xid,
                6,
                true,
            ))
            .hyper(0)
            .word(8192),
        ),
        ok(
            "msg-readdir-reply-chunk",
            // READDIR3args: dir fh, cookie, cookieverf, count; the reply goes in the Reply chunk.
            file_handle(nfs3_call(
                msg()
                    .end_list()
                    .end_list()
                    .reply_chunk(2)
                    .segment(0x3001, 4096, 0x7f00_0002_0000)
                    .segment(0x3002, 4096, 0x7f00_0002_1000),
                xid,
                16,
                true,
            ))
            .hyper(0)
            .hyper(0)
            .word(8192),
        ),
        ok(
            "msg-multiple-chunks",
            msg()
                .read(40, 0x4001, 512, 0x1000)
                .read(1064, 0x4002, 256, 0x2000)
                .read(40, 0x4003, 512, 0x3000)
                .end_list()
                .write_chunk(3)
                .segments(3, 1024)
                .write_chunk(1)
                .segments(1, 2048)
                .end_list()
                .reply_chunk(1)
                .segments(1, 4096)
                .raw(&nfs3_call(RawBuilder::new(), xid, 0, false).bytes()),
        ),
        ok(
            "nomsg-position-zero",
            // The whole call is in the Position-Zero Read chunk; nothing follows inline.
            RawBuilder::new()
                .fixed(xid, 1, 32, NOMSG)
                .read(0, 0x5001, 2048, 0x7f00_0003_0000)
                .end_list()
                .end_list()
                .reply_chunk(1)
                .segment(0x5002, 4096, 0x7f00_0004_0000),
        ),
        ok(
            "msgp-null",
            nfs3_call(
                RawBuilder::new()
                    .fixed(xid, 1, 32, MSGP)
                    .msgp(1024, 4096)
                    .empty_lists(),
                xid,
                0,
                false,
            ),
        ),
        ok("done", RawBuilder::new().fixed(xid, 1, 0, DONE)),
        ok(
            "error-vers",
            RawBuilder::new().fixed(xid, 1, 32, ERROR).err_vers(1, 1),
        ),
        ok(
            "error-chunk",
            RawBuilder::new().fixed(xid, 1, 32, ERROR).err_chunk(),
        ),
        // Well-formed XDR that a responder may still refuse: decode accepts, svcrdma decides.
        ok(
            "msg-write-segcount-zero",
            nfs3_call(
                msg().end_list().write_chunk(0).end_list().no_reply(),
                xid,
                0,
                false,
            ),
        ),
        ok(
            "msg-read-position-unaligned",
            nfs3_call(
                msg()
                    .read(42, 0x6001, 100, 0)
                    .end_list()
                    .end_list()
                    .no_reply(),
                xid,
                0,
                false,
            ),
        ),
        ok(
            "msg-read-chunk-past-inline",
            nfs3_call(
                msg()
                    .read(4000, 0x6002, 4096, 0)
                    .end_list()
                    .end_list()
                    .no_reply(),
                xid,
                0,
                false,
            ),
        ),
        ok(
            "msg-read-chunks-overlap",
            nfs3_call(
                msg()
                    .read(8, 0x6003, 100, 0)
                    .read(12, 0x6004, 100, 0x1000)
                    .end_list()
                    .end_list()
                    .no_reply(),
                xid,
                0,
                false,
            ),
        ),
        ok(
            "msg-read-length-max",
            nfs3_call(
                msg()
                    .read(40, 0x6005, u32::MAX, u64::MAX - 0xffff)
                    .end_list()
                    .end_list()
                    .no_reply(),
                xid,
                0,
                false,
            ),
        ),
        err("short-header", RawBuilder::new().words(&[xid, 1, 32])),
        err(
            "vers-2",
            RawBuilder::new().fixed(xid, 2, 32, MSG).empty_lists(),
        ),
        err(
            "vers-0",
            RawBuilder::new().fixed(xid, 0, 32, MSG).empty_lists(),
        ),
        err(
            "proc-unknown-5",
            RawBuilder::new().fixed(xid, 1, 32, 5).empty_lists(),
        ),
        err(
            "read-discriminator-2",
            msg()
                .discriminator(2)
                .words(&[40, 1, 64])
                .hyper(0)
                .empty_lists(),
        ),
        err(
            "write-discriminator-ffffffff",
            msg()
                .end_list()
                .discriminator(0xffff_ffff)
                .word(0)
                .end_list()
                .no_reply(),
        ),
        err(
            "reply-discriminator-2",
            msg().end_list().end_list().discriminator(2),
        ),
        err("read-list-truncated", msg().read(40, 1, 64, 0).drop_last(6)),
        err("read-list-unterminated", msg().read(40, 1, 64, 0)),
        err(
            "segcount-huge",
            msg()
                .end_list()
                .write_chunk(0x4000_0000)
                .segments(1, 4096)
                .end_list()
                .no_reply(),
        ),
        err(
            "write-segments-truncated",
            msg()
                .end_list()
                .write_chunk(4)
                .segments(2, 4096)
                .end_list()
                .no_reply(),
        ),
        err(
            "reply-segcount-missing",
            msg().end_list().end_list().word(1),
        ),
        err(
            "error-errcode-3",
            RawBuilder::new().fixed(xid, 1, 32, ERROR).word(3),
        ),
        err(
            "error-vers-truncated",
            RawBuilder::new().fixed(xid, 1, 32, ERROR).word(1).word(1),
        ),
        err(
            "msgp-truncated",
            RawBuilder::new().fixed(xid, 1, 32, MSGP).word(1024),
        ),
    ]
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
            Err(DecodeError::UnsupportedVersion { value: 2 })
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
