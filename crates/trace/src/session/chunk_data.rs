//! The bytes of a chunk's segments gathered from the RDMA data the capture holds, within the
//! session's budget, or the coverage checked without copying.

use super::*;

impl Builder<'_> {
    /// Collect the bytes of `segments` (in order) from RDMA operations on the same connection
    /// that target the same handle: READs after `index` for a Call (each byte from the first
    /// READ that pulled it), WRITEs before it for a Reply (each byte from the last WRITE that
    /// wrote it). Bounded three ways: the segments' total against
    /// [`reinsert::MAX_REBUILT_MESSAGE`] before anything is allocated, at most
    /// [`MAX_SEGMENT_CANDIDATES`] operations per segment, and the trace-wide [`GatherBudget`].
    pub(super) fn gather(
        &self,
        conn: usize,
        segments: &[Segment],
        index: usize,
        look: Look,
        collect: Collect,
    ) -> Result<Gathered, String> {
        let copy = matches!(collect, Collect::Bytes);
        let total = self.admit(segments, copy)?;
        let mut out = if copy {
            vec![0; total as usize]
        } else {
            Vec::new()
        };
        self.fill(conn, segments, index, look, copy.then_some(&mut out[..]))?;
        Ok(Gathered {
            bytes: out,
            len: total,
        })
    }

    /// The segments' total length, checked against [`reinsert::MAX_REBUILT_MESSAGE`] and, when
    /// their bytes are to be copied, taken from the trace's [`GatherBudget`].
    pub(super) fn admit(&self, segments: &[Segment], copy: bool) -> Result<u64, String> {
        let total = wire::rpcrdma::total_length(segments);
        if total > reinsert::MAX_REBUILT_MESSAGE as u64 {
            return Err(format!("chunk of {total} bytes exceeds the rebuild limit"));
        }
        if copy {
            self.budget.bytes(total)?;
        }
        Ok(total)
    }

    /// The gathering of [`Builder::gather`] after [`Builder::admit`]: each segment's bytes
    /// copied into `out` (the segments' total length, in order) when given, else only their
    /// coverage checked.
    pub(super) fn fill(
        &self,
        conn: usize,
        segments: &[Segment],
        index: usize,
        look: Look,
        mut out: Option<&mut [u8]>,
    ) -> Result<(), String> {
        let mut start_at = 0usize;
        for seg in segments {
            let want = seg.length as usize;
            let mut filled = Filled::default();
            let index_of = match look {
                Look::After => &self.index.reads,
                Look::Before => &self.index.writes,
            };
            let candidates = index_of
                .get(&(conn, seg.handle))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            // Ascending delivery indices: READs after the Call oldest first, WRITEs before the
            // Reply newest first.
            let split = candidates.partition_point(|&(i, _)| match look {
                Look::After => i <= index,
                Look::Before => i < index,
            });
            let ordered: Box<dyn Iterator<Item = &(usize, usize)>> = match look {
                Look::After => Box::new(candidates[split..].iter()),
                Look::Before => Box::new(candidates[..split].iter().rev()),
            };
            for &(_, slot) in ordered.take(MAX_SEGMENT_CANDIDATES) {
                if filled.total >= want {
                    break;
                }
                self.budget.visit()?;
                let Some(Moved { reth, data }) = self.moved.get(slot) else {
                    continue;
                };
                // Overlap of [reth.va, +len) with [seg.offset, +seg.length).
                let start = reth.va.max(seg.offset);
                let end = reth
                    .va
                    .saturating_add(data.len() as u64)
                    .min(seg.offset.saturating_add(u64::from(seg.length)));
                if start >= end {
                    continue;
                }
                let (dst_start, dst_end) =
                    ((start - seg.offset) as usize, (end - seg.offset) as usize);
                let src_base = (start - reth.va) as usize;
                let mut resolved = true;
                filled.fill(dst_start, dst_end, |a, b| {
                    if let Some(out) = out.as_deref_mut() {
                        let from = src_base + (a - dst_start);
                        resolved &=
                            data.copy_to(self.capture, from, &mut out[start_at + a..start_at + b]);
                    }
                });
                if !resolved {
                    // Only when the trace is built from other bytes than it was reassembled from.
                    return Err(format!(
                        "chunk segment handle {:#x} offset {:#x}: data not in the capture bytes",
                        seg.handle, seg.offset
                    ));
                }
            }
            if filled.total != want {
                return Err(format!(
                    "chunk segment handle {:#x} offset {:#x}: {} of {} bytes captured",
                    seg.handle, seg.offset, filled.total, seg.length
                ));
            }
            start_at += want;
        }
        Ok(())
    }
}
