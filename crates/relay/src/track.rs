//! What the RPC-level selectors need to know about a frame beyond its own headers: which RPC
//! message an RC Send packet belongs to (a Middle or Last packet does not say), whether a call is
//! the first transmission of its XID, which replies an ACK acknowledges, which calls a READ
//! response may serve.
//!
//! Everything is bounded and the oldest entry is evicted first: XIDs by `Limits::max_tracked_xids`,
//! QPs by [`MAX_TRACKED_QPS`], recent messages and XIDs per QP by [`MESSAGES_PER_QP`] and
//! [`XIDS_PER_QP`], pending CM requests by [`PENDING_CM_REQUESTS`]. A call whose XID was evicted
//! counts as a first transmission again.
//!
//! Pairing the two QPs of a connection (an ACK from the client travels to the server's QP, the
//! reply it acknowledges travelled to the client's QP): CM REQ names the client's QP and REP the
//! server's, paired by communication ID; without CM (a capture started late) the pair is learnt
//! from a reply, whose call travelled to the server's QP.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

use trace::ib::psn_distance;

use crate::classify::{CmInfo, CmKind, Direction, FrameInfo, FrameKind, OpcodeClass, RoceInfo};
use crate::classify::{RpcInfo, RpcMsg};

/// Most QPs tracked (per map keyed by QP).
pub const MAX_TRACKED_QPS: usize = 256;
/// Most recent Send messages remembered per (direction, destination QP), to place Middle and Last
/// packets and RC retransmissions.
pub const MESSAGES_PER_QP: usize = 32;
/// Most recent calls and replies remembered per server QP, which bounds how many XIDs one ACK or
/// READ response can be attributed to.
pub const XIDS_PER_QP: usize = 64;
/// Most CM REQs waiting for their REP.
pub const PENDING_CM_REQUESTS: usize = 64;
/// Longest open Send message, in packets, that a Middle or Last packet is attributed to before its
/// Last packet was seen (4 KiB per packet: 256 MiB).
const MAX_SEND_PACKETS: i32 = 1 << 16;

/// The RPC message an RC Send packet belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SendTag {
    pub xid: u32,
    pub msg: RpcMsg,
    /// A client call whose XID had been seen in an earlier call.
    pub retransmit: bool,
}

/// A frame with what the tracker knew about it when it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Facts {
    pub info: FrameInfo,
    pub send: Option<SendTag>,
    /// The first packet of the first transmission of a client call.
    pub new_call: bool,
    /// The first packet of a Send message seen before (same PSN, same RPC message): the sender's
    /// RC layer sending it again after a lost packet or ACK, not a new transmission.
    pub rc_retransmission: bool,
    /// XIDs whose (not yet acknowledged) replies this client ACK acknowledges.
    pub acks_replies_to: Vec<u32>,
    /// XIDs of calls outstanding on the connection this client READ response travels on.
    pub read_responses_for: Vec<u32>,
}

impl Facts {
    /// The frame as a marker names it, with the RPC message a Send packet belongs to.
    pub fn summary(&self) -> String {
        let mut text = self.info.headline();
        let inline = match self.info.kind {
            FrameKind::Roce(RoceInfo { rpc: Some(rpc), .. }) => Some((rpc.xid, rpc.msg, false)),
            _ => None,
        };
        let rpc = self
            .send
            .map(|tag| (tag.xid, tag.msg, tag.retransmit))
            .or(inline);
        if let Some((xid, msg, retransmit)) = rpc {
            let msg = match (msg, retransmit) {
                (RpcMsg::Call, false) => "call",
                (RpcMsg::Call, true) => "retransmitted call",
                (RpcMsg::Reply, _) => "reply",
            };
            let again = if self.rc_retransmission {
                ", RC retransmission"
            } else {
                ""
            };
            text.push_str(&format!(" ({msg} xid {xid:#010x}{again})"));
        }
        text
    }

    fn plain(info: FrameInfo) -> Facts {
        Facts {
            info,
            send: None,
            new_call: false,
            rc_retransmission: false,
            acks_replies_to: Vec::new(),
            read_responses_for: Vec::new(),
        }
    }
}

#[derive(Debug)]
struct SendMessage {
    first_psn: u32,
    last_psn: Option<u32>,
    tag: SendTag,
}

impl SendMessage {
    /// Whether a Middle or Last packet with this PSN belongs to the message.
    fn holds(&self, psn: u32) -> bool {
        let from_first = psn_distance(psn, self.first_psn);
        from_first > 0
            && match self.last_psn {
                Some(last) => psn_distance(last, psn) >= 0,
                None => from_first <= MAX_SEND_PACKETS,
            }
    }
}

#[derive(Debug, Clone, Copy)]
struct ReplyRecord {
    client_qp: u32,
    server_qp: Option<u32>,
    first_psn: u32,
    last_psn: Option<u32>,
    /// An ACK covering the whole reply has been forwarded.
    acked: bool,
}

#[derive(Debug, Default)]
struct XidState {
    call_seen: bool,
    /// Destination QP of the latest transmission of the call.
    call_server_qp: Option<u32>,
    call_at: u64,
    reply: Option<ReplyRecord>,
    reply_at: u64,
}

/// A map that keeps at most `cap` keys, evicting the oldest inserted.
#[derive(Debug)]
struct Bounded<K, V> {
    map: HashMap<K, V>,
    order: VecDeque<K>,
    cap: usize,
}

impl<K: Copy + Eq + Hash, V: Default> Bounded<K, V> {
    fn new(cap: usize) -> Self {
        Bounded {
            map: HashMap::new(),
            order: VecDeque::new(),
            cap: cap.max(1),
        }
    }

    fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.map.get_mut(key)
    }

    fn entry(&mut self, key: K) -> &mut V {
        if !self.map.contains_key(&key) {
            // Keys leave only by eviction, so `order` holds exactly the map's keys.
            while self.map.len() >= self.cap {
                match self.order.pop_front() {
                    Some(oldest) => {
                        self.map.remove(&oldest);
                    }
                    None => break,
                }
            }
            self.order.push_back(key);
        }
        self.map.entry(key).or_default()
    }

    fn len(&self) -> usize {
        self.map.len()
    }
}

/// Push `value` to a ring of at most `cap` entries unless it is already there.
fn remember<T: PartialEq>(ring: &mut VecDeque<T>, value: T, cap: usize) {
    if ring.contains(&value) {
        return;
    }
    if ring.len() >= cap {
        ring.pop_front();
    }
    ring.push_back(value);
}

#[derive(Debug)]
pub(crate) struct Tracker {
    xids: Bounded<u32, XidState>,
    sends: Bounded<(Direction, u32), VecDeque<SendMessage>>,
    /// Client QP to server QP.
    pairs: Bounded<u32, PairedQp>,
    calls_by_server_qp: Bounded<u32, VecDeque<u32>>,
    replies_by_server_qp: Bounded<u32, VecDeque<u32>>,
    /// (REQ local communication ID, client QP) awaiting the REP.
    pending_requests: VecDeque<(u32, u32)>,
    /// Frames observed, to order calls and replies of one XID.
    observed: u64,
}

#[derive(Debug, Default, Clone, Copy)]
struct PairedQp(Option<u32>);

impl Tracker {
    pub fn new(max_tracked_xids: usize) -> Tracker {
        Tracker {
            xids: Bounded::new(max_tracked_xids),
            sends: Bounded::new(MAX_TRACKED_QPS),
            pairs: Bounded::new(MAX_TRACKED_QPS),
            calls_by_server_qp: Bounded::new(MAX_TRACKED_QPS),
            replies_by_server_qp: Bounded::new(MAX_TRACKED_QPS),
            pending_requests: VecDeque::new(),
            observed: 0,
        }
    }

    /// XIDs currently tracked.
    pub fn tracked_xids(&self) -> usize {
        self.xids.len()
    }

    /// The server QP paired with a client QP, if known.
    #[cfg(test)]
    pub fn server_qp_of(&self, client_qp: u32) -> Option<u32> {
        self.pairs.get(&client_qp).and_then(|p| p.0)
    }

    /// Record a frame as it arrives (before any rule acts on it).
    pub fn observe(&mut self, info: FrameInfo) -> Facts {
        self.observed += 1;
        let mut facts = Facts::plain(info);
        match info.kind {
            FrameKind::Cm(cm) => self.observe_cm(info.direction, cm),
            FrameKind::Roce(roce) if roce.opcode.is_send() => {
                let (tag, new_call, rc_retransmission) = self.observe_send(info.direction, roce);
                facts.send = tag;
                facts.new_call = new_call;
                facts.rc_retransmission = rc_retransmission;
            }
            FrameKind::Roce(roce)
                if roce.opcode == OpcodeClass::Ack && info.direction == Direction::FromClient =>
            {
                facts.acks_replies_to = self.replies_acknowledged(roce.dest_qp, roce.psn);
            }
            FrameKind::Roce(roce)
                if roce.opcode == OpcodeClass::ReadResponse
                    && info.direction == Direction::FromClient =>
            {
                facts.read_responses_for = self.calls_outstanding(roce.dest_qp);
            }
            FrameKind::Roce(_) | FrameKind::Control | FrameKind::Tcp | FrameKind::Other => {}
        }
        facts
    }

    /// Record that a frame was forwarded (not dropped, not still held): an ACK that reaches the
    /// server acknowledges its replies for good.
    pub fn forwarded(&mut self, facts: &Facts) {
        let FrameKind::Roce(ack) = facts.info.kind else {
            return;
        };
        for xid in &facts.acks_replies_to {
            if let Some(reply) = self.xids.get_mut(xid).and_then(|s| s.reply.as_mut()) {
                // The record may have been replaced by a later reply since the ACK arrived.
                if reply
                    .last_psn
                    .is_some_and(|last| psn_distance(ack.psn, last) >= 0)
                {
                    reply.acked = true;
                }
            }
        }
    }

    fn observe_cm(&mut self, direction: Direction, cm: CmInfo) {
        match (direction, cm.kind, cm.local_comm_id, cm.local_qpn) {
            (Direction::FromClient, CmKind::Req, Some(comm_id), Some(client_qp)) => {
                if self.pending_requests.len() >= PENDING_CM_REQUESTS {
                    self.pending_requests.pop_front();
                }
                self.pending_requests.push_back((comm_id, client_qp));
            }
            (Direction::FromServer, CmKind::Rep, _, Some(server_qp)) => {
                let Some(remote) = cm.remote_comm_id else {
                    return;
                };
                if let Some(&(_, client_qp)) =
                    self.pending_requests.iter().find(|(id, _)| *id == remote)
                {
                    *self.pairs.entry(client_qp) = PairedQp(Some(server_qp));
                }
            }
            _ => {}
        }
    }

    /// The Send packet's tag, whether it starts the first transmission of a client call, and
    /// whether it is an RC retransmission of a message's first packet.
    fn observe_send(
        &mut self,
        direction: Direction,
        roce: RoceInfo,
    ) -> (Option<SendTag>, bool, bool) {
        let key = (direction, roce.dest_qp);
        match roce.opcode {
            OpcodeClass::SendFirst | OpcodeClass::SendOnly => {
                let Some(rpc) = roce.rpc else {
                    return (None, false, false);
                };
                let last_psn = (roce.opcode == OpcodeClass::SendOnly).then_some(roce.psn);
                // The same first packet again is an RC retransmission of the same message.
                if let Some(ring) = self.sends.get(&key) {
                    if let Some(known) = ring.iter().rev().find(|m| {
                        m.first_psn == roce.psn && m.tag.xid == rpc.xid && m.tag.msg == rpc.msg
                    }) {
                        return (Some(known.tag), false, true);
                    }
                }
                let (tag, new_call) = self.new_message(direction, roce, rpc, last_psn);
                let ring = self.sends.entry(key);
                if ring.len() >= MESSAGES_PER_QP {
                    ring.pop_front();
                }
                ring.push_back(SendMessage {
                    first_psn: roce.psn,
                    last_psn,
                    tag,
                });
                (Some(tag), new_call, false)
            }
            _ => {
                let Some(ring) = self.sends.get_mut(&key) else {
                    return (None, false, false);
                };
                let Some(message) = ring.iter_mut().rev().find(|m| m.holds(roce.psn)) else {
                    return (None, false, false);
                };
                let tag = message.tag;
                if roce.opcode == OpcodeClass::SendLast && message.last_psn.is_none() {
                    message.last_psn = Some(roce.psn);
                    let first_psn = message.first_psn;
                    if direction == Direction::FromServer && tag.msg == RpcMsg::Reply {
                        if let Some(reply) =
                            self.xids.get_mut(&tag.xid).and_then(|s| s.reply.as_mut())
                        {
                            if reply.client_qp == roce.dest_qp && reply.first_psn == first_psn {
                                reply.last_psn = Some(roce.psn);
                            }
                        }
                    }
                }
                (Some(tag), false, false)
            }
        }
    }

    /// Track the first packet of a new Send message; returns its tag and whether it is the first
    /// transmission of a client call.
    fn new_message(
        &mut self,
        direction: Direction,
        roce: RoceInfo,
        rpc: RpcInfo,
        last_psn: Option<u32>,
    ) -> (SendTag, bool) {
        let observed = self.observed;
        let mut tag = SendTag {
            xid: rpc.xid,
            msg: rpc.msg,
            retransmit: false,
        };
        match (direction, rpc.msg) {
            (Direction::FromClient, RpcMsg::Call) => {
                let state = self.xids.entry(rpc.xid);
                tag.retransmit = state.call_seen;
                state.call_seen = true;
                state.call_server_qp = Some(roce.dest_qp);
                state.call_at = observed;
                remember(
                    self.calls_by_server_qp.entry(roce.dest_qp),
                    rpc.xid,
                    XIDS_PER_QP,
                );
                (tag, !tag.retransmit)
            }
            (Direction::FromServer, RpcMsg::Reply) => {
                let client_qp = roce.dest_qp;
                let state = self.xids.entry(rpc.xid);
                let paired = self.pairs.get(&client_qp).and_then(|p| p.0);
                let server_qp = paired.or(state.call_server_qp);
                state.reply = Some(ReplyRecord {
                    client_qp,
                    server_qp,
                    first_psn: roce.psn,
                    last_psn,
                    acked: false,
                });
                state.reply_at = observed;
                if let Some(server_qp) = server_qp {
                    if paired.is_none() {
                        // Observed pairing: the call went to the server's QP, its reply comes
                        // back to the client's.
                        *self.pairs.entry(client_qp) = PairedQp(Some(server_qp));
                    }
                    remember(
                        self.replies_by_server_qp.entry(server_qp),
                        rpc.xid,
                        XIDS_PER_QP,
                    );
                }
                (tag, false)
            }
            // Backchannel calls and replies: tagged, but no selector follows them.
            _ => (tag, false),
        }
    }

    fn replies_acknowledged(&self, server_qp: u32, psn: u32) -> Vec<u32> {
        let Some(ring) = self.replies_by_server_qp.get(&server_qp) else {
            return Vec::new();
        };
        ring.iter()
            .copied()
            .filter(|xid| {
                self.xids
                    .get(xid)
                    .and_then(|s| s.reply)
                    .is_some_and(|reply| {
                        reply.server_qp == Some(server_qp)
                            && !reply.acked
                            && reply
                                .last_psn
                                .is_some_and(|last| psn_distance(psn, last) >= 0)
                    })
            })
            .collect()
    }

    fn calls_outstanding(&self, server_qp: u32) -> Vec<u32> {
        let Some(ring) = self.calls_by_server_qp.get(&server_qp) else {
            return Vec::new();
        };
        ring.iter()
            .copied()
            .filter(|xid| {
                self.xids.get(xid).is_some_and(|s| {
                    s.call_server_qp == Some(server_qp)
                        && (s.reply.is_none() || s.reply_at < s.call_at)
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::AckKind;

    fn roce(direction: Direction, opcode: OpcodeClass, qp: u32, psn: u32) -> FrameInfo {
        FrameInfo {
            direction,
            kind: FrameKind::Roce(RoceInfo {
                opcode,
                dest_qp: qp,
                psn,
                ack: (opcode == OpcodeClass::Ack).then_some(AckKind::Ack),
                rpc: None,
            }),
        }
    }

    fn send(
        direction: Direction,
        opcode: OpcodeClass,
        qp: u32,
        psn: u32,
        rpc: RpcInfo,
    ) -> FrameInfo {
        let mut info = roce(direction, opcode, qp, psn);
        if let FrameKind::Roce(r) = &mut info.kind {
            r.rpc = Some(rpc);
        }
        info
    }

    const CALL: RpcInfo = RpcInfo {
        xid: 7,
        msg: RpcMsg::Call,
    };
    const REPLY: RpcInfo = RpcInfo {
        xid: 7,
        msg: RpcMsg::Reply,
    };
    use Direction::{FromClient, FromServer};
    use OpcodeClass::*;

    #[test]
    fn middle_and_last_packets_belong_to_their_message_and_the_ack_to_the_reply() {
        let mut t = Tracker::new(16);
        let call = t.observe(send(FromClient, SendOnly, 0x20, 100, CALL));
        assert!(call.new_call);
        assert_eq!(call.send.map(|s| s.retransmit), Some(false));
        // The server reads from the client while the call is outstanding.
        let read = t.observe(roce(FromClient, ReadResponse, 0x20, 500));
        assert_eq!(read.read_responses_for, vec![7]);
        let first = t.observe(send(FromServer, SendFirst, 0x10, 900, REPLY));
        assert_eq!(first.send.map(|s| s.msg), Some(RpcMsg::Reply));
        let middle = t.observe(roce(FromServer, SendMiddle, 0x10, 901));
        assert_eq!(middle.send.map(|s| s.xid), Some(7));
        // Not the whole reply yet: an ACK of its first packets acknowledges nothing.
        assert!(t
            .observe(roce(FromClient, Ack, 0x20, 901))
            .acks_replies_to
            .is_empty());
        let last = t.observe(roce(FromServer, SendLast, 0x10, 902));
        assert_eq!(last.send.map(|s| s.xid), Some(7));
        // The pair was learnt from the call and its reply.
        assert_eq!(t.server_qp_of(0x10), Some(0x20));
        // After the reply, READ responses no longer serve the call.
        assert!(t
            .observe(roce(FromClient, ReadResponse, 0x20, 501))
            .read_responses_for
            .is_empty());
        // An ACK to another QP, or before the last PSN, is not the reply's.
        assert!(t
            .observe(roce(FromClient, Ack, 0x21, 902))
            .acks_replies_to
            .is_empty());
        let ack = t.observe(roce(FromClient, Ack, 0x20, 903));
        assert_eq!(ack.acks_replies_to, vec![7]);
        // Until an ACK is forwarded, a later one still acknowledges the reply; then none does.
        let again = t.observe(roce(FromClient, Ack, 0x20, 903));
        assert_eq!(again.acks_replies_to, vec![7]);
        t.forwarded(&again);
        assert!(t
            .observe(roce(FromClient, Ack, 0x20, 904))
            .acks_replies_to
            .is_empty());
    }

    #[test]
    fn a_call_is_retransmitted_by_rpc_not_by_rc() {
        let mut t = Tracker::new(16);
        assert!(
            t.observe(send(FromClient, SendOnly, 0x20, 100, CALL))
                .new_call
        );
        // RC retransmission: same PSN, same message.
        let rc = t.observe(send(FromClient, SendOnly, 0x20, 100, CALL));
        assert!(!rc.new_call);
        assert!(rc.rc_retransmission);
        assert_eq!(rc.send.map(|s| s.retransmit), Some(false));
        // RPC retransmission: a new Send (new PSN, here a new connection).
        let rpc = t.observe(send(FromClient, SendOnly, 0x30, 5, CALL));
        assert!(!rpc.new_call);
        assert!(!rpc.rc_retransmission);
        assert_eq!(rpc.send.map(|s| s.retransmit), Some(true));
    }

    #[test]
    fn cm_pairs_the_qps_and_every_table_is_bounded() {
        let mut t = Tracker::new(4);
        let cm = |direction, kind, local, remote, qpn| FrameInfo {
            direction,
            kind: FrameKind::Cm(CmInfo {
                kind,
                local_comm_id: Some(local),
                remote_comm_id: remote,
                local_qpn: Some(qpn),
            }),
        };
        t.observe(cm(FromClient, CmKind::Req, 1, None, 0x40));
        t.observe(cm(FromServer, CmKind::Rep, 2, Some(1), 0x41));
        assert_eq!(t.server_qp_of(0x40), Some(0x41));
        for xid in 0..1000u32 {
            let rpc = RpcInfo {
                xid,
                msg: RpcMsg::Call,
            };
            t.observe(send(FromClient, SendOnly, xid % 300, xid, rpc));
        }
        assert_eq!(t.tracked_xids(), 4);
        assert!(t.sends.len() <= MAX_TRACKED_QPS);
        assert!(t.calls_by_server_qp.len() <= MAX_TRACKED_QPS);
        // An evicted XID counts as new again.
        assert!(
            t.observe(send(
                FromClient,
                SendOnly,
                1,
                5000,
                RpcInfo {
                    xid: 0,
                    msg: RpcMsg::Call
                }
            ))
            .new_call
        );
    }
}
