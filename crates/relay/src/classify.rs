//! What one Ethernet frame is, as far as the rules care: its direction, and whether it is an RC
//! packet (opcode class, QP, PSN, ACK kind, the RPC it starts), a CM MAD, the relay's own control
//! datagram, a TCP segment (soft-iWARP rides on TCP), or anything else.
//!
//! Every frame is untrusted: the layers are sliced by `trace::link` (bounded by the captured
//! bytes) and decoded by `trace::ib`, `trace::cm` and `wire::rpcrdma`, which return typed errors;
//! a frame that fails any of them is simply a less specific kind, never a panic.

use serde::{Deserialize, Serialize};
use trace::capture::LinkType;
use trace::cm::CmMessage;
use trace::ib::{AckSyndrome, Opcode};
use wire::rpcrdma::{Body, Header, Limits};

use crate::udp;

/// Which way a frame travels through the relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Direction {
    /// Arrived on the client port, goes to the server.
    FromClient,
    /// Arrived on the server port, goes to the client.
    FromServer,
}

impl Direction {
    /// The other way.
    pub fn opposite(self) -> Direction {
        match self {
            Direction::FromClient => Direction::FromServer,
            Direction::FromServer => Direction::FromClient,
        }
    }

    /// The side that receives a frame travelling this way.
    pub fn receiver(self) -> Side {
        match self {
            Direction::FromClient => Side::Server,
            Direction::FromServer => Side::Client,
        }
    }
}

/// One of the relay's two ports (one per guest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Side {
    Client,
    Server,
}

/// The kind of RC packet a rule can select. Sends with immediate data or invalidate count as the
/// plain Send of the same position, RDMA WRITE of any position is one class, and so are all READ
/// responses: faults are injected per message role, not per IBTA opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OpcodeClass {
    SendFirst,
    SendMiddle,
    SendLast,
    SendOnly,
    RdmaWrite,
    ReadRequest,
    ReadResponse,
    /// An Acknowledge packet whose AETH says ACK (or a reserved syndrome).
    Ack,
    /// An Acknowledge packet whose AETH says NAK or RNR NAK.
    Nak,
    /// Compare-and-swap, fetch-and-add and their acknowledge (RPC-over-RDMA uses none).
    Atomic,
}

impl OpcodeClass {
    fn of(opcode: Opcode, ack: Option<AckKind>) -> OpcodeClass {
        use Opcode::*;
        match opcode {
            SendFirst => OpcodeClass::SendFirst,
            SendMiddle => OpcodeClass::SendMiddle,
            SendLast | SendLastImm | SendLastInvalidate => OpcodeClass::SendLast,
            SendOnly | SendOnlyImm | SendOnlyInvalidate | UdSendOnly | UdSendOnlyImm => {
                OpcodeClass::SendOnly
            }
            WriteFirst | WriteMiddle | WriteLast | WriteLastImm | WriteOnly | WriteOnlyImm => {
                OpcodeClass::RdmaWrite
            }
            ReadRequest => OpcodeClass::ReadRequest,
            ReadResponseFirst | ReadResponseMiddle | ReadResponseLast | ReadResponseOnly => {
                OpcodeClass::ReadResponse
            }
            Acknowledge => match ack {
                Some(AckKind::Nak | AckKind::RnrNak) => OpcodeClass::Nak,
                _ => OpcodeClass::Ack,
            },
            AtomicAcknowledge | CompareSwap | FetchAdd => OpcodeClass::Atomic,
        }
    }

    /// The name used in marker lines, e.g. `SEND Only`, `RC ACK`.
    pub fn name(self) -> &'static str {
        match self {
            OpcodeClass::SendFirst => "SEND First",
            OpcodeClass::SendMiddle => "SEND Middle",
            OpcodeClass::SendLast => "SEND Last",
            OpcodeClass::SendOnly => "SEND Only",
            OpcodeClass::RdmaWrite => "RDMA WRITE",
            OpcodeClass::ReadRequest => "RDMA READ Request",
            OpcodeClass::ReadResponse => "RDMA READ Response",
            OpcodeClass::Ack => "RC ACK",
            OpcodeClass::Nak => "RC NAK",
            OpcodeClass::Atomic => "RC ATOMIC",
        }
    }

    /// Whether the packet is part of an RC Send message.
    pub fn is_send(self) -> bool {
        matches!(
            self,
            OpcodeClass::SendFirst
                | OpcodeClass::SendMiddle
                | OpcodeClass::SendLast
                | OpcodeClass::SendOnly
        )
    }
}

/// What an AETH says (IBTA Vol 1 §9.3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AckKind {
    Ack,
    Nak,
    RnrNak,
}

/// Whether an RPC message is a Call or a Reply (RFC 5531 `msg_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RpcMsg {
    Call,
    Reply,
}

/// The RPC message an RC Send starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RpcInfo {
    pub xid: u32,
    pub msg: RpcMsg,
}

/// An RC (or other non-CM RoCE) packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceInfo {
    pub opcode: OpcodeClass,
    pub dest_qp: u32,
    pub psn: u32,
    /// From the AETH, on ACK/NAK packets and on READ responses that carry one.
    pub ack: Option<AckKind>,
    /// On SEND First/Only whose payload starts with an RPC-over-RDMA header.
    pub rpc: Option<RpcInfo>,
}

/// Which CM message a MAD is (IBTA Vol 1 §12.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CmKind {
    Req,
    Rep,
    Rtu,
    Dreq,
    Drep,
    Rej,
    Mra,
    Other,
}

impl CmKind {
    /// The name used in marker lines, e.g. `CM REQ`.
    pub fn name(self) -> &'static str {
        match self {
            CmKind::Req => "CM REQ",
            CmKind::Rep => "CM REP",
            CmKind::Rtu => "CM RTU",
            CmKind::Dreq => "CM DREQ",
            CmKind::Drep => "CM DREP",
            CmKind::Rej => "CM REJ",
            CmKind::Mra => "CM MRA",
            CmKind::Other => "CM other",
        }
    }
}

/// A CM MAD: its kind and what pairs the two QPs of a connection (REQ and REP name their sender's
/// QP; REP names the REQ's communication ID as its remote one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmInfo {
    pub kind: CmKind,
    pub local_comm_id: Option<u32>,
    pub remote_comm_id: Option<u32>,
    pub local_qpn: Option<u32>,
}

/// What a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    Roce(RoceInfo),
    Cm(CmInfo),
    /// A request to the relay itself (UDP to [`udp::CONTROL_PORT`] from the client side).
    Control,
    /// A TCP segment: soft-iWARP's frames (MPA/DDP/RDMAP over TCP), and MOUNT or NFS over TCP.
    /// Only rules that select by direction alone (`Any`, `Direction`) apply to it: nothing
    /// RDMA-level is decoded here, so a rule naming an opcode, QP, PSN, CM message or RPC
    /// never matches one.
    Tcp,
    /// ARP, IPv6 neighbour discovery, RoCE packets this relay does not decode (UD other than CM,
    /// unknown opcodes, malformed headers), anything else: always forwarded untouched, no rule
    /// applies to it.
    Other,
}

/// One classified frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    pub direction: Direction,
    pub kind: FrameKind,
}

impl FrameInfo {
    /// The frame as a marker names it, e.g. `RC ACK PSN 0x00001a QP 0x000011`, with the RPC
    /// message a first Send packet starts.
    pub fn summary(&self) -> String {
        let mut text = self.headline();
        if let FrameKind::Roce(RoceInfo { rpc: Some(rpc), .. }) = self.kind {
            let msg = match rpc.msg {
                RpcMsg::Call => "call",
                RpcMsg::Reply => "reply",
            };
            text.push_str(&format!(" ({msg} xid {:#010x})", rpc.xid));
        }
        text
    }

    /// The frame's own headers, without the RPC message.
    pub(crate) fn headline(&self) -> String {
        match self.kind {
            FrameKind::Roce(r) => {
                let name = match (r.opcode, r.ack) {
                    (OpcodeClass::Nak, Some(AckKind::RnrNak)) => "RC RNR NAK",
                    (class, _) => class.name(),
                };
                format!("{name} PSN {:#08x} QP {:#08x}", r.psn, r.dest_qp)
            }
            FrameKind::Cm(cm) => cm.kind.name().to_string(),
            FrameKind::Control => "relay control datagram".to_string(),
            FrameKind::Tcp => "TCP segment".to_string(),
            FrameKind::Other => "non-RoCE frame".to_string(),
        }
    }
}

/// QP1, where CM MADs are sent (IBTA Vol 1 §13.5.1 GSI).
const GSI_QP: u32 = 1;
/// MRA's attribute ID (IBTA Vol 1 Table 88); `trace::cm` keeps it as `Other`.
const CM_ATTRIBUTE_MRA: u16 = 0x0011;

/// Classify one Ethernet frame travelling `direction`.
pub fn classify(direction: Direction, frame: &[u8]) -> FrameInfo {
    let kind = if direction == Direction::FromClient && udp::control_datagram(frame).is_some() {
        FrameKind::Control
    } else {
        roce_kind(direction, frame).unwrap_or(if udp::is_tcp(frame) {
            FrameKind::Tcp
        } else {
            FrameKind::Other
        })
    };
    FrameInfo { direction, kind }
}

fn roce_kind(direction: Direction, frame: &[u8]) -> Option<FrameKind> {
    let roce = trace::link::roce_packet(LinkType::Ethernet, frame)?;
    let packet = trace::ib::decode(roce.transport).ok()?;
    if matches!(packet.opcode, Opcode::UdSendOnly | Opcode::UdSendOnlyImm) {
        if packet.dest_qp != GSI_QP {
            return None;
        }
        let message = trace::cm::decode_mad(packet.payload).ok()??;
        return Some(FrameKind::Cm(cm_info(&message)));
    }
    let ack = packet.aeth.and_then(|aeth| match aeth.syndrome {
        AckSyndrome::Ack { .. } => Some(AckKind::Ack),
        AckSyndrome::Nak { .. } => Some(AckKind::Nak),
        AckSyndrome::RnrNak { .. } => Some(AckKind::RnrNak),
        AckSyndrome::Reserved { .. } => None,
    });
    let opcode = OpcodeClass::of(packet.opcode, ack);
    let rpc = match opcode {
        OpcodeClass::SendFirst | OpcodeClass::SendOnly => rpc_info(direction, packet.payload),
        _ => None,
    };
    Some(FrameKind::Roce(RoceInfo {
        opcode,
        dest_qp: packet.dest_qp,
        psn: packet.psn,
        ack,
        rpc,
    }))
}

fn cm_info(message: &CmMessage) -> CmInfo {
    let (kind, local, remote, qpn) = match *message {
        CmMessage::Request {
            local_comm_id,
            local_qpn,
            ..
        } => (CmKind::Req, Some(local_comm_id), None, Some(local_qpn)),
        CmMessage::Reply {
            local_comm_id,
            remote_comm_id,
            local_qpn,
            ..
        } => (
            CmKind::Rep,
            Some(local_comm_id),
            Some(remote_comm_id),
            Some(local_qpn),
        ),
        CmMessage::ReadyToUse {
            local_comm_id,
            remote_comm_id,
        } => (CmKind::Rtu, Some(local_comm_id), Some(remote_comm_id), None),
        CmMessage::Reject {
            local_comm_id,
            remote_comm_id,
            ..
        } => (CmKind::Rej, Some(local_comm_id), Some(remote_comm_id), None),
        CmMessage::DisconnectRequest {
            local_comm_id,
            remote_comm_id,
        } => (
            CmKind::Dreq,
            Some(local_comm_id),
            Some(remote_comm_id),
            None,
        ),
        CmMessage::DisconnectReply {
            local_comm_id,
            remote_comm_id,
        } => (
            CmKind::Drep,
            Some(local_comm_id),
            Some(remote_comm_id),
            None,
        ),
        CmMessage::Other { attribute_id } if attribute_id == CM_ATTRIBUTE_MRA => {
            (CmKind::Mra, None, None, None)
        }
        CmMessage::Other { .. } => (CmKind::Other, None, None, None),
    };
    CmInfo {
        kind,
        local_comm_id: local,
        remote_comm_id: remote,
        local_qpn: qpn,
    }
}

/// Bounds for the one header decoded per Send: a first packet holds at most one MTU (4 KiB), so
/// these are never the binding limit, only a guard that they are not the decoder's defaults.
const HEADER_LIMITS: Limits = Limits {
    max_read_segments: 256,
    max_write_chunks: 256,
    max_segments_per_chunk: 256,
};

/// The RPC message a Send payload starts, if it starts with an RPC-over-RDMA header.
///
/// RDMA_MSG/RDMA_MSGP carry the RPC message inline, and its second word is `msg_type`.
/// RDMA_NOMSG (the message is in a Position-zero Read chunk or the Reply chunk) and RDMA_ERROR
/// carry none inline: they are taken as a Call when the client sends them and a Reply when the
/// server does, which is what they are on an NFS connection without a backchannel. RDMA_DONE
/// names no RPC message.
pub(crate) fn rpc_info(direction: Direction, payload: &[u8]) -> Option<RpcInfo> {
    let (header, consumed) = Header::decode_prefix_with(payload, &HEADER_LIMITS).ok()?;
    let msg = match header.body {
        Body::Msg(_) | Body::Msgp { .. } => {
            let word = payload.get(consumed.checked_add(4)?..consumed.checked_add(8)?)?;
            match u32::from_be_bytes([word[0], word[1], word[2], word[3]]) {
                0 => RpcMsg::Call,
                1 => RpcMsg::Reply,
                _ => return None,
            }
        }
        Body::Nomsg(_) | Body::Error(_) => match direction {
            Direction::FromClient => RpcMsg::Call,
            Direction::FromServer => RpcMsg::Reply,
        },
        Body::Done => return None,
    };
    Some(RpcInfo {
        xid: header.xid,
        msg,
    })
}
