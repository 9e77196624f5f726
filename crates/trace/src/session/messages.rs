//! One Send's three layers decoded: the transport header, then the RPC and upper-layer message
//! ([`wire::message::decode_rpc_message`]): the RDMA_MSG's inline stream reduced as its chunk
//! lists say, decoded once, and, where the capture holds the chunk data, the message rebuilt
//! with it.

use super::*;

impl Builder<'_> {
    pub(super) fn decode_message(
        &mut self,
        index: usize,
        at: At,
        conn: usize,
        dir: Option<Role>,
        payload: &[u8],
        mut m: Message,
    ) -> Message {
        let (header, used) = match Header::decode_prefix(payload) {
            Ok(ok) => ok,
            Err(e) => {
                // Show what the header's own words say, as far as they go.
                let words = FixedWords::peek(payload);
                m.xid = words.xid;
                m.vers = words.vers;
                m.credits = words.credits;
                m.proc_ = words.proc_.and_then(Proc::from_u32).map(Proc::name);
                m.error = Some(format!("rpcrdma: {e}"));
                return m;
            }
        };
        m.xid = Some(header.xid);
        m.vers = Some(header.vers);
        m.credits = Some(header.credits);
        m.proc_ = Some(header.proc().name());
        m.inline_len = payload.len() - used;
        let inline = &payload[used..];
        let is_call = dir == Some(Role::Client);
        let hint = if is_call {
            None
        } else {
            self.calls.get(&(conn, header.xid)).and_then(|c| c.key)
        };
        // The RDMA_MSG's RPC message as sent: the inline stream, each DDP-eligible item reduced
        // as the chunk lists say (the reduced-stream rules, e.g. Read chunk position = the
        // item's XDR position, RFC 8166 §3.4.5 / RFC 8267 §4, that a rebuild from chunk data
        // does not meet). It must decode; and where the stream below is this one, it is also
        // the message's decode. The XID is checked below, against the RPC header shown.
        let send = match &header.body {
            Body::Msg(chunks) => Some(wire::message::decode_rpc_message(
                inline,
                hint,
                wire::message::Placement::Chunks(chunks),
            )),
            _ => None,
        };
        let result = match &header.body {
            Body::Msg(chunks) | Body::Msgp { chunks, .. } => {
                if is_call {
                    self.call_stream(index, conn, inline, &chunks.reads, false, send.as_ref())
                } else {
                    let writes = &chunks.writes;
                    self.reply_stream(index, conn, inline, writes, None, send.is_some())
                }
            }
            Body::Nomsg(chunks) => {
                if is_call {
                    self.call_stream(index, conn, inline, &chunks.reads, true, None)
                } else {
                    let reply = chunks.reply.as_deref();
                    self.reply_stream(index, conn, inline, &chunks.writes, reply, false)
                }
            }
            Body::Done | Body::Error(_) => None,
        };
        if let Some(stream) = result {
            match stream {
                Ok(stream) => {
                    m.chunk_bytes = stream.chunk_bytes;
                    let decoded = decode_stream(stream, is_call, hint, send.as_ref());
                    self.decode_upper(&mut m, at, conn, header.xid, is_call, decoded);
                }
                Err(e) => m.error = Some(e),
            }
        }
        if let (None, Some(Err(e))) = (&m.error, &send) {
            m.error = Some(summarise::shared_text(e));
        }
        m.header = Some(header);
        m
    }

    /// The RPC and upper layers `decoded`, into `m`, with the XID check and the Call/Reply
    /// pairing.
    pub(super) fn decode_upper(
        &mut self,
        m: &mut Message,
        at: At,
        conn: usize,
        xid: u32,
        is_call: bool,
        decoded: summarise::Decoded,
    ) {
        let state = &mut self.conns[conn];
        let calls = &mut self.calls;
        // The Call this Reply answers; kept after its first Reply so that a duplicate Reply (a
        // DRC replay) still decodes and is flagged.
        let call = if is_call {
            None
        } else {
            calls.get(&(conn, xid)).cloned()
        };
        if let Some(rpc) = &decoded.rpc {
            if wire::message::check_xid(xid, rpc.xid).is_err() {
                m.error = Some(format!(
                    "RPC xid {:#010x} differs from transport xid {xid:#010x} (RFC 8166 §4.1.1)",
                    rpc.xid
                ));
            }
            if rpc.kind == "call" {
                let key = match (rpc.prog, rpc.vers, rpc.proc_) {
                    (Some(prog), Some(vers), Some(proc_)) => {
                        Some(wire::message::CallProc::new(prog, vers, proc_))
                    }
                    _ => None,
                };
                if let Some(previous) = calls.get_mut(&(conn, xid)) {
                    // Same xid again on a live connection: a retransmission (what xprtrdma never
                    // does and the DRC work needs to see). Latency stays measured from the first.
                    m.repeat_of = Some(previous.last_frame);
                    previous.last_frame = at.frame;
                } else {
                    if state.call_order.len() >= MAX_PENDING_CALLS {
                        if let Some(old) = state.call_order.pop_front() {
                            calls.remove(&(conn, old));
                        }
                    }
                    calls.insert(
                        (conn, xid),
                        CallRecord {
                            key,
                            frame: at.frame,
                            last_frame: at.frame,
                            time: at.time,
                            answered: None,
                        },
                    );
                    state.call_order.push_back(xid);
                }
            }
        }
        if let Some(call) = call {
            m.call_frame = Some(call.frame);
            m.latency = Some(at.time.saturating_sub(call.time));
            if let Some(record) = calls.get_mut(&(conn, xid)) {
                match record.answered {
                    Some(first_reply) => m.repeat_of = Some(first_reply),
                    None => record.answered = Some(at.frame),
                }
            }
        }
        m.rpc = decoded.rpc;
        m.nfs = decoded.nfs;
        if m.error.is_none() {
            m.error = decoded.error;
        }
        m.note = decoded.note;
    }
}

/// The decode of `stream` in the trace's words: the Send's (`send`) where the stream is the
/// Send's inline stream (a Call's reduced stream, its chunk data not captured, is too: its
/// DDP-eligible arguments take the Read chunks as the chunk lists say), else
/// [`wire::message::decode_rpc_message`] of its bytes. For a Reply, `call` is the procedure of
/// the Call it answers. A note on the stream (chunk data not captured) comes before the decode's.
fn decode_stream(
    stream: RpcStream,
    is_call: bool,
    call: Option<wire::message::CallProc>,
    send: Option<&SendDecode>,
) -> summarise::Decoded {
    let view = stream
        .send
        .or_else(|| stream.reduced.then_some(View::AsDecoded));
    let mut decoded = match (view, send) {
        (Some(view), Some(send)) => summarise::summarise(send, call, view),
        _ => {
            let placement = if stream.reduced {
                wire::message::Placement::Moved { writes: &[] }
            } else if is_call {
                wire::message::Placement::Reinserted
            } else {
                wire::message::Placement::Moved {
                    writes: &stream.writes,
                }
            };
            let result = wire::message::decode_rpc_message(&stream.bytes, call, placement);
            summarise::summarise(&result, call, View::AsDecoded)
        }
    };
    decoded.note = stream.note.or(decoded.note);
    decoded
}
