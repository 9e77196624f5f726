//! RPC-over-RDMA headers from real RoCEv2 captures (Linux 6.1 and 7.2 NFSv3 over rxe, in
//! `fixtures/pcap/`): every RDMA Send decodes with the strict codec and re-encodes to the same
//! bytes, and every call the kernel client sent is accepted by each svcrdma profile model.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use wire::rpcrdma::{Header, Proc};
use wire::svcrdma::{classify, Profile, Verdict};
use wire::Xdr;

/// RoCEv2 UDP port (IBTA Annex A17).
const ROCE_V2_PORT: u16 = 4791;
const BTH_LEN: usize = 12;
const ICRC_LEN: usize = 4;

/// One reassembled RDMA Send payload.
struct Send {
    dest_qp: u32,
    src: [u8; 4],
    dst: [u8; 4],
    payload: Vec<u8>,
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

/// Parse a little-endian classic pcap of Ethernet frames and return the RC Send payloads,
/// reassembling SEND_FIRST/MIDDLE/LAST per destination QP. Malformed records end the walk.
fn rdma_sends(pcap: &[u8]) -> Vec<Send> {
    assert_eq!(&pcap[..4], &[0xd4, 0xc3, 0xb2, 0xa1], "little-endian pcap");
    assert_eq!(u32::from_le_bytes(pcap[20..24].try_into().unwrap()), 1);
    let mut sends = Vec::new();
    let mut partial: HashMap<u32, Send> = HashMap::new();
    let mut off = 24;
    while let Some(rec) = pcap.get(off..off + 16) {
        let incl = u32::from_le_bytes(rec[8..12].try_into().unwrap()) as usize;
        let Some(frame) = pcap.get(off + 16..off + 16 + incl) else {
            break;
        };
        off += 16 + incl;
        if frame.len() < 14 + 20 || be16(&frame[12..14]) != 0x0800 {
            continue;
        }
        let ip = &frame[14..];
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        if ip[9] != 17 || ip.len() < ihl + 8 {
            continue;
        }
        let udp = &ip[ihl..];
        let udp_len = usize::from(be16(&udp[4..6]));
        if be16(&udp[2..4]) != ROCE_V2_PORT || udp_len > udp.len() || udp_len < 8 + BTH_LEN {
            continue;
        }
        let bth = &udp[8..udp_len];
        let opcode = bth[0];
        let dest_qp = u32::from_be_bytes([0, bth[5], bth[6], bth[7]]);
        // RC opcodes: 0 SEND_FIRST, 1 MIDDLE, 2 LAST, 4 ONLY, 22 LAST_INV, 23 ONLY_INV (IETH).
        let data_start = match opcode {
            0 | 1 | 2 | 4 => BTH_LEN,
            22 | 23 => BTH_LEN + 4,
            _ => continue,
        };
        let data = &bth[data_start..bth.len() - ICRC_LEN];
        let src = ip[12..16].try_into().unwrap();
        let dst = ip[16..20].try_into().unwrap();
        match opcode {
            4 | 23 => sends.push(Send {
                dest_qp,
                src,
                dst,
                payload: data.to_vec(),
            }),
            0 => {
                partial.insert(
                    dest_qp,
                    Send {
                        dest_qp,
                        src,
                        dst,
                        payload: data.to_vec(),
                    },
                );
            }
            1 => {
                if let Some(p) = partial.get_mut(&dest_qp) {
                    p.payload.extend_from_slice(data);
                }
            }
            _ => {
                if let Some(mut p) = partial.remove(&dest_qp) {
                    p.payload.extend_from_slice(data);
                    sends.push(p);
                }
            }
        }
    }
    sends
}

/// Whether the inline RPC message after the header is a CALL (RFC 5531 msg_type 0).
fn carries_rpc_call(header: &Header, payload: &[u8], used: usize) -> bool {
    header.proc() == Proc::Msg && payload.get(used + 4..used + 8) == Some(&[0, 0, 0, 0])
}

fn check_capture(name: &str) -> BTreeMap<String, usize> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/pcap")
        .join(name);
    let pcap = std::fs::read(&path).expect("capture present");
    let mut sends = rdma_sends(&pcap);
    // The captures also hold an rping connectivity probe (16-byte address/rkey/length Sends).
    // A queue pair carries RPC-over-RDMA when its first Send has rdma_vers = 1; every later
    // Send on it must then decode.
    let mut rpcrdma_qps: HashMap<u32, bool> = HashMap::new();
    for send in &sends {
        rpcrdma_qps
            .entry(send.dest_qp)
            .or_insert(send.payload.get(4..8) == Some(&[0, 0, 0, 1]));
    }
    let probes = sends.len();
    sends.retain(|s| rpcrdma_qps[&s.dest_qp]);
    assert!(probes - sends.len() < 16, "{name}: few non-RPC Sends");
    assert!(sends.len() > 50, "{name}: found {} Sends", sends.len());

    // The server is whoever receives RPC calls.
    let mut server = None;
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for send in &sends {
        let (header, used) = Header::decode_prefix(&send.payload)
            .unwrap_or_else(|e| panic!("{name}: real Send rejected: {e}"));
        assert_eq!(
            header.to_bytes(),
            send.payload[..used],
            "{name}: re-encode differs"
        );
        if carries_rpc_call(&header, &send.payload, used) {
            assert!(server.is_none() || server == Some(send.dst));
            server = Some(send.dst);
        }
        let c = header.chunks();
        let kind = format!(
            "{} reads={} writes={} reply={}",
            header.proc().name(),
            c.map_or(0, |c| c.read_chunks().len()),
            c.map_or(0, |c| c.writes.len()),
            c.is_some_and(|c| c.reply.is_some())
        );
        *kinds.entry(kind).or_default() += 1;
    }
    let server = server.expect("capture holds RPC calls");
    let mut calls = 0;
    for send in sends.iter().filter(|s| s.dst == server) {
        calls += 1;
        for profile in Profile::ALL {
            let verdict = classify(&send.payload, profile);
            assert_eq!(
                verdict,
                Verdict::from(wire::svcrdma::Rule::Accepted),
                "{name}: {profile} would refuse a real kernel-client call ({} bytes)",
                send.payload.len()
            );
        }
        assert_ne!(send.src, server);
    }
    assert!(calls > 20, "{name}: {calls} calls");
    kinds
}

#[test]
fn linux_6_1_capture_decodes_and_is_accepted() {
    let kinds = check_capture("nfs3-linux-6.1.pcap");
    // The NFSv3 workload exercises Read, Write and Reply chunks, not just inline messages.
    assert!(kinds.keys().any(|k| k.contains("reads=1")), "{kinds:?}");
    assert!(kinds.keys().any(|k| k.contains("writes=1")), "{kinds:?}");
    assert!(kinds.keys().any(|k| k.contains("reply=true")), "{kinds:?}");
}

#[test]
fn linux_7_2_capture_decodes_and_is_accepted() {
    let kinds = check_capture("nfs3-linux-7.2.pcap");
    assert!(kinds.keys().any(|k| k.starts_with("RDMA_MSG")), "{kinds:?}");
}
