//! Synthetic RoCEv2 captures (pcap, Ethernet, IPv4, UDP 4791, valid ICRC) for tests, benchmarks
//! and the hostile-input measurements: a [`Synth`] writes packets between [`Side`]s, and the
//! functions at the bottom build the captures that once made `rig trace` quadratic or unbounded
//! (a Call whose Read chunks all point at one RDMA READ, many CM-less flows, Replies whose
//! segments match no WRITE, long traces differing everywhere).
//!
//! Sans-IO like the rest of the crate: bytes in memory, no files. Nothing here reads a capture,
//! so it is not on the untrusted-input path.

use std::net::Ipv4Addr;

use wire::rpcrdma::{Body, ChunkLists, Header, ReadSegment, Segment};
use wire::Xdr;

/// Payload per packet of a multi-packet operation (a 4096-byte path MTU).
pub const MTU: usize = 4096;

/// One end of an RC connection: its address, its QP number and the PSN of its next request.
#[derive(Debug, Clone, Copy)]
pub struct Side {
    pub addr: Ipv4Addr,
    pub qp: u32,
    pub psn: u32,
}

impl Side {
    pub fn new(addr: [u8; 4], qp: u32, psn: u32) -> Self {
        Side {
            addr: Ipv4Addr::from(addr),
            qp,
            psn,
        }
    }

    fn next_psn(&mut self, n: u32) -> u32 {
        let psn = self.psn;
        self.psn = crate::ib::psn_add(self.psn, n);
        psn
    }
}

/// A pcap capture being written, one microsecond per frame.
#[derive(Debug)]
pub struct Synth {
    out: Vec<u8>,
    frames: u64,
}

impl Default for Synth {
    fn default() -> Self {
        Synth::new()
    }
}

/// RC opcodes (IBTA Vol 1 Table 38).
pub mod op {
    pub const SEND_FIRST: u8 = 0x00;
    pub const SEND_MIDDLE: u8 = 0x01;
    pub const SEND_LAST: u8 = 0x02;
    pub const SEND_ONLY: u8 = 0x04;
    pub const WRITE_FIRST: u8 = 0x06;
    pub const WRITE_MIDDLE: u8 = 0x07;
    pub const WRITE_LAST: u8 = 0x08;
    pub const WRITE_ONLY: u8 = 0x0a;
    pub const READ_REQUEST: u8 = 0x0c;
    pub const READ_RESPONSE_FIRST: u8 = 0x0d;
    pub const READ_RESPONSE_MIDDLE: u8 = 0x0e;
    pub const READ_RESPONSE_LAST: u8 = 0x0f;
    pub const READ_RESPONSE_ONLY: u8 = 0x10;
    pub const ACK: u8 = 0x11;
}

impl Synth {
    /// An empty pcap (little endian, microseconds, Ethernet, snaplen 256 KiB).
    pub fn new() -> Self {
        let mut out = Vec::new();
        out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        out.extend_from_slice(&2u16.to_le_bytes());
        out.extend_from_slice(&4u16.to_le_bytes());
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&(256u32 << 10).to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        Synth { out, frames: 0 }
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The pcap bytes.
    pub fn into_pcap(self) -> Vec<u8> {
        self.out
    }

    /// Append one raw frame.
    pub fn frame(&mut self, data: &[u8]) {
        self.frames += 1;
        let t = self.frames;
        let len = data.len() as u32;
        for v in [(t / 1_000_000) as u32, (t % 1_000_000) as u32, len, len] {
            self.out.extend_from_slice(&v.to_le_bytes());
        }
        self.out.extend_from_slice(data);
    }

    /// One RoCEv2 packet from `src` to `dst` ([`roce_frame`]).
    #[allow(clippy::too_many_arguments)]
    pub fn packet(
        &mut self,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        opcode: u8,
        dest_qp: u32,
        psn: u32,
        ext: &[u8],
        payload: &[u8],
    ) {
        if let Some(frame) = roce_frame(src, dst, opcode, dest_qp, psn, ext, payload) {
            self.frame(&frame);
        }
    }

    /// A SEND from `from` to `to` (SEND_ONLY, or FIRST/MIDDLE/LAST above [`MTU`]).
    pub fn send(&mut self, from: &mut Side, to: &Side, payload: &[u8]) {
        let opcodes = [
            op::SEND_ONLY,
            op::SEND_FIRST,
            op::SEND_MIDDLE,
            op::SEND_LAST,
        ];
        for (opcode, piece) in mtu_pieces(payload, opcodes) {
            let psn = from.next_psn(1);
            self.packet(from.addr, to.addr, opcode, to.qp, psn, &[], piece);
        }
    }

    /// An RDMA WRITE of `data` by `from` into `to`'s memory at (`rkey`, `va`).
    pub fn write(&mut self, from: &mut Side, to: &Side, rkey: u32, va: u64, data: &[u8]) {
        let opcodes = [
            op::WRITE_ONLY,
            op::WRITE_FIRST,
            op::WRITE_MIDDLE,
            op::WRITE_LAST,
        ];
        for (i, (opcode, piece)) in mtu_pieces(data, opcodes).into_iter().enumerate() {
            let ext = if i == 0 {
                reth(va, rkey, data.len() as u32)
            } else {
                Vec::new()
            };
            let psn = from.next_psn(1);
            self.packet(from.addr, to.addr, opcode, to.qp, psn, &ext, piece);
        }
    }

    /// An RDMA READ by `requester` of `data` from `responder`'s memory at (`rkey`, `va`): the
    /// request, then the responses (one PSN each).
    pub fn read(
        &mut self,
        requester: &mut Side,
        responder: &Side,
        rkey: u32,
        va: u64,
        data: &[u8],
    ) {
        let opcodes = [
            op::READ_RESPONSE_ONLY,
            op::READ_RESPONSE_FIRST,
            op::READ_RESPONSE_MIDDLE,
            op::READ_RESPONSE_LAST,
        ];
        let pieces = mtu_pieces(data, opcodes);
        let psn = requester.next_psn(pieces.len() as u32);
        self.packet(
            requester.addr,
            responder.addr,
            op::READ_REQUEST,
            responder.qp,
            psn,
            &reth(va, rkey, data.len() as u32),
            &[],
        );
        for (i, (opcode, piece)) in pieces.into_iter().enumerate() {
            // Every response but a MIDDLE one carries an AETH.
            let ext: &[u8] = if opcode == op::READ_RESPONSE_MIDDLE {
                &[]
            } else {
                &[0, 0, 0, 0]
            };
            self.packet(
                responder.addr,
                requester.addr,
                opcode,
                requester.qp,
                crate::ib::psn_add(psn, i as u32),
                ext,
                piece,
            );
        }
    }
}

/// `data` cut into packets of at most [`MTU`] bytes (one empty packet for no data), each with
/// its opcode from `[only, first, middle, last]`: a message of one packet is ONLY, a longer one
/// FIRST, MIDDLE…, LAST.
fn mtu_pieces(data: &[u8], [only, first, middle, last]: [u8; 4]) -> Vec<(u8, &[u8])> {
    if data.is_empty() {
        return vec![(only, data)];
    }
    let count = data.len().div_ceil(MTU);
    data.chunks(MTU)
        .enumerate()
        .map(|(i, piece)| match (i, count - 1) {
            (0, 0) => (only, piece),
            (0, _) => (first, piece),
            (i, l) if i == l => (last, piece),
            _ => (middle, piece),
        })
        .collect()
}

/// One RoCEv2 Ethernet frame from `src` to `dst`: BTH (`opcode`, `dest_qp`, `psn`), the extended
/// headers `ext`, the payload, pad and a valid ICRC; `None` when the datagram does not fit UDP.
pub fn roce_frame(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    opcode: u8,
    dest_qp: u32,
    psn: u32,
    ext: &[u8],
    payload: &[u8],
) -> Option<Vec<u8>> {
    let pad = (4 - payload.len() % 4) % 4;
    let mut transport = vec![opcode, (pad as u8) << 4, 0xff, 0xff];
    transport.extend_from_slice(&(dest_qp & 0x00ff_ffff).to_be_bytes());
    transport.extend_from_slice(&((psn & crate::ib::PSN_MASK) | 0x8000_0000).to_be_bytes());
    transport.extend_from_slice(ext);
    transport.extend_from_slice(payload);
    transport.extend(std::iter::repeat_n(0, pad + crate::ib::ICRC_LEN));
    let builder = etherparse::PacketBuilder::ethernet2([2; 6], [4; 6])
        .ipv4(src.octets(), dst.octets(), 64)
        .udp(49152, crate::link::ROCEV2_UDP_PORT);
    let mut frame = Vec::with_capacity(64 + transport.len());
    builder.write(&mut frame, &transport).ok()?;
    if let Some(roce) = crate::link::roce_packet(crate::capture::LinkType::Ethernet, &frame) {
        if let Some(icrc) = crate::icrc::compute(roce.icrc_prefix, roce.transport) {
            let n = frame.len();
            frame[n - 4..].copy_from_slice(&icrc.to_le_bytes());
        }
    }
    Some(frame)
}

/// An RDMA Extended Transport Header.
pub fn reth(va: u64, rkey: u32, len: u32) -> Vec<u8> {
    let mut v = va.to_be_bytes().to_vec();
    v.extend_from_slice(&rkey.to_be_bytes());
    v.extend_from_slice(&len.to_be_bytes());
    v
}

/// An RPC-over-RDMA RDMA_MSG Call: transport header with `chunks`, RPC call header for
/// (`prog`, `vers`, `proc_`), then `args`.
pub fn call(
    xid: u32,
    chunks: ChunkLists,
    prog: u32,
    vers: u32,
    proc_: u32,
    args: &[u8],
) -> Vec<u8> {
    let rpc = wire::rpc::CallHeader::new(xid, prog, vers, proc_).to_bytes();
    rdma_msg(xid, chunks, &rpc, args)
}

/// An RPC-over-RDMA RDMA_MSG Reply: transport header with `chunks`, an accepted RPC reply,
/// then `results`.
pub fn reply(xid: u32, chunks: ChunkLists, results: &[u8]) -> Vec<u8> {
    let rpc = wire::rpc::ReplyHeader::success(xid).to_bytes();
    rdma_msg(xid, chunks, &rpc, results)
}

/// An RDMA_MSG (32 credits) with `chunks`, then the RPC header `rpc` and the `body` after it.
fn rdma_msg(xid: u32, chunks: ChunkLists, rpc: &[u8], body: &[u8]) -> Vec<u8> {
    let header = Header {
        xid,
        vers: 1,
        credits: 32,
        body: Body::Msg(chunks),
    };
    let mut out = header.to_bytes();
    out.extend_from_slice(rpc);
    out.extend_from_slice(body);
    out
}

/// The client and server of the synthetic connections.
pub fn pair() -> (Side, Side) {
    (
        Side::new([10, 0, 0, 2], 0x11, 100),
        Side::new([10, 0, 0, 1], 0x12, 5000),
    )
}

/// An NFSv3 WRITE Call whose `chunks` Read chunks (positions 4, 8, ...: one segment each) all
/// name the same `read_len` bytes, then the one RDMA READ that pulls them and an empty Reply.
/// Rebuilding the Call naively allocates `chunks × read_len` bytes.
pub fn shared_read(chunks: usize, read_len: usize) -> Vec<u8> {
    let (mut c, mut s) = pair();
    let mut synth = Synth::new();
    let target = Segment {
        handle: 0x1086,
        length: read_len as u32,
        offset: 0x7f00_0000,
    };
    let reads = (0..chunks)
        .map(|i| ReadSegment {
            position: 4 * (i as u32 + 1),
            target,
        })
        .collect();
    let lists = ChunkLists {
        reads,
        ..Default::default()
    };
    synth.send(&mut c, &s, &call(1, lists, 100003, 3, 7, &[0; 64]));
    synth.read(
        &mut s,
        &c,
        target.handle,
        target.offset,
        &vec![0x5a; read_len],
    );
    synth.send(&mut s, &c, &reply(1, ChunkLists::default(), &[0; 8]));
    synth.into_pcap()
}

/// `flows` NFS NULL Calls, each from its own client QP to its own server QP, no CM exchange:
/// every one is a new flow and a new traffic-paired connection.
pub fn many_flows(flows: usize) -> Vec<u8> {
    let mut synth = Synth::new();
    for i in 0..flows {
        let mut c = Side::new([10, 0, 0, 2], 0x1000 + i as u32, 1);
        let s = Side::new([10, 0, 0, 1], 0x10_0000 + i as u32, 1);
        synth.send(
            &mut c,
            &s,
            &call(i as u32, ChunkLists::default(), 100003, 3, 0, &[]),
        );
    }
    synth.into_pcap()
}

/// `writes` 64-byte RDMA WRITEs on one handle at increasing offsets, and after every
/// `writes_per_reply` of them a Reply whose Write chunk has `segments` 64-byte segments on that
/// handle at the offsets of the *oldest* WRITEs: every segment could be compared with every
/// earlier WRITE.
pub fn old_writes(writes: usize, writes_per_reply: usize, segments: usize) -> Vec<u8> {
    let (mut c, mut s) = pair();
    let mut synth = Synth::new();
    let handle = 0x2001;
    let per = writes_per_reply.max(1);
    let mut xid = 1u32;
    for i in 0..writes {
        synth.write(&mut s, &c, handle, 64 * i as u64, &[0xab; 64]);
        if (i + 1) % per == 0 {
            let chunk: Vec<Segment> = (0..segments)
                .map(|j| Segment {
                    handle,
                    length: 64,
                    offset: 64 * j as u64,
                })
                .collect();
            let lists = ChunkLists {
                writes: vec![chunk],
                ..Default::default()
            };
            synth.send(
                &mut c,
                &s,
                &call(xid, ChunkLists::default(), 100003, 3, 0, &[]),
            );
            synth.send(&mut s, &c, &reply(xid, lists, &[0; 4]));
            xid += 1;
        }
    }
    synth.into_pcap()
}

/// `calls` NULL Calls of program `prog` (100003 NFS, 100005 MOUNT) version 3 on one connection:
/// two captures with different programs render to traces that differ on every line.
pub fn null_calls(calls: usize, prog: u32) -> Vec<u8> {
    let (mut c, s) = pair();
    let mut synth = Synth::new();
    for i in 0..calls {
        synth.send(
            &mut c,
            &s,
            &call(i as u32 + 1, ChunkLists::default(), prog, 3, 0, &[]),
        );
    }
    synth.into_pcap()
}

/// An NFSv3 LOOKUP Call whose file name is `name` (any bytes: control characters included).
pub fn lookup_named(name: &[u8]) -> Vec<u8> {
    let (mut c, s) = pair();
    let mut synth = Synth::new();
    let mut args = wire::Writer::new();
    args.opaque_var(&[7; 8]).opaque_var(name);
    synth.send(
        &mut c,
        &s,
        &call(9, ChunkLists::default(), 100003, 3, 3, args.as_bytes()),
    );
    synth.into_pcap()
}

pub mod siw;
