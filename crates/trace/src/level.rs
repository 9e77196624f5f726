//! The one normalisation level of `rig trace show`, `rig trace diff` and the interop snapshots,
//! decided here once: which events are the RPC-over-RDMA *exchange* (calls, replies,
//! retransmitted calls, DRC replays, chunk movements, CM connect and disconnect: a change there is
//! a behaviour change) and which are the RC *transport* underneath (PSN duplicates, NAKs, RNR
//! NAKs and retries, packets held out of sequence, gaps and late fills: timing, summarised as
//! [`TransportCounts`]); and whether a capture is complete enough to be judged at all
//! ([`CaptureStatus`]).
//!
//! Reassembly already executes each PSN once and in order, so a message whose RC packets were
//! retransmitted is one event; what is left here is to keep the transport events out of the
//! gating lines.

use std::fmt;

use serde::Serialize;

use crate::ib::AckSyndrome;
use crate::model::{Event, EventBody, Trace};
use crate::reassembly::TransportEvent;

/// Which events a rendering shows as lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// The gating level (the default): the RPC-over-RDMA exchange, plus transport anomalies that
    /// no retransmission explains (oversized operations, undecodable packets, fatal NAKs, limits).
    /// RC-level events are counted, not shown.
    #[default]
    Exchange,
    /// Every event, RC-level transport events included, one line each.
    Transport,
}

impl Level {
    /// Whether `body` is a line at this level.
    pub fn shows(self, body: &EventBody) -> bool {
        match (self, body) {
            (Level::Transport, _) => true,
            (Level::Exchange, EventBody::Transport(t)) => !is_rc_level(t),
            (Level::Exchange, _) => true,
        }
    }
}

/// Whether a transport event belongs to the RC transport's own recovery (retransmission, flow
/// control, loss, capture artefacts) rather than to the exchange: such events vary with host
/// load and are counted at the [`Level::Exchange`] level instead of shown.
pub fn is_rc_level(event: &TransportEvent) -> bool {
    match event {
        TransportEvent::Duplicate { .. }
        | TransportEvent::OutOfSequence { .. }
        | TransportEvent::Gap { .. }
        | TransportEvent::LateFill { .. }
        | TransportEvent::Incomplete { .. }
        | TransportEvent::UnmatchedResponse { .. }
        | TransportEvent::Orphan { .. }
        | TransportEvent::BadIcrc { .. }
        | TransportEvent::Unfilled { .. }
        | TransportEvent::TcpRetransmission { .. }
        | TransportEvent::TcpOutOfOrder { .. }
        | TransportEvent::TcpOutOfWindow { .. }
        | TransportEvent::TcpLost { .. }
        | TransportEvent::BadMpaCrc { .. } => true,
        // PSN sequence errors and RNR NAKs start a retransmission; the other NAKs (invalid
        // request, remote access or operational error) end the connection: behaviour.
        TransportEvent::Nak { syndrome, .. } => matches!(
            syndrome,
            AckSyndrome::RnrNak { .. } | AckSyndrome::Nak { code: 0 }
        ),
        TransportEvent::Overlong { .. }
        | TransportEvent::Undecodable { .. }
        | TransportEvent::LimitReached { .. }
        | TransportEvent::RigFault { .. }
        | TransportEvent::Terminate { .. } => false,
    }
}

/// RC-level transport events of a trace, counted (not compared: they vary with host load).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TransportCounts {
    /// Request PSNs (or READ responses) seen again: RC retransmissions and RNR retries; for
    /// iWARP, TCP segments whose bytes were delivered already.
    pub duplicates: u64,
    /// NAK PSN_SEQUENCE_ERROR: the responder asking the requester to go back.
    pub naks: u64,
    /// RNR NAKs: no Receive posted; the requester retries after the timer.
    pub rnr_naks: u64,
    /// Packets that arrived ahead of the PSN sequence (held, or ignored for READ responses); for
    /// iWARP, TCP segments ahead of the stream (held) or out of its window (dropped).
    pub out_of_sequence: u64,
    /// Gaps taken as final (PSNs not in the capture; for iWARP, TCP bytes, the stream then
    /// undecodable past them).
    pub gaps: u64,
    /// Packets filling an earlier final gap.
    pub late_fills: u64,
    /// READ responses matching no outstanding READ (re-sent after a repeated READ request).
    pub unmatched: u64,
    /// Middle or last packets without their first.
    pub orphans: u64,
    /// Multi-packet operations cut short.
    pub incomplete: u64,
    /// Packets dropped for a wrong ICRC (iWARP: FPDUs for a wrong MPA CRC).
    pub bad_icrc: u64,
    /// PSNs of gaps never filled.
    pub lost_psns: u64,
}

impl TransportCounts {
    /// Count the RC-level events of `trace`.
    pub fn of(trace: &Trace) -> Self {
        let mut counts = TransportCounts::default();
        for e in &trace.events {
            if let EventBody::Transport(t) = &e.body {
                counts.add(t);
            }
        }
        counts
    }

    /// Count one event (events that are not RC-level are ignored).
    pub fn add(&mut self, event: &TransportEvent) {
        let slot = match event {
            TransportEvent::Duplicate { .. } | TransportEvent::TcpRetransmission { .. } => {
                &mut self.duplicates
            }
            TransportEvent::TcpOutOfOrder { .. } | TransportEvent::TcpOutOfWindow { .. } => {
                &mut self.out_of_sequence
            }
            TransportEvent::TcpLost { .. } => &mut self.gaps,
            TransportEvent::BadMpaCrc { .. } => &mut self.bad_icrc,
            TransportEvent::Nak {
                syndrome: AckSyndrome::RnrNak { .. },
                ..
            } => &mut self.rnr_naks,
            TransportEvent::Nak {
                syndrome: AckSyndrome::Nak { code: 0 },
                ..
            } => &mut self.naks,
            TransportEvent::OutOfSequence { .. } => &mut self.out_of_sequence,
            TransportEvent::Gap { .. } => &mut self.gaps,
            TransportEvent::LateFill { .. } => &mut self.late_fills,
            TransportEvent::UnmatchedResponse { .. } => &mut self.unmatched,
            TransportEvent::Orphan { .. } => &mut self.orphans,
            TransportEvent::Incomplete { .. } => &mut self.incomplete,
            TransportEvent::BadIcrc { .. } => &mut self.bad_icrc,
            TransportEvent::Unfilled { psns, .. } => {
                self.lost_psns = self.lost_psns.saturating_add(*psns);
                return;
            }
            _ => return,
        };
        *slot = slot.saturating_add(1);
    }

    /// Whether no RC-level event happened.
    pub fn is_empty(&self) -> bool {
        *self == TransportCounts::default()
    }
}

impl fmt::Display for TransportCounts {
    /// `duplicates=12 naks=1 rnr_naks=0 ...`, every counter, always in this order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "duplicates={} naks={} rnr_naks={} out_of_sequence={} gaps={} late_fills={} \
             unmatched={} orphans={} incomplete={} bad_icrc={} lost_psns={}",
            self.duplicates,
            self.naks,
            self.rnr_naks,
            self.out_of_sequence,
            self.gaps,
            self.late_fills,
            self.unmatched,
            self.orphans,
            self.incomplete,
            self.bad_icrc,
            self.lost_psns
        )
    }
}

/// Why a capture cannot be judged as a whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Incompleteness {
    /// The capture file ends in a malformed or cut record.
    Truncated { error: String },
    /// RPC-over-RDMA connections with no CM DREQ, DREP or REJ after their last event: the
    /// capture stopped before the disconnect.
    NoDisconnect { open: usize, of: usize },
    /// RPC-over-RDMA connections whose last DREQ no DREP answered: the capture stopped between
    /// the two (the recipient of a DREQ answers it with a DREP, IBTA Vol 1 §12.6; a peer that
    /// died answers nothing, and its death is reported by the kernel log, not by the trace).
    UnansweredDisconnect { open: usize, of: usize },
    /// PSNs that no packet of the capture carried, even after retransmissions.
    LostPackets { psns: u64 },
    /// Multi-packet operations whose packets were not all captured.
    Unfinished { operations: u64 },
    /// iWARP: TCP streams not decoded past bytes the capture lacks.
    LostStreams { streams: u64 },
    /// iWARP: connections one side closed (TCP FIN) and the other never did in the capture.
    HalfClosed { open: usize, of: usize },
}

impl fmt::Display for Incompleteness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Incompleteness::Truncated { error } => write!(f, "truncated: {error}"),
            Incompleteness::NoDisconnect { open, of } => write!(
                f,
                "no disconnect after the last message on {open} of {of} connections"
            ),
            Incompleteness::UnansweredDisconnect { open, of } => {
                write!(f, "no DREP after the DREQ on {open} of {of} connections")
            }
            Incompleteness::LostPackets { psns } => write!(f, "{psns} PSNs never captured"),
            Incompleteness::Unfinished { operations } => {
                write!(f, "{operations} RC operations not captured whole")
            }
            Incompleteness::HalfClosed { open, of } => {
                write!(f, "one TCP FIN only on {open} of {of} connections")
            }
            Incompleteness::LostStreams { streams } => {
                write!(f, "{streams} TCP streams with bytes never captured")
            }
        }
    }
}

/// Whether a capture holds the whole exchange it recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "capture", content = "reasons", rename_all = "snake_case")]
pub enum CaptureStatus {
    Complete,
    Incomplete(Vec<Incompleteness>),
}

impl CaptureStatus {
    pub fn is_complete(&self) -> bool {
        matches!(self, CaptureStatus::Complete)
    }
}

impl fmt::Display for CaptureStatus {
    /// `complete`, or `incomplete (reason; reason)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureStatus::Complete => f.write_str("complete"),
            CaptureStatus::Incomplete(reasons) => {
                let reasons: Vec<String> = reasons.iter().map(ToString::to_string).collect();
                write!(f, "incomplete ({})", reasons.join("; "))
            }
        }
    }
}

/// How far a connection's teardown got after its last other event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Teardown {
    /// Something other than a disconnect came last (or nothing yet).
    #[default]
    Open,
    /// A DREQ came last and no DREP answered it.
    Requested,
    /// iWARP: one side's TCP FIN came last, the other's never did.
    HalfClosed,
    /// A DREP or REJ ended it (iWARP: both FINs, a RST or an MPA reject).
    Closed,
}

impl Teardown {
    /// The state after CM message `name` (one that is not part of a teardown reopens it).
    fn after_cm(self, name: &str) -> Teardown {
        match name {
            "CM_DREP" | "CM_REJ" | "MPA_REJ" | "TCP_RST" => Teardown::Closed,
            // iWARP: the second FIN closes the connection; the first asks for it, as a DREQ.
            "TCP_FIN" if self == Teardown::HalfClosed || self == Teardown::Closed => {
                Teardown::Closed
            }
            "TCP_FIN" => Teardown::HalfClosed,
            // A second DREQ (the peer's, crossing ours, or a retransmission) after the DREP
            // does not undo it.
            "CM_DREQ" if self == Teardown::Closed => Teardown::Closed,
            "CM_DREQ" => Teardown::Requested,
            _ => Teardown::Open,
        }
    }
}

/// Judge whether `trace` holds a whole exchange: the capture file is intact, every PSN gap was
/// filled, every multi-packet operation completed, and every RPC-over-RDMA connection was
/// disconnected after its last event, its DREQ answered by a DREP (or it was rejected). A capture
/// without any connection is complete (nothing connected); whether something should have is for
/// the caller to say.
pub fn capture_status(trace: &Trace) -> CaptureStatus {
    let mut status = StatusOfEvents::default();
    for e in &trace.events {
        status.add(e);
    }
    status.finish(trace).1
}

/// What [`capture_status`] and [`TransportCounts`] need of the events, gathered one event at a
/// time, so a trace whose events are streamed (`crate::stream_capture`) and never kept is judged
/// as the whole trace would be.
#[derive(Debug, Default)]
pub struct StatusOfEvents {
    counts: TransportCounts,
    /// Per connection id: how far its teardown got after its last other event. Grown to the
    /// highest id seen (ids are dense, one per connection of the capture).
    teardown: Vec<Teardown>,
    /// iWARP TCP streams lost (kept out of [`TransportCounts`], whose fields are RoCE's).
    lost_streams: u64,
}

impl StatusOfEvents {
    /// Take one event into account.
    pub fn add(&mut self, e: &Event) {
        if let EventBody::Transport(t) = &e.body {
            self.counts.add(t);
            if matches!(t, TransportEvent::TcpLost { .. }) {
                self.lost_streams += 1;
            }
        }
        let Some(conn) = e.conn else { return };
        if conn >= self.teardown.len() {
            self.teardown.resize(conn + 1, Teardown::Open);
        }
        let state = &mut self.teardown[conn];
        *state = match &e.body {
            EventBody::Transport(_) => return,
            EventBody::Cm { name, .. } => state.after_cm(name),
            _ => Teardown::Open,
        };
    }

    /// The transport counts and the capture status, given the rest of the trace (its
    /// connections and capture error; its `events` are not read).
    pub fn finish(self, trace: &Trace) -> (TransportCounts, CaptureStatus) {
        let counts = self.counts;
        (
            counts,
            status_of(trace, &self.teardown, counts, self.lost_streams),
        )
    }
}

fn status_of(
    trace: &Trace,
    teardown: &[Teardown],
    counts: TransportCounts,
    lost_streams: u64,
) -> CaptureStatus {
    let mut reasons = Vec::new();
    if let Some(error) = &trace.capture_error {
        reasons.push(Incompleteness::Truncated {
            error: error.clone(),
        });
    }
    let rpcrdma: Vec<usize> = trace
        .connections
        .iter()
        .filter(|c| c.rpcrdma)
        .map(|c| c.id)
        .collect();
    // Events on ids past the trace's connections were never counted (as before).
    let teardown = &teardown[..teardown.len().min(trace.connections.len())];
    let in_state = |wanted: Teardown| {
        rpcrdma
            .iter()
            .filter(|&&c| teardown.get(c).copied().unwrap_or_default() == wanted)
            .count()
    };
    let open = in_state(Teardown::Open);
    if open > 0 {
        reasons.push(Incompleteness::NoDisconnect {
            open,
            of: rpcrdma.len(),
        });
    }
    let unanswered = in_state(Teardown::Requested);
    if unanswered > 0 {
        reasons.push(Incompleteness::UnansweredDisconnect {
            open: unanswered,
            of: rpcrdma.len(),
        });
    }
    let half_closed = in_state(Teardown::HalfClosed);
    if half_closed > 0 {
        reasons.push(Incompleteness::HalfClosed {
            open: half_closed,
            of: rpcrdma.len(),
        });
    }
    if counts.lost_psns > 0 {
        reasons.push(Incompleteness::LostPackets {
            psns: counts.lost_psns,
        });
    }
    if counts.incomplete > 0 {
        reasons.push(Incompleteness::Unfinished {
            operations: counts.incomplete,
        });
    }
    if lost_streams > 0 {
        reasons.push(Incompleteness::LostStreams {
            streams: lost_streams,
        });
    }
    if reasons.is_empty() {
        CaptureStatus::Complete
    } else {
        CaptureStatus::Incomplete(reasons)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Event;
    use std::time::Duration;

    fn event(body: EventBody) -> Event {
        Event {
            frame: 1,
            first_frame: 1,
            time: Duration::ZERO,
            conn: Some(0),
            dir: None,
            body,
        }
    }

    #[test]
    fn retransmission_naks_are_counted_fatal_naks_stay_lines() {
        let nak = |syndrome| TransportEvent::Nak { psn: 1, syndrome };
        let seq = nak(AckSyndrome::Nak { code: 0 });
        let rnr = nak(AckSyndrome::RnrNak { timer: 3 });
        let access = nak(AckSyndrome::Nak { code: 2 });
        assert!(is_rc_level(&seq) && is_rc_level(&rnr));
        assert!(!is_rc_level(&access));
        let overlong = TransportEvent::Overlong {
            what: "send",
            declared: 9,
        };
        for (e, shown) in [
            (&seq, false),
            (&rnr, false),
            (&access, true),
            (&overlong, true),
        ] {
            let body = EventBody::Transport(e.clone());
            assert_eq!(Level::Exchange.shows(&body), shown, "{e:?}");
            assert!(Level::Transport.shows(&body));
        }
        let mut counts = TransportCounts::default();
        for e in [&seq, &rnr, &rnr, &access, &overlong] {
            counts.add(e);
        }
        assert_eq!((counts.naks, counts.rnr_naks), (1, 2));
        assert_eq!(
            counts.to_string(),
            "duplicates=0 naks=1 rnr_naks=2 out_of_sequence=0 gaps=0 late_fills=0 unmatched=0 \
             orphans=0 incomplete=0 bad_icrc=0 lost_psns=0"
        );
    }

    #[test]
    fn an_iwarp_connection_is_closed_by_both_fins_or_a_reset() {
        let cm = |name: &str| {
            event(EventBody::Cm {
                name: name.into(),
                detail: String::new(),
            })
        };
        let mut trace = Trace {
            connections: vec![crate::model::Connection {
                rpcrdma: true,
                ..Default::default()
            }],
            ..Default::default()
        };
        trace.events = vec![cm("MPA_REQ"), cm("MPA_REP"), cm("TCP_FIN")];
        assert_eq!(
            capture_status(&trace).to_string(),
            "incomplete (one TCP FIN only on 1 of 1 connections)"
        );
        trace.events.push(cm("TCP_FIN"));
        assert_eq!(capture_status(&trace), CaptureStatus::Complete);
        trace.events.push(event(EventBody::Send { length: 4 }));
        trace.events.push(cm("TCP_RST"));
        assert_eq!(capture_status(&trace), CaptureStatus::Complete);
        let lost = TransportEvent::TcpLost {
            expected: 1,
            got: 9,
        };
        assert!(is_rc_level(&lost));
        trace.events.push(event(EventBody::Transport(lost)));
        assert_eq!(
            capture_status(&trace).to_string(),
            "incomplete (1 TCP streams with bytes never captured)"
        );
    }

    #[test]
    fn a_connection_is_closed_only_by_an_answered_disconnect_after_its_last_event() {
        let cm = |name: &str| EventBody::Cm {
            name: name.into(),
            detail: String::new(),
        };
        let mut trace = Trace {
            connections: vec![crate::model::Connection {
                rpcrdma: true,
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(capture_status(&Trace::default()), CaptureStatus::Complete);
        trace.events = vec![event(cm("CM_REQ")), event(cm("CM_DREQ"))];
        // A DREQ that no DREP answered: the capture stopped between the two.
        assert_eq!(
            capture_status(&trace),
            CaptureStatus::Incomplete(vec![Incompleteness::UnansweredDisconnect {
                open: 1,
                of: 1
            }])
        );
        assert_eq!(
            capture_status(&trace).to_string(),
            "incomplete (no DREP after the DREQ on 1 of 1 connections)"
        );
        trace.events.push(event(cm("CM_DREP")));
        assert_eq!(capture_status(&trace), CaptureStatus::Complete);
        // The peer's DREQ crossing ours, after the DREP, does not reopen the teardown.
        trace.events.push(event(cm("CM_DREQ")));
        assert_eq!(capture_status(&trace), CaptureStatus::Complete);
        // A transport event after the disconnect does not reopen it; a Send does.
        trace
            .events
            .push(event(EventBody::Transport(TransportEvent::Duplicate {
                psn: 1,
                opcode: "SEND_ONLY",
            })));
        assert_eq!(capture_status(&trace), CaptureStatus::Complete);
        trace.events.push(event(EventBody::Send { length: 4 }));
        assert_eq!(
            capture_status(&trace),
            CaptureStatus::Incomplete(vec![Incompleteness::NoDisconnect { open: 1, of: 1 }])
        );
        trace.capture_error = Some("cut record".into());
        assert_eq!(
            capture_status(&trace).to_string(),
            "incomplete (truncated: cut record; no disconnect after the last message on 1 of 1 \
             connections)"
        );
    }
}
