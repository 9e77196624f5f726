//! Packets put in PSN order per flow (RC requests and responses): duplicates and gaps counted, held
//! packets released when the sequence is whole, a gap that never fills reported at the end.

use super::*;

impl Reassembler {
    pub(super) fn request(
        &mut self,
        at: At,
        key: FlowKey,
        p: &IbPacket,
        payload_at: Option<usize>,
    ) {
        if self.flow(key, at).is_none() {
            return;
        }
        if let Sequence::Execute { resume } = self.sequence(at, key, p) {
            self.execute(at, key, p, resume, payload_at);
            self.release_ready(key);
        }
    }

    /// IBTA Vol 1 §9.7.5.1: a responder executes each PSN once, in order; a request PSN below
    /// the expected one is a duplicate, above it a sequence error (held here). PSNs skipped by a
    /// final gap are remembered: a packet that later fills one (the requester going back after
    /// a NAK, or a reordered capture) is executed, not dropped as a duplicate.
    pub(super) fn sequence(&mut self, at: At, key: FlowKey, p: &IbPacket) -> Sequence {
        let mut may_hold = true;
        loop {
            let room = self.limits.max_held_bytes.saturating_sub(self.held_bytes);
            let Some(state) = self.flows.get_mut(&key) else {
                return Sequence::Skip;
            };
            let Some(expected) = state.expected_psn else {
                return Sequence::Execute { resume: None };
            };
            let distance = ib::psn_distance(p.psn, expected);
            if distance == 0 {
                return Sequence::Execute { resume: None };
            }
            if distance < 0 {
                let fills = state.missing.iter().position(|&(start, end)| {
                    ib::psn_distance(p.psn, start) >= 0 && ib::psn_distance(end, p.psn) > 0
                });
                let Some(hole) = fills else {
                    self.event(at, Some(key), duplicate(p));
                    return Sequence::Skip;
                };
                let (start, end) = state.missing[hole];
                state.missing.remove(hole);
                if start != p.psn {
                    state.missing.push_back((start, p.psn));
                }
                let after = ib::psn_add(p.psn, 1);
                if after != end {
                    state.missing.push_back((after, end));
                }
                self.event(
                    at,
                    Some(key),
                    TransportEvent::LateFill {
                        psn: p.psn,
                        opcode: p.opcode.name(),
                    },
                );
                return Sequence::Execute {
                    resume: Some(expected),
                };
            }
            // Ahead of the sequence.
            if state.held.iter().any(|h| h.psn == p.psn) {
                self.event(at, Some(key), duplicate(p));
                return Sequence::Skip;
            }
            if !may_hold {
                self.final_gap(at, key, expected, p.psn);
                return Sequence::Execute { resume: None };
            }
            if state.held.len() < MAX_HELD_PACKETS && p.payload.len() + HELD_OVERHEAD <= room {
                let held = Held::new(at, p);
                self.held_bytes += held.cost();
                state.held.push(held);
                self.held_packets += 1;
                self.event(
                    at,
                    Some(key),
                    TransportEvent::OutOfSequence {
                        expected,
                        psn: p.psn,
                        opcode: p.opcode.name(),
                    },
                );
                return Sequence::Skip;
            }
            // No room to wait any longer: what is held goes first (its gaps final), then this
            // packet is judged again against where the sequence got to.
            self.event(
                at,
                Some(key),
                TransportEvent::LimitReached {
                    what: "held packets",
                },
            );
            self.release_all(key);
            may_hold = false;
        }
    }

    /// PSNs `[expected, got)` will not come: remember them, abort what they interrupted.
    pub(super) fn final_gap(&mut self, at: At, key: FlowKey, expected: u32, got: u32) {
        let Some(state) = self.flows.get_mut(&key) else {
            return;
        };
        let mut events = vec![TransportEvent::Gap { expected, got }];
        if state.missing.len() >= MAX_MISSING_RANGES {
            if let Some((start, end)) = state.missing.pop_front() {
                let (ranges, psns) = state.forgotten;
                state.forgotten = (
                    ranges.saturating_add(1),
                    psns.saturating_add(ib::psn_distance(end, start).max(0) as u64),
                );
            }
        }
        state.missing.push_back((expected, got));
        if let Some(s) = state.send.take() {
            events.push(TransportEvent::Incomplete {
                what: "send",
                psn: s.next_psn,
            });
        }
        if let Some(w) = state.write.take() {
            events.push(TransportEvent::Incomplete {
                what: "rdma_write",
                psn: w.next_psn,
            });
        }
        for e in events {
            self.event(at, Some(key), e);
        }
    }

    /// Execute held packets that the sequence has reached; drop copies it has passed.
    pub(super) fn release_ready(&mut self, key: FlowKey) {
        loop {
            let Some(state) = self.flows.get_mut(&key) else {
                return;
            };
            let Some(expected) = state.expected_psn else {
                return;
            };
            let (mut bytes, mut packets) = (0usize, 0usize);
            state.held.retain(|h| {
                let keep = ib::psn_distance(h.psn, expected) >= 0;
                if !keep {
                    bytes += h.cost();
                    packets += 1;
                }
                keep
            });
            self.held_bytes = self.held_bytes.saturating_sub(bytes);
            self.held_packets = self.held_packets.saturating_sub(packets);
            let Some(i) = state.held.iter().position(|h| h.psn == expected) else {
                return;
            };
            let held = state.held.remove(i);
            self.held_bytes = self.held_bytes.saturating_sub(held.cost());
            self.held_packets = self.held_packets.saturating_sub(1);
            self.execute(held.at, key, &held.packet(key.dest_qp), None, None);
        }
    }

    /// Execute every held packet of a flow in PSN order, the gaps before them being final.
    pub(super) fn release_all(&mut self, key: FlowKey) {
        loop {
            self.release_ready(key);
            let Some(state) = self.flows.get_mut(&key) else {
                return;
            };
            let Some(first) = state.held.first().map(|h| h.psn) else {
                return;
            };
            let reference = state.expected_psn.unwrap_or(first);
            let Some(i) = (0..state.held.len())
                .min_by_key(|&i| ib::psn_distance(state.held[i].psn, reference))
            else {
                return;
            };
            let held = state.held.remove(i);
            self.held_bytes = self.held_bytes.saturating_sub(held.cost());
            self.held_packets = self.held_packets.saturating_sub(1);
            if let Some(expected) = state.expected_psn {
                if ib::psn_distance(held.psn, expected) > 0 {
                    self.final_gap(held.at, key, expected, held.psn);
                }
            }
            self.execute(held.at, key, &held.packet(key.dest_qp), None, None);
        }
    }
}
