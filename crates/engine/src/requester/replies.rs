//! A reply's way in: matched to its transmission by the transport XID, credits taken from it, the
//! Write and Reply chunks read back and invalidated; a lost connection abandons what it carried.

use super::*;

impl<M: Registrar> Requester<M> {
    pub(super) fn on_receive(&mut self, payload: Vec<u8>) {
        self.receives_posted = self.receives_posted.saturating_sub(1);
        self.max_receive_bytes_seen = self.max_receive_bytes_seen.max(payload.len());
        if self.connected && self.auto_post_receives {
            self.post_receives();
        }
        let (header, consumed) = match Header::decode_prefix(&payload) {
            Ok(h) => h,
            Err(e) => {
                self.trace
                    .push(RequesterEvent::BadHeader { rule: e.rule() });
                self.outputs.push_back(RequesterOutput::BadHeader(e));
                return;
            }
        };
        let inline = &payload[consumed..];
        // RFC 8166 §3.3.1: every reply carries the responder's current grant. A grant of zero
        // would stall the requester forever, so treat it as one.
        self.credits_granted = header.credits.max(1);
        // Match the transmission: by a chunk handle it owns when the reply names one, else the
        // oldest outstanding transmission with that XID.
        let by_handle = header.chunks().and_then(|c| {
            c.reply
                .iter()
                .chain(c.writes.iter())
                .flatten()
                .find_map(|seg| {
                    self.outstanding
                        .iter()
                        .position(|t| t.xid == header.xid && t.owns(seg.handle))
                })
        });
        let index = by_handle.or_else(|| self.outstanding.iter().position(|t| t.xid == header.xid));
        let Some(index) = index else {
            self.trace.push(RequesterEvent::Unmatched {
                header: header.clone(),
            });
            self.outputs
                .push_back(RequesterOutput::UnmatchedReply { xid: header.xid });
            return;
        };
        let transmission = self.outstanding.remove(index);
        match &header.body {
            Body::Error(error) => {
                self.trace.push(RequesterEvent::TransportError {
                    header: header.clone(),
                });
                self.release(&transmission);
                self.outputs.push_back(RequesterOutput::TransportError {
                    xid: header.xid,
                    transmission: transmission.id,
                    error: error.clone(),
                });
            }
            Body::Msg(chunks) | Body::Nomsg(chunks) => {
                let written = |handle: Option<u32>, list: Option<&Vec<Segment>>| {
                    (handle, list.map_or(0, |segs| total_length(segs)))
                };
                let (write_handle, write_len) =
                    written(transmission.write_chunk, chunks.writes.first());
                let (reply_handle, reply_len) =
                    written(transmission.reply_chunk, chunks.reply.as_ref());
                let mut write_data = None;
                if let Some(handle) = write_handle {
                    let mut bytes = self.memory.invalidate(handle).unwrap_or_default();
                    if !chunks.writes.is_empty() {
                        // The responder reports how much it wrote; never trust it past our buffer.
                        bytes.truncate(write_len as usize);
                        write_data = Some(bytes);
                    }
                }
                let (message, path) = if matches!(header.body, Body::Nomsg(_)) {
                    let mut bytes = reply_handle
                        .and_then(|h| self.memory.invalidate(h))
                        .unwrap_or_default();
                    bytes.truncate(reply_len as usize);
                    (bytes, ReplyPath::ReplyChunk)
                } else {
                    if let Some(h) = reply_handle {
                        self.memory.invalidate(h);
                    }
                    (inline.to_vec(), ReplyPath::Inline)
                };
                for handle in &transmission.read_handles {
                    self.memory.invalidate(*handle);
                }
                self.trace.push(RequesterEvent::Reply {
                    header: header.clone(),
                    rpc: RpcSummary::of(&message),
                });
                self.outputs
                    .push_back(RequesterOutput::Reply(ReceivedReply {
                        xid: header.xid,
                        transmission: transmission.id,
                        message,
                        write_chunk_data: write_data,
                        path,
                    }));
            }
            Body::Msgp { .. } | Body::Done => {
                // Not a reply a responder sends; the transmission stays unanswered.
                self.trace.push(RequesterEvent::Ignored {
                    header: header.clone(),
                });
                self.outstanding.insert(index, transmission);
            }
        }
    }

    pub(super) fn on_connection_lost(&mut self) {
        if !self.connected {
            return;
        }
        self.connected = false;
        self.receives_posted = 0;
        let abandoned: Vec<Transmission> = std::mem::take(&mut self.outstanding);
        for t in &abandoned {
            self.release(t);
        }
        self.trace.push(RequesterEvent::Disconnected);
        self.outputs.push_back(RequesterOutput::Disconnected {
            abandoned: abandoned.iter().map(|t| (t.xid, t.id)).collect(),
        });
    }
}
