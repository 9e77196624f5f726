//! The transport header read leniently — the inverse of [`crate::raw::RawBuilder`]: words as
//! written, whatever they say, for the places that must look at a header the strict codec
//! ([`crate::rpcrdma::Header`]) refuses.
//!
//! Who needs that: a capture shows what it can of a header that does not decode; an endpoint
//! answers a malformed call with the XID the bytes carry (RFC 8166 §4.5); Linux's RDMA_ERROR
//! echoes the *received* version word, so an ERR_VERS answer to version 2 says vers = 2; the wire
//! fuzzer reads its own invalid cases back as structure to mutate them. Every such reading is
//! [`FixedWords::peek`] or [`Skeleton::parse`]: nothing outside this crate reads header words.
//!
//! Bounded like every decoder here: lists stop at the [`Limits`] given (a segment count above
//! the limit keeps its word; the segments up to the limit are read), and nothing panics or
//! allocates beyond the limits.

use crate::raw::proc_value;
use crate::rpcrdma::Limits;

/// The first words of a transport header (RFC 8166 §4.2.1: xid, vers, credits, proc), each as
/// far as the bytes give it, and RDMA_ERROR's error code (§4.5, the fifth word) when the proc
/// is RDMA_ERROR.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FixedWords {
    pub xid: Option<u32>,
    pub vers: Option<u32>,
    pub credits: Option<u32>,
    pub proc_: Option<u32>,
    /// `rdma_err` of an RDMA_ERROR (ERR_VERS, ERR_CHUNK or any other value written).
    pub error_code: Option<u32>,
}

impl FixedWords {
    /// The fixed words of `bytes`; a word the bytes do not hold whole is `None`.
    pub fn peek(bytes: &[u8]) -> FixedWords {
        let proc_ = word_at(bytes, 3);
        FixedWords {
            xid: word_at(bytes, 0),
            vers: word_at(bytes, 1),
            credits: word_at(bytes, 2),
            proc_,
            error_code: (proc_ == Some(proc_value::ERROR))
                .then(|| word_at(bytes, 4))
                .flatten(),
        }
    }
}

/// The big-endian word at word index `index`, if the bytes hold it whole.
fn word_at(bytes: &[u8], index: usize) -> Option<u32> {
    let start = index.checked_mul(4)?;
    let b = bytes.get(start..start.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// One RDMA segment as written (RFC 8166 §3.4.3), and the byte offset of its handle word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawSegment {
    pub handle: u32,
    pub length: u32,
    pub offset: u64,
    /// Where the segment starts in the bytes it was read from.
    pub at: usize,
}

/// A Write chunk or the Reply chunk as written: the segment count word and its segments (as
/// many as the count says, at most the limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawChunk {
    pub segcount: u32,
    pub segments: Vec<RawSegment>,
}

/// A transport header read back as structure, without judging any value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skeleton {
    pub xid: u32,
    pub vers: u32,
    pub credits: u32,
    pub proc_: u32,
    /// RDMA_MSGP's align and threshold words (RFC 8166 §4.6.1 keeps its layout).
    pub msgp: Option<(u32, u32)>,
    /// Read list entries: (position, segment).
    pub reads: Vec<(u32, RawSegment)>,
    pub writes: Vec<RawChunk>,
    pub reply: Option<RawChunk>,
    /// Where the inline body starts: after the lists, or after the fixed words when there are
    /// none.
    pub inline_at: usize,
    /// Whether chunk lists were read: always for RDMA_MSG, RDMA_NOMSG and RDMA_MSGP; for any
    /// other proc when the bytes after the fixed words read as lists.
    pub lists: bool,
}

struct WordReader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl WordReader<'_> {
    fn word(&mut self) -> Option<u32> {
        let w = word_at(self.bytes, self.at / 4)?;
        self.at += 4;
        Some(w)
    }

    fn segment(&mut self) -> Option<RawSegment> {
        let at = self.at;
        let handle = self.word()?;
        let length = self.word()?;
        let high = self.word()?;
        let low = self.word()?;
        Some(RawSegment {
            handle,
            length,
            offset: (u64::from(high) << 32) | u64::from(low),
            at,
        })
    }

    /// A Write or Reply chunk: a count above `max_segments` keeps its word and the first
    /// `max_segments` segments are read; fewer whole segments than both is a chunk cut short.
    fn chunk(&mut self, max_segments: u32) -> Option<RawChunk> {
        let segcount = self.word()?;
        let wanted = usize::try_from(segcount.min(max_segments)).ok()?;
        let mut segments = Vec::new();
        while segments.len() < wanted {
            if self.bytes.len() < self.at.saturating_add(16) {
                return None;
            }
            segments.push(self.segment()?);
        }
        Some(RawChunk { segcount, segments })
    }
}

impl Skeleton {
    /// Read `bytes` back; `None` when they are not a whole header: fewer than the fixed words,
    /// a list cut short, a list discriminator other than 0 or 1, or more list entries than
    /// `limits` allow. A proc without chunk lists whose following bytes do not read as lists is
    /// returned with `lists: false` and everything after the fixed words inline.
    pub fn parse(bytes: &[u8], limits: &Limits) -> Option<Skeleton> {
        let mut r = WordReader { bytes, at: 0 };
        let mut skeleton = Skeleton {
            xid: r.word()?,
            vers: r.word()?,
            credits: r.word()?,
            proc_: r.word()?,
            msgp: None,
            reads: Vec::new(),
            writes: Vec::new(),
            reply: None,
            inline_at: 16,
            lists: true,
        };
        match skeleton.proc_ {
            proc_value::MSG | proc_value::NOMSG => {}
            proc_value::MSGP => skeleton.msgp = Some((r.word()?, r.word()?)),
            _ => {
                let with_lists = skeleton.clone().read_lists(&mut r, limits);
                return with_lists.or_else(|| {
                    skeleton.lists = false;
                    Some(skeleton)
                });
            }
        }
        skeleton.read_lists(&mut r, limits)
    }

    fn read_lists(mut self, r: &mut WordReader<'_>, limits: &Limits) -> Option<Skeleton> {
        // Read list: (1, position, segment)* 0.
        loop {
            match r.word()? {
                0 => break,
                1 if self.reads.len() < limits.max_read_segments => {
                    let position = r.word()?;
                    self.reads.push((position, r.segment()?));
                }
                _ => return None,
            }
        }
        // Write list: (1, chunk)* 0.
        loop {
            match r.word()? {
                0 => break,
                1 if self.writes.len() < limits.max_write_chunks => {
                    self.writes.push(r.chunk(limits.max_segments_per_chunk)?);
                }
                _ => return None,
            }
        }
        // Reply chunk: 0, or (1, chunk).
        match r.word()? {
            0 => {}
            1 => self.reply = Some(r.chunk(limits.max_segments_per_chunk)?),
            _ => return None,
        }
        self.inline_at = r.at;
        Some(self)
    }

    /// The bytes of `from` after the header (the inline body), as this skeleton read them.
    pub fn inline<'a>(&self, from: &'a [u8]) -> &'a [u8] {
        from.get(self.inline_at..).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::RawBuilder;

    #[test]
    fn fixed_words_are_read_as_far_as_the_bytes_go() {
        let bytes = RawBuilder::new().fixed(7, 2, 32, 4).err_vers(1, 1).bytes();
        let words = FixedWords::peek(&bytes);
        assert_eq!(words.xid, Some(7));
        assert_eq!(words.vers, Some(2), "the echoed version, whatever it is");
        assert_eq!(words.proc_, Some(proc_value::ERROR));
        assert_eq!(words.error_code, Some(crate::rpcrdma::ERR_VERS));
        let short = FixedWords::peek(&bytes[..9]);
        assert_eq!(
            (short.xid, short.vers, short.credits),
            (Some(7), Some(2), None)
        );
        assert_eq!(FixedWords::peek(&[]), FixedWords::default());
        // The fifth word is an error code only under RDMA_ERROR.
        let msg = RawBuilder::new().fixed(7, 1, 32, 0).empty_lists().bytes();
        assert_eq!(FixedWords::peek(&msg).error_code, None);
    }

    #[test]
    fn a_skeleton_reads_back_what_the_raw_builder_wrote() {
        let bytes = RawBuilder::new()
            .fixed(9, 1, 16, proc_value::NOMSG)
            .read(0, 0x11, 40, 0x1000)
            .read(96, 0x12, 8, 0x2000)
            .end_list()
            .write_chunk(2)
            .segment(0x21, 4096, 0x3000)
            .segment(0x22, 512, 0x4000)
            .end_list()
            .reply_chunk(1)
            .segment(0x31, 1024, 0x5000_0000_0000)
            .raw(b"body")
            .bytes();
        let s = Skeleton::parse(&bytes, &Limits::default()).expect("a whole header");
        assert_eq!((s.xid, s.vers, s.credits, s.proc_), (9, 1, 16, 1));
        assert_eq!(s.reads.len(), 2);
        assert_eq!(s.reads[1].0, 96);
        assert_eq!(
            s.reads[0].1.at, 24,
            "the first segment: after the fixed words, the discriminator and the position"
        );
        assert_eq!(s.writes[0].segcount, 2);
        assert_eq!(s.writes[0].segments[1].length, 512);
        assert_eq!(
            s.reply.as_ref().unwrap().segments[0].offset,
            0x5000_0000_0000
        );
        assert_eq!(s.inline(&bytes), b"body");
        assert!(s.lists);
    }

    #[test]
    fn what_the_strict_codec_refuses_still_reads_leniently() {
        // A billion-segment Write chunk with the limit's two segments present: the count word
        // is kept, the segments up to the limit are read.
        let limits = Limits {
            max_segments_per_chunk: 2,
            ..Limits::default()
        };
        let bytes = RawBuilder::new()
            .fixed(7, 1, 32, 0)
            .end_list()
            .write_chunk(1_000_000_000)
            .segment(0x1234, 4096, 0x10_0000)
            .segment(0x1235, 4096, 0x20_0000)
            .end_list()
            .no_reply()
            .bytes();
        assert!(crate::rpcrdma::Header::decode_prefix(&bytes).is_err());
        let s = Skeleton::parse(&bytes, &limits).expect("lenient");
        assert_eq!(s.writes[0].segcount, 1_000_000_000);
        assert_eq!(s.writes[0].segments.len(), 2);
        // One segment fewer than both the count and the limit: cut short.
        let cut = RawBuilder::new()
            .fixed(7, 1, 32, 0)
            .end_list()
            .write_chunk(3)
            .segment(0x1234, 4096, 0x10_0000)
            .end_list()
            .no_reply()
            .bytes();
        assert!(Skeleton::parse(&cut, &limits).is_none());
        // Whatever version and proc: an unknown proc without lists keeps the rest inline.
        let odd = RawBuilder::new().fixed(1, 9, 0, 77).raw(&[0xff; 6]).bytes();
        let s = Skeleton::parse(&odd, &Limits::default()).expect("fixed words are there");
        assert!(!s.lists);
        assert_eq!(s.inline(&odd), [0xff; 6]);
    }

    #[test]
    fn lists_beyond_the_limits_or_cut_short_are_no_skeleton() {
        let limits = Limits {
            max_read_segments: 1,
            ..Limits::default()
        };
        let two_reads = RawBuilder::new()
            .fixed(1, 1, 1, 0)
            .read(0, 1, 1, 1)
            .read(8, 1, 1, 1)
            .end_list()
            .end_list()
            .no_reply()
            .bytes();
        assert!(Skeleton::parse(&two_reads, &limits).is_none());
        assert!(Skeleton::parse(&two_reads, &Limits::default()).is_some());
        for cut in 0..two_reads.len() - 4 {
            assert!(
                Skeleton::parse(&two_reads[..cut], &Limits::default()).is_none(),
                "cut at {cut}"
            );
        }
    }
}
