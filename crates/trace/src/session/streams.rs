//! A call's or reply's unreduced RPC stream rebuilt from the inline bytes and the chunks the capture
//! carried (RFC 8166 §3.4: Read chunks at their positions, Write and Reply chunks as written).

use super::*;

impl Builder<'_> {
    /// The Call's RPC message: inline stream with Read chunks reinserted, or the Position-Zero
    /// Read chunk for RDMA_NOMSG. RDMA READs that pulled the chunks come after the Call. `send`
    /// is the RDMA_MSG's own decode ([`wire::message::Placement::Chunks`]), served again where
    /// the stream is the inline one as it stands or its chunks are exactly moved arguments.
    pub(super) fn call_stream(
        &self,
        index: usize,
        conn: usize,
        inline: &[u8],
        reads: &[wire::rpcrdma::ReadSegment],
        nomsg: bool,
        send: Option<&SendDecode>,
    ) -> Option<Result<RpcStream, String>> {
        if reads.is_empty() {
            if nomsg {
                return Some(Err(
                    "RDMA_NOMSG Call without a Read chunk (RFC 8166 §3.5.3)".into(),
                ));
            }
            if send.is_some() {
                return Some(Ok(RpcStream::send(View::AsDecoded, Vec::new(), 0)));
            }
            return Some(Ok(RpcStream::inline(inline)));
        }
        // The whole message is budgeted before anything is gathered: Read chunks may name the
        // same RDMA READ many times over, and each would otherwise be copied out in full.
        let declared = wire::rpcrdma::read_list_length(reads);
        let over = (declared > reinsert::MAX_REBUILT_MESSAGE as u64).then(|| {
            format!(
                "Read chunks of {declared} bytes exceed the {} byte rebuild limit \
                 (reinsert::MAX_REBUILT_MESSAGE); not gathered",
                reinsert::MAX_REBUILT_MESSAGE
            )
        });
        let lists = wire::rpcrdma::ChunkLists {
            reads: reads.to_vec(),
            ..Default::default()
        };
        let (call_chunk, chunks) = wire::ddp::take_call_chunk(lists.read_chunks());
        if let Some(e) = over {
            if !nomsg && call_chunk.is_none() {
                return Some(Ok(RpcStream::reduced(inline, 0, e)));
            }
            return Some(Err(e));
        }
        if !nomsg && call_chunk.is_none() {
            let moved = send
                .and_then(|d| d.as_ref().ok())
                .is_some_and(|d| d.reads_are_moved_arguments(reads));
            if let Some(stream) = self.call_stream_in_place(index, conn, inline, &chunks, moved) {
                return Some(stream);
            }
        }
        let mut chunk_bytes = 0u64;
        // Gathered in position order: the Call chunk (which carries the whole call) first.
        let call = match &call_chunk {
            Some(call_chunk) => {
                let gathered = self.gather(
                    conn,
                    &call_chunk.segments,
                    index,
                    Look::After,
                    Collect::Bytes,
                );
                match gathered {
                    Ok(Gathered { bytes, len }) => {
                        chunk_bytes += len;
                        Some(bytes)
                    }
                    Err(e) => return Some(Err(e)),
                }
            }
            None => None,
        };
        let mut others = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            match self.gather(conn, &chunk.segments, index, Look::After, Collect::Bytes) {
                Ok(Gathered { bytes, len }) => {
                    chunk_bytes += len;
                    others.push((chunk.position, bytes));
                }
                // Data not captured: decode the reduced stream instead (length words only).
                Err(e) if !nomsg => {
                    return Some(Ok(RpcStream::reduced(inline, chunk_bytes, e)));
                }
                Err(e) => return Some(Err(e)),
            }
        }
        let base = match call {
            Some(data) => data,
            None if nomsg => {
                return Some(Err(
                    "RDMA_NOMSG Call without a Position-Zero Read chunk (RFC 8166 §3.5.3)".into(),
                ))
            }
            None => inline.to_vec(),
        };
        Some(
            reinsert::reinsert_read_chunks(&base, &others).map(|bytes| RpcStream {
                bytes,
                reduced: false,
                writes: Vec::new(),
                chunk_bytes,
                note: None,
                send: None,
            }),
        )
    }

    /// [`Builder::call_stream`] for Read chunks none of which is at position zero, when they can
    /// be reinserted: each chunk's data is gathered straight to its place in the rebuilt message
    /// (one copy, not a gather then a reinsertion). The same checks, in the same order, with the
    /// same budget spent, so the same stream or error. `None` when the positions do not fit the
    /// inline stream: [`Builder::call_stream`] then gathers first and reports as before.
    /// `moved`: the chunks are exactly the call's moved DDP-eligible arguments
    /// ([`wire::message::DecodedRpc::reads_are_moved_arguments`]).
    pub(super) fn call_stream_in_place(
        &self,
        index: usize,
        conn: usize,
        inline: &[u8],
        chunks: &[wire::rpcrdma::ReadChunk],
        moved: bool,
    ) -> Option<Result<RpcStream, String>> {
        // Each chunk is within reinsert::MAX_REBUILT_MESSAGE here (the caller checked the sum).
        let lengths: Vec<(u32, usize)> = chunks
            .iter()
            .map(|c| (c.position, c.length() as usize))
            .collect();
        let layout = reinsert::Reinsertion::plan(inline.len(), &lengths).ok()?;
        if moved {
            return Some(self.call_stream_moved(index, conn, inline, chunks));
        }
        let mut bytes = layout.with_inline(inline);
        let mut chunk_bytes = 0u64;
        for ((chunk, &(_, len)), &at) in chunks.iter().zip(&lengths).zip(&layout.chunk_at) {
            let gathered = self.admit(&chunk.segments, true).and_then(|total| {
                self.fill(
                    conn,
                    &chunk.segments,
                    index,
                    Look::After,
                    Some(&mut bytes[at..at + len]),
                )
                .map(|()| total)
            });
            match gathered {
                Ok(total) => chunk_bytes += total,
                // Data not captured: decode the reduced stream instead (length words only).
                Err(e) => return Some(Ok(RpcStream::reduced(inline, chunk_bytes, e))),
            }
        }
        Some(Ok(RpcStream {
            bytes,
            reduced: false,
            writes: Vec::new(),
            chunk_bytes,
            note: None,
            send: None,
        }))
    }

    /// [`Builder::call_stream_in_place`] without reading the chunk data, when the Read chunks
    /// carry exactly the DDP-eligible arguments (NFS WRITE data, say) that the decoder only
    /// counts: their coverage is checked and their budget spent as a gather would, and the Send's
    /// decode shown as the rebuilt message's ([`View::Reinserted`]: the same result, by
    /// [`wire::message::DecodedRpc::reads_are_moved_arguments`]). On a large-I/O capture nearly
    /// every byte is such data, and reading it back from the capture and copying it twice was a
    /// third of `rig trace`'s time.
    pub(super) fn call_stream_moved(
        &self,
        index: usize,
        conn: usize,
        inline: &[u8],
        chunks: &[wire::rpcrdma::ReadChunk],
    ) -> Result<RpcStream, String> {
        let mut chunk_bytes = 0u64;
        for chunk in chunks {
            let covered = self.admit(&chunk.segments, true).and_then(|total| {
                self.fill(conn, &chunk.segments, index, Look::After, None)
                    .map(|()| total)
            });
            match covered {
                Ok(total) => chunk_bytes += total,
                // What the gather would have found, with the same budget spent.
                Err(e) => return Ok(RpcStream::reduced(inline, chunk_bytes, e)),
            }
        }
        Ok(RpcStream::send(View::Reinserted, Vec::new(), chunk_bytes))
    }

    /// The Reply's RPC message: the Reply chunk for RDMA_NOMSG, else the inline stream whose
    /// Write-chunk item is reduced to its length (the RDMA WRITEs came before the Reply). `send`:
    /// the RDMA_MSG's own decode serves for the inline stream.
    pub(super) fn reply_stream(
        &self,
        index: usize,
        conn: usize,
        inline: &[u8],
        writes: &[Vec<Segment>],
        reply: Option<&[Segment]>,
        send: bool,
    ) -> Option<Result<RpcStream, String>> {
        let mut writes_written = Vec::with_capacity(writes.len());
        let mut chunk_bytes = 0u64;
        for chunk in writes {
            // Only the length and the coverage of a Write chunk matter: nothing is copied.
            match self.gather(conn, chunk, index, Look::Before, Collect::Coverage) {
                Ok(Gathered { len, .. }) => {
                    chunk_bytes += len;
                    writes_written.push(len);
                }
                Err(e) => return Some(Err(e)),
            }
        }
        if let Some(reply) = reply {
            return Some(
                self.gather(conn, reply, index, Look::Before, Collect::Bytes)
                    .map(|Gathered { bytes, len }| RpcStream {
                        bytes,
                        reduced: false,
                        writes: writes_written,
                        chunk_bytes: chunk_bytes + len,
                        note: None,
                        send: None,
                    }),
            );
        }
        if send {
            return Some(Ok(RpcStream::send(
                View::AsDecoded,
                writes_written,
                chunk_bytes,
            )));
        }
        Some(Ok(RpcStream {
            bytes: inline.to_vec(),
            reduced: false,
            writes: writes_written,
            chunk_bytes,
            note: None,
            send: None,
        }))
    }
}
