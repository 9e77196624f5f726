//! nfsd's request processing in the reference server: a call parsed, looked up in the DRC
//! (replayed, dropped while in progress, or executed), executed on the file system, and its reply
//! recorded and posted.

use super::*;

impl Server {
    /// The call's procedure and arguments, after the RPC header the responder decoded.
    pub(super) fn parse(message: &[u8], rpc: Option<RpcCall>) -> Result<Parsed, ParseError> {
        let Some(RpcCall {
            header,
            args_offset,
        }) = rpc
        else {
            return Err(ParseError::NotACall);
        };
        let mut args = Reader::new(message.get(args_offset..).unwrap_or_default());
        let program = match header.prog {
            NFS_PROGRAM => {
                if header.vers != NFS_V3 {
                    return Err(ParseError::Refused(
                        header,
                        AcceptStat::ProgMismatch {
                            low: NFS_V3,
                            high: NFS_V3,
                        },
                    ));
                }
                let Some(proc_) = Nfs3Proc::from_u32(header.proc_) else {
                    return Err(ParseError::Refused(header, AcceptStat::ProcUnavail));
                };
                // The Read chunk was spliced back in, so DDP data is inline here.
                match Nfs3Call::decode(proc_, &mut args) {
                    Ok(call) => Program::Nfs(call),
                    Err(_) => return Err(ParseError::Refused(header, AcceptStat::GarbageArgs)),
                }
            }
            MOUNT_PROGRAM => {
                if header.vers != MOUNT_V3 {
                    return Err(ParseError::Refused(
                        header,
                        AcceptStat::ProgMismatch {
                            low: MOUNT_V3,
                            high: MOUNT_V3,
                        },
                    ));
                }
                let Some(proc_) = Mount3Proc::from_u32(header.proc_) else {
                    return Err(ParseError::Refused(header, AcceptStat::ProcUnavail));
                };
                match Mount3Call::decode(proc_, &mut args) {
                    Ok(call) => Program::Mount(call),
                    Err(_) => return Err(ParseError::Refused(header, AcceptStat::GarbageArgs)),
                }
            }
            _ => return Err(ParseError::Refused(header, AcceptStat::ProgUnavail)),
        };
        Ok(Parsed {
            header,
            args_offset,
            procedure: program.procedure(),
            program,
        })
    }

    /// A successful reply: the RPC header, then `results` (a DRC replay).
    pub(super) fn replay(xid: u32, results: &[u8]) -> Vec<u8> {
        let mut w = Writer::with_capacity(SUCCESS_HEADER_LEN + results.len());
        ReplyHeader::success(xid).encode(&mut w);
        w.raw(results);
        w.into_bytes()
    }

    pub(super) fn post(
        &mut self,
        token: engine::CallToken,
        reply: OutgoingReply,
        entry: Option<EntryId>,
    ) {
        // A reply answered by RDMA_ERROR or lost with its connection has no position.
        if let (Ok(Some(position)), Some(entry)) = (self.responder.reply(token, reply), entry) {
            self.drc
                .reply_posted(entry, self.responder.connection(), position);
        }
    }

    pub(super) fn dispatch(&mut self, mut call: IncomingCall) {
        let parsed = match Server::parse(&call.message, call.rpc.take()) {
            Ok(parsed) => parsed,
            Err(ParseError::NotACall) => {
                // Not even an RPC call header: svc drops it.
                self.drc.discarded(call.connection, call.recv_seq);
                self.note(ServerEvent::Undecodable { xid: call.xid });
                self.responder.drop_call(call.token);
                return;
            }
            Err(ParseError::Refused(header, stat)) => {
                self.drc.discarded(call.connection, call.recv_seq);
                self.note(ServerEvent::Refused {
                    xid: call.xid,
                    stat,
                });
                let message = ReplyHeader::accepted(header.xid, stat).to_bytes();
                self.post(call.token, OutgoingReply { message, ddp: None }, None);
                return;
            }
        };
        let Program::Nfs(nfs_call) = &parsed.program else {
            // MOUNT is served by mountd, outside nfsd's DRC.
            self.drc.discarded(call.connection, call.recv_seq);
            self.queue.push_back(Job::Execute {
                call,
                parsed: Box::new(parsed),
                entry: None,
            });
            return;
        };
        // nfsd checksums the arguments, which start right after the RPC header.
        let args_start = parsed.args_offset.min(call.message.len());
        let request = DrcRequest {
            connection: call.connection,
            recv_seq: call.recv_seq,
            client_addr: self.client_addr,
            xid: parsed.header.xid,
            prog: parsed.header.prog,
            vers: parsed.header.vers,
            proc_: parsed.header.proc_,
            len: call.message.len(),
            checksum: checksum(&call.message[args_start..]),
            cacheable: !nfs_call.proc_().is_idempotent(),
        };
        let decision = self.drc.lookup(&request);
        self.note(ServerEvent::Decision {
            policy: self.drc.name(),
            xid: parsed.header.xid,
            procedure: parsed.procedure,
            decision: decision.name(),
        });
        self.records.decision(DrcEvent {
            xid: parsed.header.xid,
            procedure: parsed.procedure,
            decision: decision.name(),
        });
        match decision {
            Decision::Execute { entry } => self.queue.push_back(Job::Execute {
                call,
                parsed: Box::new(parsed),
                entry,
            }),
            Decision::Drop => self.responder.drop_call(call.token),
            Decision::Park { entry } => self.parked.entry(entry).or_default().push(ParkedCall {
                token: call.token,
                xid: parsed.header.xid,
            }),
            Decision::Replay { entry, results } => {
                let message = Server::replay(parsed.header.xid, &results);
                self.post(
                    call.token,
                    OutgoingReply { message, ddp: None },
                    Some(entry),
                );
            }
        }
    }

    pub(super) fn execute(&mut self, call: IncomingCall, parsed: Parsed, entry: Option<EntryId>) {
        let xid = parsed.header.xid;
        let header = ReplyHeader::success(xid);
        let (message, ddp, status) = match &parsed.program {
            Program::Nfs(nfs_call) => {
                let reply = self.fs.nfs(nfs_call);
                // RFC 8267 §4: the DDP-eligible result (READ data, the READLINK path) may go
                // to a Write chunk; each is the last item of its results.
                let ddp_len = match reply.ddp_data() {
                    Some(DdpData::Inline(d)) => Some(d.len()),
                    _ => None,
                };
                let mut w = Writer::with_capacity(
                    SUCCESS_HEADER_LEN + RESULTS_ROOM + ddp_len.map_or(0, pad4),
                );
                header.encode(&mut w);
                reply.encode(&mut w);
                let ddp = ddp_len.map(|n| {
                    let start = w.len() - pad4(n);
                    start..start + n
                });
                (w.into_bytes(), ddp, Status::Nfs3(reply.status()))
            }
            Program::Mount(mount_call) => {
                let mut w = Writer::with_capacity(SUCCESS_HEADER_LEN + RESULTS_ROOM);
                header.encode(&mut w);
                let reply = self.fs.mount(mount_call);
                reply.encode(&mut w);
                (w.into_bytes(), None, Status::Mount3(reply.status()))
            }
        };
        self.records.execution(Execution {
            xid,
            procedure: parsed.procedure,
            status,
            connection: call.connection,
        });
        self.note(ServerEvent::Executed {
            xid,
            procedure: parsed.procedure,
            status,
        });
        let Some(entry) = entry else {
            self.post(call.token, OutgoingReply { message, ddp }, None);
            return;
        };
        // The DRC keeps the results (what follows the RPC header) to replay them.
        let results_at = SUCCESS_HEADER_LEN.min(message.len());
        self.drc.complete(entry, &message[results_at..]);
        let parked = self.parked.remove(&entry).unwrap_or_default();
        let results = if parked.is_empty() {
            Vec::new()
        } else {
            message[results_at..].to_vec()
        };
        self.post(call.token, OutgoingReply { message, ddp }, Some(entry));
        for parked in parked {
            self.note(ServerEvent::ParkedAnswered {
                policy: self.drc.name(),
                xid: parked.xid,
            });
            let message = Server::replay(parked.xid, &results);
            self.post(
                parked.token,
                OutgoingReply { message, ddp: None },
                Some(entry),
            );
        }
    }
}
