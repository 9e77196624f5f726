//! The relay's state machine (quinn-proto style): frames and time go in through
//! [`Relay::handle_frame`] and [`Relay::handle_timeout`], what to send comes out of
//! [`Relay::poll_output`], and [`Relay::poll_timeout`] says when time next matters.
//!
//! Order: frames no rule holds are forwarded in arrival order; held frames are forwarded, in
//! arrival order among themselves, when their condition holds, a control request releases them or
//! the hold limit runs out. Every fault the rig injects comes out with a [`Marker`] for the
//! capture. The first rule (in set order) that selects a frame and has hits left acts on it.
//! Before any rule, the iWARP accept fence (`fence`, off unless the caller sets it) holds the
//! client's bytes on a soft-iWARP connection until a fixed time after the server's MPA Reply;
//! rule changes do not release them.
//!
//! Bounds: at most `Limits::max_held_frames` frames and `max_held_bytes` bytes are held (a frame
//! over either is forwarded at once, marked), none longer than `max_hold_micros`; tracking is
//! bounded as `track` says; at most `MAX_FENCED_CONNECTIONS` fences stand at once. Outputs queue
//! until polled: callers drain [`Relay::poll_output`] after every `handle_*` call (one call
//! queues at most the held frames plus three).

mod fence;
mod holding;
mod requests;

pub use fence::{FENCE_RULE, MAX_FENCED_CONNECTIONS, MPA_REPLY_KEY};

use std::collections::{HashMap, HashSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::classify::{classify, Direction, FrameKind, Side};
use crate::control::{self, ControlReply, ControlRequest, MAX_CONTROL_REQUEST};
use crate::rules::{Action, Condition, RuleSet, Selector, Xid};
use crate::track::{Facts, Tracker};
use crate::{bounded_text, duration_text};

/// The relay's bounds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub max_held_frames: usize,
    pub max_held_bytes: usize,
    pub max_hold_micros: u64,
    pub max_tracked_xids: usize,
}

/// The longest a frame may be held on a wire that carries RC connections: an RC requester that
/// gets no ACK retransmits after its local ACK timeout and breaks the connection after its retry
/// count (rdma_cm's REQ asks for 7 retries; on RoCE the ACK timeout is 4.096 µs × 2^17 ≈ 0.54 s),
/// so a hold of an ACK (or of a request) must end well inside seven timeouts. The rig's wire runs
/// with this as `max_hold_micros`; a case learns from `Stats::released_by_limit` that its hold
/// ran out and its ordering was not forced.
pub const RC_SAFE_HOLD_MICROS: u64 = 1_500_000;

impl Default for Limits {
    /// A case holds a handful of frames for at most seconds; these leave room for bursts.
    fn default() -> Self {
        Limits {
            max_held_frames: 1024,
            max_held_bytes: 16 << 20,
            max_hold_micros: 30_000_000,
            max_tracked_xids: 4096,
        }
    }
}

/// A human line for the capture: the pcapng comment of the frame it concerns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    pub text: String,
}

impl Marker {
    fn new(text: String) -> Marker {
        Marker {
            text: bounded_text(&text),
        }
    }
}

/// Something for the I/O layer to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Send `frame` to the guest on side `to`.
    Forward {
        to: Side,
        frame: Vec<u8>,
        marker: Option<Marker>,
    },
    /// A rule dropped `frame` (travelling `direction`): send nothing; the capture records it on
    /// its "dropped by the rig" interface with the marker.
    Dropped {
        direction: Direction,
        frame: Vec<u8>,
        marker: Marker,
    },
    /// The answer to a control request: send it to the guest on side `to` (never captured).
    Reply { to: Side, frame: Vec<u8> },
    /// A case began (`ControlRequest::Begin`): the frames from here on are its own, until the
    /// next case begins.
    CaseBegins { case: String },
}

pub use crate::control::{RuleStats, Stats};

/// What a held frame waits for.
#[derive(Debug)]
enum Wait {
    Until(Condition),
    Delay {
        micros: u64,
    },
    /// The next frame forwarded the same way.
    Reorder,
    /// The end of an iWARP accept fence (never released early by a rule change).
    Fence {
        fence: fence::Fence,
    },
}

#[derive(Debug)]
struct Held {
    direction: Direction,
    frame: Vec<u8>,
    facts: Facts,
    rule: String,
    wait: Wait,
    held_at: u64,
}

impl Held {
    /// When the wait itself ends by time, if it does.
    fn wait_deadline(&self) -> Option<u64> {
        match &self.wait {
            Wait::Until(condition) => condition_deadline(condition, self.held_at),
            Wait::Delay { micros } => Some(self.held_at.saturating_add(*micros)),
            Wait::Reorder => None,
            Wait::Fence { fence } => Some(fence.until()),
        }
    }
}

fn condition_deadline(condition: &Condition, held_at: u64) -> Option<u64> {
    match condition {
        Condition::For { micros } => Some(held_at.saturating_add(*micros)),
        Condition::AnyOf(items) => items
            .iter()
            .filter_map(|c| condition_deadline(c, held_at))
            .min(),
        Condition::Forwarded(_) | Condition::Release { .. } => None,
    }
}

fn condition_names_release(condition: &Condition, name: &str) -> bool {
    match condition {
        Condition::Release { name: n } => n == name,
        Condition::AnyOf(items) => items.iter().any(|c| condition_names_release(c, name)),
        Condition::Forwarded(_) | Condition::For { .. } => false,
    }
}

/// The installed rule set and its per-rule state.
#[derive(Debug)]
struct Installed {
    set: RuleSet,
    stats: Vec<RuleStats>,
    /// `Xid::Nth` values the rules name, and those resolved so far.
    nth_wanted: HashSet<u32>,
    nth_resolved: HashMap<u32, u32>,
    /// Distinct client calls seen since installation.
    calls_seen: u32,
}

impl Installed {
    fn resolve(&self, xid: Xid) -> Option<u32> {
        match xid {
            Xid::Is(xid) => Some(xid),
            Xid::Nth(n) => self.nth_resolved.get(&n).copied(),
        }
    }

    fn matches(&self, selector: &Selector, facts: &Facts) -> bool {
        let roce = match facts.info.kind {
            FrameKind::Roce(roce) => Some(roce),
            // A TCP segment (soft-iWARP) is selected by direction only: every selector below
            // that needs RC or RPC facts finds none (`roce`, `send` and the tracked sets are
            // empty for it).
            FrameKind::Cm(_) | FrameKind::Tcp => None,
            // Rules never select ARP, neighbour discovery or control datagrams.
            FrameKind::Control | FrameKind::Other => return false,
        };
        let direction = facts.info.direction;
        let send = facts.send;
        match selector {
            Selector::Any => true,
            Selector::Direction(d) => direction == *d,
            Selector::Opcode(class) => roce.is_some_and(|r| r.opcode == *class),
            Selector::Qpn(qp) => roce.is_some_and(|r| r.dest_qp == *qp),
            Selector::Psn(psn) => roce.is_some_and(|r| r.psn == *psn),
            Selector::Cm(kind) => matches!(facts.info.kind, FrameKind::Cm(cm) if cm.kind == *kind),
            Selector::CallOf { xid } | Selector::RetransmitOf { xid } => {
                let retransmit = matches!(selector, Selector::RetransmitOf { .. });
                direction == Direction::FromClient
                    && send.is_some_and(|tag| {
                        tag.msg == crate::RpcMsg::Call
                            && tag.retransmit == retransmit
                            && self.resolve(*xid) == Some(tag.xid)
                    })
            }
            Selector::ReplyTo { xid } => {
                direction == Direction::FromServer
                    && send.is_some_and(|tag| {
                        tag.msg == crate::RpcMsg::Reply && self.resolve(*xid) == Some(tag.xid)
                    })
            }
            Selector::AckOfReplyTo { xid } => self
                .resolve(*xid)
                .is_some_and(|x| facts.acks_replies_to.contains(&x)),
            Selector::ReadResponsesFor { xid } => self
                .resolve(*xid)
                .is_some_and(|x| facts.read_responses_for.contains(&x)),
            Selector::RcRetransmission => facts.rc_retransmission,
            Selector::All(items) => items.iter().all(|s| self.matches(s, facts)),
            Selector::AnyOf(items) => items.iter().any(|s| self.matches(s, facts)),
        }
    }

    fn met_by_forward(&self, condition: &Condition, facts: &Facts) -> bool {
        match condition {
            Condition::Forwarded(selector) => self.matches(selector, facts),
            Condition::AnyOf(items) => items.iter().any(|c| self.met_by_forward(c, facts)),
            Condition::For { .. } | Condition::Release { .. } => false,
        }
    }
}

/// Why a held frame goes on.
#[derive(Debug, Clone, Copy)]
enum Release<'a> {
    /// Its condition, delay or reorder partner.
    Waited,
    Limit,
    Named(&'a str),
    RulesReplaced,
    RulesCleared,
}

/// The relay between the client's and the server's guest.
#[derive(Debug)]
pub struct Relay {
    limits: Limits,
    tracker: Tracker,
    installed: Option<Installed>,
    /// In arrival order.
    held: Vec<Held>,
    held_bytes: usize,
    outputs: VecDeque<Output>,
    stats: Stats,
    next_ip_id: u16,
    /// How long an iWARP accept fence lasts (0: no fences), and the fences standing.
    fence_micros: u64,
    fences: Vec<fence::Fence>,
}

impl Relay {
    pub fn new(limits: Limits) -> Relay {
        Relay {
            tracker: Tracker::new(limits.max_tracked_xids),
            limits,
            installed: None,
            held: Vec::new(),
            held_bytes: 0,
            outputs: VecDeque::new(),
            stats: Stats::default(),
            next_ip_id: 1,
            fence_micros: 0,
            fences: Vec::new(),
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// A frame arrived travelling `from` (on the client port: `FromClient`).
    pub fn handle_frame(&mut self, now_us: u64, from: Direction, frame: Vec<u8>) {
        // A late caller still gets frames due before this one released first.
        self.handle_timeout(now_us);
        let info = classify(from, &frame);
        if info.kind == FrameKind::Control {
            self.control_frame(now_us, &frame);
            return;
        }
        let facts = self.tracker.observe(info);
        let Some((frame, facts)) = self.fence(now_us, from, frame, facts) else {
            return;
        };
        if facts.new_call {
            if let (Some(installed), Some(tag)) = (self.installed.as_mut(), facts.send) {
                installed.calls_seen = installed.calls_seen.saturating_add(1);
                if installed.nth_wanted.contains(&installed.calls_seen) {
                    installed.nth_resolved.insert(installed.calls_seen, tag.xid);
                }
            }
        }
        let Some((rule, action)) = self.select_rule(&facts) else {
            self.forward(now_us, from, frame, facts, None);
            return;
        };
        let summary = facts.summary();
        match action {
            Action::Drop { .. } => {
                self.rule_stats(&rule, |s| s.dropped += 1);
                self.stats.dropped += 1;
                self.outputs.push_back(Output::Dropped {
                    direction: from,
                    frame,
                    marker: Marker::new(format!("dropped by the rig (rule {rule}): {summary}")),
                });
            }
            Action::Duplicate => {
                self.rule_stats(&rule, |s| s.duplicated += 1);
                self.stats.duplicated += 1;
                let marker = Marker::new(format!("duplicated by the rig (rule {rule}): {summary}"));
                self.forward(now_us, from, frame.clone(), facts.clone(), None);
                self.forward(now_us, from, frame, facts, Some(marker));
            }
            Action::Delay { micros } => {
                self.hold(now_us, from, frame, facts, rule, Wait::Delay { micros });
            }
            Action::Hold { until } => {
                self.hold(now_us, from, frame, facts, rule, Wait::Until(until));
            }
            Action::Reorder => {
                self.hold(now_us, from, frame, facts, rule, Wait::Reorder);
            }
            Action::Mark => {
                let marker = Marker::new(format!("seen by the rig (rule {rule}): {summary}"));
                self.forward(now_us, from, frame, facts, Some(marker));
            }
        }
    }

    /// Time has reached `now_us`: release what is due.
    pub fn handle_timeout(&mut self, now_us: u64) {
        let max_hold = self.limits.max_hold_micros;
        let mut due = Vec::new();
        let mut index = 0;
        while index < self.held.len() {
            let held = &self.held[index];
            let waited = held.wait_deadline().is_some_and(|d| d <= now_us);
            let limit = held.held_at.saturating_add(max_hold) <= now_us;
            if waited || limit {
                let held = self.take_held(index);
                due.push((held, waited));
            } else {
                index += 1;
            }
        }
        for (held, waited) in due {
            let why = if waited {
                Release::Waited
            } else {
                self.stats.released_by_limit += 1;
                Release::Limit
            };
            self.release(now_us, held, why);
        }
    }

    /// When [`Relay::handle_timeout`] should next be called.
    pub fn poll_timeout(&self) -> Option<u64> {
        let max_hold = self.limits.max_hold_micros;
        self.held
            .iter()
            .map(|held| {
                let limit = held.held_at.saturating_add(max_hold);
                held.wait_deadline().map_or(limit, |d| d.min(limit))
            })
            .min()
    }

    pub fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    pub fn stats(&self) -> Stats {
        let mut stats = self.stats.clone();
        stats.held = self.held.len() as u64;
        stats.held_bytes = self.held_bytes as u64;
        stats.tracked_xids = self.tracker.tracked_xids() as u64;
        if let Some(installed) = &self.installed {
            stats.case = installed.set.case().to_string();
            stats.rules = installed.stats.clone();
        }
        stats
    }
}

/// The marker of a frame released from hold: why it was held, for how long, by which rule.
fn release_marker(now_us: u64, held: &Held, why: Release<'_>) -> Marker {
    let waited = duration_text(now_us.saturating_sub(held.held_at));
    let rule = &held.rule;
    let summary = held.facts.summary();
    Marker::new(match (why, &held.wait) {
        (Release::Waited, Wait::Delay { .. }) => {
            format!("delayed {waited} by the rig (rule {rule}): {summary}")
        }
        (Release::Waited, Wait::Reorder) => format!(
            "reordered by the rig (rule {rule}): held {waited}, forwarded after the next frame: {summary}"
        ),
        (Release::Waited, Wait::Fence { fence }) => {
            fence.marker_text(&waited, held.held_at, &summary)
        }
        (Release::Waited, Wait::Until(_)) => {
            format!("held {waited} by the rig (rule {rule}): {summary}")
        }
        (Release::Named(name), _) => {
            format!("held {waited} by the rig (rule {rule}) until release {name:?}: {summary}")
        }
        (Release::Limit, _) => {
            format!("released by the relay's limit (held {waited}; rule {rule}): {summary}")
        }
        (Release::RulesReplaced, _) => {
            format!("released by the rig: rules replaced (held {waited}; rule {rule}): {summary}")
        }
        (Release::RulesCleared, _) => {
            format!("released by the rig: rules cleared (held {waited}; rule {rule}): {summary}")
        }
    })
}
