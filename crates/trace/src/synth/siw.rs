//! Synthetic soft-iWARP captures (pcap, Ethernet, IPv4, TCP, MPA with CRC32c, DDP, RDMAP) as
//! Linux siw writes them, and the same RPC-over-RDMA exchanges written over RoCEv2 and over
//! siw through one [`RdmaCapture`] trait, so their traces can be compared.
//!
//! Sans-IO like [`super::Synth`]: bytes in memory. The writer never reads a capture.

use std::net::Ipv4Addr;

use wire::rpcrdma::{Body, ChunkLists, Header, ReadSegment, Segment};
use wire::{Writer, Xdr};

use super::{call, reply, Side, Synth};
use crate::ddp::{self, Placement, RdmapOpcode, ReadRequest};
use crate::model::Role;
use crate::mpa::{self, IrdOrd, StartFrame, StartKind};

/// The iWARP port of NFS/RDMA (RFC 5666 §10).
pub const PORT: u16 = crate::session::NFS_RDMA_PORT;
/// DDP payload per FPDU (siw cuts messages to fit one TCP segment).
pub const FPDU_PAYLOAD: usize = 1400;

/// The RDMA operations an RPC-over-RDMA exchange is written with, whatever the transport.
pub trait RdmaCapture {
    /// A Send from `from` to its peer.
    fn send(&mut self, from: Role, payload: &[u8]);
    /// An RDMA Write by `from` into its peer's memory at (`handle`, `offset`).
    fn write(&mut self, from: Role, handle: u32, offset: u64, data: &[u8]);
    /// An RDMA Read by `requester` of `data` from its peer's memory at (`handle`, `offset`).
    fn read(&mut self, requester: Role, handle: u32, offset: u64, data: &[u8]);
}

/// An RC connection over RoCEv2 (no CM exchange): [`super::pair`]'s sides.
#[derive(Debug)]
pub struct Roce {
    pub synth: Synth,
    pub client: Side,
    pub server: Side,
}

impl Default for Roce {
    fn default() -> Self {
        let (client, server) = super::pair();
        Roce {
            synth: Synth::new(),
            client,
            server,
        }
    }
}

impl Roce {
    fn sides(&mut self, from: Role) -> (&mut Side, Side) {
        match from {
            Role::Client => (&mut self.client, self.server),
            Role::Server => (&mut self.server, self.client),
        }
    }
}

impl RdmaCapture for Roce {
    fn send(&mut self, from: Role, payload: &[u8]) {
        let (mut a, b) = match from {
            Role::Client => (self.client, self.server),
            Role::Server => (self.server, self.client),
        };
        self.synth.send(&mut a, &b, payload);
        *self.sides(from).0 = a;
    }

    fn write(&mut self, from: Role, handle: u32, offset: u64, data: &[u8]) {
        let (mut a, b) = match from {
            Role::Client => (self.client, self.server),
            Role::Server => (self.server, self.client),
        };
        self.synth.write(&mut a, &b, handle, offset, data);
        *self.sides(from).0 = a;
    }

    fn read(&mut self, requester: Role, handle: u32, offset: u64, data: &[u8]) {
        let (mut a, b) = match requester {
            Role::Client => (self.client, self.server),
            Role::Server => (self.server, self.client),
        };
        self.synth.read(&mut a, &b, handle, offset, data);
        *self.sides(requester).0 = a;
    }
}

/// TCP flags of a synthetic segment.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags {
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub rst: bool,
}

/// One end of a TCP connection carrying iWARP.
#[derive(Debug, Clone, Copy)]
pub struct End {
    pub addr: Ipv4Addr,
    pub port: u16,
    /// Next sequence number this end sends.
    pub seq: u32,
    /// Next MSN per untagged queue (RFC 5041 §5.1: the first is 1): Send, Read Request,
    /// Terminate.
    pub msn: [u32; 3],
}

/// An iWARP connection over TCP being written to a pcap.
#[derive(Debug)]
pub struct Siw {
    pub synth: Synth,
    /// Client (index 0, the MPA initiator) and server.
    pub ends: [End; 2],
    /// CRCs negotiated (the MPA Reply's C bit).
    pub crc: bool,
    /// Sink STag of the next Read Request (the requester's buffer).
    next_sink: u32,
    /// Write every data segment twice (a TCP retransmission of each).
    pub duplicate_data: bool,
    /// Write data segments in swapped pairs (each pair arrives out of order).
    pub swap_data: bool,
    /// A data segment held to be written after the next one from the same side.
    held: Option<(usize, Vec<u8>)>,
}

fn index(role: Role) -> usize {
    match role {
        Role::Client => 0,
        Role::Server => 1,
    }
}

impl Siw {
    /// A connection from 10.0.0.2:`client_port` to 10.0.0.1:20049, nothing written yet.
    pub fn new(client_port: u16, crc: bool) -> Self {
        Siw {
            synth: Synth::new(),
            ends: [
                End {
                    addr: Ipv4Addr::new(10, 0, 0, 2),
                    port: client_port,
                    seq: 0x1000_0000,
                    msn: [1; 3],
                },
                End {
                    addr: Ipv4Addr::new(10, 0, 0, 1),
                    port: PORT,
                    seq: 0xffff_ff00, // wraps during the exchange
                    msn: [1; 3],
                },
            ],
            crc,
            next_sink: 0x5000,
            duplicate_data: false,
            swap_data: false,
            held: None,
        }
    }

    /// The pcap bytes (a data segment held for swapping is written last).
    pub fn into_pcap(mut self) -> Vec<u8> {
        if let Some((_, frame)) = self.held.take() {
            self.synth.frame(&frame);
        }
        self.synth.into_pcap()
    }

    /// A TCP segment from `from` at sequence `seq` (acknowledging the peer's next byte),
    /// written as is.
    pub fn raw(&mut self, from: Role, seq: u32, flags: Flags, payload: &[u8]) {
        let (a, b) = (self.ends[index(from)], self.ends[1 - index(from)]);
        if let Some(frame) = tcp_frame(a, b, seq, flags, payload) {
            self.synth.frame(&frame);
        }
    }

    /// Stream bytes from `from` in one segment at its next sequence number, which advances.
    pub fn bytes(&mut self, from: Role, bytes: &[u8]) {
        self.segment(from, Flags::default(), bytes);
    }

    fn segment(&mut self, from: Role, flags: Flags, payload: &[u8]) {
        let i = index(from);
        let seq = self.ends[i].seq;
        let flags = Flags {
            ack: flags.ack || !flags.syn || i == 1,
            ..flags
        };
        if let Some(frame) = tcp_frame(self.ends[i], self.ends[1 - i], seq, flags, payload) {
            if payload.is_empty() {
                if let Some((_, held)) = self.held.take() {
                    self.synth.frame(&held);
                }
                self.synth.frame(&frame);
            } else if self.swap_data {
                // Swapped within one side only: the peer's answer never overtakes its cause.
                match self.held.take() {
                    Some((side, held)) if side == i => {
                        self.synth.frame(&frame);
                        self.synth.frame(&held);
                    }
                    Some((_, held)) => {
                        self.synth.frame(&held);
                        self.held = Some((i, frame));
                    }
                    None => self.held = Some((i, frame)),
                }
            } else {
                self.synth.frame(&frame);
                if self.duplicate_data {
                    self.synth.frame(&frame);
                }
            }
        }
        let n = payload.len() as u32 + u32::from(flags.syn) + u32::from(flags.fin);
        self.ends[i].seq = seq.wrapping_add(n);
    }

    /// The TCP handshake.
    pub fn handshake(&mut self) {
        let syn = Flags {
            syn: true,
            ..Flags::default()
        };
        self.segment(Role::Client, syn, &[]);
        self.segment(Role::Server, Flags { ack: true, ..syn }, &[]);
        self.segment(Role::Client, Flags::default(), &[]);
    }

    /// The MPA Request and Reply (Rev 2, IRD/ORD, RFC 8797 private data).
    pub fn mpa_exchange(&mut self) {
        let request = wire::private_data::PrivateData::new(4096, 4096, true).encode();
        let reply = wire::private_data::PrivateData::new(4096, 4096, false).encode();
        for (role, kind, data) in [
            (Role::Client, StartKind::Request, &request),
            (Role::Server, StartKind::Reply, &reply),
        ] {
            let mut out = Vec::new();
            mpa::emit_start(
                &StartFrame {
                    kind,
                    markers: false,
                    crc: self.crc,
                    reject: false,
                    revision: 2,
                    ird_ord: Some(IrdOrd {
                        ird: 16,
                        ord: 16,
                        peer_to_peer: false,
                        rtr: (0, 0),
                    }),
                    private_data: data,
                },
                &mut out,
            );
            self.bytes(role, &out);
        }
    }

    /// Handshake and MPA exchange.
    pub fn connect(&mut self) {
        self.handshake();
        self.mpa_exchange();
    }

    /// Both FINs and the last ACK.
    pub fn close(&mut self) {
        let fin = Flags {
            fin: true,
            ack: true,
            ..Flags::default()
        };
        self.segment(Role::Client, fin, &[]);
        self.segment(Role::Server, fin, &[]);
        self.segment(Role::Client, Flags::default(), &[]);
    }

    /// The FPDUs of one DDP message: `payload` cut into [`FPDU_PAYLOAD`] pieces, each with its
    /// header from `header(offset)`.
    fn fpdus(
        &self,
        opcode: RdmapOpcode,
        payload: &[u8],
        header: impl Fn(usize) -> Placement,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        let count = payload.len().div_ceil(FPDU_PAYLOAD).max(1);
        for i in 0..count {
            let piece = payload
                .get(i * FPDU_PAYLOAD..((i + 1) * FPDU_PAYLOAD).min(payload.len()))
                .unwrap_or_default();
            let mut ulpdu = Vec::new();
            ddp::emit(
                i + 1 == count,
                opcode,
                header(i * FPDU_PAYLOAD),
                piece,
                &mut ulpdu,
            );
            mpa::emit_fpdu(&ulpdu, self.crc, &mut out);
        }
        out
    }

    /// The FPDUs of a Send from `from` (its MSN taken).
    pub fn send_fpdus(&mut self, from: Role, payload: &[u8]) -> Vec<u8> {
        let msn = self.take_msn(from, ddp::QN_SEND);
        self.fpdus(RdmapOpcode::Send, payload, |mo| Placement::Untagged {
            ulp: 0,
            qn: ddp::QN_SEND,
            msn,
            mo: mo as u32,
        })
    }

    fn take_msn(&mut self, from: Role, qn: u32) -> u32 {
        let slot = &mut self.ends[index(from)].msn[qn as usize];
        let msn = *slot;
        *slot = slot.wrapping_add(1);
        msn
    }

    /// Write FPDU bytes from `from`, one TCP segment per FPDU.
    pub fn fpdu_segments(&mut self, from: Role, mut bytes: &[u8]) {
        while let Ok(Some(f)) = mpa::parse_fpdu(bytes, false, mpa::MAX_ULPDU) {
            self.bytes(from, &bytes[..f.len]);
            bytes = &bytes[f.len..];
        }
        if !bytes.is_empty() {
            self.bytes(from, bytes);
        }
    }

    /// A Terminate from `from` (RFC 5040 §4.8).
    pub fn terminate(&mut self, from: Role, t: ddp::Terminate) {
        let msn = self.take_msn(from, ddp::QN_TERMINATE);
        let fpdus = self.fpdus(RdmapOpcode::Terminate, &t.emit(), |_| Placement::Untagged {
            ulp: 0,
            qn: ddp::QN_TERMINATE,
            msn,
            mo: 0,
        });
        self.fpdu_segments(from, &fpdus);
    }
}

impl RdmaCapture for Siw {
    fn send(&mut self, from: Role, payload: &[u8]) {
        let fpdus = self.send_fpdus(from, payload);
        self.fpdu_segments(from, &fpdus);
    }

    fn write(&mut self, from: Role, handle: u32, offset: u64, data: &[u8]) {
        let fpdus = self.fpdus(RdmapOpcode::Write, data, |at| Placement::Tagged {
            stag: handle,
            to: offset.wrapping_add(at as u64),
        });
        self.fpdu_segments(from, &fpdus);
    }

    fn read(&mut self, requester: Role, handle: u32, offset: u64, data: &[u8]) {
        let sink = self.next_sink;
        self.next_sink = self.next_sink.wrapping_add(0x100);
        let sink_to = 0x9000_0000u64;
        let msn = self.take_msn(requester, ddp::QN_READ_REQUEST);
        let rr = ReadRequest {
            sink_stag: sink,
            sink_to,
            size: data.len() as u32,
            source_stag: handle,
            source_to: offset,
        };
        let request = self.fpdus(RdmapOpcode::ReadRequest, &rr.emit(), |_| {
            Placement::Untagged {
                ulp: 0,
                qn: ddp::QN_READ_REQUEST,
                msn,
                mo: 0,
            }
        });
        self.fpdu_segments(requester, &request);
        let responder = match requester {
            Role::Client => Role::Server,
            Role::Server => Role::Client,
        };
        let responses = self.fpdus(RdmapOpcode::ReadResponse, data, |at| Placement::Tagged {
            stag: sink,
            to: sink_to + at as u64,
        });
        self.fpdu_segments(responder, &responses);
    }
}

/// One Ethernet/IPv4/TCP frame from `a` to `b`.
pub fn tcp_frame(a: End, b: End, seq: u32, flags: Flags, payload: &[u8]) -> Option<Vec<u8>> {
    let mut tcp = etherparse::PacketBuilder::ethernet2([2; 6], [4; 6])
        .ipv4(a.addr.octets(), b.addr.octets(), 64)
        .tcp(a.port, b.port, seq, 65535);
    if flags.syn {
        tcp = tcp.syn();
    }
    if flags.ack {
        tcp = tcp.ack(b.seq);
    }
    if flags.fin {
        tcp = tcp.fin();
    }
    if flags.rst {
        tcp = tcp.rst();
    }
    let mut frame = Vec::with_capacity(64 + payload.len());
    tcp.write(&mut frame, payload).ok()?;
    Some(frame)
}

/// Handles of the exchange's chunks.
pub const READ_HANDLE: u32 = 0x1086;
pub const WRITE_HANDLE: u32 = 0x2001;
pub const REPLY_HANDLE: u32 = 0x3002;

/// An NFSv3 exchange using every chunk type: a WRITE whose data goes by Read chunk (the server
/// pulls it with an RDMA Read), a READ whose data comes back by Write chunk (RDMA Write before
/// the Reply), and a READLINK whose whole reply comes back by Reply chunk (RDMA Write, then an
/// RDMA_NOMSG).
pub fn nfs3_chunks(t: &mut dyn RdmaCapture) {
    let fh = [7u8; 8];
    // WRITE (proc 7), 6000 bytes by Read chunk at the data's XDR position (RFC 8267 §4).
    let data: Vec<u8> = (0..6000u32).map(|i| (i % 251) as u8).collect();
    let mut args = Writer::new();
    args.opaque_var(&fh)
        .u64(0)
        .u32(data.len() as u32)
        .u32(2)
        .u32(data.len() as u32);
    let rpc = wire::rpc::CallHeader::new(1, 100003, 3, 7).to_bytes();
    let position = (rpc.len() + args.as_bytes().len()) as u32;
    let target = Segment {
        handle: READ_HANDLE,
        length: data.len() as u32,
        offset: 0x7f00_0000,
    };
    let lists = ChunkLists {
        reads: vec![ReadSegment { position, target }],
        ..Default::default()
    };
    t.send(Role::Client, &call(1, lists, 100003, 3, 7, args.as_bytes()));
    t.read(Role::Server, READ_HANDLE, target.offset, &data);
    let mut res = Writer::new();
    // NFS3_OK, wcc_data (no pre, no post), count, committed FILE_SYNC, verifier.
    res.u32(0)
        .bool(false)
        .bool(false)
        .u32(data.len() as u32)
        .u32(2)
        .u64(0x1122_3344);
    t.send(
        Role::Server,
        &reply(1, ChunkLists::default(), res.as_bytes()),
    );

    // READ (proc 6) of 5000 bytes by Write chunk.
    let seg = Segment {
        handle: WRITE_HANDLE,
        length: 8192,
        offset: 0x7f10_0000,
    };
    let mut args = Writer::new();
    args.opaque_var(&fh).u64(0).u32(5000);
    let lists = ChunkLists {
        writes: vec![vec![seg]],
        ..Default::default()
    };
    t.send(Role::Client, &call(2, lists, 100003, 3, 6, args.as_bytes()));
    let read_data = vec![0x5a; 5000];
    t.write(Role::Server, WRITE_HANDLE, seg.offset, &read_data);
    let mut res = Writer::new();
    res.u32(0).bool(false).u32(5000).bool(true).u32(5000);
    let lists = ChunkLists {
        writes: vec![vec![Segment {
            length: 5000,
            ..seg
        }]],
        ..Default::default()
    };
    t.send(Role::Server, &reply(2, lists, res.as_bytes()));

    // READLINK (proc 5) answered through a Reply chunk.
    let seg = Segment {
        handle: REPLY_HANDLE,
        length: 4096,
        offset: 0x7f20_0000,
    };
    let mut args = Writer::new();
    args.opaque_var(&fh);
    let lists = ChunkLists {
        reply: Some(vec![seg]),
        ..Default::default()
    };
    t.send(Role::Client, &call(3, lists, 100003, 3, 5, args.as_bytes()));
    let mut message = wire::rpc::ReplyHeader::success(3).to_bytes();
    let mut res = Writer::new();
    res.u32(0).bool(false).opaque_var(b"/export/target");
    message.extend_from_slice(res.as_bytes());
    t.write(Role::Server, REPLY_HANDLE, seg.offset, &message);
    let header = Header {
        xid: 3,
        vers: 1,
        credits: 32,
        body: Body::Nomsg(ChunkLists {
            reply: Some(vec![Segment {
                length: message.len() as u32,
                ..seg
            }]),
            ..Default::default()
        }),
    };
    t.send(Role::Server, &header.to_bytes());
}

/// [`nfs3_chunks`] over RoCEv2 (no CM exchange).
pub fn nfs3_chunks_roce() -> Vec<u8> {
    let mut roce = Roce::default();
    nfs3_chunks(&mut roce);
    roce.synth.into_pcap()
}

/// [`nfs3_chunks`] over siw: handshake, MPA exchange (CRCs when `crc`), the exchange, close.
pub fn nfs3_chunks_siw(crc: bool) -> Vec<u8> {
    let mut siw = Siw::new(40001, crc);
    siw.connect();
    nfs3_chunks(&mut siw);
    siw.close();
    siw.into_pcap()
}
