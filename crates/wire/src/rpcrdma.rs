//! RPC-over-RDMA version 1 transport header (RFC 8166 §4; XDR definition in RFC 8166 §5).
//!
//! A [`Header`] is the transport header at the start of every RDMA Send: the four fixed words
//! (xid, vers, credits, proc) and a body chosen by `proc`. RDMA_MSG and RDMA_NOMSG carry three
//! chunk lists (Read list, Write list, Reply chunk); RDMA_MSGP adds `align`/`thresh` before them;
//! RDMA_ERROR carries an error code. For RDMA_MSG/RDMA_MSGP the RPC message follows the header
//! inline, so [`Header::decode_prefix`] reports how many bytes the header took.
//!
//! Decoding is structural and strict: every discriminator must be 0 or 1, every count is checked
//! against [`Limits`] and against the bytes left before anything is allocated, and each error names
//! the RFC 8166 rule it broke. Semantic checks a particular responder applies live elsewhere —
//! the Read chunk position rule in [`crate::ddp`], svcrdma's segment counts in [`crate::svcrdma`] —
//! so decode stays usable for tracing and fuzzing messages that a real server would refuse.

use serde::Serialize;

use crate::error::{DecodeError, Result};
use crate::xdr::{Reader, Writer, Xdr};

/// The only RPC-over-RDMA version this module decodes (RFC 8166 §4.1.2).
pub const RPCRDMA_VERSION: u32 = 1;
/// `rpc_rdma_errcode` ERR_VERS (RFC 8166 §5.3, §4.5.1).
pub const ERR_VERS: u32 = 1;
/// `rpc_rdma_errcode` ERR_CHUNK (RFC 8166 §5.3, §4.5.2).
pub const ERR_CHUNK: u32 = 2;
/// Bytes in the fixed header: xid, vers, credits, proc.
pub const FIXED_HEADER_LEN: usize = 16;
/// Bytes in one `rdma_segment` on the wire: handle, length, 64-bit offset.
pub const SEGMENT_LEN: usize = 16;
/// Bytes in one Read list entry after its discriminator: position + segment.
pub const READ_SEGMENT_LEN: usize = 4 + SEGMENT_LEN;
/// Smallest RDMA_MSG/RDMA_NOMSG header: fixed words plus three empty lists (7 words).
pub const MIN_CHUNKED_HEADER_LEN: usize = FIXED_HEADER_LEN + 12;

const RULE_PROC: &str = "RFC 8166 §4.1.4 (rdma_proc is RDMA_MSG..RDMA_ERROR)";
const RULE_READ_LIST: &str = "RFC 8166 §4.2.1 (Read list entry discriminator is 0 or 1)";
const RULE_READ_LIMIT: &str = "RFC 8166 §4.2.1 (Read list bounded by Limits::max_read_segments)";
const RULE_WRITE_LIST: &str = "RFC 8166 §4.2.2 (Write list entry discriminator is 0 or 1)";
const RULE_WRITE_LIMIT: &str = "RFC 8166 §4.2.2 (Write list bounded by Limits::max_write_chunks)";
const RULE_SEGCOUNT: &str =
    "RFC 8166 §3.4.6 (Write chunk segment count bounded by Limits::max_segments_per_chunk)";
const RULE_REPLY: &str = "RFC 8166 §4.2.3 (Reply chunk discriminator is 0 or 1)";
const RULE_ERRCODE: &str = "RFC 8166 §5.3 (rdma_err is ERR_VERS or ERR_CHUNK)";

/// Decoder bounds. Every list and array is capped so that no input can make the decoder allocate
/// or loop beyond these numbers (each entry also has to be present in the input bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Read list entries (segments, over all Read chunks).
    pub max_read_segments: usize,
    /// Write chunks in the Write list.
    pub max_write_chunks: usize,
    /// Segments in one Write chunk or in the Reply chunk.
    pub max_segments_per_chunk: u32,
}

impl Default for Limits {
    /// Generous for any real client (a 64 KiB inline buffer holds at most ~2700 Read segments)
    /// but bounded.
    fn default() -> Self {
        Limits {
            max_read_segments: 4096,
            max_write_chunks: 1024,
            max_segments_per_chunk: 4096,
        }
    }
}

/// One registered memory region (RFC 8166 §3.4.3 `rdma_segment`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Segment {
    /// The STag / R_key naming the region.
    pub handle: u32,
    /// Length of the region in bytes.
    pub length: u32,
    /// Offset (usually a virtual address) of the region.
    pub offset: u64,
}

impl Segment {
    /// The offset one past the region's last byte, or `None` if it wraps the 64-bit space.
    pub fn end_offset(&self) -> Option<u64> {
        self.offset.checked_add(u64::from(self.length))
    }
}

impl Xdr for Segment {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Segment {
            handle: r.u32("rdma_segment.handle")?,
            length: r.u32("rdma_segment.length")?,
            offset: r.u64("rdma_segment.offset")?,
        })
    }

    fn encode(&self, w: &mut Writer) {
        w.u32(self.handle).u32(self.length).u64(self.offset);
    }
}

/// Sum of the segment lengths of a chunk, in 64 bits so it cannot wrap.
pub fn total_length(segments: &[Segment]) -> u64 {
    sum_lengths(segments.iter())
}

/// [`total_length`] of a whole Read list: every Read chunk's segments together.
pub fn read_list_length(reads: &[ReadSegment]) -> u64 {
    sum_lengths(reads.iter().map(|read| &read.target))
}

/// The one sum of segment lengths (saturating: no list is long enough to reach `u64::MAX`).
fn sum_lengths<'a>(segments: impl Iterator<Item = &'a Segment>) -> u64 {
    segments.fold(0u64, |sum, s| sum.saturating_add(u64::from(s.length)))
}

/// One Read list entry (RFC 8166 §3.4.5 `rdma_read_segment`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReadSegment {
    /// XDR position in the unreduced RPC message; 0 marks the Position-Zero Read chunk.
    pub position: u32,
    /// Where the Responder reads the data from.
    pub target: Segment,
}

impl Xdr for ReadSegment {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Ok(ReadSegment {
            position: r.u32("read_segment.position")?,
            target: Segment::decode(r)?,
        })
    }

    fn encode(&self, w: &mut Writer) {
        w.u32(self.position);
        self.target.encode(w);
    }
}

/// A Write chunk or the Reply chunk: a counted array of segments (RFC 8166 §3.4.6).
pub type WriteChunk = Vec<Segment>;

/// Read segments that share one position form one Read chunk (RFC 8166 §3.4.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadChunk {
    pub position: u32,
    pub segments: Vec<Segment>,
}

impl ReadChunk {
    /// Sum of the segment lengths.
    pub fn length(&self) -> u64 {
        total_length(&self.segments)
    }
}

/// RFC 8166 §3.4.5: Read segments that share a position form one Read chunk, in wire order;
/// chunks come back ordered by position (position 0 is the Position-Zero Read chunk).
pub fn group(reads: &[ReadSegment]) -> Vec<ReadChunk> {
    let mut chunks: Vec<ReadChunk> = Vec::new();
    for read in reads {
        match chunks.iter_mut().find(|c| c.position == read.position) {
            Some(chunk) => chunk.segments.push(read.target),
            None => chunks.push(ReadChunk {
                position: read.position,
                segments: vec![read.target],
            }),
        }
    }
    chunks.sort_by_key(|c| c.position);
    chunks
}

/// The three chunk lists of RDMA_MSG, RDMA_NOMSG and RDMA_MSGP (RFC 8166 §4.2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ChunkLists {
    /// Read list entries in wire order.
    pub reads: Vec<ReadSegment>,
    /// Write chunks in wire order.
    pub writes: Vec<WriteChunk>,
    /// The Reply chunk, if the Requester provided one.
    pub reply: Option<WriteChunk>,
}

/// A Write or Reply chunk of a call that describes no memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EmptyChunk {
    /// The Write list's chunk at this index has no segments.
    Write { index: usize },
    /// The Reply chunk has no segments.
    Reply,
}

impl ChunkLists {
    /// No Read, Write or Reply chunk at all.
    pub fn is_empty(&self) -> bool {
        self.reads.is_empty() && self.writes.is_empty() && self.reply.is_none()
    }

    /// RFC 8166 §3.4.6: a Write or Reply chunk is the memory the Responder writes into; one with
    /// no segments describes none, so a call carrying one cannot be answered (svcrdma rule 7;
    /// the kernel model checks the raw segcount word, `svcrdma::Rule::WriteSegcountZero`).
    pub fn check_write_chunks_describe_memory(&self) -> std::result::Result<(), EmptyChunk> {
        if let Some(index) = self.writes.iter().position(|chunk| chunk.is_empty()) {
            return Err(EmptyChunk::Write { index });
        }
        if self.reply.as_ref().is_some_and(|chunk| chunk.is_empty()) {
            return Err(EmptyChunk::Reply);
        }
        Ok(())
    }

    /// The Read list grouped into chunks by position, ordered by position; segments keep their
    /// wire order inside a chunk (RFC 8166 §3.4.5: segments with the same position belong to one
    /// chunk). Position 0 is the Position-Zero Read chunk.
    pub fn read_chunks(&self) -> Vec<ReadChunk> {
        group(&self.reads)
    }

    /// Number of segments over all three lists.
    pub fn segment_count(&self) -> usize {
        self.reads.len()
            + self.writes.iter().map(Vec::len).sum::<usize>()
            + self.reply.as_ref().map_or(0, Vec::len)
    }

    /// Bytes these lists take on the wire.
    pub fn encoded_len(&self) -> usize {
        let reads = self.reads.len() * (4 + READ_SEGMENT_LEN) + 4;
        let writes: usize = self
            .writes
            .iter()
            .map(|c| 4 + 4 + c.len() * SEGMENT_LEN)
            .sum::<usize>()
            + 4;
        let reply = 4 + self.reply.as_ref().map_or(0, |c| 4 + c.len() * SEGMENT_LEN);
        reads + writes + reply
    }

    /// Decode the three lists with explicit bounds.
    pub fn decode_with(r: &mut Reader<'_>, limits: &Limits) -> Result<Self> {
        // RFC 8166 §4.2.1: the Read list is an XDR optional-data linked list of read segments.
        let mut reads = Vec::new();
        while present(r, "read_list.discriminator", RULE_READ_LIST)? {
            if reads.len() >= limits.max_read_segments {
                return Err(DecodeError::LengthOverLimit {
                    field: "read_list",
                    length: reads.len() as u64 + 1,
                    limit: limits.max_read_segments as u64,
                    rule: RULE_READ_LIMIT,
                });
            }
            reads.push(ReadSegment::decode(r)?);
        }
        // RFC 8166 §4.2.2: the Write list is a linked list of Write chunks, each a counted array.
        let mut writes = Vec::new();
        while present(r, "write_list.discriminator", RULE_WRITE_LIST)? {
            if writes.len() >= limits.max_write_chunks {
                return Err(DecodeError::LengthOverLimit {
                    field: "write_list",
                    length: writes.len() as u64 + 1,
                    limit: limits.max_write_chunks as u64,
                    rule: RULE_WRITE_LIMIT,
                });
            }
            writes.push(decode_write_chunk(r, limits, "write_chunk.segcount")?);
        }
        // RFC 8166 §4.2.3: the Reply chunk is an optional Write chunk.
        let reply = if present(r, "reply_chunk.discriminator", RULE_REPLY)? {
            Some(decode_write_chunk(r, limits, "reply_chunk.segcount")?)
        } else {
            None
        };
        Ok(ChunkLists {
            reads,
            writes,
            reply,
        })
    }
}

impl Xdr for ChunkLists {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        ChunkLists::decode_with(r, &Limits::default())
    }

    fn encode(&self, w: &mut Writer) {
        w.list(&self.reads, |w, s| s.encode(w));
        w.list(&self.writes, |w, c| encode_write_chunk(w, c));
        w.optional(self.reply.as_ref(), |w, c| encode_write_chunk(w, c));
    }
}

/// An XDR optional-data discriminator whose bad values name an RFC 8166 rule.
fn present(r: &mut Reader<'_>, field: &'static str, rule: &'static str) -> Result<bool> {
    match r.u32(field)? {
        0 => Ok(false),
        1 => Ok(true),
        value => Err(DecodeError::BadDiscriminant { field, value, rule }),
    }
}

fn decode_write_chunk(
    r: &mut Reader<'_>,
    limits: &Limits,
    field: &'static str,
) -> Result<WriteChunk> {
    let segcount = r.u32(field)?;
    if segcount > limits.max_segments_per_chunk {
        return Err(DecodeError::LengthOverLimit {
            field,
            length: segcount.into(),
            limit: limits.max_segments_per_chunk.into(),
            rule: RULE_SEGCOUNT,
        });
    }
    // Refuse a count the remaining bytes cannot hold before reserving space for it.
    let needed = (segcount as usize).saturating_mul(SEGMENT_LEN);
    if needed > r.remaining() {
        return Err(DecodeError::Truncated {
            field,
            needed,
            available: r.remaining(),
        });
    }
    let mut segments = Vec::with_capacity(segcount as usize);
    for _ in 0..segcount {
        segments.push(Segment::decode(r)?);
    }
    Ok(segments)
}

fn encode_write_chunk(w: &mut Writer, chunk: &[Segment]) {
    w.array(chunk, |w, s| s.encode(w));
}

/// `rdma_proc` (RFC 8166 §4.1.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Proc {
    Msg = 0,
    Nomsg = 1,
    Msgp = 2,
    Done = 3,
    Error = 4,
}

impl Proc {
    /// Every procedure, in wire-value order.
    pub const ALL: [Proc; 5] = [Proc::Msg, Proc::Nomsg, Proc::Msgp, Proc::Done, Proc::Error];

    /// The RFC's name, e.g. `"RDMA_MSG"`.
    pub fn name(self) -> &'static str {
        match self {
            Proc::Msg => "RDMA_MSG",
            Proc::Nomsg => "RDMA_NOMSG",
            Proc::Msgp => "RDMA_MSGP",
            Proc::Done => "RDMA_DONE",
            Proc::Error => "RDMA_ERROR",
        }
    }

    /// The procedure with this wire value, if defined.
    pub fn from_u32(value: u32) -> Option<Proc> {
        Proc::ALL.get(value as usize).copied()
    }
}

/// The body of RDMA_ERROR (RFC 8166 §4.5, `rpc_rdma_errvers` / ERR_CHUNK).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ErrorBody {
    /// ERR_VERS: the versions the Responder supports.
    Vers { low: u32, high: u32 },
    /// ERR_CHUNK: the header or its chunks could not be parsed or processed.
    Chunk,
}

/// The body of RDMA_ERROR: the error code and, for ERR_VERS, the version range.
fn decode_error_body(r: &mut Reader<'_>) -> Result<ErrorBody> {
    match r.u32("rdma_err")? {
        ERR_VERS => Ok(ErrorBody::Vers {
            low: r.u32("rdma_vers_low")?,
            high: r.u32("rdma_vers_high")?,
        }),
        ERR_CHUNK => Ok(ErrorBody::Chunk),
        value => Err(DecodeError::BadDiscriminant {
            field: "rdma_err",
            value,
            rule: RULE_ERRCODE,
        }),
    }
}

/// The procedure-specific part of the header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Body {
    Msg(ChunkLists),
    Nomsg(ChunkLists),
    /// RFC 8166 §4.6.1: RDMA_MSGP is no longer supported, but still has a defined layout.
    Msgp {
        align: u32,
        thresh: u32,
        chunks: ChunkLists,
    },
    /// RFC 8166 §4.6.2: RDMA_DONE carries no body.
    Done,
    Error(ErrorBody),
}

/// An RPC-over-RDMA version 1 transport header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Header {
    pub xid: u32,
    pub vers: u32,
    pub credits: u32,
    pub body: Body,
}

impl Header {
    /// The procedure of the body.
    pub fn proc(&self) -> Proc {
        match self.body {
            Body::Msg(_) => Proc::Msg,
            Body::Nomsg(_) => Proc::Nomsg,
            Body::Msgp { .. } => Proc::Msgp,
            Body::Done => Proc::Done,
            Body::Error(_) => Proc::Error,
        }
    }

    /// The chunk lists of RDMA_MSG, RDMA_NOMSG and RDMA_MSGP.
    pub fn chunks(&self) -> Option<&ChunkLists> {
        match &self.body {
            Body::Msg(c) | Body::Nomsg(c) | Body::Msgp { chunks: c, .. } => Some(c),
            Body::Done | Body::Error(_) => None,
        }
    }

    /// Decode the transport header at the start of a Send payload; returns the header and how many
    /// bytes it consumed (the inline RPC message, if any, follows). Uses [`Limits::default`].
    pub fn decode_prefix(bytes: &[u8]) -> Result<(Header, usize)> {
        Header::decode_prefix_with(bytes, &Limits::default())
    }

    /// [`Header::decode_prefix`] with explicit bounds.
    pub fn decode_prefix_with(bytes: &[u8], limits: &Limits) -> Result<(Header, usize)> {
        let mut r = Reader::new(bytes);
        let header = Header::decode_with(&mut r, limits)?;
        Ok((header, r.consumed()))
    }

    /// Decode one header from `r` with explicit bounds.
    pub fn decode_with(r: &mut Reader<'_>, limits: &Limits) -> Result<Header> {
        let xid = r.u32("rdma_xid")?;
        let vers = r.u32("rdma_vers")?;
        // RFC 8166 §4.1.2: a header whose version is not 1 cannot be parsed further; the
        // Responder answers ERR_VERS (§4.5.1).
        if vers != RPCRDMA_VERSION {
            return Err(DecodeError::UnsupportedVersion { value: vers });
        }
        let credits = r.u32("rdma_credit")?;
        let proc_value = r.u32("rdma_proc")?;
        let body = match Proc::from_u32(proc_value) {
            Some(Proc::Msg) => Body::Msg(ChunkLists::decode_with(r, limits)?),
            Some(Proc::Nomsg) => Body::Nomsg(ChunkLists::decode_with(r, limits)?),
            Some(Proc::Msgp) => Body::Msgp {
                align: r.u32("rdma_align")?,
                thresh: r.u32("rdma_thresh")?,
                chunks: ChunkLists::decode_with(r, limits)?,
            },
            Some(Proc::Done) => Body::Done,
            Some(Proc::Error) => Body::Error(
                decode_error_body(r)
                    .map_err(|inner| DecodeError::MalformedErrorBody(Box::new(inner)))?,
            ),
            None => {
                return Err(DecodeError::BadDiscriminant {
                    field: "rdma_proc",
                    value: proc_value,
                    rule: RULE_PROC,
                })
            }
        };
        Ok(Header {
            xid,
            vers,
            credits,
            body,
        })
    }

    /// Bytes this header takes on the wire.
    pub fn encoded_len(&self) -> usize {
        FIXED_HEADER_LEN
            + match &self.body {
                Body::Msg(c) | Body::Nomsg(c) => c.encoded_len(),
                Body::Msgp { chunks, .. } => 8 + chunks.encoded_len(),
                Body::Done => 0,
                Body::Error(ErrorBody::Vers { .. }) => 12,
                Body::Error(ErrorBody::Chunk) => 4,
            }
    }
}

impl Xdr for Header {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        Header::decode_with(r, &Limits::default())
    }

    fn encode(&self, w: &mut Writer) {
        w.u32(self.xid)
            .u32(self.vers)
            .u32(self.credits)
            .u32(self.proc() as u32);
        match &self.body {
            Body::Msg(c) | Body::Nomsg(c) => c.encode(w),
            Body::Msgp {
                align,
                thresh,
                chunks,
            } => {
                w.u32(*align).u32(*thresh);
                chunks.encode(w);
            }
            Body::Done => {}
            Body::Error(ErrorBody::Vers { low, high }) => {
                w.u32(ERR_VERS).u32(*low).u32(*high);
            }
            Body::Error(ErrorBody::Chunk) => {
                w.u32(ERR_CHUNK);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_or_reply_chunk_without_segments_describes_no_memory() {
        let segment = Segment {
            handle: 1,
            length: 8,
            offset: 0,
        };
        let mut chunks = ChunkLists {
            writes: vec![vec![segment], vec![]],
            ..ChunkLists::default()
        };
        assert_eq!(
            chunks.check_write_chunks_describe_memory(),
            Err(EmptyChunk::Write { index: 1 })
        );
        chunks.writes.pop();
        assert_eq!(chunks.check_write_chunks_describe_memory(), Ok(()));
        chunks.reply = Some(vec![]);
        assert_eq!(
            chunks.check_write_chunks_describe_memory(),
            Err(EmptyChunk::Reply)
        );
        chunks.reply = Some(vec![segment]);
        assert_eq!(chunks.check_write_chunks_describe_memory(), Ok(()));
    }

    fn seg(handle: u32, length: u32, offset: u64) -> Segment {
        Segment {
            handle,
            length,
            offset,
        }
    }

    fn rich_lists() -> ChunkLists {
        ChunkLists {
            reads: vec![
                ReadSegment {
                    position: 132,
                    target: seg(0x11, 4096, 0x1000),
                },
                ReadSegment {
                    position: 0,
                    target: seg(0x22, 512, 0x2000),
                },
                ReadSegment {
                    position: 132,
                    target: seg(0x33, 100, 0x3000),
                },
            ],
            writes: vec![
                vec![seg(0x44, 8192, 0x4000), seg(0x55, 8192, 0x6000)],
                vec![seg(0x66, 1, u64::MAX - 1)],
            ],
            reply: Some(vec![seg(0x77, 1024, 0x8000)]),
        }
    }

    fn all_bodies() -> Vec<Body> {
        vec![
            Body::Msg(ChunkLists::default()),
            Body::Msg(rich_lists()),
            Body::Nomsg(rich_lists()),
            Body::Msgp {
                align: 1024,
                thresh: 4096,
                chunks: rich_lists(),
            },
            Body::Done,
            Body::Error(ErrorBody::Vers { low: 1, high: 1 }),
            Body::Error(ErrorBody::Chunk),
        ]
    }

    #[test]
    fn every_body_round_trips_and_reports_its_length() {
        for body in all_bodies() {
            let header = Header {
                xid: 0xa5a5_0001,
                vers: 1,
                credits: 128,
                body,
            };
            let bytes = header.to_bytes();
            assert_eq!(bytes.len(), header.encoded_len(), "{header:?}");
            assert_eq!(Header::from_bytes(&bytes).unwrap(), header);
            let (prefix, used) = Header::decode_prefix(&bytes).unwrap();
            assert_eq!((prefix, used), (header, bytes.len()));
        }
    }

    #[test]
    fn encode_writes_every_field_over_a_poisoned_buffer() {
        // smoltcp trick: start from 0xa5 filler so a field the encoder forgets shows up.
        let header = Header {
            xid: 1,
            vers: 1,
            credits: 2,
            body: Body::Msg(rich_lists()),
        };
        let mut w = Writer::new();
        w.raw(&[0xa5; 8]);
        header.encode(&mut w);
        let bytes = w.into_bytes();
        assert_eq!(&bytes[..8], &[0xa5; 8]);
        assert_eq!(&bytes[8..], header.to_bytes().as_slice());
        assert_eq!(
            &bytes[8..24],
            &[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0]
        );
    }

    #[test]
    fn minimal_msg_is_seven_words() {
        let header = Header {
            xid: 7,
            vers: 1,
            credits: 1,
            body: Body::Msg(ChunkLists::default()),
        };
        assert_eq!(header.to_bytes().len(), MIN_CHUNKED_HEADER_LEN);
        assert_eq!(
            Header {
                body: Body::Error(ErrorBody::Chunk),
                ..header
            }
            .encoded_len(),
            20
        );
    }

    #[test]
    fn decode_prefix_leaves_the_inline_message() {
        let header = Header {
            xid: 9,
            vers: 1,
            credits: 32,
            body: Body::Msg(rich_lists()),
        };
        let mut bytes = header.to_bytes();
        bytes.extend_from_slice(&[0, 0, 0, 9, 0, 0, 0, 0]);
        let (decoded, used) = Header::decode_prefix(&bytes).unwrap();
        assert_eq!(decoded, header);
        assert_eq!(&bytes[used..], &[0, 0, 0, 9, 0, 0, 0, 0]);
        assert!(matches!(
            Header::from_bytes(&bytes),
            Err(DecodeError::TrailingBytes { count: 8, .. })
        ));
    }

    #[test]
    fn rejects_wrong_version_naming_the_rule() {
        let bytes = [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0];
        let err = Header::decode_prefix(&bytes).unwrap_err();
        assert_eq!(err, DecodeError::UnsupportedVersion { value: 2 });
        assert_eq!(err.field(), "rdma_vers");
        assert!(err.rule().starts_with("RFC 8166 §4.1.2"));
        assert_eq!(
            err.to_string(),
            "rdma_vers: invalid value 0x2 (RFC 8166 §4.1.2 (rdma_vers is 1))"
        );
    }

    #[test]
    fn rejects_unknown_proc_and_errcode() {
        let mut bytes = vec![0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 5];
        assert!(matches!(
            Header::decode_prefix(&bytes),
            Err(DecodeError::BadDiscriminant {
                field: "rdma_proc",
                value: 5,
                ..
            })
        ));
        bytes[15] = 4;
        bytes.extend_from_slice(&[0, 0, 0, 3]);
        let err = Header::decode_prefix(&bytes).unwrap_err();
        let DecodeError::MalformedErrorBody(inner) = &err else {
            panic!("{err:?}");
        };
        assert!(matches!(
            **inner,
            DecodeError::BadDiscriminant {
                field: "rdma_err",
                value: 3,
                ..
            }
        ));
        assert_eq!(err.field(), "rdma_err");
        assert_eq!(err.to_string(), inner.to_string());
    }

    #[test]
    fn rejects_bad_list_discriminators_per_list() {
        let fixed = [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0];
        for (prefix_words, field) in [
            (0usize, "read_list.discriminator"),
            (1, "write_list.discriminator"),
            (2, "reply_chunk.discriminator"),
        ] {
            let mut bytes = fixed.to_vec();
            bytes.extend(std::iter::repeat_n(0u8, prefix_words * 4));
            bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
            let err = Header::decode_prefix(&bytes).unwrap_err();
            assert_eq!(err.field(), field);
            assert!(matches!(
                err,
                DecodeError::BadDiscriminant {
                    value: 0xffff_ffff,
                    ..
                }
            ));
        }
    }

    #[test]
    fn rejects_segcount_the_buffer_cannot_hold_before_allocating() {
        let mut w = Writer::new();
        w.u32(1).u32(1).u32(1).u32(0); // fixed, RDMA_MSG
        w.u32(0); // no reads
        w.u32(1).u32(0x0fff_ffff); // write chunk with a huge segcount
        let limits = Limits {
            max_segments_per_chunk: u32::MAX,
            ..Limits::default()
        };
        let err = Header::decode_prefix_with(w.as_bytes(), &limits).unwrap_err();
        assert!(matches!(
            err,
            DecodeError::Truncated {
                field: "write_chunk.segcount",
                ..
            }
        ));
        let err = Header::decode_prefix(w.as_bytes()).unwrap_err();
        assert!(matches!(
            err,
            DecodeError::LengthOverLimit {
                length: 0x0fff_ffff,
                limit: 4096,
                ..
            }
        ));
    }

    #[test]
    fn list_limits_are_enforced() {
        let header = Header {
            xid: 1,
            vers: 1,
            credits: 1,
            body: Body::Msg(rich_lists()),
        };
        let bytes = header.to_bytes();
        let tight = Limits {
            max_read_segments: 2,
            ..Limits::default()
        };
        assert_eq!(
            Header::decode_prefix_with(&bytes, &tight)
                .unwrap_err()
                .field(),
            "read_list"
        );
        let tight = Limits {
            max_write_chunks: 1,
            ..Limits::default()
        };
        assert_eq!(
            Header::decode_prefix_with(&bytes, &tight)
                .unwrap_err()
                .field(),
            "write_list"
        );
        let tight = Limits {
            max_segments_per_chunk: 1,
            ..Limits::default()
        };
        assert_eq!(
            Header::decode_prefix_with(&bytes, &tight)
                .unwrap_err()
                .field(),
            "write_chunk.segcount"
        );
    }

    #[test]
    fn every_truncation_of_a_valid_header_is_an_error() {
        let header = Header {
            xid: 3,
            vers: 1,
            credits: 3,
            body: Body::Msgp {
                align: 4,
                thresh: 8,
                chunks: rich_lists(),
            },
        };
        let bytes = header.to_bytes();
        for cut in 0..bytes.len() {
            assert!(
                matches!(
                    Header::decode_prefix(&bytes[..cut]),
                    Err(DecodeError::Truncated { .. })
                ),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn read_chunks_group_by_position_in_order() {
        let chunks = rich_lists().read_chunks();
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].position, 0);
        assert_eq!(chunks[0].length(), 512);
        assert_eq!(chunks[1].position, 132);
        assert_eq!(
            chunks[1].segments,
            vec![seg(0x11, 4096, 0x1000), seg(0x33, 100, 0x3000)]
        );
        assert_eq!(chunks[1].length(), 4196);
    }

    #[test]
    fn helpers_count_and_measure() {
        let lists = rich_lists();
        assert_eq!(lists.segment_count(), 3 + 3 + 1);
        assert!(!lists.is_empty());
        assert!(ChunkLists::default().is_empty());
        assert_eq!(total_length(&lists.writes[0]), 16384);
        assert_eq!(
            total_length(&[seg(1, u32::MAX, 0), seg(2, u32::MAX, 0)]),
            2 * u64::from(u32::MAX)
        );
        assert_eq!(seg(1, 2, u64::MAX - 1).end_offset(), None);
        assert_eq!(seg(1, 2, 10).end_offset(), Some(12));
    }

    #[test]
    fn proc_names_and_values() {
        for (value, proc_) in Proc::ALL.iter().enumerate() {
            assert_eq!(Proc::from_u32(value as u32), Some(*proc_));
            assert_eq!(*proc_ as u32, value as u32);
            assert!(proc_.name().starts_with("RDMA_"));
        }
        assert_eq!(Proc::Nomsg.name(), "RDMA_NOMSG");
        assert_eq!(Proc::from_u32(5), None);
        assert_eq!(Proc::from_u32(u32::MAX), None);
    }
}
