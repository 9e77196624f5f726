//! One Send's three layers decoded: the transport header, then the RPC and upper-layer message with
//! the chunk data reinserted where the capture holds it.

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
        let result = match &header.body {
            Body::Msg(chunks) | Body::Msgp { chunks, .. } => {
                if is_call {
                    self.call_stream(index, conn, inline, &chunks.reads, false)
                } else {
                    self.reply_stream(index, conn, inline, &chunks.writes, None)
                }
            }
            Body::Nomsg(chunks) => {
                if is_call {
                    self.call_stream(index, conn, inline, &chunks.reads, true)
                } else {
                    self.reply_stream(index, conn, inline, &chunks.writes, chunks.reply.as_deref())
                }
            }
            Body::Done | Body::Error(_) => None,
        };
        // The shared one-Send decoder (wire::message) must accept the payload as captured too:
        // it checks the reduced-stream rules (Read chunk position = the DDP-eligible item's XDR
        // position, RFC 8166 §3.4.5 / RFC 8267 §3) that our rebuild from chunk data does not.
        let hint = if is_call {
            None
        } else {
            self.calls
                .get(&(conn, header.xid))
                .and_then(|c| c.key)
                .map(|k| wire::message::CallProc::new(k.prog, k.vers, k.proc_))
        };
        let shared = wire::message::decode_message_with(payload, hint).err();
        if let Some(stream) = result {
            match stream {
                Ok(mut stream) => {
                    m.chunk_bytes = stream.chunk_bytes;
                    self.decode_upper(&mut m, at, conn, header.xid, is_call, &mut stream);
                }
                Err(e) => m.error = Some(e),
            }
        }
        if let (None, Some(e)) = (&m.error, shared) {
            m.error = Some(format!("wire::message: {e}"));
        }
        m.header = Some(header);
        m
    }

    pub(super) fn decode_upper(
        &mut self,
        m: &mut Message,
        at: At,
        conn: usize,
        xid: u32,
        is_call: bool,
        stream: &mut RpcStream,
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
        let decoded = match stream.decoded.take() {
            Some(decoded) => decoded,
            None => upper::decode_rpc(
                &stream.bytes,
                call.as_ref().and_then(|c| c.key),
                stream.reduced,
                &stream.writes,
            ),
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
                    (Some(prog), Some(vers), Some(proc_)) => Some(CallKey { prog, vers, proc_ }),
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
        m.note = stream.note.clone().or(decoded.note);
    }
}
