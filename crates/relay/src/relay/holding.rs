//! What a rule does to a frame: held until its condition, dropped, duplicated or forwarded, within
//! the hold limits, with each rule's counters kept.

use super::*;

impl Relay {
    /// The first rule with hits left that selects the frame: counts the hit, returns its name
    /// and action.
    pub(super) fn select_rule(&mut self, facts: &Facts) -> Option<(String, Action)> {
        let installed = self.installed.as_mut()?;
        let index = installed
            .set
            .rules()
            .iter()
            .zip(&installed.stats)
            .position(|(rule, stats)| {
                let exhausted = rule.max_hits.is_some_and(|max| stats.hits >= u64::from(max))
                    || matches!(rule.action, Action::Drop { times } if stats.dropped >= u64::from(times));
                !exhausted && installed.matches(&rule.select, facts)
            })?;
        installed.stats[index].hits += 1;
        let rule = &installed.set.rules()[index];
        Some((rule.name.clone(), rule.action.clone()))
    }

    pub(super) fn rule_stats(&mut self, rule: &str, update: impl FnOnce(&mut RuleStats)) {
        if let Some(stats) = self
            .installed
            .as_mut()
            .and_then(|i| i.stats.iter_mut().find(|s| s.name == rule))
        {
            update(stats);
        }
    }

    /// Hold `frame` for `wait`, or forward it at once, marked, when the hold limits are reached;
    /// returns whether it was held.
    pub(super) fn hold(
        &mut self,
        now_us: u64,
        direction: Direction,
        frame: Vec<u8>,
        facts: Facts,
        rule: String,
        wait: Wait,
    ) -> bool {
        let frames_full = self.held.len() >= self.limits.max_held_frames;
        let bytes_full = self.held_bytes.saturating_add(frame.len()) > self.limits.max_held_bytes;
        if frames_full || bytes_full {
            self.rule_stats(&rule, |s| s.not_held_over_limit += 1);
            self.stats.not_held_over_limit += 1;
            let marker = Marker::new(format!(
                "not held: the relay's hold limit is reached ({} frames, {} bytes held; rule {rule}): {}",
                self.held.len(),
                self.held_bytes,
                facts.summary()
            ));
            self.forward(now_us, direction, frame, facts, Some(marker));
            return false;
        }
        self.rule_stats(&rule, |s| s.held += 1);
        self.stats.held_total += 1;
        self.held_bytes += frame.len();
        self.held.push(Held {
            direction,
            frame,
            facts,
            rule,
            wait,
            held_at: now_us,
        });
        true
    }

    pub(super) fn take_held(&mut self, index: usize) -> Held {
        let held = self.held.remove(index);
        self.held_bytes -= held.frame.len();
        held
    }

    /// Release what the rules hold (fenced frames keep their fence: it is the wire's, not a
    /// case's).
    pub(super) fn release_all(&mut self, now_us: u64, why: Release<'_>) {
        let (fenced, ruled): (Vec<Held>, Vec<Held>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|held| matches!(held.wait, Wait::Fence { .. }));
        self.held = fenced;
        self.held_bytes = self.held.iter().map(|held| held.frame.len()).sum();
        for held in ruled {
            self.release(now_us, held, why);
        }
    }

    /// Forward a frame taken out of hold, with the marker saying why it was held.
    pub(super) fn release(&mut self, now_us: u64, held: Held, why: Release<'_>) {
        let marker = release_marker(now_us, &held, why);
        self.forward(now_us, held.direction, held.frame, held.facts, Some(marker));
    }

    /// Forward a frame, then every held frame its forwarding releases (reorders waiting for the
    /// next frame this way, holds until a matching frame was forwarded), and so on: each held
    /// frame is released at most once, so this ends.
    pub(super) fn forward(
        &mut self,
        now_us: u64,
        direction: Direction,
        frame: Vec<u8>,
        facts: Facts,
        marker: Option<Marker>,
    ) {
        let mut queue = VecDeque::from([(direction, frame, facts, marker)]);
        while let Some((direction, frame, facts, marker)) = queue.pop_front() {
            self.tracker.forwarded(&facts);
            self.stats.forwarded += 1;
            self.outputs.push_back(Output::Forward {
                to: direction.receiver(),
                frame,
                marker,
            });
            let mut index = 0;
            while index < self.held.len() {
                let held = &self.held[index];
                let released = match &held.wait {
                    Wait::Reorder => held.direction == direction,
                    Wait::Until(condition) => self
                        .installed
                        .as_ref()
                        .is_some_and(|i| i.met_by_forward(condition, &facts)),
                    Wait::Delay { .. } | Wait::Fence { .. } => false,
                };
                if !released {
                    index += 1;
                    continue;
                }
                let held = self.take_held(index);
                let marker = release_marker(now_us, &held, Release::Waited);
                queue.push_back((held.direction, held.frame, held.facts, Some(marker)));
            }
        }
    }
}
