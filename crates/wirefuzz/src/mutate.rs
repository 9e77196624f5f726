//! Structure-aware mutation of corpus cases (guided fuzzing, issue 16 item 2).
//!
//! A case's bytes are read back leniently into a [`Skeleton`] (the fixed words, the Read list,
//! the Write list with each chunk's declared segment count, the Reply chunk, the inline body),
//! with every segment remembering which case region its handle/offset relocations point at. A
//! mutation edits that structure (header words, positions, lengths, offsets, segment counts,
//! chunks added, removed or spliced in from another corpus case, the inline body resized or
//! its RPC words changed, private data swapped) and [`wire::raw::RawBuilder`] emits it again,
//! relocations recomputed, so mutants stay registrable and replayable case files. Bytes that do
//! not read back as a header (short, truncated lists) get word-level mutations instead.
//!
//! A mutant is a pure function of its parent(s) and the entropy it is given; its target rule is
//! the linux-2026 model's verdict on it (a mutant has no layout of its own to compute it from).

use arbitrary::Unstructured;
use wire::raw::{proc_value, RawBuilder};
use wire::rpcrdma::Limits;
use wire::skeleton::{RawChunk, RawSegment};
use wire::svcrdma::{self, Profile};

use crate::case::{
    cut_at, Case, Region, RegionAccess, RelocField, Relocation, MAX_CASE_BYTES, MAX_REGIONS,
    MAX_REGION_BYTES, MAX_RELOCATIONS,
};
use crate::generate::{PLACEHOLDER_HANDLE, UNREGISTERED_HANDLE};

/// The family name mutants carry in reports and case files.
pub const MUTANT_FAMILY: &str = "mutant";
/// Most Read segments, Write chunks and segments per chunk a skeleton reads or a mutant emits.
const MAX_READS: usize = 16;
const MAX_WRITE_CHUNKS: usize = 4;
const MAX_CHUNK_SEGS: usize = 16;
/// Largest inline body a mutant carries (past Linux's 4 KiB Receive, well inside a case).
const MAX_INLINE: usize = 9000;
/// Transport XIDs of mutants: `MUTANT_XID_BASE | (index & 0xff_ffff)`, apart from the family
/// cases' (`generate::XID_BASE`), whose indices count family draws only and so overlap the
/// guided stream's indices a mutant carries.
pub const MUTANT_XID_BASE: u32 = 0x5800_0000;
/// Mutations stacked on one mutant.
const MAX_STACKED: u32 = 4;

/// One RDMA segment: a case region (relocated when sent) or a raw handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seg {
    pub handle: u32,
    pub length: u32,
    pub offset: u64,
    /// The region whose handle and base address the segment takes, if any.
    pub region: Option<usize>,
}

/// A Write chunk or the Reply chunk: the count written on the wire and the segments present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub segcount: u32,
    pub segs: Vec<Seg>,
}

/// A case's header read back as structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skeleton {
    pub xid: u32,
    pub vers: u32,
    pub credits: u32,
    pub proc_: u32,
    /// RDMA_MSGP's align and threshold words.
    pub msgp: Option<(u32, u32)>,
    pub reads: Vec<(u32, Seg)>,
    pub writes: Vec<Chunk>,
    pub reply: Option<Chunk>,
    /// The inline body (the RPC message), or for procs without chunk lists everything after
    /// the fixed words.
    pub inline: Vec<u8>,
    /// Whether chunk lists were read (always for MSG/NOMSG/MSGP; for other procs when the
    /// bytes after the fixed words read as lists, as the proc-unknown family writes them).
    pub lists: bool,
}

impl Skeleton {
    /// Read `case`'s bytes back; `None` when they are not a whole header (then mutate words).
    pub fn parse(case: &Case) -> Option<Skeleton> {
        Skeleton::parse_bytes(&case.bytes, &case.relocations)
    }

    /// [`Skeleton::parse`] of bytes whose segments are relocated by `relocations`: wire's
    /// lenient reading ([`wire::skeleton::Skeleton`]), each segment given the region whose
    /// handle relocation starts where it does.
    pub fn parse_bytes(bytes: &[u8], relocations: &[Relocation]) -> Option<Skeleton> {
        let limits = Limits {
            max_read_segments: MAX_READS,
            max_write_chunks: MAX_WRITE_CHUNKS,
            max_segments_per_chunk: MAX_CHUNK_SEGS as u32,
        };
        let read = wire::skeleton::Skeleton::parse(bytes, &limits)?;
        let seg = |raw: &RawSegment| Seg {
            handle: raw.handle,
            length: raw.length,
            offset: raw.offset,
            region: relocations
                .iter()
                .find(|r| r.at == raw.at && r.field == RelocField::Handle)
                .map(|r| r.region),
        };
        let chunk = |raw: &RawChunk| Chunk {
            segcount: raw.segcount,
            segs: raw.segments.iter().map(seg).collect(),
        };
        Some(Skeleton {
            xid: read.xid,
            vers: read.vers,
            credits: read.credits,
            proc_: read.proc_,
            msgp: read.msgp,
            reads: read.reads.iter().map(|(p, s)| (*p, seg(s))).collect(),
            writes: read.writes.iter().map(chunk).collect(),
            reply: read.reply.as_ref().map(chunk),
            inline: read.inline(bytes).to_vec(),
            lists: read.lists,
        })
    }

    /// Emit the bytes and the relocations of the segments that name a region.
    pub fn emit(&self) -> (Vec<u8>, Vec<Relocation>) {
        let mut relocs = Vec::new();
        let mut b = RawBuilder::new().fixed(self.xid, self.vers, self.credits, self.proc_);
        let segment = |b: RawBuilder, seg: &Seg, relocs: &mut Vec<Relocation>| {
            if let Some(region) = seg.region {
                if relocs.len() + 2 <= MAX_RELOCATIONS {
                    relocs.extend(Relocation::segment(b.len(), region));
                }
            }
            b.segment(seg.handle, seg.length, seg.offset)
        };
        if !self.lists {
            return (b.raw(&self.inline).bytes(), relocs);
        }
        if let (proc_value::MSGP, Some((align, thresh))) = (self.proc_, self.msgp) {
            b = b.msgp(align, thresh);
        }
        for (position, seg) in &self.reads {
            b = b.word(1).word(*position);
            b = segment(b, seg, &mut relocs);
        }
        b = b.end_list();
        for chunk in &self.writes {
            b = b.write_chunk(chunk.segcount);
            for seg in &chunk.segs {
                b = segment(b, seg, &mut relocs);
            }
        }
        b = b.end_list();
        match &self.reply {
            None => b = b.no_reply(),
            Some(chunk) => {
                b = b.reply_chunk(chunk.segcount);
                for seg in &chunk.segs {
                    b = segment(b, seg, &mut relocs);
                }
            }
        }
        (b.raw(&self.inline).bytes(), relocs)
    }

    /// Bytes of the transport header (everything before the inline body).
    pub fn header_len(&self) -> usize {
        self.emit().0.len() - self.inline.len()
    }

    /// Every segment, for edits that do not care which list it is in.
    fn segments_mut(&mut self) -> Vec<&mut Seg> {
        let mut all: Vec<&mut Seg> = self.reads.iter_mut().map(|(_, s)| s).collect();
        for chunk in self.writes.iter_mut().chain(self.reply.as_mut()) {
            all.extend(chunk.segs.iter_mut());
        }
        all
    }
}

/// Lengths and counts that sit on the edges the rule model and svcrdma check.
const INTERESTING_U32: &[u32] = &[
    0,
    1,
    3,
    4,
    255,
    256,
    259,
    260,
    261,
    1024,
    1025,
    4095,
    4096,
    4097,
    65_536,
    1 << 20,
    (1 << 20) + 4,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_fffc,
    0xffff_ffff,
];

fn interesting_u32(u: &mut Unstructured<'_>) -> arbitrary::Result<u32> {
    if u.ratio(2u8, 3u8)? {
        u.choose(INTERESTING_U32).copied()
    } else {
        u.arbitrary()
    }
}

/// The mutation applied, for notes and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mutation {
    Header,
    ReadPosition,
    SegLength,
    SegOffset,
    SegHandle,
    Segcount,
    AddRead,
    RemoveRead,
    AddWriteChunk,
    RemoveWriteChunk,
    ToggleReply,
    DuplicateSegment,
    Splice,
    InlineResize,
    InlineRpcWord,
    Truncate,
    PrivateData,
    Words,
}

/// Mutate `parent` (with `other` as a splice partner) into case `index` of run `seed`.
/// Never fails: entropy running out ends the stacking early.
pub fn mutate(
    u: &mut Unstructured<'_>,
    parent: &Case,
    other: &Case,
    seed: u64,
    index: u64,
) -> (Case, Vec<Mutation>) {
    let xid = MUTANT_XID_BASE | (index as u32 & 0x00ff_ffff);
    let mut regions = parent.regions.clone();
    let mut private_data = parent.private_data.clone();
    let mut applied = Vec::new();
    let stacked = u.int_in_range(1..=MAX_STACKED).unwrap_or(1);
    let (mut bytes, mut relocations) = match Skeleton::parse(parent) {
        Some(mut skeleton) => {
            retag_xid(&mut skeleton.inline, skeleton.xid, xid);
            skeleton.xid = xid;
            let mut truncate = None;
            for _ in 0..stacked {
                match mutate_skeleton(u, &mut skeleton, &mut regions, other) {
                    Ok(Some(Mutation::Truncate)) => {
                        truncate = Some(());
                        applied.push(Mutation::Truncate);
                    }
                    Ok(Some(Mutation::PrivateData)) => {
                        private_data = pick_private_data(u, other);
                        applied.push(Mutation::PrivateData);
                    }
                    Ok(Some(m)) => applied.push(m),
                    Ok(None) => {}
                    Err(_) => break,
                }
            }
            let (mut bytes, mut relocations) = skeleton.emit();
            if truncate.is_some() {
                let len = u.int_in_range(0..=bytes.len()).unwrap_or(bytes.len());
                cut_at(&mut bytes, &mut relocations, len);
            }
            (bytes, relocations)
        }
        None => {
            let mut bytes = parent.bytes.clone();
            let mut relocations = parent.relocations.clone();
            for _ in 0..stacked {
                if mutate_words(u, &mut bytes, &mut relocations).is_err() {
                    break;
                }
            }
            if let Some(word) = bytes.get_mut(..4) {
                word.copy_from_slice(&xid.to_be_bytes());
            }
            applied.push(Mutation::Words);
            (bytes, relocations)
        }
    };
    cut_at(&mut bytes, &mut relocations, MAX_CASE_BYTES);
    let target = svcrdma::classify(&bytes, Profile::Linux2026);
    let case = Case {
        seed,
        index,
        family: MUTANT_FAMILY.to_string(),
        base: parent.base.clone(),
        target_rule: target.rule.name().to_string(),
        xid,
        private_data,
        regions,
        relocations,
        bytes,
    };
    (case, applied)
}

/// The RPC call inside carries the transport XID too (the generator writes both alike).
fn retag_xid(inline: &mut [u8], old: u32, new: u32) {
    if let Some(word) = inline.get_mut(..4) {
        if word == old.to_be_bytes() {
            word.copy_from_slice(&new.to_be_bytes());
        }
    }
}

fn pick_private_data(u: &mut Unstructured<'_>, other: &Case) -> Option<Vec<u8>> {
    match u.int_in_range(0u8..=2).unwrap_or(0) {
        0 => None,
        1 => other.private_data.clone(),
        _ => {
            // A valid RFC 8797 message with drawn sizes, or those 8 bytes bent.
            let mut data = vec![0xf6, 0xab, 0x0e, 0x18, 1, 0, 0, 0];
            data[5] = u.arbitrary().unwrap_or(0);
            data[6] = u.arbitrary().unwrap_or(0);
            data[7] = u.arbitrary().unwrap_or(0);
            if u.ratio(1u8, 4u8).unwrap_or(false) {
                let i = u.choose_index(data.len()).unwrap_or(0);
                data[i] ^= u.arbitrary::<u8>().unwrap_or(1) | 1;
            }
            Some(data)
        }
    }
}

/// A new region for an added segment (bounded by [`MAX_REGIONS`]); `None` when full.
fn add_region(
    u: &mut Unstructured<'_>,
    regions: &mut Vec<Region>,
    access: RegionAccess,
) -> arbitrary::Result<Option<(usize, u32)>> {
    if regions.len() >= MAX_REGIONS {
        return Ok(None);
    }
    let length = 4 * u.int_in_range(1u32..=2048)?;
    regions.push(Region {
        length,
        access,
        fill: u.arbitrary()?,
        data: None,
    });
    Ok(Some((regions.len() - 1, length)))
}

fn region_seg(region: usize, length: u32) -> Seg {
    Seg {
        handle: PLACEHOLDER_HANDLE + region as u32,
        length,
        offset: 0,
        region: Some(region),
    }
}

fn mutate_skeleton(
    u: &mut Unstructured<'_>,
    s: &mut Skeleton,
    regions: &mut Vec<Region>,
    other: &Case,
) -> arbitrary::Result<Option<Mutation>> {
    const ALL: [Mutation; 17] = [
        Mutation::Header,
        Mutation::ReadPosition,
        Mutation::SegLength,
        Mutation::SegOffset,
        Mutation::SegHandle,
        Mutation::Segcount,
        Mutation::AddRead,
        Mutation::RemoveRead,
        Mutation::AddWriteChunk,
        Mutation::RemoveWriteChunk,
        Mutation::ToggleReply,
        Mutation::DuplicateSegment,
        Mutation::Splice,
        Mutation::InlineResize,
        Mutation::InlineRpcWord,
        Mutation::Truncate,
        Mutation::PrivateData,
    ];
    let which = *u.choose(&ALL)?;
    let done = match which {
        Mutation::Header => {
            match u.int_in_range(0u8..=3)? {
                0 => {
                    let any = u.arbitrary()?;
                    s.vers = *u.choose(&[0, 1, 2, 3, 0xffff_ffff, any])?
                }
                1 => s.credits = interesting_u32(u)?,
                2 => {
                    let any = u.arbitrary()?;
                    s.proc_ = *u.choose(&[0, 1, 2, 3, 4, 5, any])?;
                    if s.proc_ == proc_value::MSGP && s.msgp.is_none() {
                        s.msgp = Some((u.arbitrary()?, u.arbitrary()?));
                    }
                }
                _ => s.msgp = Some((interesting_u32(u)?, interesting_u32(u)?)),
            }
            true
        }
        Mutation::ReadPosition => {
            if s.reads.is_empty() {
                false
            } else {
                let i = u.choose_index(s.reads.len())?;
                let inline = s.inline.len() as u32;
                let other_position = s.reads[u.choose_index(s.reads.len())?].0;
                s.reads[i].0 = match u.int_in_range(0u8..=5)? {
                    0 => 0,
                    1 => inline & !3,
                    2 => s.reads[i]
                        .0
                        .wrapping_add(*u.choose(&[1, 2, 3, 4, 8, 0xffff_fffc])?),
                    3 => other_position,
                    4 => 4 * u.int_in_range(0..=(inline / 4 + 64))?,
                    _ => interesting_u32(u)?,
                };
                true
            }
        }
        Mutation::SegLength | Mutation::SegOffset | Mutation::SegHandle => {
            let mut segs = s.segments_mut();
            if segs.is_empty() {
                false
            } else {
                let i = u.choose_index(segs.len())?;
                let seg = &mut *segs[i];
                let region_len = seg
                    .region
                    .and_then(|r| regions.get(r))
                    .map_or(4096, |r| r.length);
                match which {
                    Mutation::SegLength => {
                        seg.length = match u.int_in_range(0u8..=2)? {
                            0 => region_len.wrapping_add(*u.choose(&[4, 1, 0xffff_fffc])?),
                            1 => (region_len / 2) & !3,
                            _ => interesting_u32(u)?,
                        }
                    }
                    Mutation::SegOffset => {
                        seg.offset = match u.int_in_range(0u8..=2)? {
                            0 => u64::from(region_len),
                            1 => u64::MAX - 3,
                            _ => u64::from(interesting_u32(u)?),
                        }
                    }
                    _ => {
                        seg.region = None;
                        seg.handle = UNREGISTERED_HANDLE | u.arbitrary::<u16>()? as u32;
                    }
                }
                true
            }
        }
        Mutation::Segcount => {
            let chunks: Vec<&mut Chunk> = s.writes.iter_mut().chain(s.reply.as_mut()).collect();
            if chunks.is_empty() {
                false
            } else {
                let n = chunks.len();
                let chunk = chunks.into_iter().nth(u.choose_index(n)?);
                if let Some(chunk) = chunk {
                    let present = chunk.segs.len() as u32;
                    let any = interesting_u32(u)?;
                    chunk.segcount = *u.choose(&[
                        0,
                        present.saturating_sub(1),
                        present + 1,
                        259,
                        260,
                        261,
                        0xffff_ffff,
                        any,
                    ])?;
                }
                true
            }
        }
        Mutation::AddRead => {
            if s.reads.len() >= MAX_READS {
                false
            } else {
                let position = match s.reads.first() {
                    Some((p, _)) if u.arbitrary()? => *p,
                    _ => 4 * u.int_in_range(0..=(s.inline.len() as u32 / 4 + 8))?,
                };
                match add_region(u, regions, RegionAccess::RemoteRead)? {
                    Some((region, length)) => {
                        s.reads.push((position, region_seg(region, length)));
                        true
                    }
                    None => false,
                }
            }
        }
        Mutation::RemoveRead => {
            if s.reads.is_empty() {
                false
            } else {
                s.reads.remove(u.choose_index(s.reads.len())?);
                true
            }
        }
        Mutation::AddWriteChunk => {
            if s.writes.len() >= MAX_WRITE_CHUNKS {
                false
            } else {
                match add_region(u, regions, RegionAccess::RemoteWrite)? {
                    Some((region, length)) => {
                        s.writes.push(Chunk {
                            segcount: 1,
                            segs: vec![region_seg(region, length)],
                        });
                        true
                    }
                    None => false,
                }
            }
        }
        Mutation::RemoveWriteChunk => {
            if s.writes.is_empty() {
                false
            } else {
                s.writes.remove(u.choose_index(s.writes.len())?);
                true
            }
        }
        Mutation::ToggleReply => {
            if s.reply.take().is_none() {
                if let Some((region, length)) = add_region(u, regions, RegionAccess::RemoteWrite)? {
                    s.reply = Some(Chunk {
                        segcount: 1,
                        segs: vec![region_seg(region, length)],
                    });
                }
            }
            true
        }
        Mutation::DuplicateSegment => {
            let chunks: Vec<&mut Chunk> = s.writes.iter_mut().chain(s.reply.as_mut()).collect();
            let n = chunks.len();
            match chunks.into_iter().nth(u.choose_index(n.max(1))?) {
                Some(chunk) if !chunk.segs.is_empty() && chunk.segs.len() < MAX_CHUNK_SEGS => {
                    let seg = chunk.segs[u.choose_index(chunk.segs.len())?];
                    chunk.segs.push(seg);
                    chunk.segcount = chunk.segcount.wrapping_add(1);
                    true
                }
                _ => false,
            }
        }
        Mutation::Splice => splice(u, s, regions, other)?,
        Mutation::InlineResize => {
            let len = match u.int_in_range(0u8..=2)? {
                0 => u.int_in_range(0..=s.inline.len())?,
                1 => *u.choose(&[1024 - 28, 1025, 4096 - 28, 4096 - 27, 4097, 8192])?,
                _ => s.inline.len() + 4 * u.int_in_range(1..=64)?,
            };
            let fill = u.arbitrary()?;
            s.inline.resize(len.min(MAX_INLINE), fill);
            true
        }
        Mutation::InlineRpcWord => {
            // RFC 5531 call header words: xid, mtype, rpcvers, prog, vers, proc.
            let word = u.int_in_range(1usize..=5)?;
            let value = match word {
                1 => *u.choose(&[0, 1, 2])?,
                2 => *u.choose(&[1, 2, 3])?,
                3 => *u.choose(&[100_003, 100_005, 100_227, 100_021, 0])?,
                4 => *u.choose(&[2, 3, 4, 0])?,
                _ => u.int_in_range(0..=25)?,
            };
            match s.inline.get_mut(word * 4..word * 4 + 4) {
                Some(slot) => {
                    slot.copy_from_slice(&u32::to_be_bytes(value));
                    true
                }
                None => false,
            }
        }
        Mutation::Truncate | Mutation::PrivateData | Mutation::Words => true,
    };
    Ok(done.then_some(which))
}

/// Replace one list of `s` with `other`'s, its regions appended (when they fit).
fn splice(
    u: &mut Unstructured<'_>,
    s: &mut Skeleton,
    regions: &mut Vec<Region>,
    other: &Case,
) -> arbitrary::Result<bool> {
    let Some(donor) = Skeleton::parse(other) else {
        return Ok(false);
    };
    if regions.len() + other.regions.len() > MAX_REGIONS
        || other.regions.iter().any(|r| r.length > MAX_REGION_BYTES)
    {
        return Ok(false);
    }
    let base = regions.len();
    let shift = |seg: &Seg| Seg {
        region: seg.region.map(|r| r + base),
        handle: seg
            .region
            .map_or(seg.handle, |r| PLACEHOLDER_HANDLE + (r + base) as u32),
        ..*seg
    };
    match u.int_in_range(0u8..=2)? {
        0 => {
            s.reads = donor
                .reads
                .iter()
                .map(|(p, seg)| (*p, shift(seg)))
                .collect()
        }
        1 => {
            s.writes = donor
                .writes
                .iter()
                .map(|c| Chunk {
                    segcount: c.segcount,
                    segs: c.segs.iter().map(shift).collect(),
                })
                .collect()
        }
        _ => {
            s.reply = donor.reply.as_ref().map(|c| Chunk {
                segcount: c.segcount,
                segs: c.segs.iter().map(shift).collect(),
            })
        }
    }
    regions.extend(other.regions.iter().cloned());
    Ok(true)
}

/// Word-level mutation of bytes that do not read back as a header.
fn mutate_words(
    u: &mut Unstructured<'_>,
    bytes: &mut Vec<u8>,
    relocations: &mut Vec<Relocation>,
) -> arbitrary::Result<()> {
    match u.int_in_range(0u8..=2)? {
        0 if bytes.len() >= 8 => {
            // Not word 0: the XID answers are matched on.
            let word = 1 + u.choose_index(bytes.len() / 4 - 1)?;
            let value = interesting_u32(u)?;
            bytes[word * 4..word * 4 + 4].copy_from_slice(&value.to_be_bytes());
        }
        1 => {
            let len = u.int_in_range(0..=bytes.len())?;
            cut_at(bytes, relocations, len);
        }
        _ => {
            if bytes.len() + 4 <= MAX_CASE_BYTES {
                bytes.extend_from_slice(&interesting_u32(u)?.to_be_bytes());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{generate, generate_family_case, Family};
    use crate::rng::case_entropy;

    #[test]
    fn generated_cases_read_back_and_emit_the_same_bytes() {
        let mut parsed = 0;
        for index in 0..600 {
            let case = generate(3, index);
            if let Some(skeleton) = Skeleton::parse(&case) {
                parsed += 1;
                let (bytes, relocations) = skeleton.emit();
                assert_eq!(bytes, case.bytes, "case {index} ({})", case.family);
                assert_eq!(
                    relocations, case.relocations,
                    "case {index} ({})",
                    case.family
                );
            }
        }
        // Only the truncations and huge segment counts with missing segments do not read back.
        assert!(parsed > 450, "{parsed} of 600 read back");
        let write = generate_family_case(Family::Valid, 1, 0);
        assert!(Skeleton::parse(&write).is_some());
    }

    #[test]
    fn mutants_are_valid_deterministic_case_files() {
        let cases: Vec<Case> = (0..40).map(|i| generate(5, i)).collect();
        let mut mutations = std::collections::BTreeSet::new();
        let mut changed = 0;
        for index in 0..1500u64 {
            let parent = &cases[index as usize % cases.len()];
            let other = &cases[(index as usize * 7 + 3) % cases.len()];
            let entropy = case_entropy(99, index);
            let (mutant, applied) =
                mutate(&mut Unstructured::new(&entropy), parent, other, 5, index);
            let (again, _) = mutate(&mut Unstructured::new(&entropy), parent, other, 5, index);
            assert_eq!(mutant, again, "a mutant is a function of its inputs");
            mutant.validate().unwrap();
            assert_eq!(mutant.family, MUTANT_FAMILY);
            assert_eq!(mutant.xid, MUTANT_XID_BASE | index as u32);
            if mutant.bytes.len() >= 4 {
                assert_eq!(mutant.bytes[..4], mutant.xid.to_be_bytes());
            }
            // The file round-trips (replayable).
            assert_eq!(Case::from_json(&mutant.to_json()).unwrap(), mutant);
            changed += usize::from(
                mutant.bytes[4.min(mutant.bytes.len())..]
                    != parent.bytes[4.min(parent.bytes.len())..],
            );
            mutations.extend(applied);
        }
        assert!(
            changed > 1200,
            "{changed} of 1500 mutants differ from their parent"
        );
        assert!(mutations.len() >= 17, "{mutations:?}");
    }

    #[test]
    fn mutation_survives_garbage_parents() {
        let mut case = generate(1, 0);
        for len in [0usize, 3, 7, 16, 17, 40] {
            case.bytes = (0..len as u8).collect();
            case.relocations.clear();
            for index in 0..50 {
                let entropy = case_entropy(len as u64, index);
                let (mutant, _) = mutate(&mut Unstructured::new(&entropy), &case, &case, 1, index);
                mutant.validate().unwrap();
            }
        }
        // Entropy that runs dry still gives a case.
        let (mutant, _) = mutate(&mut Unstructured::new(&[]), &generate(1, 2), &case, 1, 9);
        mutant.validate().unwrap();
    }
}
