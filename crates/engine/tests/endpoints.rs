//! Requester and responder state machines driven by hand (no simulator): header checks, chunk
//! handling, credits, positions, RFC 8797 negotiation.

use engine::endpoint::{Access, Endpoint, Event, RemoteMemory, WorkRequest};
use engine::{
    CallError, ConnectionConfig, OutgoingCall, OutgoingReply, RejectReason, ReplyPath, Requester,
    RequesterOutput, Responder, ResponderOutput,
};
use wire::private_data::PrivateData;
use wire::raw::RawBuilder;
use wire::rpcrdma::{Body, ErrorBody, Header};
use wire::Xdr;

fn responder() -> Responder {
    let mut r = Responder::new(ConnectionConfig::default());
    r.handle_event(Event::Connected {
        peer_private_data: None,
    });
    r
}

fn drain(ep: &mut impl Endpoint) -> Vec<WorkRequest> {
    std::iter::from_fn(|| ep.poll_work()).collect()
}

fn sends(work: &[WorkRequest]) -> Vec<Header> {
    work.iter()
        .filter_map(|w| match w {
            WorkRequest::PostSend { payload, .. } => {
                Header::decode_prefix(payload).ok().map(|h| h.0)
            }
            _ => None,
        })
        .collect()
}

fn outputs(r: &mut Responder) -> Vec<ResponderOutput> {
    std::iter::from_fn(|| r.poll_output()).collect()
}

#[test]
fn responder_posts_its_grant_of_receives_and_reposts_each() {
    let mut r = responder();
    let work = drain(&mut r);
    let recvs = work
        .iter()
        .filter(|w| matches!(w, WorkRequest::PostRecv { .. }))
        .count();
    assert_eq!(recvs, 8);
    r.handle_event(Event::RecvCompleted {
        wr_id: 1,
        payload: vec![0; 3],
    });
    assert!(drain(&mut r)
        .iter()
        .any(|w| matches!(w, WorkRequest::PostRecv { .. })));
    assert_eq!(r.receives_posted(), 8);
}

#[test]
fn rejects_wrong_version_with_err_vers() {
    let mut r = responder();
    drain(&mut r);
    let payload = RawBuilder::new().fixed(0x55, 2, 8, 0).empty_lists().bytes();
    r.handle_event(Event::RecvCompleted { wr_id: 1, payload });
    let replies = sends(&drain(&mut r));
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0].xid, 0x55);
    assert_eq!(
        replies[0].body,
        Body::Error(ErrorBody::Vers { low: 1, high: 1 })
    );
}

#[test]
fn rejects_malformed_chunk_lists_with_err_chunk_and_stays_up() {
    let mut r = responder();
    drain(&mut r);
    // A Write chunk with zero segments (svcrdma rule 7).
    let payload = RawBuilder::new()
        .fixed(0x56, 1, 8, 0)
        .end_list()
        .discriminator(1)
        .write_chunk(0)
        .end_list()
        .no_reply()
        .bytes();
    r.handle_event(Event::RecvCompleted { wr_id: 1, payload });
    let replies = sends(&drain(&mut r));
    assert_eq!(replies[0].body, Body::Error(ErrorBody::Chunk));
    assert!(r.is_connected());
    // Truncated header: ERR_CHUNK too.
    r.handle_event(Event::RecvCompleted {
        wr_id: 2,
        payload: vec![0, 0, 0, 9, 0, 0, 0, 1],
    });
    let replies = sends(&drain(&mut r));
    assert_eq!(replies[0].xid, 9);
    assert_eq!(replies[0].body, Body::Error(ErrorBody::Chunk));
}

#[test]
fn drops_done_and_error_silently() {
    let mut r = responder();
    drain(&mut r);
    let payload = RawBuilder::new().fixed(0x57, 1, 8, 3).bytes();
    r.handle_event(Event::RecvCompleted { wr_id: 1, payload });
    assert!(sends(&drain(&mut r)).is_empty());
    assert!(outputs(&mut r)
        .iter()
        .any(|o| matches!(o, ResponderOutput::Rejected { .. })));
}

#[test]
fn rejects_nomsg_without_position_zero_chunk() {
    let mut r = responder();
    drain(&mut r);
    let payload = RawBuilder::new().fixed(0x58, 1, 8, 1).empty_lists().bytes();
    r.handle_event(Event::RecvCompleted { wr_id: 1, payload });
    assert_eq!(sends(&drain(&mut r))[0].body, Body::Error(ErrorBody::Chunk));
}

/// Drive a requester and a responder against each other by hand, serving RDMA from memory.
fn exchange(req: &mut Requester, resp: &mut Responder, reply_len: usize) -> Vec<RequesterOutput> {
    let mut to_server = Vec::new();
    for w in drain(req) {
        if let WorkRequest::PostSend { payload, .. } = w {
            to_server.push(payload);
        }
    }
    for payload in to_server {
        resp.handle_event(Event::RecvCompleted { wr_id: 0, payload });
        loop {
            let mut progressed = false;
            for w in drain(resp) {
                match w {
                    WorkRequest::RdmaRead {
                        wr_id,
                        handle,
                        offset,
                        length,
                    } => {
                        let data = req.memory().remote_read(handle, offset, length).unwrap();
                        resp.handle_event(Event::ReadCompleted { wr_id, data });
                        progressed = true;
                    }
                    WorkRequest::RdmaWrite {
                        handle,
                        offset,
                        data,
                        ..
                    } => req.memory().remote_write(handle, offset, &data).unwrap(),
                    WorkRequest::PostSend { payload, .. } => {
                        req.handle_event(Event::RecvCompleted { wr_id: 0, payload })
                    }
                    _ => {}
                }
            }
            if !progressed {
                break;
            }
        }
        while let Some(out) = resp.poll_output() {
            if let ResponderOutput::Call(call) = out {
                let mut message = call.message.clone();
                message.resize(reply_len.max(message.len()), 0xab);
                message.truncate(reply_len);
                resp.reply(call.token, OutgoingReply { message, ddp: None })
                    .unwrap();
                for w in drain(resp) {
                    match w {
                        WorkRequest::RdmaWrite {
                            handle,
                            offset,
                            data,
                            ..
                        } => req.memory().remote_write(handle, offset, &data).unwrap(),
                        WorkRequest::PostSend { payload, .. } => {
                            req.handle_event(Event::RecvCompleted { wr_id: 0, payload })
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    std::iter::from_fn(|| req.poll_output()).collect()
}

fn call(xid: u32, len: usize) -> OutgoingCall {
    OutgoingCall::inline(xid, vec![7; len])
}

#[test]
fn long_call_goes_in_a_position_zero_read_chunk_and_long_reply_in_the_reply_chunk() {
    let mut req = Requester::new(ConnectionConfig::default());
    req.handle_event(Event::Connected {
        peer_private_data: None,
    });
    let mut resp = responder();
    drain(&mut resp);
    req.call(
        OutgoingCall {
            reply_chunk_capacity: Some(8192),
            ..call(0x10, 3000)
        },
        true,
    )
    .unwrap();
    let out = exchange(&mut req, &mut resp, 5000);
    let reply = out
        .iter()
        .find_map(|o| match o {
            RequesterOutput::Reply(r) => Some(r.clone()),
            _ => None,
        })
        .expect("a reply");
    assert_eq!(reply.path, ReplyPath::ReplyChunk);
    assert_eq!(reply.message.len(), 5000);
    assert_eq!(&reply.message[..3000], &[7; 3000][..]);
    // Every registration was invalidated once the reply arrived.
    assert!(req.memory().is_empty());
    assert_eq!(req.credits_granted(), 8);
}

#[test]
fn requester_honours_the_credit_grant() {
    let mut req = Requester::new(ConnectionConfig::default());
    req.handle_event(Event::Connected {
        peer_private_data: None,
    });
    // RFC 8166 §3.3.3: one credit until the first reply.
    req.call(call(1, 40), true).unwrap();
    assert_eq!(
        req.call(call(2, 40), true),
        Err(CallError::OverCredit {
            outstanding: 1,
            granted: 1
        })
    );
    assert!(req.call(call(2, 40), false).is_ok());
}

#[test]
fn reply_positions_increase_and_send_completion_acks_them() {
    let mut resp = responder();
    drain(&mut resp);
    let mut positions = Vec::new();
    for xid in 1..=3u32 {
        let payload = {
            let mut p = Header {
                xid,
                vers: 1,
                credits: 8,
                body: Body::Msg(Default::default()),
            }
            .to_bytes();
            p.extend_from_slice(&[0; 8]);
            p
        };
        resp.handle_event(Event::RecvCompleted { wr_id: 0, payload });
        let token = outputs(&mut resp)
            .into_iter()
            .find_map(|o| match o {
                ResponderOutput::Call(c) => Some(c.token),
                _ => None,
            })
            .unwrap();
        let pos = resp
            .reply(
                token,
                OutgoingReply {
                    message: vec![1; 8],
                    ddp: None,
                },
            )
            .unwrap()
            .unwrap();
        positions.push(pos);
    }
    assert_eq!(positions, vec![1, 2, 3]);
    let send_wrs: Vec<u64> = drain(&mut resp)
        .into_iter()
        .filter_map(|w| match w {
            WorkRequest::PostSend { wr_id, .. } => Some(wr_id),
            _ => None,
        })
        .collect();
    resp.handle_event(Event::SendCompleted { wr_id: send_wrs[1] });
    assert!(outputs(&mut resp).contains(&ResponderOutput::Acked {
        connection: 1,
        position: 2
    }));
}

#[test]
fn write_chunk_carries_ddp_data_and_is_removed_from_the_inline_reply() {
    let mut req = Requester::new(ConnectionConfig::default());
    req.handle_event(Event::Connected {
        peer_private_data: None,
    });
    req.call(
        OutgoingCall {
            write_chunk_capacity: Some(64),
            ..call(0x20, 16)
        },
        true,
    )
    .unwrap();
    let payload = match drain(&mut req)
        .into_iter()
        .find(|w| matches!(w, WorkRequest::PostSend { .. }))
    {
        Some(WorkRequest::PostSend { payload, .. }) => payload,
        _ => panic!("the call is posted"),
    };
    let mut resp = responder();
    drain(&mut resp);
    resp.handle_event(Event::RecvCompleted { wr_id: 0, payload });
    let token = outputs(&mut resp)
        .into_iter()
        .find_map(|o| match o {
            ResponderOutput::Call(c) => Some(c.token),
            _ => None,
        })
        .unwrap();
    // 8 header bytes, a 4-byte length, 5 data bytes + 3 padding.
    let mut message = vec![9; 8];
    message.extend_from_slice(&[0, 0, 0, 5]);
    message.extend_from_slice(b"hello\0\0\0");
    resp.reply(
        token,
        OutgoingReply {
            message,
            ddp: Some(12..17),
        },
    )
    .unwrap();
    for w in drain(&mut resp) {
        match w {
            WorkRequest::RdmaWrite {
                handle,
                offset,
                data,
                ..
            } => req.memory().remote_write(handle, offset, &data).unwrap(),
            WorkRequest::PostSend { payload, .. } => {
                req.handle_event(Event::RecvCompleted { wr_id: 0, payload })
            }
            _ => {}
        }
    }
    let reply = std::iter::from_fn(|| req.poll_output())
        .find_map(|o| match o {
            RequesterOutput::Reply(r) => Some(r),
            _ => None,
        })
        .expect("a reply");
    assert_eq!(reply.write_chunk_data.as_deref(), Some(&b"hello"[..]));
    assert_eq!(
        reply.message.len(),
        12,
        "data and padding removed from the inline stream"
    );
}

#[test]
fn remote_access_to_a_read_only_region_is_refused() {
    let mut req = Requester::new(ConnectionConfig::default());
    let handle = req.memory().register(vec![1, 2, 3], Access::RemoteRead);
    assert!(req.memory().remote_write(handle, 0, &[0]).is_err());
}

#[test]
fn rfc8797_negotiation_limits_sends_to_the_peer_receive_size() {
    let local = ConnectionConfig {
        inline_send: 4096,
        inline_recv: 4096,
        credits: 8,
    };
    let none = local.negotiate(None);
    assert_eq!(none.inline_send, 1024);
    let peer = PrivateData::new(2048, 2048, false);
    let agreed = local.negotiate(Some(&peer));
    assert_eq!(agreed.inline_send, 2048);
    assert_eq!(agreed.inline_recv, 2048);
    assert_eq!(local.private_data().recv_size(), 4096);
}

fn pull_with_reads(
    reads: Vec<(u32, Vec<u8>)>,
    inline: &[u8],
    profile: wire::svcrdma::Profile,
) -> (Vec<ResponderOutput>, Vec<Header>) {
    use engine::endpoint::MemoryTable;
    use wire::rpcrdma::{ChunkLists, ReadSegment, Segment};
    let mut peer = MemoryTable::new(0x100);
    let mut chunks = ChunkLists::default();
    for (position, data) in reads {
        let length = data.len() as u32;
        let handle = peer.register(data, Access::RemoteRead);
        chunks.reads.push(ReadSegment {
            position,
            target: Segment {
                handle,
                length,
                offset: 0,
            },
        });
    }
    let mut payload = Header {
        xid: 0x77,
        vers: 1,
        credits: 8,
        body: Body::Msg(chunks),
    }
    .to_bytes();
    payload.extend_from_slice(inline);
    let mut resp = responder();
    resp.set_profile(profile);
    drain(&mut resp);
    resp.handle_event(Event::RecvCompleted { wr_id: 0, payload });
    let first = drain(&mut resp);
    let mut errors = sends(&first);
    for w in first {
        if let WorkRequest::RdmaRead {
            wr_id,
            handle,
            offset,
            length,
        } = w
        {
            let data = peer.remote_read(handle, offset, length).unwrap();
            resp.handle_event(Event::ReadCompleted { wr_id, data });
        }
    }
    errors.extend(sends(&drain(&mut resp)));
    (outputs(&mut resp), errors)
}

#[test]
fn read_chunks_are_spliced_at_unreduced_positions_with_padding() {
    // Unreduced stream: AAAA | c1 (4) | BBBB | c2 (3 + 1 pad) | CCCC. Positions count the chunks
    // before them (RFC 8166 §3.4.4): c1 at 4, c2 at 4 + 4 + 4 = 12.
    let (outs, errors) = pull_with_reads(
        vec![(4, b"1111".to_vec()), (12, b"222".to_vec())],
        b"AAAABBBBCCCC",
        wire::svcrdma::Profile::Linux2026,
    );
    assert!(errors.is_empty(), "{errors:?}");
    let message = outs
        .iter()
        .find_map(|o| match o {
            ResponderOutput::Call(c) => Some(c.message.clone()),
            _ => None,
        })
        .expect("the call is delivered");
    assert_eq!(message, b"AAAA1111BBBB222\0CCCC".to_vec());
}

#[test]
fn rejects_overlapping_or_out_of_body_read_positions() {
    // Linux 6.1 lets these through to the Read stage; our splice still refuses them, and the
    // 2026 profile refuses them at decode time.
    for profile in wire::svcrdma::Profile::ALL {
        // The second chunk's position falls inside the first chunk.
        let (outs, errors) = pull_with_reads(
            vec![(4, b"11111111".to_vec()), (8, b"2222".to_vec())],
            b"AAAABBBB",
            profile,
        );
        assert!(!outs.iter().any(|o| matches!(o, ResponderOutput::Call(_))));
        assert_eq!(errors.len(), 1, "{profile:?}");
        assert_eq!(errors[0].body, Body::Error(ErrorBody::Chunk));
        // A position beyond the inline body.
        let (outs, errors) = pull_with_reads(vec![(64, b"1111".to_vec())], b"AAAA", profile);
        assert!(!outs.iter().any(|o| matches!(o, ResponderOutput::Call(_))));
        assert_eq!(errors.len(), 1, "{profile:?}");
    }
}

fn rejected_reasons(outs: &[ResponderOutput]) -> Vec<RejectReason> {
    outs.iter()
        .filter_map(|o| match o {
            ResponderOutput::Rejected { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn out_of_place_read_chunks_are_refused_before_anything_is_pulled() {
    use wire::ddp::{PositionError, ReadChunkError};
    // Linux 6.1 passes a position past the inline body; the responder's plan refuses it with
    // the position rule's typed error, and posts no RDMA Read for it.
    let mut peer = engine::endpoint::MemoryTable::new(0x100);
    let handle = peer.register(b"1111".to_vec(), Access::RemoteRead);
    let mut payload = RawBuilder::new()
        .fixed(0x78, 1, 8, 0)
        .read(64, handle, 4, 0)
        .end_list()
        .end_list()
        .no_reply()
        .bytes();
    payload.extend_from_slice(b"AAAA");
    let mut r = responder();
    r.set_profile(wire::svcrdma::Profile::Linux6_1);
    drain(&mut r);
    r.handle_event(Event::RecvCompleted { wr_id: 0, payload });
    let work = drain(&mut r);
    assert!(!work
        .iter()
        .any(|w| matches!(w, WorkRequest::RdmaRead { .. })));
    assert_eq!(sends(&work)[0].body, Body::Error(ErrorBody::Chunk));
    assert_eq!(
        rejected_reasons(&outputs(&mut r)),
        [RejectReason::ReadChunks(ReadChunkError::Position(
            PositionError::PastStream {
                position: 64,
                offset: 64,
                stream_len: 4
            }
        ))]
    );
}

#[test]
fn the_read_chunk_budget_is_the_profiles_page_budget() {
    use wire::ddp::ReadChunkError;
    use wire::svcrdma::Profile;
    // Over 1 MiB but within linux-2026's 260 pages: pulled and delivered, as the kernel would.
    let data = vec![7u8; (1 << 20) + 4096];
    let (outs, errors) = pull_with_reads(vec![(4, data)], b"AAAABBBB", Profile::Linux2026);
    assert!(errors.is_empty(), "{errors:?}");
    assert!(outs.iter().any(|o| matches!(o, ResponderOutput::Call(_))));
    // Two 2 GiB segments of one chunk: the 6.1 kernel's 32-bit chunk length wraps to 0 and its
    // model passes them; the responder counts exactly and refuses them against the same budget.
    let payload = RawBuilder::new()
        .fixed(0x79, 1, 8, 0)
        .read(4, 0x10, 0x8000_0000, 0)
        .read(4, 0x11, 0x8000_0000, 0)
        .end_list()
        .end_list()
        .no_reply()
        .raw(b"AAAA")
        .bytes();
    let mut r = responder();
    r.set_profile(Profile::Linux6_1);
    drain(&mut r);
    r.handle_event(Event::RecvCompleted { wr_id: 0, payload });
    assert_eq!(sends(&drain(&mut r))[0].body, Body::Error(ErrorBody::Chunk));
    assert_eq!(
        rejected_reasons(&outputs(&mut r)),
        [RejectReason::ReadChunks(ReadChunkError::OverBudget {
            total: 1 << 32,
            budget: Profile::Linux6_1.model().read_budget()
        })]
    );
}

#[test]
fn rejections_name_their_reason_in_the_trace() {
    let mut r = responder();
    drain(&mut r);
    // RDMA_NOMSG with no Position-Zero Read chunk.
    let payload = RawBuilder::new().fixed(0x58, 1, 8, 1).empty_lists().bytes();
    r.handle_event(Event::RecvCompleted { wr_id: 1, payload });
    let reasons = rejected_reasons(&outputs(&mut r));
    assert_eq!(
        reasons,
        [RejectReason::ReadChunks(
            wire::ddp::ReadChunkError::NomsgWithoutCallChunk
        )]
    );
    let trace = r.take_trace();
    assert!(
        trace
            .iter()
            .any(|l| l.starts_with("srv reject xid=0x58 nomsg-without-call-chunk")),
        "{trace:?}"
    );
}

#[test]
fn private_data_on_connect_raises_the_inline_threshold() {
    let big = ConnectionConfig {
        inline_send: 4096,
        inline_recv: 4096,
        credits: 8,
    };
    let posted_call = |peer: Option<Vec<u8>>| {
        let mut req = Requester::new(big);
        req.handle_event(Event::Connected {
            peer_private_data: peer,
        });
        req.call(call(1, 3000), true).unwrap();
        let payload = drain(&mut req)
            .into_iter()
            .find_map(|w| match w {
                WorkRequest::PostSend { payload, .. } => Some(payload),
                _ => None,
            })
            .expect("a Send");
        Header::decode_prefix(&payload).unwrap().0.body
    };
    let responder_data = Responder::new(big).private_data();
    // With the peer's RFC 8797 private data a 3000-byte call fits inline...
    assert!(matches!(posted_call(responder_data), Body::Msg(_)));
    // ...without it the RFC 8166 default of 1024 applies: Position-Zero Read chunk.
    assert!(matches!(posted_call(None), Body::Nomsg(_)));
    // Undecodable private data counts as none.
    assert!(matches!(posted_call(Some(vec![1, 2, 3])), Body::Nomsg(_)));
}

#[test]
fn receives_stop_at_twice_the_grant_of_unanswered_calls() {
    let mut resp = responder();
    drain(&mut resp);
    let call_payload = |xid: u32| {
        let mut p = Header {
            xid,
            vers: 1,
            credits: 8,
            body: Body::Msg(Default::default()),
        }
        .to_bytes();
        p.extend_from_slice(&[0; 8]);
        p
    };
    for xid in 0..16 {
        resp.handle_event(Event::RecvCompleted {
            wr_id: 0,
            payload: call_payload(xid),
        });
    }
    assert_eq!(resp.unanswered(), 16);
    assert_eq!(
        resp.receives_posted(),
        0,
        "a requester over its grant now meets RNR"
    );
    let token = outputs(&mut resp)
        .into_iter()
        .find_map(|o| match o {
            ResponderOutput::Call(c) => Some(c.token),
            _ => None,
        })
        .unwrap();
    resp.drop_call(token);
    assert_eq!(resp.receives_posted(), 1);
}
