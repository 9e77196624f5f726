//! The case generator: `arbitrary`-driven structural mutations of five valid NFSv3 calls (NULL,
//! GETATTR, WRITE with a Read chunk, READ with a Write chunk, READDIR with a Reply chunk), each
//! family aimed at one svcrdma rule (see [`wire::svcrdma::Rule`]).
//!
//! A case is a pure function of `(seed, index)`: the entropy comes from [`crate::rng`], is read
//! through [`arbitrary::Unstructured`], and the bytes are emitted with [`wire::raw::RawBuilder`],
//! which writes invalid encodings on purpose. Each case records the rule it aims at under
//! linux-2026, computed from the mutation's own layout (never by asking the model), so the tests
//! can check the generator and the model against each other.

use arbitrary::Unstructured;
use wire::ddp::argument_position;
use wire::nfs3::{FileHandle, GetattrArgs, Nfs3Call, ReadArgs, ReaddirArgs, StableHow, WriteArgs};
use wire::nfs_client::nfs3_call;
use wire::private_data::{PrivateData, MAGIC};
use wire::raw::{proc_value, RawBuilder};
use wire::svcrdma::{Profile, Rule, DEFAULT_MAX_REQ_SIZE};

use crate::case::{Case, Region, RegionAccess, Relocation};
use crate::rng::case_entropy;

/// The export root's file handle on our reference server (inode 1, 8 bytes big-endian).
pub const ROOT_FILE_HANDLE: [u8; 8] = 1u64.to_be_bytes();
/// The file READ and WRITE cases address: the first file a target creates (inode 2). Targets
/// provision it before the run ([`crate::sim_target`] does; see docs/wire-fuzz.md for nfsd).
pub const FUZZ_FILE_HANDLE: [u8; 8] = 2u64.to_be_bytes();
/// Size a target gives the fuzz file, so READs have data to place in the Write chunk.
pub const FUZZ_FILE_BYTES: usize = 64 * 1024;
/// Handle placeholder written for region `i` before relocation (`0x4844_0000 + i`, "HD").
pub const PLACEHOLDER_HANDLE: u32 = 0x4844_0000;
/// High half of the handles the `handle-unregistered` family uses (no target hands them out).
pub const UNREGISTERED_HANDLE: u32 = 0xbad0_0000;
/// Transport XIDs of fuzz cases are `XID_BASE | (index & 0xff_ffff)`.
pub const XID_BASE: u32 = 0x5700_0000;

/// One mutation family: a name for reports and the base calls it applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Valid,
    Version,
    ProcMsgp,
    ProcUnknown,
    ProcDone,
    ProcError,
    ShortHeader,
    TruncatedReadList,
    TruncatedWriteList,
    TruncatedReplyChunk,
    ReadPositionUnaligned,
    ReadPastInline,
    ReadOverlap,
    ReadPositionZero,
    WriteSegcountZero,
    ReplySegcountZero,
    WriteSegcountHuge,
    ReplySegcountHuge,
    ReadLengthHuge,
    WriteLengthHuge,
    ReplyLengthHuge,
    HandleUnregistered,
    OffsetOutsideRegion,
    Credits,
    ReplyChunkTooSmall,
    WriteChunkTooSmall,
    InlineOverThreshold,
    InlineNearThreshold,
    PrivateData,
}

impl Family {
    pub const ALL: [Family; 29] = [
        Family::Valid,
        Family::Version,
        Family::ProcMsgp,
        Family::ProcUnknown,
        Family::ProcDone,
        Family::ProcError,
        Family::ShortHeader,
        Family::TruncatedReadList,
        Family::TruncatedWriteList,
        Family::TruncatedReplyChunk,
        Family::ReadPositionUnaligned,
        Family::ReadPastInline,
        Family::ReadOverlap,
        Family::ReadPositionZero,
        Family::WriteSegcountZero,
        Family::ReplySegcountZero,
        Family::WriteSegcountHuge,
        Family::ReplySegcountHuge,
        Family::ReadLengthHuge,
        Family::WriteLengthHuge,
        Family::ReplyLengthHuge,
        Family::HandleUnregistered,
        Family::OffsetOutsideRegion,
        Family::Credits,
        Family::ReplyChunkTooSmall,
        Family::WriteChunkTooSmall,
        Family::InlineOverThreshold,
        Family::InlineNearThreshold,
        Family::PrivateData,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Family::Valid => "valid",
            Family::Version => "version",
            Family::ProcMsgp => "proc-msgp",
            Family::ProcUnknown => "proc-unknown",
            Family::ProcDone => "proc-done",
            Family::ProcError => "proc-error",
            Family::ShortHeader => "short-header",
            Family::TruncatedReadList => "truncated-read-list",
            Family::TruncatedWriteList => "truncated-write-list",
            Family::TruncatedReplyChunk => "truncated-reply-chunk",
            Family::ReadPositionUnaligned => "read-position-unaligned",
            Family::ReadPastInline => "read-past-inline",
            Family::ReadOverlap => "read-overlap",
            Family::ReadPositionZero => "read-position-zero",
            Family::WriteSegcountZero => "write-segcount-zero",
            Family::ReplySegcountZero => "reply-segcount-zero",
            Family::WriteSegcountHuge => "write-segcount-huge",
            Family::ReplySegcountHuge => "reply-segcount-huge",
            Family::ReadLengthHuge => "read-length-huge",
            Family::WriteLengthHuge => "write-length-huge",
            Family::ReplyLengthHuge => "reply-length-huge",
            Family::HandleUnregistered => "handle-unregistered",
            Family::OffsetOutsideRegion => "offset-outside-region",
            Family::Credits => "credits",
            Family::ReplyChunkTooSmall => "reply-chunk-too-small",
            Family::WriteChunkTooSmall => "write-chunk-too-small",
            Family::InlineOverThreshold => "inline-over-threshold",
            Family::InlineNearThreshold => "inline-near-threshold",
            Family::PrivateData => "private-data",
        }
    }

    pub fn from_name(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// The valid call a mutation starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    Null,
    Getattr,
    Write,
    Read,
    Readdir,
}

impl Base {
    const ALL: [Base; 5] = [
        Base::Null,
        Base::Getattr,
        Base::Write,
        Base::Read,
        Base::Readdir,
    ];

    fn name(self) -> &'static str {
        match self {
            Base::Null => "null",
            Base::Getattr => "getattr",
            Base::Write => "write",
            Base::Read => "read",
            Base::Readdir => "readdir",
        }
    }
}

/// A segment's handle: a case region (relocated on send) or a raw value.
#[derive(Debug, Clone, Copy)]
enum SegHandle {
    Region(usize),
    Raw(u32),
}

#[derive(Debug, Clone, Copy)]
struct Seg {
    handle: SegHandle,
    length: u32,
    /// Offset from the region's start (relocated by its base address when `handle` is a region).
    offset: u64,
}

#[derive(Debug, Clone, Default)]
struct ChunkSpec {
    /// Segment count written on the wire; `None` = the number of `segs`.
    segcount: Option<u32>,
    segs: Vec<Seg>,
}

#[derive(Debug, Clone, Copy)]
enum BodyKind {
    Chunks,
    Msgp { align: u32, thresh: u32 },
    Done,
    Error { vers: bool },
}

/// A header plus inline body, before emission.
#[derive(Debug, Clone)]
struct Shape {
    vers: u32,
    credits: u32,
    proc_: u32,
    body: BodyKind,
    reads: Vec<(u32, Seg)>,
    writes: Vec<ChunkSpec>,
    reply: Option<ChunkSpec>,
    inline: Vec<u8>,
    regions: Vec<Region>,
}

/// Byte offsets of the emitted lists, for the truncation families.
#[derive(Debug, Clone, Default)]
struct Layout {
    read_list: (usize, usize),
    write_list: (usize, usize),
    /// (segcount word end, segments end) per Write chunk.
    write_segments: Vec<(usize, usize)>,
    reply_chunk: (usize, usize),
    reply_segments: Option<(usize, usize)>,
}

impl Shape {
    fn new(inline: Vec<u8>) -> Shape {
        Shape {
            vers: 1,
            credits: 32,
            proc_: proc_value::MSG,
            body: BodyKind::Chunks,
            reads: Vec::new(),
            writes: Vec::new(),
            reply: None,
            inline,
            regions: Vec::new(),
        }
    }

    fn add_region(&mut self, length: u32, access: RegionAccess, fill: u8) -> usize {
        self.regions.push(Region {
            length,
            access,
            fill,
            data: None,
        });
        self.regions.len() - 1
    }

    fn emit(&self, xid: u32) -> (Vec<u8>, Vec<Relocation>, Layout) {
        let mut relocs = Vec::new();
        let mut layout = Layout::default();
        let mut b = RawBuilder::new().fixed(xid, self.vers, self.credits, self.proc_);
        let segment = |b: RawBuilder, seg: &Seg, relocs: &mut Vec<Relocation>| {
            let (handle, region) = match seg.handle {
                SegHandle::Region(i) => (PLACEHOLDER_HANDLE + i as u32, Some(i)),
                SegHandle::Raw(h) => (h, None),
            };
            if let Some(region) = region {
                relocs.extend(Relocation::segment(b.len(), region));
            }
            b.segment(handle, seg.length, seg.offset)
        };
        match self.body {
            BodyKind::Done => return (b.bytes(), relocs, layout),
            BodyKind::Error { vers: true } => return (b.err_vers(1, 1).bytes(), relocs, layout),
            BodyKind::Error { vers: false } => return (b.err_chunk().bytes(), relocs, layout),
            BodyKind::Msgp { align, thresh } => b = b.msgp(align, thresh),
            BodyKind::Chunks => {}
        }
        layout.read_list.0 = b.len();
        for (position, seg) in &self.reads {
            b = b.word(1).word(*position);
            b = segment(b, seg, &mut relocs);
        }
        b = b.end_list();
        layout.read_list.1 = b.len();
        layout.write_list.0 = b.len();
        for chunk in &self.writes {
            let count = chunk.segcount.unwrap_or(chunk.segs.len() as u32);
            b = b.write_chunk(count);
            let segcount_end = b.len();
            for seg in &chunk.segs {
                b = segment(b, seg, &mut relocs);
            }
            layout.write_segments.push((segcount_end, b.len()));
        }
        b = b.end_list();
        layout.write_list.1 = b.len();
        layout.reply_chunk.0 = b.len();
        match &self.reply {
            None => b = b.no_reply(),
            Some(chunk) => {
                let count = chunk.segcount.unwrap_or(chunk.segs.len() as u32);
                b = b.reply_chunk(count);
                let segcount_end = b.len();
                for seg in &chunk.segs {
                    b = segment(b, seg, &mut relocs);
                }
                layout.reply_segments = Some((segcount_end, b.len()));
            }
        }
        layout.reply_chunk.1 = b.len();
        (b.raw(&self.inline).bytes(), relocs, layout)
    }
}

/// The valid form of `base`, with a byte count drawn from `u` where the call moves data.
fn base_shape(u: &mut Unstructured<'_>, base: Base, xid: u32) -> arbitrary::Result<Shape> {
    let fill = u.arbitrary::<u8>()?;
    Ok(match base {
        Base::Null => Shape::new(nfs3_call(xid, &Nfs3Call::Null)),
        Base::Getattr => {
            let args = Nfs3Call::Getattr(GetattrArgs {
                object: FileHandle(ROOT_FILE_HANDLE.to_vec()),
            });
            Shape::new(nfs3_call(xid, &args))
        }
        Base::Write => {
            let count = 4 * u.int_in_range(1u32..=2048)?;
            let args = Nfs3Call::Write(WriteArgs {
                file: FileHandle(FUZZ_FILE_HANDLE.to_vec()),
                offset: 0,
                count,
                stable: StableHow::FileSync,
                data: wire::nfs3::DdpData::Moved { length: count },
            });
            // RFC 8166 §3.4.4: the data item is removed from the stream; its Read chunk's
            // position is where it would start, right after its length word.
            let mut shape = Shape::new(nfs3_call(xid, &args));
            let region = shape.add_region(count, RegionAccess::RemoteRead, fill);
            let position = argument_position(shape.inline.len());
            if u.ratio(1u8, 3u8)? && count >= 8 {
                // Two segments of one chunk (same position), split on a 4-byte boundary.
                let first = 4 * u.int_in_range(1..=count / 4 - 1)?;
                shape.reads.push((position, seg(region, first, 0)));
                shape
                    .reads
                    .push((position, seg(region, count - first, first.into())));
            } else {
                shape.reads.push((position, seg(region, count, 0)));
            }
            shape
        }
        Base::Read => {
            let count = 4 * u.int_in_range(1u32..=2048)?;
            let args = Nfs3Call::Read(ReadArgs {
                file: FileHandle(FUZZ_FILE_HANDLE.to_vec()),
                offset: 0,
                count,
            });
            let mut shape = Shape::new(nfs3_call(xid, &args));
            let region = shape.add_region(count, RegionAccess::RemoteWrite, fill);
            shape.writes.push(ChunkSpec {
                segcount: None,
                segs: vec![seg(region, count, 0)],
            });
            shape
        }
        Base::Readdir => {
            let args = Nfs3Call::Readdir(ReaddirArgs {
                dir: FileHandle(ROOT_FILE_HANDLE.to_vec()),
                cookie: 0,
                cookieverf: [0; 8],
                count: 4096,
            });
            let mut shape = Shape::new(nfs3_call(xid, &args));
            let region = shape.add_region(4096, RegionAccess::RemoteWrite, fill);
            shape.reply = Some(ChunkSpec {
                segcount: None,
                segs: vec![seg(region, 4096, 0)],
            });
            shape
        }
    })
}

fn seg(region: usize, length: u32, offset: u64) -> Seg {
    Seg {
        handle: SegHandle::Region(region),
        length,
        offset,
    }
}

/// Generate case `index` of run `seed`.
pub fn generate(seed: u64, index: u64) -> Case {
    let entropy = case_entropy(seed, index);
    let mut u = Unstructured::new(&entropy);
    let family = u.choose(&Family::ALL).copied().unwrap_or(Family::Valid);
    build(&mut u, family, seed, index)
}

/// Generate case `index` of run `seed`, forcing `family` (tests and promoted fixtures).
pub fn generate_family_case(family: Family, seed: u64, index: u64) -> Case {
    let entropy = case_entropy(seed, index);
    build(&mut Unstructured::new(&entropy), family, seed, index)
}

fn build(u: &mut Unstructured<'_>, family: Family, seed: u64, index: u64) -> Case {
    let xid = XID_BASE | (index as u32 & 0x00ff_ffff);
    generate_family(u, family, seed, index, xid).unwrap_or_else(|_| {
        // Unreachable with CASE_ENTROPY_BYTES of input, but never panic: fall back to a NULL.
        let shape = Shape::new(nfs3_call(xid, &Nfs3Call::Null));
        finish(
            seed,
            index,
            Family::Valid,
            Base::Null,
            Rule::Accepted,
            xid,
            None,
            shape,
            None,
        )
    })
}

#[allow(clippy::too_many_arguments)]
fn finish(
    seed: u64,
    index: u64,
    family: Family,
    base: Base,
    target: Rule,
    xid: u32,
    private_data: Option<Vec<u8>>,
    shape: Shape,
    truncate: Option<usize>,
) -> Case {
    let (mut bytes, mut relocations, _) = shape.emit(xid);
    if let Some(len) = truncate {
        crate::case::cut_at(&mut bytes, &mut relocations, len);
    }
    Case {
        seed,
        index,
        family: family.name().to_string(),
        base: base.name().to_string(),
        target_rule: target.name().to_string(),
        xid,
        private_data,
        regions: shape.regions,
        relocations,
        bytes,
    }
}

/// The linux-2026 page budget that bounds segcounts and Read lengths.
fn maxpages_2026() -> u32 {
    Profile::Linux2026.model().maxpages
}

/// What a family's mutation decided beside the shape: the rule it aims at (linux-2026), the
/// CM private data, and where the header is cut.
#[derive(Debug)]
struct Mutation {
    target: Rule,
    private_data: Option<Vec<u8>>,
    truncate: Option<usize>,
}

impl Default for Mutation {
    /// No mutation: the valid call, which every target accepts.
    fn default() -> Mutation {
        Mutation {
            target: Rule::Accepted,
            private_data: None,
            truncate: None,
        }
    }
}

/// One case of `family`: its base call from `u`, then the mutation of the family's concern.
fn generate_family(
    u: &mut Unstructured<'_>,
    family: Family,
    seed: u64,
    index: u64,
    xid: u32,
) -> arbitrary::Result<Case> {
    let base = family_base(u, family)?;
    let mut shape = base_shape(u, base, xid)?;
    let mutation = match family {
        Family::Valid
        | Family::Version
        | Family::ProcMsgp
        | Family::ProcUnknown
        | Family::ProcDone
        | Family::ProcError
        | Family::Credits
        | Family::PrivateData => mutate_header(u, family, &mut shape)?,
        Family::ShortHeader
        | Family::TruncatedReadList
        | Family::TruncatedWriteList
        | Family::TruncatedReplyChunk => cut_header(u, family, &shape, xid)?,
        Family::ReadPositionUnaligned
        | Family::ReadPastInline
        | Family::ReadOverlap
        | Family::ReadPositionZero
        | Family::ReadLengthHuge => mutate_read_list(u, family, &mut shape)?,
        Family::WriteSegcountZero
        | Family::ReplySegcountZero
        | Family::WriteSegcountHuge
        | Family::ReplySegcountHuge
        | Family::WriteLengthHuge
        | Family::ReplyLengthHuge
        | Family::ReplyChunkTooSmall
        | Family::WriteChunkTooSmall => mutate_write_and_reply(u, family, &mut shape, xid)?,
        Family::HandleUnregistered | Family::OffsetOutsideRegion => {
            let unregistered = family == Family::HandleUnregistered;
            mutate_segments(u, unregistered, base, &mut shape)?;
            Mutation::default()
        }
        Family::InlineOverThreshold | Family::InlineNearThreshold => {
            grow_inline(u, family == Family::InlineOverThreshold, &mut shape, xid)?
        }
    };
    Ok(finish(
        seed,
        index,
        family,
        base,
        mutation.target,
        xid,
        mutation.private_data,
        shape,
        mutation.truncate,
    ))
}

/// The valid call `family` mutates: the one carrying the list it aims at, else drawn from `u`.
fn family_base(u: &mut Unstructured<'_>, family: Family) -> arbitrary::Result<Base> {
    let pick_base = |u: &mut Unstructured<'_>, from: &[Base]| -> arbitrary::Result<Base> {
        u.choose(from).copied()
    };
    let chunked = [Base::Write, Base::Read, Base::Readdir];
    Ok(match family {
        Family::TruncatedReadList
        | Family::ReadPositionUnaligned
        | Family::ReadPastInline
        | Family::ReadOverlap
        | Family::ReadLengthHuge => Base::Write,
        Family::TruncatedWriteList
        | Family::WriteSegcountZero
        | Family::WriteSegcountHuge
        | Family::WriteLengthHuge
        | Family::WriteChunkTooSmall => Base::Read,
        Family::TruncatedReplyChunk
        | Family::ReplySegcountZero
        | Family::ReplySegcountHuge
        | Family::ReplyLengthHuge
        | Family::ReplyChunkTooSmall => Base::Readdir,
        Family::HandleUnregistered | Family::OffsetOutsideRegion => pick_base(u, &chunked)?,
        Family::ReadPositionZero | Family::InlineOverThreshold | Family::InlineNearThreshold => {
            Base::Null
        }
        Family::PrivateData => pick_base(u, &[Base::Null, Base::Getattr])?,
        _ => pick_base(u, &Base::ALL)?,
    })
}

/// The families that change the fixed header fields (RFC 8166 §4.1) or what rides beside the
/// call: version, procedure, credits, CM private data; `Valid` changes nothing.
fn mutate_header(
    u: &mut Unstructured<'_>,
    family: Family,
    shape: &mut Shape,
) -> arbitrary::Result<Mutation> {
    let mut mutation = Mutation::default();
    match family {
        Family::Valid => {}
        Family::Version => {
            // RFC 8166 §4.1.2: only version 1 is defined; anything else gets ERR_VERS (§4.5.1).
            shape.vers = *u.choose(&[0, 2, 3, 0x100, u32::MAX])?;
            if u.ratio(1u8, 2u8)? {
                shape.vers = u.int_in_range(2..=u32::MAX)?;
            }
            mutation.target = Rule::BadVersion;
        }
        Family::ProcMsgp => {
            // RFC 8166 §4.6.1: RDMA_MSGP is no longer supported.
            shape.proc_ = proc_value::MSGP;
            shape.body = BodyKind::Msgp {
                align: *u.choose(&[0, 4, 1024, u32::MAX])?,
                thresh: u.arbitrary()?,
            };
            mutation.target = Rule::BadProc;
        }
        Family::ProcUnknown => {
            shape.proc_ = u.int_in_range(5..=u32::MAX)?;
            mutation.target = Rule::BadProc;
        }
        Family::ProcDone => {
            shape.proc_ = proc_value::DONE;
            shape.body = BodyKind::Done;
            mutation.target = Rule::DroppedProc;
        }
        Family::ProcError => {
            shape.proc_ = proc_value::ERROR;
            shape.body = BodyKind::Error {
                vers: u.arbitrary()?,
            };
            mutation.target = Rule::DroppedProc;
        }
        Family::Credits => {
            // svcrdma never checks the requested credit value (RFC 8166 §3.3.1 is advisory).
            shape.credits = *u.choose(&[0, 1, 0xffff, 0x8000_0000, u32::MAX])?;
        }
        Family::PrivateData => mutation.private_data = Some(private_data_variant(u)?),
        // The other families' mutations: see generate_family.
        _ => {}
    }
    Ok(mutation)
}

/// The families that cut the header short: inside the fixed fields, or inside one of the
/// chunk lists (where the emitted [`Layout`] puts them).
fn cut_header(
    u: &mut Unstructured<'_>,
    family: Family,
    shape: &Shape,
    xid: u32,
) -> arbitrary::Result<Mutation> {
    let mut mutation = Mutation::default();
    match family {
        Family::ShortHeader => {
            // RFC 8166 §4.1: the four fixed fields are mandatory.
            mutation.truncate = Some(u.int_in_range(0..=15)?);
            mutation.target = Rule::ShortHeader;
        }
        Family::TruncatedReadList => {
            let (_, _, layout) = shape.emit(xid);
            let (start, end) = layout.read_list;
            mutation.truncate = Some(u.int_in_range(start..=end - 1)?);
            mutation.target = Rule::ReadListTruncated;
        }
        Family::TruncatedWriteList => {
            let (_, _, layout) = shape.emit(xid);
            let (start, end) = layout.write_list;
            let cut = u.int_in_range(start..=end - 1)?;
            mutation.truncate = Some(cut);
            mutation.target = if layout
                .write_segments
                .iter()
                .any(|&(count_end, segs_end)| count_end <= cut && cut < segs_end)
            {
                Rule::WriteSegmentsTruncated
            } else {
                Rule::WriteListTruncated
            };
        }
        Family::TruncatedReplyChunk => {
            let (_, _, layout) = shape.emit(xid);
            let (start, end) = layout.reply_chunk;
            let cut = u.int_in_range(start..=end - 1)?;
            mutation.truncate = Some(cut);
            mutation.target = match layout.reply_segments {
                Some((count_end, segs_end)) if count_end <= cut && cut < segs_end => {
                    Rule::ReplySegmentsTruncated
                }
                _ => Rule::ReplyChunkTruncated,
            };
        }
        // The other families' mutations: see generate_family.
        _ => {}
    }
    Ok(mutation)
}

/// The families that misplace or oversize the Read list's chunks (RFC 8166 §3.4.4, §3.4.5,
/// §3.5.3).
fn mutate_read_list(
    u: &mut Unstructured<'_>,
    family: Family,
    shape: &mut Shape,
) -> arbitrary::Result<Mutation> {
    let mut mutation = Mutation::default();
    match family {
        Family::ReadPositionUnaligned => {
            // RFC 8166 §3.4.4: XDR positions are multiples of 4.
            let skew = u.int_in_range(1..=3)?;
            for (position, _) in &mut shape.reads {
                *position += skew;
            }
            mutation.target = Rule::ReadPositionUnaligned;
        }
        Family::ReadPastInline => {
            let past = 4 * u.int_in_range(1u32..=1024)?;
            for (position, _) in &mut shape.reads {
                *position += past;
            }
            mutation.target = Rule::ReadChunkPastInline;
        }
        Family::ReadOverlap => {
            // A second chunk starting inside the first one's data (RFC 8166 §3.4.4: chunks are
            // disjoint pieces of one XDR stream): first_at + length > second_at.
            let (position, first) = shape.reads[0];
            let total: u32 = shape.reads.iter().map(|(_, s)| s.length).sum();
            let length = total.max(8);
            shape.regions[0].length = length;
            let second = shape.add_region(length, RegionAccess::RemoteRead, 0x5a);
            let first_at = 4 * u.int_in_range(1..=position / 4)?;
            let step = 4 * u.int_in_range(1..=(length - 1) / 4)?;
            shape.reads = vec![
                (first_at, Seg { length, ..first }),
                (first_at + step, seg(second, length, 0)),
            ];
            mutation.target = Rule::ReadChunksOverlap;
        }
        Family::ReadPositionZero => {
            // RFC 8166 §3.5.3: a Position-Zero Read chunk carries the whole RPC call (RDMA_NOMSG).
            let call = std::mem::take(&mut shape.inline);
            let len = call.len() as u32;
            let region = shape.add_region(len, RegionAccess::RemoteRead, 0);
            shape.regions[region].data = Some(call);
            shape.proc_ = proc_value::NOMSG;
            shape.reads.push((0, seg(region, len, 0)));
            match u.int_in_range(0..=2u8)? {
                0 => mutation.target = Rule::Accepted,
                1 => {
                    // A further Read chunk positioned beyond the Call chunk's data.
                    let past = len + 4 * u.int_in_range(1u32..=64)?;
                    let extra = shape.add_region(64, RegionAccess::RemoteRead, 0x33);
                    shape.reads.push((past, seg(extra, 64, 0)));
                    mutation.target = Rule::ReadChunkPastInline;
                }
                _ => {
                    // Call chunk segments each under the page budget, together over it.
                    let max = Profile::Linux2026.model().max_chunk_bytes();
                    let half = max / 2 + 4 * u.int_in_range(1u32..=1024)?;
                    let raw = UNREGISTERED_HANDLE | 0xc0;
                    shape.reads.push((0, raw_seg(raw, half)));
                    shape.reads.push((0, raw_seg(raw + 1, half)));
                    mutation.target = Rule::CallChunkOversized;
                }
            }
        }
        Family::ReadLengthHuge => {
            let length = u32::MAX - u.int_in_range(0..=0xffff)?;
            shape.reads.truncate(1);
            shape.reads[0].1 = raw_seg(UNREGISTERED_HANDLE | 0xd0, length);
            mutation.target = Rule::ReadSegmentOversized;
        }
        // The other families' mutations: see generate_family.
        _ => {}
    }
    Ok(mutation)
}

/// The families that change the Write list's chunk or the Reply chunk: segment counts, segment
/// lengths, a chunk too small for the reply (RFC 8166 §3.4.6, §3.4.7).
fn mutate_write_and_reply(
    u: &mut Unstructured<'_>,
    family: Family,
    shape: &mut Shape,
    xid: u32,
) -> arbitrary::Result<Mutation> {
    let mut mutation = Mutation::default();
    match family {
        Family::WriteSegcountZero => {
            shape.writes[0] = ChunkSpec::default();
            mutation.target = Rule::WriteSegcountZero;
        }
        Family::ReplySegcountZero => {
            shape.reply = Some(ChunkSpec::default());
            mutation.target = Rule::ReplySegcountZero;
        }
        Family::WriteSegcountHuge | Family::ReplySegcountHuge => {
            let over = u.ratio(1u8, 2u8)?;
            let count = if over {
                u.int_in_range(maxpages_2026() + 1..=u32::MAX)?
            } else {
                u.int_in_range(2..=maxpages_2026())?
            };
            let write = family == Family::WriteSegcountHuge;
            let chunk = if write {
                &mut shape.writes[0]
            } else {
                shape.reply.get_or_insert_with(ChunkSpec::default)
            };
            chunk.segcount = Some(count);
            mutation.target = match (write, over) {
                (true, true) => Rule::WriteSegcountOverLimit,
                (true, false) => Rule::WriteSegmentsTruncated,
                (false, true) => Rule::ReplySegcountOverLimit,
                (false, false) => Rule::ReplySegmentsTruncated,
            };
            if !over {
                // Fewer segments present than counted, and nothing after them to skip into.
                shape.inline.clear();
            }
        }
        Family::WriteLengthHuge => {
            shape.writes[0].segs[0].length = u32::MAX - u.int_in_range(0..=0xffff)?;
        }
        Family::ReplyLengthHuge => {
            if let Some(reply) = &mut shape.reply {
                reply.segs[0].length = u32::MAX - u.int_in_range(0..=0xffff)?;
            }
        }
        Family::ReplyChunkTooSmall => {
            if let Some(reply) = &mut shape.reply {
                reply.segs[0].length = 4 * u.int_in_range(1u32..=5)?;
            }
        }
        Family::WriteChunkTooSmall => {
            let capacity = 4 * u.int_in_range(1u32..=256)?;
            let count = capacity + 4 * u.int_in_range(1u32..=1024)?;
            let args = Nfs3Call::Read(ReadArgs {
                file: FileHandle(FUZZ_FILE_HANDLE.to_vec()),
                offset: 0,
                count,
            });
            shape.inline = nfs3_call(xid, &args);
            shape.writes[0].segs[0].length = capacity;
        }
        // The other families' mutations: see generate_family.
        _ => {}
    }
    Ok(mutation)
}

/// The families that point the chunks of `base`'s list at memory no target registered: an
/// unknown handle (`unregistered`), else an offset outside the region.
fn mutate_segments(
    u: &mut Unstructured<'_>,
    unregistered: bool,
    base: Base,
    shape: &mut Shape,
) -> arbitrary::Result<()> {
    let raw = UNREGISTERED_HANDLE | u32::from(u.arbitrary::<u16>()?);
    let outside = if u.ratio(1u8, 2u8)? {
        u64::MAX - u64::from(u.arbitrary::<u16>()?)
    } else {
        u64::from(shape.regions[0].length) + u64::from(u.int_in_range(0u32..=1 << 20)?)
    };
    let mutate = |s: &mut Seg| {
        if unregistered {
            s.handle = SegHandle::Raw(raw);
        } else {
            s.offset = outside;
        }
    };
    match base {
        Base::Write => shape.reads.iter_mut().for_each(|(_, s)| mutate(s)),
        Base::Read => shape.writes[0].segs.iter_mut().for_each(mutate),
        _ => {
            if let Some(reply) = &mut shape.reply {
                reply.segs.iter_mut().for_each(mutate);
            }
        }
    }
    Ok(())
}

/// The families that grow the inline body to near or `over` the Receive buffer size (RFC 8166
/// §3.3.2: a Send longer than the peer's Receive buffers fails the Receive).
fn grow_inline(
    u: &mut Unstructured<'_>,
    over: bool,
    shape: &mut Shape,
    xid: u32,
) -> arbitrary::Result<Mutation> {
    let header_len = shape.emit(xid).0.len();
    let (target, total) = if over {
        let total = u.int_in_range(DEFAULT_MAX_REQ_SIZE + 1..=2 * DEFAULT_MAX_REQ_SIZE)?;
        (Rule::ReceiveOverflow, total)
    } else {
        (Rule::Accepted, u.int_in_range(1025..=DEFAULT_MAX_REQ_SIZE)?)
    };
    let fill = u.arbitrary::<u8>()?;
    shape
        .inline
        .resize(shape.inline.len() + (total - header_len), fill);
    Ok(Mutation {
        target,
        ..Mutation::default()
    })
}

fn raw_seg(handle: u32, length: u32) -> Seg {
    Seg {
        handle: SegHandle::Raw(handle),
        length,
        offset: 0,
    }
}

/// RFC 8797 §4 private data: valid with any size codes, wrong Format Identifier, wrong version,
/// shorter than 8 bytes, or padded to the 56 bytes an IB CM REQ carries. A responder ignores
/// private data it does not recognise (RFC 8797 §4), so every variant must still connect.
fn private_data_variant(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<u8>> {
    let valid = PrivateData {
        version: 1,
        flags: u.arbitrary::<u8>()? & 1,
        send_size_code: u.arbitrary()?,
        recv_size_code: u.arbitrary()?,
    }
    .encode()
    .to_vec();
    Ok(match u.int_in_range(0..=4u8)? {
        0 => valid,
        1 => {
            let mut bytes = valid;
            let magic = MAGIC ^ u32::from(u.int_in_range(1u16..=u16::MAX)?);
            bytes[..4].copy_from_slice(&magic.to_be_bytes());
            bytes
        }
        2 => {
            let mut bytes = valid;
            bytes[4] = u.int_in_range(2..=u8::MAX)?;
            bytes
        }
        3 => valid[..u.int_in_range(0..=7)?].to_vec(),
        _ => {
            let mut bytes = valid;
            bytes.resize(56, u.arbitrary()?);
            bytes
        }
    })
}
