//! Whole-message decoding: every RDMA Send in the Linux captures, plus crafted negative cases.

use std::collections::HashMap;
use std::path::PathBuf;

use wire::message::{
    chunk_length_matches, decode_call_moved, decode_inline_message, decode_message,
    decode_message_with, decode_rpc_message, CallProc, Layer, Placement, Upper,
    RULE_AUXILIARY_NOT_DDP_ELIGIBLE, RULE_NOT_DDP_ELIGIBLE, RULE_READ_CHUNK_POSITION,
    RULE_WRITE_NOT_DDP_ELIGIBLE,
};
use wire::nfs3::{
    DdpData, FileHandle, Nfs3Call, Nfs3Proc, Nfs3Reply, NfsRes, ReadArgs, StableHow, WriteArgs,
};
use wire::rpc::{CallHeader, ReplyHeader, RpcMessage, NFS_PROGRAM};
use wire::rpcrdma::{Body, ChunkLists, Header, ReadSegment, Segment};
use wire::{DecodeError, Writer, Xdr};

/// One RDMA Send payload from a RoCEv2 capture, with the frame that completed it.
struct Send {
    frame: usize,
    from_client: bool,
    payload: Vec<u8>,
}

/// Minimal pcap (Ethernet/IPv4/UDP 4791) reader: extracts RC SEND payloads, reassembling
/// SEND First/Middle/Last per direction. Only what the fixture captures need.
fn sends(name: &str) -> Vec<Send> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/pcap")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(&bytes[..4], &[0xd4, 0xc3, 0xb2, 0xa1], "little-endian pcap");
    let mut pos = 24;
    let mut frame = 0;
    let mut partial: HashMap<[u8; 4], Vec<u8>> = HashMap::new();
    let mut out = Vec::new();
    while pos + 16 <= bytes.len() {
        let caplen = u32::from_le_bytes(bytes[pos + 8..pos + 12].try_into().unwrap()) as usize;
        let pkt = &bytes[pos + 16..pos + 16 + caplen];
        pos += 16 + caplen;
        frame += 1;
        // Ethernet II + IPv4 (IHL) + UDP to port 4791.
        if pkt.len() < 14 + 20 + 8 || pkt[12..14] != [0x08, 0x00] {
            continue;
        }
        let ip = &pkt[14..];
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        if ip[9] != 17 {
            continue;
        }
        let src: [u8; 4] = ip[12..16].try_into().unwrap();
        let udp = &ip[ihl..];
        if u16::from_be_bytes([udp[2], udp[3]]) != 4791 {
            continue;
        }
        let bth = &udp[8..];
        let opcode = bth[0];
        // Strip BTH (12), ICRC (4) and, for immediate/invalidate variants, the 4-byte extension.
        let mut body = &bth[12..bth.len() - 4];
        if matches!(opcode, 3 | 5 | 22 | 23) {
            body = &body[4..];
        }
        let from_client = src == [10, 99, 0, 2];
        match opcode {
            4 | 5 | 23 => out.push(Send {
                frame,
                from_client,
                payload: body.to_vec(),
            }),
            0 => {
                partial.insert(src, body.to_vec());
            }
            1 => partial.entry(src).or_default().extend_from_slice(body),
            2 | 3 | 22 => {
                let mut payload = partial.remove(&src).unwrap_or_default();
                payload.extend_from_slice(body);
                out.push(Send {
                    frame,
                    from_client,
                    payload,
                });
            }
            _ => {}
        }
    }
    out
}

/// Decode every RPC-over-RDMA Send of a capture, pairing replies with calls by xid, and return
/// how many NFS-layer decodes succeeded per procedure name.
fn decode_capture(name: &str) -> HashMap<String, usize> {
    let mut calls: HashMap<u32, CallProc> = HashMap::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for send in sends(name) {
        // The first connection in each capture is a 16-byte non-RPC exchange (rping-style).
        if send.payload.len() < 28 {
            continue;
        }
        let xid = u32::from_be_bytes(send.payload[..4].try_into().unwrap());
        let hint = if send.from_client {
            None
        } else {
            calls.get(&xid).copied()
        };
        let msg = decode_message_with(&send.payload, hint)
            .unwrap_or_else(|e| panic!("{name} frame {}: {e} (rule {})", send.frame, e.rule()));
        // Whenever every layer decoded, re-encoding reproduces the payload exactly.
        let fully_decoded = match &msg.rpc {
            None => msg.rpcrdma.proc() != wire::rpcrdma::Proc::Msg,
            Some(_) => msg.upper.is_some(),
        };
        if fully_decoded {
            assert_eq!(msg.to_bytes(), send.payload, "{name} frame {}", send.frame);
        }
        // The Send decode is the transport header, then the inline RPC message reduced as the
        // chunk lists say: one rule, one function.
        if let Body::Msg(chunks) = &msg.rpcrdma.body {
            let inline = &send.payload[msg.header_len..];
            let rpc = decode_rpc_message(inline, hint, Placement::Chunks(chunks)).unwrap();
            assert_eq!(
                Some(&rpc.rpc),
                msg.rpc.as_ref(),
                "{name} frame {}",
                send.frame
            );
            assert_eq!((&rpc.upper, &rpc.nfs), (&msg.upper, &msg.nfs));
            let checked = decode_inline_message(msg.rpcrdma.xid, inline, hint, chunks).unwrap();
            assert_eq!(checked, rpc);
        }
        if let Some(RpcMessage::Call(c)) = &msg.rpc {
            calls.insert(c.xid, CallProc::new(c.prog, c.vers, c.proc_));
        }
        if let Some(nfs) = &msg.nfs {
            *seen
                .entry(format!("{} {} {}", nfs.program, nfs.proc, nfs.direction))
                .or_default() += 1;
        }
    }
    seen
}

#[test]
fn every_send_in_the_linux_6_1_capture_decodes() {
    let seen = decode_capture("nfs3-linux-6.1.pcap");
    for key in [
        "NFS READ call",
        "NFS READ reply",
        "NFS WRITE call",
        "NFS WRITE reply",
        "NFS LOOKUP reply",
        "NFS CREATE call",
        "NFSACL GETACL call",
    ] {
        assert!(seen.contains_key(key), "missing {key}: {seen:?}");
    }
}

#[test]
fn every_send_in_the_linux_7_2_capture_decodes() {
    let seen = decode_capture("nfs3-linux-7.2.pcap");
    assert!(seen.contains_key("NFS READ reply"), "{seen:?}");
    assert!(seen.contains_key("NFS WRITE call"), "{seen:?}");
}

#[test]
fn reduced_read_reply_from_linux_is_not_malformed() {
    // Frame 73/76 of the 6.1 capture: READ of an 18-byte file, data returned via a Write chunk.
    let all = sends("nfs3-linux-6.1.pcap");
    let call = all.iter().find(|s| s.frame == 73).unwrap();
    let reply = all.iter().find(|s| s.frame == 76).unwrap();
    let call = decode_message(&call.payload).unwrap();
    let Some(Upper::Nfs3Call(Nfs3Call::Read(args))) = &call.upper else {
        panic!("not a READ call: {call:?}")
    };
    assert_eq!(args.count, 4096);
    let hint = CallProc::new(NFS_PROGRAM, 3, Nfs3Proc::Read as u32);
    let reply = decode_message_with(&reply.payload, Some(hint)).unwrap();
    let Some(Upper::Nfs3Reply(Nfs3Reply::Read(NfsRes::Ok(ok)))) = &reply.upper else {
        panic!("not a READ reply: {reply:?}")
    };
    assert_eq!(ok.count, 18);
    assert!(ok.eof);
    assert_eq!(ok.data, DdpData::Moved { length: 18 });
    let ddp = reply.nfs.as_ref().unwrap().ddp.as_ref().unwrap();
    assert_eq!((ddp.chunk, ddp.length, ddp.chunk_length), ("write", 18, 18));
    assert!(ddp.chunk_length_matches);
}

#[test]
fn write_call_with_read_chunk_checks_position() {
    // Frame 97: WRITE of 32768 bytes whose data sits in a Read chunk at position 108.
    let all = sends("nfs3-linux-6.1.pcap");
    let send = all.iter().find(|s| s.frame == 97).unwrap();
    let msg = decode_message(&send.payload).unwrap();
    let Some(Upper::Nfs3Call(Nfs3Call::Write(w))) = &msg.upper else {
        panic!("not a WRITE call")
    };
    assert_eq!(w.data, DdpData::Moved { length: 32768 });
    assert_eq!(w.stable, StableHow::Unstable);
    let ddp = msg.nfs.as_ref().unwrap().ddp.clone().unwrap();
    assert_eq!(ddp.position, Some(108));
    assert!(ddp.chunk_length_matches);

    assert!(msg.nfs.as_ref().unwrap().violations.is_empty());

    // Move the Read chunk to position 112: it no longer points at the WRITE data. The bytes
    // still decode, but the summary reports the broken rule.
    let (mut header, len) = Header::decode_prefix(&send.payload).unwrap();
    if let Body::Msg(chunks) = &mut header.body {
        chunks.reads[0].position = 112;
    }
    let mut bad = header.to_bytes();
    bad.extend_from_slice(&send.payload[len..]);
    let msg = decode_message(&bad).unwrap();
    let violations = &msg.nfs.unwrap().violations;
    assert_eq!(violations.len(), 1);
    assert_eq!(violations[0].value, 112);
    assert_eq!(violations[0].rule, RULE_READ_CHUNK_POSITION);
}

fn rdma_msg(xid: u32, chunks: ChunkLists, rpc: &[u8]) -> Vec<u8> {
    let header = Header {
        xid,
        vers: 1,
        credits: 32,
        body: Body::Msg(chunks),
    };
    let mut bytes = header.to_bytes();
    bytes.extend_from_slice(rpc);
    bytes
}

fn read_call(xid: u32) -> Vec<u8> {
    let mut w = Writer::new();
    CallHeader::new(xid, NFS_PROGRAM, 3, Nfs3Proc::Read as u32).encode(&mut w);
    Nfs3Call::Read(ReadArgs {
        file: FileHandle(vec![1; 8]),
        offset: 0,
        count: 512,
    })
    .encode(&mut w);
    w.into_bytes()
}

#[test]
fn chunk_length_tolerates_xdr_round_up_only() {
    assert!(chunk_length_matches(18, 18));
    assert!(chunk_length_matches(18, 20));
    assert!(!chunk_length_matches(18, 24));
    assert!(!chunk_length_matches(18, 17));
}

#[test]
fn built_call_round_trips_through_decode_message() {
    let msg = decode_message(&rdma_msg(7, ChunkLists::default(), &read_call(7))).unwrap();
    assert_eq!(msg.nfs.as_ref().unwrap().proc, "READ");
    assert_eq!(msg.rpc.as_ref().unwrap().xid(), 7);
}

#[test]
fn rejects_xid_mismatch_between_transport_and_rpc() {
    let err = decode_message(&rdma_msg(7, ChunkLists::default(), &read_call(8))).unwrap_err();
    assert_eq!(err.layer, Layer::Rpc);
    assert!(err.rule().starts_with("RFC 8166 §4.1.1"), "{}", err.rule());
    assert!(matches!(err.error, DecodeError::BadValue { value: 8, .. }));
    assert!(err.rpcrdma.is_some());
}

#[test]
fn rejects_trailing_bytes_after_arguments() {
    let mut rpc = read_call(9);
    rpc.extend_from_slice(&[0, 0, 0, 0]);
    let err = decode_message(&rdma_msg(9, ChunkLists::default(), &rpc)).unwrap_err();
    assert_eq!(err.layer, Layer::Nfs);
    assert!(matches!(
        err.error,
        DecodeError::TrailingBytes { count: 4, .. }
    ));
}

#[test]
fn reports_read_chunk_for_a_procedure_without_ddp_eligible_argument() {
    let chunks = ChunkLists {
        reads: vec![ReadSegment {
            position: 40,
            target: Segment {
                handle: 1,
                length: 512,
                offset: 0,
            },
        }],
        ..ChunkLists::default()
    };
    let msg = decode_message(&rdma_msg(10, chunks, &read_call(10))).unwrap();
    // The READ arguments are decoded from the inline stream as they are.
    let Some(Upper::Nfs3Call(Nfs3Call::Read(args))) = &msg.upper else {
        panic!("{msg:?}")
    };
    assert_eq!(args.count, 512);
    let nfs = msg.nfs.unwrap();
    assert_eq!(nfs.violations.len(), 1);
    assert_eq!(nfs.violations[0].rule, RULE_NOT_DDP_ELIGIBLE);
    assert_eq!(nfs.violations[0].value, 40);
    assert!(nfs.ddp.is_none());
}

#[test]
fn reports_write_chunk_used_for_a_result_that_is_not_ddp_eligible() {
    // A GETATTR reply whose Write list says 100 bytes were written.
    let chunks = ChunkLists {
        writes: vec![vec![Segment {
            handle: 2,
            length: 100,
            offset: 0,
        }]],
        ..ChunkLists::default()
    };
    let mut w = Writer::new();
    ReplyHeader::success(13).encode(&mut w);
    w.u32(70); // NFS3ERR_STALE, GETATTR resfail is void
    let hint = CallProc::new(NFS_PROGRAM, 3, Nfs3Proc::Getattr as u32);
    let msg = decode_message_with(&rdma_msg(13, chunks, w.as_bytes()), Some(hint)).unwrap();
    let nfs = msg.nfs.unwrap();
    assert_eq!(nfs.status, Some("NFS3ERR_STALE"));
    assert_eq!(nfs.violations.len(), 1);
    assert_eq!(nfs.violations[0].rule, RULE_WRITE_NOT_DDP_ELIGIBLE);
}

#[test]
fn rejects_truncated_transport_header() {
    let err = decode_message(&[0, 0, 0, 1, 0, 0, 0, 1]).unwrap_err();
    assert_eq!(err.layer, Layer::Rpcrdma);
    assert!(err.rpcrdma.is_none());
}

#[test]
fn reply_without_hint_stops_at_rpc_header() {
    let mut w = Writer::new();
    ReplyHeader::success(11).encode(&mut w);
    w.u32(0); // NFS3_OK for a hypothetical result the decoder cannot interpret without a hint
    let msg = decode_message(&rdma_msg(11, ChunkLists::default(), w.as_bytes())).unwrap();
    assert!(matches!(msg.rpc, Some(RpcMessage::Reply(_))));
    assert!(msg.nfs.is_none());
}

#[test]
fn inline_write_call_decodes_with_data() {
    let mut w = Writer::new();
    CallHeader::new(12, NFS_PROGRAM, 3, Nfs3Proc::Write as u32).encode(&mut w);
    Nfs3Call::Write(WriteArgs {
        file: FileHandle(vec![2; 12]),
        offset: 4096,
        count: 5,
        stable: StableHow::FileSync,
        data: DdpData::Inline(b"hello".to_vec()),
    })
    .encode(&mut w);
    let msg = decode_message(&rdma_msg(12, ChunkLists::default(), w.as_bytes())).unwrap();
    let Some(Upper::Nfs3Call(Nfs3Call::Write(args))) = msg.upper else {
        panic!()
    };
    assert_eq!(args.data, DdpData::Inline(b"hello".to_vec()));
    assert!(msg.nfs.unwrap().ddp.is_none());
}

/// xorshift64*: a deterministic mutation source, so a failure reproduces exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn mutated_linux_messages_never_panic() {
    let mut rng = Rng(0x5eed_f00d_7e57);
    let seeds: Vec<Vec<u8>> = ["nfs3-linux-6.1.pcap", "nfs3-linux-7.2.pcap"]
        .iter()
        .flat_map(|n| sends(n))
        .map(|s| s.payload)
        .filter(|p| p.len() >= 28)
        .collect();
    let hints = [
        None,
        Some(CallProc::new(NFS_PROGRAM, 3, Nfs3Proc::Read as u32)),
        Some(CallProc::new(NFS_PROGRAM, 3, Nfs3Proc::Readdirplus as u32)),
        Some(CallProc::new(100005, 3, 5)),
        Some(CallProc::new(100227, 3, 1)),
    ];
    let mut outcomes = [0usize; 2];
    for round in 0..20_000 {
        let mut bytes = seeds[rng.below(seeds.len())].clone();
        match rng.below(4) {
            // overwrite one word with a boundary value
            0 => {
                let at = rng.below(bytes.len() / 4) * 4;
                let v = [0u32, 1, 2, 4, 0x7fff_ffff, 0xffff_ffff][rng.below(6)];
                bytes[at..at + 4].copy_from_slice(&v.to_be_bytes());
            }
            // flip a random bit
            1 => {
                let at = rng.below(bytes.len());
                bytes[at] ^= 1 << rng.below(8);
            }
            // truncate
            2 => bytes.truncate(rng.below(bytes.len())),
            // append garbage
            _ => {
                let extra = rng.below(64);
                bytes.extend((0..extra).map(|_| rng.next() as u8));
            }
        }
        let hint = hints[round % hints.len()];
        outcomes[usize::from(decode_message_with(&bytes, hint).is_ok())] += 1;
    }
    // Both outcomes occur: the mutations reach the decoders rather than all being rejected early.
    assert!(outcomes[0] > 1000 && outcomes[1] > 1000, "{outcomes:?}");
}

#[test]
fn reports_chunks_on_nfsacl_which_has_no_ddp_eligible_items() {
    let mut w = Writer::new();
    CallHeader::new(14, 100227, 3, 1).encode(&mut w);
    FileHandle(vec![3; 8]).encode(&mut w);
    w.u32(0xf); // GETACL mask
    let chunks = ChunkLists {
        reads: vec![ReadSegment {
            position: 52,
            target: Segment {
                handle: 9,
                length: 64,
                offset: 0,
            },
        }],
        ..ChunkLists::default()
    };
    let msg = decode_message(&rdma_msg(14, chunks, w.as_bytes())).unwrap();
    let nfs = msg.nfs.unwrap();
    assert_eq!((nfs.program, nfs.proc), ("NFSACL", "GETACL"));
    assert_eq!(nfs.violations.len(), 1);
    assert_eq!(nfs.violations[0].rule, RULE_AUXILIARY_NOT_DDP_ELIGIBLE);
    assert_eq!(nfs.violations[0].value, 52);
}

#[test]
fn rejects_bytes_after_a_denied_reply_at_the_rpc_layer() {
    let mut w = Writer::new();
    ReplyHeader {
        xid: 15,
        body: wire::rpc::ReplyBody::Denied(wire::rpc::RejectedReply::RpcMismatch {
            low: 2,
            high: 2,
        }),
    }
    .encode(&mut w);
    let clean = rdma_msg(15, ChunkLists::default(), w.as_bytes());
    let msg = decode_message(&clean).unwrap();
    assert!(msg.nfs.is_none());
    assert_eq!(msg.to_bytes(), clean);
    w.u32(0);
    let err = decode_message(&rdma_msg(15, ChunkLists::default(), w.as_bytes())).unwrap_err();
    assert_eq!(err.layer, Layer::Rpc);
    assert!(matches!(
        err.error,
        DecodeError::TrailingBytes { count: 4, .. }
    ));
}

/// The WRITE of frame 97 (32768 bytes in a Read chunk at position 108): its inline stream, its
/// chunk lists, and the message with the chunk data reinserted.
fn linux_write_call() -> (Vec<u8>, ChunkLists, Vec<u8>) {
    let all = sends("nfs3-linux-6.1.pcap");
    let send = all.iter().find(|s| s.frame == 97).unwrap();
    let (header, len) = Header::decode_prefix(&send.payload).unwrap();
    let Body::Msg(chunks) = header.body else {
        panic!("not RDMA_MSG")
    };
    let inline = send.payload[len..].to_vec();
    let data: Vec<u8> = (0..32768u32).map(|i| i as u8).collect();
    let rebuilt = wire::ddp::splice(&inline, &[(108, data)]).unwrap();
    (inline, chunks, rebuilt)
}

#[test]
fn a_write_reinserted_and_moved_decodes_to_the_same_call() {
    let (inline, chunks, rebuilt) = linux_write_call();
    let reinserted = decode_rpc_message(&rebuilt, None, Placement::Reinserted).unwrap();
    let moved = decode_rpc_message(&inline, None, Placement::Moved { writes: &[] }).unwrap();
    let sent = decode_rpc_message(&inline, None, Placement::Chunks(&chunks)).unwrap();
    assert_eq!(reinserted.rpc, moved.rpc);
    let write = |d: &wire::message::DecodedRpc| match &d.upper {
        Some(Upper::Nfs3Call(Nfs3Call::Write(w))) => w.clone(),
        other => panic!("not a WRITE: {other:?}"),
    };
    let (r, m) = (write(&reinserted), write(&moved));
    assert_eq!((r.offset, r.count, r.stable), (m.offset, m.count, m.stable));
    assert_eq!(r.data.len(), 32768);
    assert!(!r.data.is_moved() && reinserted.moved.is_empty());
    assert_eq!(m.data, DdpData::Moved { length: 32768 });
    assert_eq!(write(&sent), m);
    // The summary names the same procedure; only the chunk-carried decode knows the chunk.
    let (rs, ms) = (reinserted.nfs.unwrap(), moved.nfs.unwrap());
    assert_eq!(
        (rs.program, rs.proc, rs.direction),
        (ms.program, ms.proc, ms.direction)
    );
    assert_eq!((rs.ddp, ms.ddp.is_some()), (None, false));
    assert_eq!(sent.nfs.unwrap().ddp.unwrap().position, Some(108));
    // Moved without chunks: the item is reduced, no chunk known.
    assert_eq!(moved.moved.len(), 1);
    assert_eq!((moved.moved[0].chunk, moved.moved[0].position), (None, 108));
    assert_eq!(sent.moved[0].chunk, Some(108));
    assert_eq!(sent.moved[0].chunk_length, Some(32768));
}

#[test]
fn a_call_whose_read_chunk_is_exactly_its_moved_argument_decodes_without_the_data() {
    let (inline, chunks, _) = linux_write_call();
    let moved = decode_call_moved(&inline, &chunks).expect("chunk on the WRITE data");
    assert_eq!(
        moved,
        decode_rpc_message(&inline, None, Placement::Chunks(&chunks)).unwrap()
    );
    let with = |position: u32, length: u32| {
        let mut c = chunks.clone();
        c.reads[0].position = position;
        c.reads[0].target.length = length;
        c
    };
    // Another position, a round-up the decoder would read as padding, an extra chunk, a chunk
    // at Position Zero: left to the rebuild.
    assert!(decode_call_moved(&inline, &with(112, 32768)).is_none());
    assert!(decode_call_moved(&inline, &with(108, 32767)).is_none());
    let mut extra = chunks.clone();
    extra.reads.push(ReadSegment {
        position: 200,
        target: chunks.reads[0].target,
    });
    assert!(decode_call_moved(&inline, &extra).is_none());
    let mut zero = chunks.clone();
    zero.reads.insert(
        0,
        ReadSegment {
            position: 0,
            ..chunks.reads[0]
        },
    );
    assert!(decode_call_moved(&inline, &zero).is_none());
    // A call without a DDP-eligible argument: nothing moved, nothing to skip.
    let read = read_call(3);
    let on_read = ChunkLists {
        reads: vec![ReadSegment {
            position: read.len() as u32,
            target: chunks.reads[0].target,
        }],
        ..Default::default()
    };
    assert!(decode_call_moved(&read, &on_read).is_none());
}

#[test]
fn a_write_chunk_that_does_not_hold_the_moved_result_is_named() {
    // Frame 76: READ reply whose 18 bytes came back in a 18-byte Write chunk.
    let all = sends("nfs3-linux-6.1.pcap");
    let reply = all.iter().find(|s| s.frame == 76).unwrap();
    let (header, len) = Header::decode_prefix(&reply.payload).unwrap();
    let inline = &reply.payload[len..];
    let hint = Some(CallProc::new(NFS_PROGRAM, 3, Nfs3Proc::Read as u32));
    let Body::Msg(chunks) = &header.body else {
        panic!("not RDMA_MSG")
    };
    let sent = decode_rpc_message(inline, hint, Placement::Chunks(chunks)).unwrap();
    let moved = decode_rpc_message(inline, hint, Placement::Moved { writes: &[18] }).unwrap();
    assert_eq!(sent, moved);
    assert_eq!(sent.write_chunk_mismatch(), None);
    // Round-up written into the chunk (RFC 8166 §3.4.6 forbids it).
    let padded = decode_rpc_message(inline, hint, Placement::Moved { writes: &[20] }).unwrap();
    let (item, carried) = padded.write_chunk_mismatch().expect("mismatch");
    assert_eq!(
        (item.item, item.length, carried),
        ("READ3resok.data", 18, 20)
    );
    // A zero-length Write chunk: the item stayed inline, so the 18-byte reduced stream is
    // short of its data.
    let err = decode_rpc_message(inline, hint, Placement::Moved { writes: &[0] }).unwrap_err();
    assert_eq!(err.layer, Layer::Nfs);
    assert!(err.rpc.is_some());
}

#[test]
fn the_rpc_message_decoder_reports_layers_without_checking_the_xid() {
    // No transport header here: an RPC message of any XID decodes.
    let call = read_call(8);
    let d = decode_rpc_message(&call, None, Placement::Reinserted).unwrap();
    assert_eq!(d.rpc.xid(), 8);
    let err = decode_inline_message(7, &call, None, &ChunkLists::default()).unwrap_err();
    assert_eq!((err.layer, err.rpcrdma.is_none()), (Layer::Rpc, true));
    assert!(err.rule().starts_with("RFC 8166 §4.1.1"));
    // A broken RPC header: the RPC layer, nothing decoded.
    let err = decode_rpc_message(&call[..6], None, Placement::Reinserted).unwrap_err();
    assert_eq!(err.layer, Layer::Rpc);
    assert!(err.rpc.is_none());
    assert!(matches!(err.error, DecodeError::Truncated { .. }));
    // Bytes after the arguments: the NFS layer, with the RPC header that decoded.
    let mut long = call.clone();
    long.extend_from_slice(&[0; 4]);
    let err = decode_rpc_message(&long, None, Placement::Reinserted).unwrap_err();
    assert_eq!(err.layer, Layer::Nfs);
    assert_eq!(err.rpc.as_deref().map(RpcMessage::xid), Some(8));
    assert!(matches!(
        err.error,
        DecodeError::TrailingBytes { count: 4, .. }
    ));
}

#[test]
fn procedure_and_trailing_byte_errors_say_what_they_are() {
    let unknown = CallHeader::new(1, NFS_PROGRAM, 3, 99).to_bytes();
    let err = decode_rpc_message(&unknown, None, Placement::Reinserted).unwrap_err();
    assert_eq!(
        (err.unknown_procedure(), err.trailing_bytes()),
        (Some(99), None)
    );
    let nfs4 = CallHeader::new(1, NFS_PROGRAM, 4, 7).to_bytes();
    let err = decode_rpc_message(&nfs4, None, Placement::Reinserted).unwrap_err();
    assert_eq!(err.unknown_procedure(), Some(7));
    let mut long = read_call(1);
    long.extend_from_slice(&[0; 8]);
    let err = decode_rpc_message(&long, None, Placement::Reinserted).unwrap_err();
    assert_eq!(
        (err.unknown_procedure(), err.trailing_bytes()),
        (None, Some(8))
    );
    // A bad discriminant inside the arguments is neither.
    let mut bad = CallHeader::new(1, NFS_PROGRAM, 3, Nfs3Proc::Write as u32).to_bytes();
    bad.extend(
        Writer::new()
            .opaque_var(&[1; 8])
            .u64(0)
            .u32(0)
            .u32(9)
            .u32(0)
            .as_bytes(),
    );
    let err = decode_rpc_message(&bad, None, Placement::Reinserted).unwrap_err();
    assert!(matches!(
        err.error,
        DecodeError::BadDiscriminant { value: 9, .. }
    ));
    assert_eq!(
        (err.unknown_procedure(), err.trailing_bytes()),
        (None, None)
    );
}
