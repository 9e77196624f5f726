//! The reassembler's flows: a flow's state found or created within the limits, and the flows between
//! two addresses.

use super::*;

impl Reassembler {
    pub(super) fn flow(&mut self, key: FlowKey, at: At) -> Option<&mut FlowState> {
        let known = self.flows.get(&key).map(|s| s.last_frame);
        if known.is_none() && self.flows.len() >= self.limits.max_flows {
            // Evict the least recently active flow to stay bounded (the LRU index gives it in
            // O(log n): the same flow a scan for the smallest (last frame, key) would find).
            let (_, oldest) = self.lru.pop_first()?;
            if let Some(evicted) = self.flows.remove(&oldest) {
                let held: usize = evicted.held.iter().map(Held::cost).sum();
                self.held_bytes = self.held_bytes.saturating_sub(held);
                self.held_packets = self.held_packets.saturating_sub(evicted.held.len());
                for read in &evicted.reads {
                    self.read_reservations.give_back(read);
                }
            }
            if let Some(set) = self.by_peers.get_mut(&(oldest.src, oldest.dst)) {
                set.remove(&oldest);
                if set.is_empty() {
                    self.by_peers.remove(&(oldest.src, oldest.dst));
                }
            }
            // Reported at the 1st, 2nd, 4th, 8th, ... eviction: a capture of a million flows
            // says so twenty times, not a million (each report would cost a line and an event).
            self.evicted_flows += 1;
            if self.evicted_flows.is_power_of_two() {
                self.event(
                    at,
                    Some(oldest),
                    TransportEvent::LimitReached { what: "flows" },
                );
            }
        }
        match known {
            Some(last) if last == at.frame => {}
            Some(last) => {
                self.lru.remove(&(last, key));
                self.lru.insert((at.frame, key));
            }
            None => {
                self.lru.insert((at.frame, key));
                self.by_peers
                    .entry((key.src, key.dst))
                    .or_default()
                    .insert(key);
            }
        }
        let state = self.flows.entry(key).or_default();
        state.last_frame = at.frame;
        Some(state)
    }

    /// The flows from `src` to `dst`, in key order.
    pub(super) fn flows_between(
        &self,
        src: IpAddr,
        dst: IpAddr,
    ) -> impl Iterator<Item = FlowKey> + '_ {
        self.by_peers
            .get(&(src, dst))
            .into_iter()
            .flat_map(|set| set.iter().copied())
    }
}
