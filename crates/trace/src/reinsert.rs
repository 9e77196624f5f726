//! Reinsertion of captured chunk data: the full RPC message of a Call rebuilt from its inline
//! stream and the Read chunk data the capture holds, for [`wire::message::decode_rpc_message`]
//! to decode.
//!
//! RFC 8166 §3.4.5: a Read chunk's position is its offset in the XDR stream *before* reduction;
//! the Responder reinserts the chunk (rounded up to 4 bytes, §3.4.5.2) there. The rebuilt
//! message is bounded by [`MAX_REBUILT_MESSAGE`]; what is larger is reported, not allocated.

/// Largest message we rebuild from chunks (the rest is reported, not allocated).
pub const MAX_REBUILT_MESSAGE: usize = 16 << 20;

/// Insert Read chunk data into the inline stream at their positions (RFC 8166 §3.4.5). `chunks`
/// are `(position, data)` sorted by position, none at position zero. Placed and padded by
/// [`wire::ddp::splice`], within [`MAX_REBUILT_MESSAGE`].
pub fn reinsert_read_chunks(inline: &[u8], chunks: &[(u32, Vec<u8>)]) -> Result<Vec<u8>, String> {
    rebuilt_len(inline.len(), chunks.iter().map(|(_, data)| data.len()))?;
    wire::ddp::splice(inline, chunks).map_err(position_error)
}

/// The length of the message rebuilt from an inline stream of `inline_len` bytes and chunks of
/// `lengths` bytes (each with its XDR round-up), or why it is not rebuilt.
fn rebuilt_len(inline_len: usize, lengths: impl Iterator<Item = usize>) -> Result<usize, String> {
    let total = lengths
        .map(wire::xdr::pad4)
        .sum::<usize>()
        .saturating_add(inline_len);
    if total > MAX_REBUILT_MESSAGE {
        return Err(format!("rebuilt message of {total} bytes exceeds limit"));
    }
    Ok(total)
}

/// The trace's words for a Read chunk [`wire::ddp::place`] could not place.
fn position_error(e: wire::ddp::PositionError) -> String {
    match e {
        wire::ddp::PositionError::Overlap { position, .. } => {
            format!("Read chunk position {position} overlaps an earlier chunk")
        }
        wire::ddp::PositionError::PastStream { position, .. } => {
            format!("Read chunk position {position} is beyond the inline stream (RFC 8166 §3.4.5)")
        }
        other => other.to_string(),
    }
}

/// Where [`reinsert_read_chunks`] puts each piece of the rebuilt message, from the lengths alone:
/// the chunk data can then be copied straight to its place. The layout is
/// [`wire::ddp::Layout`]'s, the one [`wire::ddp::splice`] fills (its `total` and `chunk_at`
/// read through).
#[derive(Debug)]
pub struct Reinsertion(wire::ddp::Layout);

impl std::ops::Deref for Reinsertion {
    type Target = wire::ddp::Layout;

    fn deref(&self) -> &wire::ddp::Layout {
        &self.0
    }
}

impl Reinsertion {
    /// The layout for Read chunks of `(position, length)` into an inline stream of
    /// `inline_len` bytes, or why they cannot be reinserted: [`wire::ddp::Layout::place`],
    /// within [`MAX_REBUILT_MESSAGE`].
    pub fn plan(inline_len: usize, chunks: &[(u32, usize)]) -> Result<Self, String> {
        rebuilt_len(inline_len, chunks.iter().map(|&(_, len)| len))?;
        let extents: Vec<wire::ddp::Extent> = chunks
            .iter()
            .map(|&(position, len)| wire::ddp::Extent {
                position,
                length: len as u64,
            })
            .collect();
        wire::ddp::Layout::place(inline_len, &extents)
            .map(Reinsertion)
            .map_err(position_error)
    }

    /// The rebuilt message with the inline stream in place and zeros where the chunks go.
    pub fn with_inline(&self, inline: &[u8]) -> Vec<u8> {
        self.0.with_base(inline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_chunks_are_reinserted_with_round_up() {
        let inline = b"AAAABBBB";
        let out = reinsert_read_chunks(inline, &[(4, b"xyz".to_vec())]).unwrap();
        assert_eq!(out, b"AAAAxyz\0BBBB");
        let two =
            reinsert_read_chunks(inline, &[(4, b"12".to_vec()), (12, b"3456".to_vec())]).unwrap();
        assert_eq!(two, b"AAAA12\0\0BBBB3456");
    }

    #[test]
    fn the_layout_places_chunks_where_reinsertion_puts_them() {
        let layout = Reinsertion::plan(8, &[(4, 2), (12, 4)]).unwrap();
        assert_eq!((layout.total, layout.chunk_at.clone()), (16, vec![4, 12]));
        let mut out = layout.with_inline(b"AAAABBBB");
        assert_eq!(out, b"AAAA\0\0\0\0BBBB\0\0\0\0");
        out[4..6].copy_from_slice(b"12");
        out[12..16].copy_from_slice(b"3456");
        let rebuilt =
            reinsert_read_chunks(b"AAAABBBB", &[(4, b"12".to_vec()), (12, b"3456".to_vec())]);
        assert_eq!(rebuilt.unwrap(), out);
        assert!(Reinsertion::plan(4, &[(8, 1)]).is_err());
        assert!(Reinsertion::plan(4, &[(0, MAX_REBUILT_MESSAGE)]).is_err());
    }

    #[test]
    fn bad_positions_are_errors_not_panics() {
        assert!(reinsert_read_chunks(b"AAAA", &[(8, b"x".to_vec())]).is_err());
        assert!(
            reinsert_read_chunks(b"AAAA", &[(4, b"xxxx".to_vec()), (2, b"y".to_vec())]).is_err()
        );
        // A chunk starting inside the previous one's data is an overlap (wire::ddp::place),
        // also where its position, less the chunks before it, still falls in the inline stream.
        let inside = reinsert_read_chunks(b"AAAAAAAA", &[(4, vec![1; 8]), (8, b"y".to_vec())]);
        assert_eq!(
            inside.unwrap_err(),
            "Read chunk position 8 overlaps an earlier chunk"
        );
        assert_eq!(
            reinsert_read_chunks(b"AAAA", &[(8, b"x".to_vec())]).unwrap_err(),
            "Read chunk position 8 is beyond the inline stream (RFC 8166 §3.4.5)"
        );
    }
}
