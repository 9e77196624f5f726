//! The sans-IO core of the rig's frame relay: it sits between two qemu guests' `dgram` unix-socket
//! netdevs (one Ethernet frame per datagram), forwards every frame to the other guest, and
//! injects a case's faults into the RPC-over-RDMA traffic on the way — drop, delay, hold until
//! something else happened, duplicate, reorder — selected by RC opcode, QP, PSN, CM message or
//! RPC role (the call with XID x, its retransmission, its reply, the ACK of its reply, the READ
//! responses serving it). Each fault comes out with a marker line for the relay's capture.
//!
//! Code map:
//! - [`mod@classify`]: one frame to a [`FrameInfo`] (RC opcode class, QP, PSN, ACK kind, the RPC a
//!   Send starts; CM MAD; control datagram; other).
//! - `track`: what a packet's headers do not say (which message a Middle packet belongs to,
//!   first transmission or retransmission, which replies an ACK acknowledges), bounded.
//! - [`rules`]: [`Selector`], [`Action`], [`Condition`], [`Rule`], the validated [`RuleSet`].
//! - [`mod@relay`]: the state machine [`Relay`] (`handle_frame`, `handle_timeout`, `poll_timeout`,
//!   `poll_output`), and its iWARP accept fence ([`Relay::fence_iwarp_accepts`]; TCP segments
//!   sliced by `trace::tcp`).
//! - [`control`]: the in-band control channel (JSON over UDP to [`CONTROL_PORT`] from the client
//!   side) and its reply frames.
//! - [`pcapng`]: the capture's blocks (forwarded frames on interface 0, dropped frames on
//!   interface 1, markers as packet comments).
//!
//! Architecture Invariant: no I/O and no clock — frames and the time (`u64` microseconds, from
//! the caller) go in, outputs and deadlines come out; the caller owns sockets, files and timers.
//! Architecture Invariant: every frame and control request is untrusted: nothing here panics on
//! any input, and every table (held frames, tracked XIDs and QPs, rule sets, texts) is bounded in
//! total by an explicit limit, never by a number read from the wire.

pub mod classify;
pub mod control;
pub mod pcapng;
pub mod relay;
pub mod rules;
mod track;
pub mod udp;

pub use classify::{
    classify, AckKind, CmInfo, CmKind, Direction, FrameInfo, FrameKind, OpcodeClass, RoceInfo,
    RpcInfo, RpcMsg, Side,
};
pub use control::{ControlReply, ControlRequest, CONTROL_PORT};
pub use relay::{
    Limits, Marker, Output, Relay, RuleStats, Stats, FENCE_RULE, MAX_FENCED_CONNECTIONS,
    MPA_REPLY_KEY, RC_SAFE_HOLD_MICROS,
};
pub use rules::{Action, Condition, Rule, RuleError, RuleSet, Selector, Xid};
pub use track::{MAX_TRACKED_QPS, MESSAGES_PER_QP, PENDING_CM_REQUESTS, XIDS_PER_QP};

/// Longest marker or error text, in bytes: what the trace reader keeps of a pcapng comment.
pub const MAX_TEXT: usize = trace::capture::MAX_COMMENT;

/// `text` cut to [`MAX_TEXT`] bytes at a character boundary.
pub(crate) fn bounded_text(text: &str) -> String {
    let mut end = text.len().min(MAX_TEXT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// A duration for a marker: `250 µs`, `300 ms`, `1.5 s` (to the millisecond above a second).
pub(crate) fn duration_text(micros: u64) -> String {
    fn decimal(whole: u64, fraction: u64, unit: &str) -> String {
        if fraction == 0 {
            return format!("{whole} {unit}");
        }
        let digits = format!("{fraction:03}");
        format!("{whole}.{} {unit}", digits.trim_end_matches('0'))
    }
    match micros {
        0..=999 => format!("{micros} µs"),
        1_000..=999_999 => decimal(micros / 1_000, micros % 1_000, "ms"),
        _ => decimal(micros / 1_000_000, micros % 1_000_000 / 1_000, "s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_a_person_wrote_them() {
        assert_eq!(duration_text(250), "250 µs");
        assert_eq!(duration_text(300_000), "300 ms");
        assert_eq!(duration_text(1_250), "1.25 ms");
        assert_eq!(duration_text(30_000_000), "30 s");
        assert_eq!(duration_text(1_500_999), "1.5 s");
    }

    #[test]
    fn texts_are_cut_at_a_character_boundary() {
        let text = "é".repeat(MAX_TEXT);
        let cut = bounded_text(&text);
        assert!(cut.len() <= MAX_TEXT);
        assert!(cut.chars().all(|c| c == 'é'));
    }
}
