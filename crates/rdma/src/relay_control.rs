//! A case's side of the rig's relay (crates/relay): when the guests' wire runs through the relay,
//! a scenario installs rules over its in-band control port (UDP [`relay::CONTROL_PORT`] towards
//! the server's address; the relay takes the datagram off the wire and answers it), so a hold
//! the simulator has in software becomes a hold of frames on the wire against any server.
//!
//! What the wire can hold, and what it means for the server:
//! - [`Hold::ServerSendCompletions`]: the RC ACKs the client's HCA sends for the server's Sends
//!   (and RDMA Writes) wait in the relay, so the server's Send Work Requests cannot complete: the
//!   server learns neither that its reply arrived nor, under acked-evict, an acked position past
//!   it. Bounded by the relay's hold limit ([`relay::RC_SAFE_HOLD_MICROS`]), inside the server's
//!   RC retry budget; a hold that ran into it is reported, and the case's ordering was then not
//!   forced.
//! - [`Hold::ReplyLost`]: the first packet of the server's reply to the case's first call is
//!   dropped once and our ACKs are held as above. The server's RC layer sends the reply again
//!   when a later Send of its reveals the gap (our NAK passes) or its ACK timeout fires; the
//!   server cannot see that Send complete before the case releases.
//! - [`Hold::ReplyAckLost`]: our first ACK of that reply is dropped (what
//!   [`Until::AckLost`](client::scenarios::Until) waits for) and the later ones held: the Send
//!   completes when the case releases. If the server's ACK timeout fires inside the hold its RC
//!   layer sends the reply again (marked in the capture; our HCA discards the copy): on 6.12
//!   and 7.x it does, on 6.1 not within the 1.5 s hold (measured 2026-12-03).
//! - [`Hold::CmLost`]: the next CM REP, RTU or DREP is dropped once; nothing is held. The CM's
//!   own timeout repeats the exchange (the peer answers a repeated REQ, REP or DREQ by sending
//!   what was lost again), so the connect or disconnect completes a CM timeout later, or fails
//!   and the case says so.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::Duration;

use client::scenarios::{CmMessage, Hold};
use relay::{
    Action, CmKind, Condition, ControlReply, ControlRequest, Direction, OpcodeClass, Rule, RuleSet,
    Selector, Xid,
};

use crate::datagram::exchange;

/// Longest a wire hold lasts before the relay lets its frames go on its own (and the case is
/// told its ordering was not forced): well inside the server's RC retry budget.
pub const WIRE_HOLD_BUDGET: Duration = Duration::from_micros(relay::RC_SAFE_HOLD_MICROS);

/// The name of the rule (and of its release) that holds the server's Send completions.
const SEND_COMPLETIONS: &str = "server-send-completions";
/// The rule that drops the first packet of the reply to the case's first call.
pub const REPLY_LOST: &str = "reply-lost";
/// The rule that drops our first ACK of that reply.
pub const ACK_LOST: &str = "ack-lost";
/// The rule that marks the server's RC retransmissions of that reply.
pub const REPLY_AGAIN: &str = "reply-again";
/// The rule that drops the next CM message of the kind [`Hold::CmLost`] names.
pub const CM_LOST: &str = "cm-lost";
/// The rule of [`RelayControl::cut_from_server`].
pub const SERVER_CUT: &str = "server-cut";

/// Why the relay could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RelayError {
    /// Nothing answered on the control port: the wire does not run through the rig's relay.
    NoAnswer { server: IpAddr },
    /// The relay refused the request.
    Refused { message: String },
    /// A socket error.
    Io { message: String },
    /// A hold the wire cannot provide.
    Unsupported { hold: Hold },
}

impl std::fmt::Display for RelayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RelayError::NoAnswer { server } => write!(
                f,
                "the rig's relay did not answer on UDP {server}:{} (is the wire the rig's?)",
                relay::CONTROL_PORT
            ),
            RelayError::Refused { message } => write!(f, "the relay refused: {message}"),
            RelayError::Io { message } => write!(f, "relay control: {message}"),
            RelayError::Unsupported { hold } => write!(f, "the wire cannot hold {hold:?}"),
        }
    }
}

impl std::error::Error for RelayError {}

/// What the guests' link carries, which decides what the relay can hold on it (the device
/// says: `verbs::DeviceTransport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RdmaLink {
    /// RoCEv2 (soft-RoCE): RC packets, RC ACKs and IB CM MADs, each of which the relay selects.
    #[default]
    RoceV2,
    /// iWARP (soft-iWARP): RDMAP/DDP/MPA over TCP.
    Iwarp,
}

impl RdmaLink {
    /// The link this host's RDMA devices speak: iWARP when every device is an iWARP one (the
    /// guests have one device, `rxe0` or `siw0`), else RoCEv2 (also when none can be listed:
    /// the connection then fails with the verbs error that says why).
    pub fn of_this_host() -> RdmaLink {
        match verbs::list_devices() {
            Ok(devices)
                if !devices.is_empty()
                    && devices
                        .iter()
                        .all(|d| d.transport == verbs::DeviceTransport::Iwarp) =>
            {
                RdmaLink::Iwarp
            }
            _ => RdmaLink::RoceV2,
        }
    }
}

/// The control channel to the relay of one case.
pub struct RelayControl {
    socket: UdpSocket,
    relay: SocketAddr,
    case: String,
    /// Rules installed for this case, by hold.
    holds: Vec<Hold>,
    /// The relay's count of frames its limit released, when this case began.
    limit_releases_before: u64,
}

impl RelayControl {
    /// Reach the relay in front of `server` (its Status answered) for `case`, or say why not.
    pub fn open(server: IpAddr, case: &str) -> Result<RelayControl, RelayError> {
        let bind: SocketAddr = match server {
            IpAddr::V4(_) => "0.0.0.0:0",
            IpAddr::V6(_) => "[::]:0",
        }
        .parse()
        .expect("a literal address");
        let socket = UdpSocket::bind(bind).map_err(io)?;
        let mut control = RelayControl {
            socket,
            relay: SocketAddr::new(server, relay::CONTROL_PORT),
            case: case.to_string(),
            holds: Vec::new(),
            limit_releases_before: 0,
        };
        // A case starts on a wire without anyone else's rules, and its frames from here on
        // go to a capture of its own too.
        control.request(&ControlRequest::Begin {
            case: case.to_string(),
        })?;
        control.limit_releases_before = control.limit_releases()?;
        Ok(control)
    }

    /// Why the wire cannot provide `hold` over `link`, when it cannot: over RoCEv2 every
    /// [`RelayControl::can_hold`] hold is provided; over iWARP none yet (the relay selects
    /// RoCEv2 frames), each for the reason the transport gives.
    pub fn cannot_hold_on(link: RdmaLink, hold: Hold) -> Option<&'static str> {
        if !Self::can_hold(hold) {
            return Some(
                "needs the server's software held back, which only the simulator controls",
            );
        }
        match (link, hold) {
            (RdmaLink::RoceV2, _) => None,
            (RdmaLink::Iwarp, Hold::ServerSendCompletions) => Some(
                "needs the server's Send completion held on the wire; over iWARP (siw) a Send completes once TCP has taken the message, before the peer acknowledges anything, so no frame holds it (docs/findings.md, \"The Send-completion premise over iWARP\")",
            ),
            (RdmaLink::Iwarp, Hold::ReplyLost | Hold::ReplyAckLost) => Some(
                "needs a reply or its acknowledgement lost once on the wire while the server's Send completion is held, which iWARP (siw) cannot hold: its Send completes when TCP has the message (docs/findings.md, \"The Send-completion premise over iWARP\")",
            ),
            (RdmaLink::Iwarp, _) => Some(
                "needs an InfiniBand CM message (REP, RTU or DREP) lost; iWARP connects with TCP and MPA start frames, which have no RTU or DREP",
            ),
        }
    }

    /// Whether the wire can provide `hold` (over RoCEv2: [`RelayControl::cannot_hold_on`]).
    pub fn can_hold(hold: Hold) -> bool {
        matches!(
            hold,
            Hold::ServerSendCompletions | Hold::ReplyLost | Hold::ReplyAckLost | Hold::CmLost(_)
        )
    }

    /// Whether the wire provides `hold` by keeping frames back (bounded by
    /// [`WIRE_HOLD_BUDGET`], so a case waiting under it must end its wait in time); a lost CM
    /// message keeps nothing back.
    pub fn holds_frames(hold: Hold) -> bool {
        Self::can_hold(hold) && !matches!(hold, Hold::CmLost(_))
    }

    /// Hold `hold` on the wire from now until [`RelayControl::release_all`] (or the budget).
    pub fn hold(&mut self, hold: Hold) -> Result<(), RelayError> {
        if !Self::can_hold(hold) {
            return Err(RelayError::Unsupported { hold });
        }
        if !self.holds.contains(&hold) {
            self.holds.push(hold);
        }
        let mut rules: Vec<Rule> = Vec::new();
        for rule in self.holds.iter().flat_map(|&h| rules_for(h)) {
            // Holds share the rule that holds our ACKs: installed once.
            if !rules.iter().any(|r| r.name == rule.name) {
                rules.push(rule);
            }
        }
        let set = RuleSet::new(self.case.clone(), rules).map_err(|e| RelayError::Refused {
            message: e.to_string(),
        })?;
        match self.request(&ControlRequest::SetRules(set))? {
            ControlReply::Ok { .. } => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    /// Whether a hold is in place.
    pub fn holding(&self) -> bool {
        !self.holds.is_empty()
    }

    /// Let every held frame go and remove the case's rules; returns whether any frame was let
    /// go by the relay's own limit (the ordering was then not forced: the hold outlasted
    /// [`WIRE_HOLD_BUDGET`]).
    pub fn release_all(&mut self) -> Result<bool, RelayError> {
        if self.holds.is_empty() {
            return Ok(false);
        }
        let expired = self.limit_releases()? > self.limit_releases_before;
        self.request(&ControlRequest::Release {
            name: SEND_COMPLETIONS.to_string(),
        })?;
        self.request(&ControlRequest::Clear)?;
        self.holds.clear();
        Ok(expired)
    }

    /// Frames the case's rule `name` has acted on so far (0 when it is not installed).
    pub fn rule_hits(&self, name: &str) -> Result<u64, RelayError> {
        match self.request(&ControlRequest::Status)? {
            ControlReply::Status(stats) => Ok(stats
                .rules
                .iter()
                .find(|rule| rule.name == name)
                .map_or(0, |rule| rule.hits)),
            other => Err(unexpected(other)),
        }
    }

    /// Lose every frame the server sends, from now until [`RelayControl::mend`]: nothing it
    /// sends reaches the client (RC ACKs, TCP segments and retransmissions alike), so whatever
    /// completes on the server meanwhile completed without the client having the message. The
    /// Send-completion measurement (`crate::send_completion`) is its one user; a drop, unlike
    /// a hold, has no RC-safe time limit, since nothing is ever delivered late.
    pub fn cut_from_server(&mut self) -> Result<(), RelayError> {
        let rule = Rule {
            name: SERVER_CUT.to_string(),
            select: Selector::Direction(Direction::FromServer),
            action: Action::Drop { times: u32::MAX },
            max_hits: None,
        };
        let set = RuleSet::new(self.case.clone(), vec![rule]).map_err(|e| RelayError::Refused {
            message: e.to_string(),
        })?;
        match self.request(&ControlRequest::SetRules(set))? {
            ControlReply::Ok { .. } => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    /// End [`RelayControl::cut_from_server`]: the frames it lost (counted by the relay), and
    /// the wire without rules again.
    pub fn mend(&mut self) -> Result<u64, RelayError> {
        let lost = self.rule_hits(SERVER_CUT)?;
        match self.request(&ControlRequest::Clear)? {
            ControlReply::Ok { .. } => Ok(lost),
            other => Err(unexpected(other)),
        }
    }

    /// Frames the relay's hold limit (or its held-frame limits) let go, since the relay started.
    fn limit_releases(&self) -> Result<u64, RelayError> {
        match self.request(&ControlRequest::Status)? {
            ControlReply::Status(stats) => Ok(stats.released_by_limit + stats.not_held_over_limit),
            other => Err(unexpected(other)),
        }
    }

    fn request(&self, request: &ControlRequest) -> Result<ControlReply, RelayError> {
        let bytes = serde_json::to_vec(request).map_err(|e| RelayError::Io {
            message: e.to_string(),
        })?;
        // Requests are idempotent at the relay: rules are replaced, a release of nothing
        // releases nothing; a lost one is sent again (`datagram::exchange`).
        let mut buf = vec![0u8; 65536];
        let Some(len) = exchange(&self.socket, self.relay, &bytes, &mut buf).map_err(io)? else {
            // Nothing answered, or the server's port is closed: no relay took it.
            return Err(RelayError::NoAnswer {
                server: self.relay.ip(),
            });
        };
        match serde_json::from_slice::<ControlReply>(&buf[..len]) {
            Ok(ControlReply::Error { message }) => Err(RelayError::Refused { message }),
            Ok(reply) => Ok(reply),
            Err(e) => Err(RelayError::Io {
                message: format!("unreadable answer: {e}"),
            }),
        }
    }
}

impl Drop for RelayControl {
    /// A case that ended early (an error) leaves no rule behind for the next one.
    fn drop(&mut self) {
        if !self.holds.is_empty() {
            let _ = self.request(&ControlRequest::Clear);
        }
    }
}

/// The relay rules that provide `hold`, in the order they must be tried (the holds the wire
/// has: [`RelayControl::can_hold`]; any other gets none).
fn rules_for(hold: Hold) -> Vec<Rule> {
    // Every RC ACK from the client acknowledges a Send or RDMA Write of the server (the client's
    // own requests are acknowledged by the server, in the other direction). NAKs are not ACKs
    // (`OpcodeClass::Nak`) and pass: they make the server's RC layer send a lost packet again.
    let hold_acks = Rule {
        name: SEND_COMPLETIONS.to_string(),
        select: Selector::All(vec![
            Selector::Direction(Direction::FromClient),
            Selector::Opcode(OpcodeClass::Ack),
        ]),
        action: Action::Hold {
            until: Condition::Release {
                name: SEND_COMPLETIONS.to_string(),
            },
        },
        max_hits: None,
    };
    let first_reply = Selector::ReplyTo { xid: Xid::Nth(1) };
    let mark_reply_again = Rule {
        name: REPLY_AGAIN.to_string(),
        select: Selector::All(vec![first_reply.clone(), Selector::RcRetransmission]),
        action: Action::Mark,
        max_hits: None,
    };
    let drop_once = |name: &str, select: Selector| Rule {
        name: name.to_string(),
        select,
        action: Action::Drop { times: 1 },
        max_hits: None,
    };
    match hold {
        Hold::ServerSendCompletions => vec![hold_acks],
        Hold::ReplyLost => vec![
            drop_once(REPLY_LOST, first_reply),
            mark_reply_again,
            hold_acks,
        ],
        Hold::ReplyAckLost => vec![
            drop_once(ACK_LOST, Selector::AckOfReplyTo { xid: Xid::Nth(1) }),
            hold_acks,
            mark_reply_again,
        ],
        // The active side (we) sends REQ, RTU and DREQ; the passive side (the server) REP and
        // DREP.
        Hold::CmLost(message) => {
            let (direction, kind) = match message {
                CmMessage::Rep => (Direction::FromServer, CmKind::Rep),
                CmMessage::Rtu => (Direction::FromClient, CmKind::Rtu),
                CmMessage::Drep => (Direction::FromServer, CmKind::Drep),
            };
            vec![drop_once(
                CM_LOST,
                Selector::All(vec![Selector::Direction(direction), Selector::Cm(kind)]),
            )]
        }
        Hold::ServerExecution
        | Hold::ServerTransmissions
        | Hold::ServerReceives
        | Hold::ClientReceives
        | Hold::ExportCacheUpcall => Vec::new(),
    }
}

fn io(e: std::io::Error) -> RelayError {
    RelayError::Io {
        message: e.to_string(),
    }
}

fn unexpected(reply: ControlReply) -> RelayError {
    RelayError::Refused {
        message: format!("unexpected answer {reply:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for the relay on loopback: answers each request with what the real relay's
    /// state machine answers, until `requests` have been answered.
    fn fake_relay(addr: SocketAddr, requests: usize) -> std::thread::JoinHandle<Vec<String>> {
        let socket = UdpSocket::bind(addr).unwrap();
        std::thread::spawn(move || {
            let mut relay = relay::Relay::new(relay::Limits::default());
            let mut seen = Vec::new();
            let mut buf = vec![0u8; 65536];
            for _ in 0..requests {
                let (len, from) = socket.recv_from(&mut buf).unwrap();
                let request: ControlRequest = serde_json::from_slice(&buf[..len]).unwrap();
                seen.push(format!("{request:?}").chars().take(40).collect());
                let reply = relay.handle_control(0, request);
                socket
                    .send_to(&serde_json::to_vec(&reply).unwrap(), from)
                    .unwrap();
            }
            seen
        })
    }

    #[test]
    fn a_case_clears_the_wire_holds_the_acks_and_releases_them() {
        let server: IpAddr = "127.0.0.92".parse().unwrap();
        let relay = fake_relay(SocketAddr::new(server, relay::CONTROL_PORT), 6);
        let mut control = RelayControl::open(server, "acked.after-reply-before-ack").unwrap();
        assert!(!control.holding());
        control.hold(Hold::ServerSendCompletions).unwrap();
        assert!(control.holding());
        assert_eq!(control.release_all(), Ok(false));
        assert!(!control.holding());
        let seen = relay.join().unwrap();
        let kinds: Vec<&str> = seen
            .iter()
            .map(|s| s.split(['(', ' ']).next().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["Begin", "Status", "SetRules", "Status", "Release", "Clear"][..],
            "{seen:?}"
        );
    }

    #[test]
    fn only_the_wire_holds_are_on_the_wire_and_each_is_a_valid_rule_set() {
        for hold in [
            Hold::ServerSendCompletions,
            Hold::ReplyLost,
            Hold::ReplyAckLost,
            Hold::CmLost(CmMessage::Rep),
            Hold::CmLost(CmMessage::Rtu),
            Hold::CmLost(CmMessage::Drep),
        ] {
            assert!(RelayControl::can_hold(hold), "{hold:?}");
            let rules = rules_for(hold);
            assert!(!rules.is_empty());
            RuleSet::new("c".into(), rules).unwrap();
        }
        // A lost packet comes before anything holds or marks it; the ACK hold is shared.
        let names = |hold| {
            rules_for(hold)
                .into_iter()
                .map(|r| r.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(Hold::ReplyLost),
            [REPLY_LOST, REPLY_AGAIN, SEND_COMPLETIONS]
        );
        assert_eq!(
            names(Hold::ReplyAckLost),
            [ACK_LOST, SEND_COMPLETIONS, REPLY_AGAIN]
        );
        // A lost CM message holds nothing back: no wait under it runs against the hold budget.
        assert_eq!(names(Hold::CmLost(CmMessage::Rtu)), [CM_LOST]);
        assert!(!RelayControl::holds_frames(Hold::CmLost(CmMessage::Rep)));
        assert!(RelayControl::holds_frames(Hold::ReplyLost));
        for hold in [
            Hold::ServerExecution,
            Hold::ServerTransmissions,
            Hold::ServerReceives,
            Hold::ClientReceives,
            Hold::ExportCacheUpcall,
        ] {
            assert!(!RelayControl::can_hold(hold), "{hold:?}");
            assert!(rules_for(hold).is_empty());
        }
    }

    #[test]
    fn no_relay_on_the_wire_is_an_error_naming_the_port() {
        // Nothing listens on this loopback address's control port: refused or silent.
        let server: IpAddr = "127.0.0.93".parse().unwrap();
        let err = RelayControl::open(server, "x").err().unwrap();
        assert_eq!(err, RelayError::NoAnswer { server });
        assert!(err.to_string().contains("127.0.0.93:4792"));
    }
}
