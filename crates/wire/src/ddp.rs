//! The Read chunk position rule (RFC 8166 §3.4.4, §3.4.5; RFC 8267 §4 for NFSv3): where moved data
//! sits in the XDR stream. The one place it is checked and applied:
//!
//! * [`check_aligned`]: a position is an XDR position, a multiple of 4;
//! * [`group`]: segments with one position form one Read chunk; [`split_call_chunk`]: position 0
//!   is the Call chunk;
//! * [`place`]: each chunk's offset in the stream it is reinserted into, which must lie inside
//!   that stream, chunks disjoint and each within a size limit — in exact XDR arithmetic (chunks
//!   count with their round-up, §3.4.5.2) or in the 32-bit arithmetic svcrdma uses;
//! * [`plan`]: everything a Responder checks before pulling a call's Read chunks, with
//!   [`ReadPlan::splice`] rebuilding the call once they are pulled, and [`splice`] for a reader
//!   that only has the data (a capture); both lay the chunks out as [`Layout`] records it (each
//!   chunk's data and its XDR round-up, §3.4.5.2) for a reader with the lengths alone;
//! * [`argument_position`]: where a call's DDP-eligible argument goes (RFC 8267 §4 NFSv3, §6
//!   NFSv4);
//! * [`Reduction`], [`Ddp`], [`DdpData`]: which DDP-eligible items of a message travelled in
//!   which chunks, and their reduced-stream decode and encode (RFC 8166 §3.4.1, §3.4.5, §3.4.6).
//!
//! Callers: `svcrdma::classify` (kernel arithmetic), the engine's responder, `message`'s NFS
//! decoding, and every requester that moves a WRITE's data.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::error::DecodeError;
use crate::rpcrdma::{group, read_list_length, ChunkLists, Proc, ReadChunk, ReadSegment};
use crate::xdr::{pad4, Reader, Writer};

/// RFC 8166 §3.4.4: positions are XDR positions, so 4-byte aligned.
pub const RULE_ALIGNED: &str =
    "RFC 8166 §3.4.4 (a Read chunk position is an XDR position, a multiple of 4)";
/// RFC 8166 §3.4.4: a position is an offset in the stream the chunk is reinserted into.
pub const RULE_IN_STREAM: &str =
    "RFC 8166 §3.4.4 (a Read chunk position lies within the XDR stream it is reinserted into)";
/// RFC 8166 §3.4.4: Read chunks are disjoint pieces of one XDR stream.
pub const RULE_DISJOINT: &str =
    "RFC 8166 §3.4.4 (Read chunks are disjoint pieces of one XDR stream)";
/// RFC 8166 §3.4.5: a Responder bounds the data it pulls (svcrdma: the request's page budget).
pub const RULE_BUDGET: &str =
    "RFC 8166 §3.4.5 (Read chunks fit the Responder's budget for one request)";
/// RFC 8166 §3.5.3: RDMA_NOMSG carries the call in the Position-Zero Read chunk, RDMA_MSG inline.
pub const RULE_CALL_CHUNK: &str =
    "RFC 8166 §3.5.3 (a Position-Zero Read chunk carries the call exactly when it is RDMA_NOMSG)";
/// RFC 8267 §4 with RFC 8166 §3.4.5: a Read chunk at a non-zero position carries exactly the
/// DDP-eligible argument, at that argument's XDR position in the unreduced stream.
pub const RULE_ARGUMENT_POSITION: &str =
    "RFC 8166 §3.4.5, RFC 8267 §4 (Read chunk position must be the DDP-eligible item's XDR position)";
/// RFC 8166 §3.4.5: the data pulled for a chunk is the chunk's segments.
pub const RULE_PULLED: &str = "RFC 8166 §3.4.5 (a Read chunk's data is its segments' bytes)";

/// A Read chunk out of place: the position rule proper (RFC 8166 §3.4.4, §3.4.5), the checks
/// svcrdma makes too. Every variant carries the offending values.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PositionError {
    /// A non-zero position that is not a multiple of 4.
    Unaligned { position: u32 },
    /// A chunk whose offset in the stream lies past the stream's end.
    PastStream {
        position: u32,
        offset: u64,
        stream_len: u64,
    },
    /// A chunk that starts before the previous one ends.
    Overlap { position: u32, previous_end: u64 },
    /// A chunk longer than the limit.
    ChunkOversized {
        position: u32,
        length: u64,
        limit: u64,
    },
    /// The Position-Zero Read chunk longer than the limit.
    CallChunkOversized { length: u64, limit: u64 },
}

impl PositionError {
    /// Stable kebab-case name.
    pub fn name(&self) -> &'static str {
        match self {
            PositionError::Unaligned { .. } => "read-position-unaligned",
            PositionError::PastStream { .. } => "read-chunk-past-stream",
            PositionError::Overlap { .. } => "read-chunks-overlap",
            PositionError::ChunkOversized { .. } => "read-chunk-oversized",
            PositionError::CallChunkOversized { .. } => "call-chunk-oversized",
        }
    }

    /// The rule (RFC section) the chunk broke.
    pub fn rule(&self) -> &'static str {
        match self {
            PositionError::Unaligned { .. } => RULE_ALIGNED,
            PositionError::PastStream { .. } => RULE_IN_STREAM,
            PositionError::Overlap { .. } => RULE_DISJOINT,
            PositionError::ChunkOversized { .. } | PositionError::CallChunkOversized { .. } => {
                RULE_BUDGET
            }
        }
    }
}

impl fmt::Display for PositionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.name())?;
        match self {
            PositionError::Unaligned { position } => write!(f, "position {position}"),
            PositionError::PastStream {
                position,
                offset,
                stream_len,
            } => write!(
                f,
                "position {position} is offset {offset} of a {stream_len}-byte stream"
            ),
            PositionError::Overlap {
                position,
                previous_end,
            } => write!(
                f,
                "position {position} is inside the chunk before it (ends at {previous_end})"
            ),
            PositionError::ChunkOversized {
                position,
                length,
                limit,
            } => write!(f, "chunk at {position} is {length} bytes, limit {limit}"),
            PositionError::CallChunkOversized { length, limit } => {
                write!(f, "{length} bytes, limit {limit}")
            }
        }?;
        write!(f, " ({})", self.rule())
    }
}

impl std::error::Error for PositionError {}

/// Why a Responder refuses a call's Read chunks ([`plan`], [`ReadPlan::splice`]) or a decoder
/// flags an NFSv3 moved argument ([`check_argument_position`]).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadChunkError {
    /// A chunk out of place ([`place`], [`check_aligned`], [`stream_len`]).
    Position(PositionError),
    /// All Read segments together exceed the Responder's budget.
    OverBudget { total: u64, budget: u64 },
    /// An RDMA_NOMSG call without a Position-Zero Read chunk.
    NomsgWithoutCallChunk,
    /// An RDMA_MSG call with a Position-Zero Read chunk.
    CallChunkInMsg,
    /// An NFSv3 moved argument's chunk not at the argument's XDR position.
    ArgumentPosition { position: u32, expected: u64 },
    /// Pulled data whose length is not the chunk's.
    PulledLength {
        position: u32,
        expected: u64,
        pulled: u64,
    },
}

impl From<PositionError> for ReadChunkError {
    fn from(err: PositionError) -> ReadChunkError {
        ReadChunkError::Position(err)
    }
}

impl ReadChunkError {
    /// Stable kebab-case name.
    pub fn name(&self) -> &'static str {
        match self {
            ReadChunkError::Position(e) => e.name(),
            ReadChunkError::OverBudget { .. } => "read-chunks-over-budget",
            ReadChunkError::NomsgWithoutCallChunk => "nomsg-without-call-chunk",
            ReadChunkError::CallChunkInMsg => "call-chunk-in-msg",
            ReadChunkError::ArgumentPosition { .. } => "argument-position",
            ReadChunkError::PulledLength { .. } => "pulled-length",
        }
    }

    /// The rule (RFC section) the chunks broke.
    pub fn rule(&self) -> &'static str {
        match self {
            ReadChunkError::Position(e) => e.rule(),
            ReadChunkError::OverBudget { .. } => RULE_BUDGET,
            ReadChunkError::NomsgWithoutCallChunk | ReadChunkError::CallChunkInMsg => {
                RULE_CALL_CHUNK
            }
            ReadChunkError::ArgumentPosition { .. } => RULE_ARGUMENT_POSITION,
            ReadChunkError::PulledLength { .. } => RULE_PULLED,
        }
    }
}

impl fmt::Display for ReadChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let ReadChunkError::Position(e) = self {
            return e.fmt(f);
        }
        write!(f, "{}: ", self.name())?;
        match self {
            ReadChunkError::Position(_) => Ok(()),
            ReadChunkError::OverBudget { total, budget } => {
                write!(f, "{total} bytes, budget {budget}")
            }
            ReadChunkError::NomsgWithoutCallChunk => f.write_str("RDMA_NOMSG without one"),
            ReadChunkError::CallChunkInMsg => f.write_str("one in RDMA_MSG"),
            ReadChunkError::ArgumentPosition { position, expected } => {
                write!(f, "position {position}, the argument is at {expected}")
            }
            ReadChunkError::PulledLength {
                position,
                expected,
                pulled,
            } => write!(f, "chunk at {position}: {pulled} bytes, not {expected}"),
        }?;
        write!(f, " ({})", self.rule())
    }
}

impl std::error::Error for ReadChunkError {}

/// RFC 8166 §3.4.4: a Read chunk position other than zero is an XDR position, so a multiple of 4.
pub fn check_aligned(position: u32) -> Result<(), PositionError> {
    if position != 0 && !position.is_multiple_of(4) {
        return Err(PositionError::Unaligned { position });
    }
    Ok(())
}

/// RFC 8166 §3.5.3: position 0 marks the Position-Zero Read chunk, the whole call of an
/// RDMA_NOMSG message; every other Read chunk is a piece of the call. Splits [`group`]ed chunks
/// (ordered by position, so that chunk comes first) into the two.
pub fn split_call_chunk(chunks: &[ReadChunk]) -> (Option<&ReadChunk>, &[ReadChunk]) {
    match chunks.split_first() {
        Some((first, others)) if first.position == 0 => (Some(first), others),
        _ => (None, chunks),
    }
}

/// [`split_call_chunk`], taking the chunks apart.
pub fn take_call_chunk(mut chunks: Vec<ReadChunk>) -> (Option<ReadChunk>, Vec<ReadChunk>) {
    let call_chunk = split_call_chunk(&chunks)
        .0
        .is_some()
        .then(|| chunks.remove(0));
    (call_chunk, chunks)
}

/// How the lengths of earlier chunks count when a position is mapped into the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accounting {
    /// RFC 8166 §3.4.5.2: each earlier chunk with its XDR round-up, in exact arithmetic.
    Xdr,
    /// svcrdma's `pcl_check_read_chunk_positions` (2026 series): unpadded lengths in unsigned
    /// 32-bit arithmetic that wraps, as the kernel computes them (the svcrdma model predicts the
    /// kernel's verdicts, quirks included).
    Kernel32,
}

impl Accounting {
    /// The offset of `position` once `before` bytes of earlier chunks are taken out; `None` when
    /// it would be negative.
    fn offset(self, position: u32, before: u64) -> Option<u64> {
        match self {
            Accounting::Xdr => u64::from(position).checked_sub(before),
            Accounting::Kernel32 => Some(position.wrapping_sub(before as u32).into()),
        }
    }

    /// How many stream bytes a chunk of `length` bytes counts for.
    fn counted(self, length: u64) -> u64 {
        match self {
            Accounting::Xdr => pad4(length as usize) as u64,
            Accounting::Kernel32 => length,
        }
    }

    fn add(self, a: u64, b: u64) -> u64 {
        match self {
            Accounting::Xdr => a.saturating_add(b),
            Accounting::Kernel32 => (a as u32).wrapping_add(b as u32).into(),
        }
    }
}

/// One Read chunk as the position rule sees it: where it goes and how long it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub position: u32,
    pub length: u64,
}

/// The length of the stream the Read chunks are reinserted into: the Position-Zero Read chunk's
/// (it carries the whole call, RFC 8166 §3.5.3), which must be within `max_chunk`, else the
/// inline body's.
pub fn stream_len(
    call_chunk: Option<u64>,
    inline_len: usize,
    max_chunk: u64,
) -> Result<u64, PositionError> {
    match call_chunk {
        Some(length) if length > max_chunk => Err(PositionError::CallChunkOversized {
            length,
            limit: max_chunk,
        }),
        Some(length) => Ok(length),
        None => Ok(inline_len as u64),
    }
}

/// RFC 8166 §3.4.4: the offset of each Read chunk (`chunks`: position ≠ 0, ordered by position)
/// in the stream of `stream_len` bytes it is reinserted into. Positions count the *unreduced*
/// stream, so each chunk's offset is its position less the chunks before it. A chunk must start
/// inside the stream, be at most `max_chunk` bytes, and end before the next one starts; checked
/// chunk by chunk in that order (svcrdma's order), with `accounting`'s arithmetic.
pub fn place(
    chunks: &[Extent],
    stream_len: u64,
    max_chunk: u64,
    accounting: Accounting,
) -> Result<Vec<u64>, PositionError> {
    let mut before = 0u64;
    let mut offsets = Vec::with_capacity(chunks.len());
    for (i, chunk) in chunks.iter().enumerate() {
        let position = chunk.position;
        let offset = accounting
            .offset(position, before)
            .ok_or(PositionError::Overlap {
                position,
                previous_end: before,
            })?;
        if offset > stream_len {
            return Err(PositionError::PastStream {
                position,
                offset,
                stream_len,
            });
        }
        if chunk.length > max_chunk {
            return Err(PositionError::ChunkOversized {
                position,
                length: chunk.length,
                limit: max_chunk,
            });
        }
        let counted = accounting.counted(chunk.length);
        if let Some(next) = chunks.get(i + 1) {
            let end = accounting.add(position.into(), counted);
            if end > u64::from(next.position) {
                return Err(PositionError::Overlap {
                    position: next.position,
                    previous_end: end,
                });
            }
        }
        before = accounting.add(before, counted);
        offsets.push(offset);
    }
    Ok(offsets)
}

/// What a Responder checked before pulling a call's Read chunks: the chunks grouped, the
/// Position-Zero Read chunk apart, every other chunk with its offset in the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadPlan {
    /// The Position-Zero Read chunk: the whole call message (RDMA_NOMSG).
    pub call_chunk: Option<ReadChunk>,
    /// The other Read chunks by position, each with its offset in the inline body (RDMA_MSG) or
    /// in the Call chunk's data (RDMA_NOMSG).
    pub chunks: Vec<(ReadChunk, u64)>,
}

/// Every check of a call's Read list a Responder makes before it pulls (RFC 8166 §3.4.4,
/// §3.4.5, §3.5.3), in order: positions aligned, all segments within `budget` bytes, a
/// Position-Zero Read chunk exactly for RDMA_NOMSG, then [`place`] (XDR arithmetic, each chunk
/// within the budget) into the `inline_len`-byte body or the Call chunk.
pub fn plan(
    reads: &[ReadSegment],
    proc_: Proc,
    inline_len: usize,
    budget: u64,
) -> Result<ReadPlan, ReadChunkError> {
    for read in reads {
        check_aligned(read.position)?;
    }
    let total = read_list_length(reads);
    if total > budget {
        return Err(ReadChunkError::OverBudget { total, budget });
    }
    let (call_chunk, chunks) = take_call_chunk(group(reads));
    match (proc_, &call_chunk) {
        (Proc::Nomsg, None) => return Err(ReadChunkError::NomsgWithoutCallChunk),
        (Proc::Msg, Some(_)) => return Err(ReadChunkError::CallChunkInMsg),
        _ => {}
    }
    let stream = stream_len(
        call_chunk.as_ref().map(ReadChunk::length),
        inline_len,
        budget,
    )?;
    let extents: Vec<Extent> = chunks
        .iter()
        .map(|c| Extent {
            position: c.position,
            length: c.length(),
        })
        .collect();
    let offsets = place(&extents, stream, budget, Accounting::Xdr)?;
    Ok(ReadPlan {
        call_chunk,
        chunks: chunks.into_iter().zip(offsets).collect(),
    })
}

impl ReadPlan {
    /// The call message once the chunks are pulled: the inline body (RDMA_MSG) or the Call
    /// chunk's data (`pulled` at position 0, RDMA_NOMSG), with every other chunk's data
    /// (`pulled` at its position) reinserted at its offset, XDR round-up restored (§3.4.5.2).
    pub fn splice(
        &self,
        inline: &[u8],
        pulled: impl Fn(u32) -> Vec<u8>,
    ) -> Result<Vec<u8>, ReadChunkError> {
        let pulled_checked = |chunk: &ReadChunk| {
            let data = pulled(chunk.position);
            let expected = chunk.length();
            if data.len() as u64 != expected {
                return Err(ReadChunkError::PulledLength {
                    position: chunk.position,
                    expected,
                    pulled: data.len() as u64,
                });
            }
            Ok(data)
        };
        let base = match &self.call_chunk {
            Some(call) => pulled_checked(call)?,
            None => inline.to_vec(),
        };
        let mut pieces = Vec::with_capacity(self.chunks.len());
        for (chunk, offset) in &self.chunks {
            pieces.push((*offset, pulled_checked(chunk)?));
        }
        Ok(reinsert(&base, &pieces))
    }
}

/// Reinsert Read chunk data (`chunks`: position ≠ 0 and the bytes, ordered by position) into
/// `base`, the inline body or the Call chunk's data: [`place`] in XDR arithmetic, then the bytes,
/// each followed by its XDR round-up (RFC 8166 §3.4.5.2).
pub fn splice(base: &[u8], chunks: &[(u32, Vec<u8>)]) -> Result<Vec<u8>, PositionError> {
    let extents: Vec<Extent> = chunks
        .iter()
        .map(|(position, data)| Extent {
            position: *position,
            length: data.len() as u64,
        })
        .collect();
    let offsets = place(&extents, base.len() as u64, u64::MAX, Accounting::Xdr)?;
    let pieces: Vec<(u64, &[u8])> = offsets
        .into_iter()
        .zip(chunks.iter().map(|(_, data)| data.as_slice()))
        .collect();
    Ok(reinsert(base, &pieces))
}

/// `base` with each `(offset, data)` (placed: offsets ascending, within `base`) inserted, padded,
/// as [`steps`] lays them out.
fn reinsert<D: AsRef<[u8]>>(base: &[u8], pieces: &[(u64, D)]) -> Vec<u8> {
    let total = pieces
        .iter()
        .map(|(_, d)| pad4(d.as_ref().len()))
        .sum::<usize>()
        .saturating_add(base.len());
    let mut out = Vec::with_capacity(total);
    let mut taken = 0usize;
    let placed = pieces.iter().map(|(offset, d)| (*offset, d.as_ref().len()));
    for (step, (_, data)) in steps(base.len(), placed).zip(pieces) {
        let data = data.as_ref();
        out.extend_from_slice(&base[step.base.clone()]);
        out.extend_from_slice(data);
        out.resize(out.len() + (step.padded - data.len()), 0);
        taken = step.base.end;
    }
    out.extend_from_slice(&base[taken..]);
    out
}

/// Where one chunk goes when it is reinserted: the piece of the base before it (`base`, placed
/// at `out` in the rebuilt stream), then the chunk's data at `chunk_at`, `padded` bytes with its
/// XDR round-up (RFC 8166 §3.4.5.2).
#[derive(Debug, Clone)]
struct Step {
    base: std::ops::Range<usize>,
    out: usize,
    chunk_at: usize,
    padded: usize,
}

/// The reinsertion layout, chunk by chunk, of chunks at `(offset in the base, length)` (already
/// [`place`]d) into a base of `base_len` bytes: the one layout [`reinsert`] fills as it goes and
/// [`Layout`] records. After the last step, the rest of the base follows.
fn steps(
    base_len: usize,
    placed: impl Iterator<Item = (u64, usize)>,
) -> impl Iterator<Item = Step> {
    let mut taken = 0usize;
    let mut out_len = 0usize;
    placed.map(move |(offset, len)| {
        // `place` kept every offset within the base and at or after the previous one.
        let base_at = usize::try_from(offset)
            .unwrap_or(base_len)
            .clamp(taken, base_len);
        let chunk_at = out_len.saturating_add(base_at - taken);
        // The round-up of a length within a few bytes of `usize::MAX` saturates (no chunk data
        // is that long; the callers bound the lengths before they get here).
        let padded = len.checked_add(3).map_or(usize::MAX, |n| n & !3);
        let step = Step {
            base: taken..base_at,
            out: out_len,
            chunk_at,
            padded,
        };
        taken = base_at;
        out_len = chunk_at.saturating_add(padded);
        step
    })
}

/// Where reinsertion puts each piece of the rebuilt stream (RFC 8166 §3.4.5.2), recorded for a
/// reader with the lengths alone (a capture gathering chunk data straight into place): the base
/// (inline body or Call chunk data) cut at each chunk's offset, each chunk's data followed by its
/// XDR round-up, exactly as [`splice`] and [`ReadPlan::splice`] lay them out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Length of the rebuilt stream.
    pub total: usize,
    /// Offset of each chunk's data in the rebuilt stream (followed by its XDR round-up).
    pub chunk_at: Vec<usize>,
    /// `(base range, offset in the rebuilt stream)` of each piece of the base: one before each
    /// chunk, then the rest.
    base_pieces: Vec<(std::ops::Range<usize>, usize)>,
}

impl Layout {
    /// The layout of Read chunks (`chunks`: position ≠ 0, ordered by position) reinserted into a
    /// base of `base_len` bytes: offsets from [`place`] in XDR arithmetic, no size limit.
    pub fn place(base_len: usize, chunks: &[Extent]) -> Result<Layout, PositionError> {
        let offsets = place(chunks, base_len as u64, u64::MAX, Accounting::Xdr)?;
        let lengths = chunks
            .iter()
            .map(|c| usize::try_from(c.length).unwrap_or(usize::MAX));
        let mut layout = Layout {
            total: 0,
            chunk_at: Vec::with_capacity(chunks.len()),
            base_pieces: Vec::with_capacity(chunks.len() + 1),
        };
        let (mut taken, mut out_len) = (0usize, 0usize);
        for step in steps(base_len, offsets.into_iter().zip(lengths)) {
            layout.base_pieces.push((step.base.clone(), step.out));
            layout.chunk_at.push(step.chunk_at);
            taken = step.base.end;
            out_len = step.chunk_at.saturating_add(step.padded);
        }
        layout.base_pieces.push((taken..base_len, out_len));
        layout.total = out_len.saturating_add(base_len - taken);
        Ok(layout)
    }

    /// Where each chunk goes in the base: the offset, in the base, of the byte its data is
    /// inserted before (in chunk order).
    pub fn base_at(&self) -> impl Iterator<Item = usize> + '_ {
        // One piece of the base before each chunk, then the rest.
        self.base_pieces
            .iter()
            .take(self.chunk_at.len())
            .map(|(range, _)| range.end)
    }

    /// The rebuilt stream with the base in place and zeros where the chunks (and their
    /// round-up) go.
    pub fn with_base(&self, base: &[u8]) -> Vec<u8> {
        let mut out = vec![0; self.total];
        for (range, at) in &self.base_pieces {
            out[*at..*at + range.len()].copy_from_slice(&base[range.clone()]);
        }
        out
    }
}

/// RFC 8166 §3.4.5 with RFC 8267 §4/§6: the XDR position of a call's DDP-eligible argument is
/// where its bytes begin in the unreduced message, i.e. `item_offset`, the offset just after the
/// item's length word in the *reduced* call message (RPC header and arguments without the moved
/// bytes; nothing before the item was moved). For NFSv3 (`WRITE3args.data`,
/// `SYMLINK3args.symlink_data`) the item is the last of its arguments, so that is where the
/// reduced message ends; in an NFSv4 COMPOUND it is the [`ReducedItem::position`] the decoder
/// recorded (the reduced offset plus the items moved before it). Saturates at `u32::MAX` (no Send is that long).
pub fn argument_position(item_offset: usize) -> u32 {
    u32::try_from(item_offset).unwrap_or(u32::MAX)
}

/// RFC 8267 §4/§6: the Read chunk carrying a call's moved argument is at [`argument_position`]
/// of the item (`item_offset`: where the reduced call ends for NFSv3, the recorded
/// [`ReducedItem::position`] for NFSv4).
pub fn check_argument_position(position: u32, item_offset: usize) -> Result<(), ReadChunkError> {
    let expected = item_offset as u64;
    if u64::from(position) != expected {
        return Err(ReadChunkError::ArgumentPosition { position, expected });
    }
    Ok(())
}

/// How a DDP-eligible item is expected in the inline stream being decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Ddp {
    /// The item is inline (no chunk carried it).
    #[default]
    Inline,
    /// The item was moved to a chunk: only its length word is inline (RFC 8166 §3.4.1).
    Moved,
}

impl Ddp {
    /// [`Ddp::Moved`] when a chunk carried the item's bytes (a reply's Write chunk data is not
    /// empty), else [`Ddp::Inline`].
    pub fn moved_if(moved: bool) -> Ddp {
        if moved {
            Ddp::Moved
        } else {
            Ddp::Inline
        }
    }
}

/// A DDP-eligible opaque item: inline bytes, or just the length when a chunk carried the bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DdpData {
    Inline(Vec<u8>),
    Moved { length: u32 },
}

impl DdpData {
    /// The item's length in bytes, wherever it travelled.
    pub fn len(&self) -> u32 {
        match self {
            DdpData::Inline(b) => b.len() as u32,
            DdpData::Moved { length } => *length,
        }
    }

    /// Whether the item is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the bytes went through a chunk.
    pub fn is_moved(&self) -> bool {
        matches!(self, DdpData::Moved { .. })
    }

    /// Decode an opaque of at most `max` bytes; with [`Ddp::Moved`] only the length word is
    /// present (RFC 8166 §3.4.1: the reduced stream keeps the length, not the content).
    pub fn decode_with(
        r: &mut Reader<'_>,
        max: u32,
        ddp: Ddp,
        field: &'static str,
        rule: &'static str,
    ) -> Result<Self, DecodeError> {
        let length = r.bounded_length(max, field, rule)?;
        match ddp {
            Ddp::Inline => Ok(DdpData::Inline(
                r.opaque_fixed(length as usize, field)?.to_vec(),
            )),
            Ddp::Moved => Ok(DdpData::Moved { length }),
        }
    }

    /// Encode: full opaque when inline, the length word alone when moved (reduced stream).
    pub fn encode(&self, w: &mut Writer) {
        match self {
            DdpData::Inline(b) => {
                w.opaque_var(b);
            }
            DdpData::Moved { length } => {
                w.u32(*length);
            }
        }
    }
}

impl Serialize for DdpData {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("DdpData", 2)?;
        st.serialize_field("length", &self.len())?;
        st.serialize_field(
            "placement",
            if self.is_moved() { "chunk" } else { "inline" },
        )?;
        st.end()
    }
}

/// RFC 8267 §4 (NFSv3) and §6 (NFSv4): a DDP-eligible item whose bytes travel in a chunk keeps
/// only its length word in the inline stream; the decoder of that stream must know which items
/// went ([`Ddp`]), and the bytes that went are [`DdpData::Moved`].
pub const RULE_REDUCED_ITEM: &str =
    "RFC 8166 §3.4.1, RFC 8267 §4/§6 (a moved DDP-eligible item keeps only its length word inline)";

/// Which chunks a message's DDP-eligible items may have travelled in.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ChunkSource {
    /// No chunk: every item is inline.
    None,
    /// Every item moved, chunks unknown (a capture whose chunk data was not seen).
    Every,
    /// A call's Read chunks other than the Position-Zero chunk, ordered by position: each
    /// DDP-eligible argument, in stream order, takes the next one (RFC 8166 §3.4.5).
    Read(Vec<ReadChunk>),
    /// A reply's Write chunks as returned (each chunk's total length as written): each
    /// DDP-eligible result, in stream order, takes the next one, and is moved when that chunk
    /// carried bytes (RFC 8166 §3.4.6; an unused chunk comes back with length zero).
    Write(Vec<u64>),
}

/// One DDP-eligible item a decoder met, and where it travelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReducedItem {
    /// The item as the specification names it (`"WRITE4args.data"`, `"READ3resok.data"`).
    pub item: &'static str,
    /// Offset, in the decoder's reader (the reduced stream), just after the item's length word:
    /// where its bytes begin (inline) or would begin (moved).
    pub offset: usize,
    /// The same place in the *unreduced* stream (RFC 8166 §3.4.4: Read chunk positions count
    /// the bytes of every earlier moved item, with its XDR round-up, §3.4.5.2): `offset` plus
    /// the padded lengths of the items moved before this one. A Read chunk's position for this
    /// item. Equal to `offset` for the first moved item (NFSv3 has only that one).
    pub position: usize,
    /// The item's length from its length word.
    pub length: u32,
    /// Whether the bytes went through a chunk.
    pub moved: bool,
    /// The Read chunk's position (calls) or the Write chunk's index (replies) it took, if any.
    pub chunk: Option<usize>,
}

/// The reduced-stream state of one message (RFC 8166 §3.4.1, RFC 8267 §4/§6): the chunks its
/// DDP-eligible items may take, in stream order, and the items met so far. NFSv3 (one item per
/// message) and NFSv4 COMPOUND (any number) both decode their items through
/// [`Reduction::decode_item`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reduction {
    source: ChunkSource,
    next: usize,
    items: Vec<ReducedItem>,
    /// Bytes the moved items so far take in the unreduced stream (padded; saturating).
    moved_bytes: usize,
}

/// Most DDP-eligible items recorded for one message (a COMPOUND holds at most a few hundred
/// operations; the decoders bound that count before they get here).
pub const MAX_REDUCED_ITEMS: usize = 1024;

impl Default for Reduction {
    fn default() -> Self {
        Reduction::inline()
    }
}

impl Reduction {
    /// Every item inline: the full, unreduced stream.
    pub fn inline() -> Reduction {
        Reduction {
            source: ChunkSource::None,
            next: 0,
            items: Vec::new(),
            moved_bytes: 0,
        }
    }

    /// Every item moved (the chunks themselves unknown): the mode of [`Ddp::Moved`].
    pub fn every_item_moved() -> Reduction {
        Reduction {
            source: ChunkSource::Every,
            ..Reduction::inline()
        }
    }

    /// [`Reduction::inline`] or [`Reduction::every_item_moved`] for a [`Ddp`] mode.
    pub fn from_ddp(ddp: Ddp) -> Reduction {
        match ddp {
            Ddp::Inline => Reduction::inline(),
            Ddp::Moved => Reduction::every_item_moved(),
        }
    }

    /// A call's Read list ([`group`]ed): every chunk but the Position-Zero chunk carries one
    /// DDP-eligible argument, in position order. An owned list is taken as it is (no copy).
    pub fn for_call(read_chunks: impl Into<Vec<ReadChunk>>) -> Reduction {
        let (_, moved) = take_call_chunk(read_chunks.into());
        Reduction {
            source: ChunkSource::Read(moved),
            ..Reduction::inline()
        }
    }

    /// A call's reduction from its transport header's lists: [`Reduction::for_call`] of its
    /// grouped Read list, or the [`Reduction::inline`] stream when it has none (most calls:
    /// nothing is grouped or allocated).
    pub fn for_call_lists(lists: &ChunkLists) -> Reduction {
        if lists.reads.is_empty() {
            Reduction::inline()
        } else {
            Reduction::for_call(lists.read_chunks())
        }
    }

    /// A reply's Write list, each chunk by the total length the Responder wrote into it.
    pub fn for_reply(write_chunk_lengths: impl Into<Vec<u64>>) -> Reduction {
        Reduction {
            source: ChunkSource::Write(write_chunk_lengths.into()),
            ..Reduction::inline()
        }
    }

    /// Where the next DDP-eligible item travels; takes the chunk it travels in. `(ddp, chunk)`:
    /// a call's item takes the next Read chunk (by position), a reply's item the next Write
    /// chunk, moved only when that chunk carried bytes.
    fn take(&mut self) -> (Ddp, Option<usize>) {
        let index = self.next;
        match &self.source {
            ChunkSource::None => (Ddp::Inline, None),
            ChunkSource::Every => (Ddp::Moved, None),
            ChunkSource::Read(chunks) => match chunks.get(index) {
                Some(chunk) => {
                    self.next += 1;
                    (Ddp::Moved, Some(chunk.position as usize))
                }
                None => (Ddp::Inline, None),
            },
            ChunkSource::Write(lengths) => match lengths.get(index) {
                Some(&length) => {
                    self.next += 1;
                    (Ddp::moved_if(length > 0), Some(index))
                }
                None => (Ddp::Inline, None),
            },
        }
    }

    /// The next item's mode without decoding it (for a decoder that has one item and decodes
    /// it itself through [`DdpData::decode_with`], as NFSv3's typed arguments do).
    pub fn next_ddp(&mut self) -> Ddp {
        self.take().0
    }

    /// Decode the next DDP-eligible item (an opaque of at most `max` bytes) from `r`: inline,
    /// or its length word alone when it took a chunk that carried it (RFC 8166 §3.4.1). The
    /// item is recorded with its offset in `r` ([`Reduction::items`]).
    pub fn decode_item(
        &mut self,
        r: &mut Reader<'_>,
        max: u32,
        item: &'static str,
        rule: &'static str,
    ) -> Result<DdpData, DecodeError> {
        if self.items.len() >= MAX_REDUCED_ITEMS {
            return Err(DecodeError::LengthOverLimit {
                field: item,
                length: self.items.len() as u64 + 1,
                limit: MAX_REDUCED_ITEMS as u64,
                rule: RULE_REDUCED_ITEM,
            });
        }
        let (ddp, chunk) = self.take();
        let data = DdpData::decode_with(r, max, ddp, item, rule)?;
        let offset = match &data {
            DdpData::Inline(bytes) => r.consumed() - pad4(bytes.len()),
            DdpData::Moved { .. } => r.consumed(),
        };
        let position = offset.saturating_add(self.moved_bytes);
        if data.is_moved() {
            self.moved_bytes = self.moved_bytes.saturating_add(pad4(data.len() as usize));
        }
        self.items.push(ReducedItem {
            item,
            offset,
            position,
            length: data.len(),
            moved: data.is_moved(),
            chunk: chunk.filter(|_| data.is_moved()),
        });
        Ok(data)
    }

    /// The DDP-eligible items met so far, in stream order.
    pub fn items(&self) -> &[ReducedItem] {
        &self.items
    }

    /// The chunks no DDP-eligible item took: Read chunk positions (calls) or Write chunk
    /// indices with their lengths (replies) — chunks that carry something not DDP-eligible.
    pub fn unused_chunks(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.chunks().skip(self.next)
    }

    /// The chunks DDP-eligible items took so far, in stream order, named as
    /// [`Reduction::unused_chunks`] names them.
    pub fn taken_chunks(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.chunks().take(self.next)
    }

    /// Every chunk an item may take, in order: Read chunk positions (calls) or Write chunk
    /// indices (replies), with their lengths.
    fn chunks(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let (reads, writes): (&[ReadChunk], &[u64]) = match &self.source {
            ChunkSource::Read(chunks) => (chunks, &[]),
            ChunkSource::Write(lengths) => (&[], lengths),
            ChunkSource::None | ChunkSource::Every => (&[], &[]),
        };
        reads
            .iter()
            .map(|c| (c.position as usize, c.length()))
            .chain(writes.iter().copied().enumerate())
    }

    /// The length of the chunk an item took: the Read chunk at its position, or the Write
    /// chunk at its index.
    pub fn chunk_length(&self, item: &ReducedItem) -> Option<u64> {
        let chunk = item.chunk?;
        match &self.source {
            ChunkSource::Read(chunks) => chunks
                .iter()
                .find(|c| c.position as usize == chunk)
                .map(ReadChunk::length),
            ChunkSource::Write(lengths) => lengths.get(chunk).copied(),
            ChunkSource::None | ChunkSource::Every => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpcrdma::Segment;

    fn read(position: u32, handle: u32, length: u32) -> ReadSegment {
        ReadSegment {
            position,
            target: Segment {
                handle,
                length,
                offset: 0,
            },
        }
    }

    fn extents(list: &[(u32, u64)]) -> Vec<Extent> {
        list.iter()
            .map(|&(position, length)| Extent { position, length })
            .collect()
    }

    #[test]
    fn positions_count_earlier_chunks_with_their_round_up() {
        // Unreduced: AAAA | c1 (4) | BBBB | c2 (3 + 1 pad) | CCCC; c2 sits at 4 + 4 + 4 = 12.
        let offsets = place(&extents(&[(4, 4), (12, 3)]), 12, 1 << 20, Accounting::Xdr);
        assert_eq!(offsets, Ok(vec![4, 8]));
        let spliced = splice(
            b"AAAABBBBCCCC",
            &[(4, b"1111".to_vec()), (12, b"222".to_vec())],
        );
        assert_eq!(spliced.unwrap(), b"AAAA1111BBBB222\0CCCC");
        // A chunk may go right at the end of the stream.
        assert_eq!(
            splice(b"AAAA", &[(4, b"x".to_vec())]).unwrap(),
            b"AAAAx\0\0\0"
        );
    }

    #[test]
    fn out_of_place_chunks_are_typed_errors() {
        assert_eq!(
            splice(b"AAAA", &[(8, b"x".to_vec())]),
            Err(PositionError::PastStream {
                position: 8,
                offset: 8,
                stream_len: 4
            })
        );
        assert_eq!(
            splice(
                b"AAAABBBB",
                &[(4, b"11111111".to_vec()), (8, b"2222".to_vec())]
            ),
            Err(PositionError::Overlap {
                position: 8,
                previous_end: 12
            })
        );
        let big = place(&extents(&[(4, 9)]), 8, 8, Accounting::Xdr);
        assert!(matches!(
            big,
            Err(PositionError::ChunkOversized { length: 9, .. })
        ));
        assert_eq!(
            check_aligned(6),
            Err(PositionError::Unaligned { position: 6 })
        );
        assert_eq!(check_aligned(0), Ok(()));
    }

    #[test]
    fn the_kernel_counts_unpadded_lengths_in_32_bits() {
        // c1 at 4 of 3 bytes, c2 at 8, a 4-byte body: XDR puts c2 at 8 - 4 = 4 (the end), the
        // kernel at 8 - 3 = 5, past the body.
        let chunks = extents(&[(4, 3), (8, 4)]);
        assert_eq!(place(&chunks, 4, 1 << 20, Accounting::Xdr), Ok(vec![4, 4]));
        assert!(matches!(
            place(&chunks, 4, 1 << 20, Accounting::Kernel32),
            Err(PositionError::PastStream { offset: 5, .. })
        ));
        // A length that wraps around in 32 bits ends "before" the next chunk for the kernel's
        // sum, not for its overlap check.
        let wrapped = place(
            &extents(&[(4, 0xffff_fff0), (8, 4)]),
            64,
            u64::MAX,
            Accounting::Kernel32,
        );
        assert!(matches!(
            wrapped,
            Err(PositionError::Overlap { position: 8, .. })
        ));
    }

    #[test]
    fn plans_check_alignment_budget_and_the_call_chunk_first() {
        let reads = [read(6, 1, 4)];
        assert_eq!(
            plan(&reads, Proc::Msg, 8, 1 << 20),
            Err(ReadChunkError::Position(PositionError::Unaligned {
                position: 6
            }))
        );
        let reads = [read(4, 1, 600), read(4, 2, 600)];
        assert_eq!(
            plan(&reads, Proc::Msg, 8, 1000),
            Err(ReadChunkError::OverBudget {
                total: 1200,
                budget: 1000
            })
        );
        assert_eq!(
            plan(&[], Proc::Nomsg, 0, 1000),
            Err(ReadChunkError::NomsgWithoutCallChunk)
        );
        assert_eq!(
            plan(&[read(0, 1, 8)], Proc::Msg, 8, 1000),
            Err(ReadChunkError::CallChunkInMsg)
        );
    }

    #[test]
    fn a_plan_splices_the_pulled_data_of_each_chunk() {
        // Two segments of one chunk at 4, concatenated in wire order.
        let reads = [read(4, 1, 2), read(4, 2, 2), read(12, 3, 3)];
        let plan = plan(&reads, Proc::Msg, 12, 1 << 20).unwrap();
        assert_eq!(plan.chunks.len(), 2);
        assert_eq!(plan.chunks[1].1, 8, "offset of the chunk at 12");
        let data = |position: u32| match position {
            4 => b"1111".to_vec(),
            _ => b"222".to_vec(),
        };
        assert_eq!(
            plan.splice(b"AAAABBBBCCCC", data).unwrap(),
            b"AAAA1111BBBB222\0CCCC"
        );
        assert!(matches!(
            plan.splice(b"AAAABBBBCCCC", |_| vec![0; 5]),
            Err(ReadChunkError::PulledLength {
                expected: 4,
                pulled: 5,
                ..
            })
        ));
    }

    #[test]
    fn with_a_call_chunk_positions_are_in_the_call_it_carries() {
        // RDMA_NOMSG: the call (8 bytes) comes from the Call chunk; a data chunk at 4 goes
        // inside it, one at 12 would be past it.
        let reads = [read(0, 1, 8), read(4, 2, 4)];
        let plan = plan(&reads, Proc::Nomsg, 0, 1 << 20).unwrap();
        let data = |position: u32| match position {
            0 => b"CALLBODY".to_vec(),
            _ => b"data".to_vec(),
        };
        assert_eq!(plan.splice(&[], data).unwrap(), b"CALLdataBODY");
        let past = [read(0, 1, 8), read(12, 2, 4)];
        assert!(matches!(
            super::plan(&past, Proc::Nomsg, 0, 1 << 20),
            Err(ReadChunkError::Position(PositionError::PastStream {
                position: 12,
                ..
            }))
        ));
        assert_eq!(
            stream_len(Some(9), 0, 8),
            Err(PositionError::CallChunkOversized {
                length: 9,
                limit: 8
            })
        );
    }

    #[test]
    fn a_moved_argument_goes_where_the_reduced_call_ends() {
        assert_eq!(argument_position(132), 132);
        assert_eq!(check_argument_position(132, 132), Ok(()));
        assert_eq!(
            check_argument_position(128, 132),
            Err(ReadChunkError::ArgumentPosition {
                position: 128,
                expected: 132
            })
        );
        assert_eq!(argument_position(usize::MAX), u32::MAX);
    }

    #[test]
    fn every_error_names_its_rule() {
        let errors = [
            ReadChunkError::Position(PositionError::Unaligned { position: 1 }),
            ReadChunkError::NomsgWithoutCallChunk,
            ReadChunkError::OverBudget {
                total: 2,
                budget: 1,
            },
        ];
        for e in errors {
            assert!(e.rule().starts_with("RFC 8166 §"), "{e:?}");
            assert!(e.to_string().starts_with(e.name()), "{e}");
        }
    }
}
