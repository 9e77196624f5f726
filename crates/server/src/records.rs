//! What the server remembers about what it did, bounded for a server that runs for days
//! (`rig serve` under the wire fuzzer sees millions of calls): the most recent executions and
//! DRC decisions in rings, per-(XID, procedure) execution counts for the most recent XIDs (what
//! `rig serve --stats` reports and `rig judge` counts from), totals that never forget, and the
//! trace events in a ring. Every limit is a [`RecordLimits`] field; what went over it is counted.

use std::collections::{BTreeMap, VecDeque};
use std::hash::RandomState;

use hashbrown::{Equivalent, HashMap};

use wire::nfs_client::Status;

use crate::trace::ServerEvent;
use crate::{DrcEvent, Execution};

/// A counted (XID, procedure) pair; procedure names are static, so recording one allocates
/// nothing.
type CountKey = (u32, &'static str);

/// A [`CountKey`] to look up by a procedure name of any lifetime (hashes as the key does).
#[derive(Hash)]
struct CountLookup<'a>(u32, &'a str);

impl Equivalent<CountKey> for CountLookup<'_> {
    fn equivalent(&self, key: &CountKey) -> bool {
        self.0 == key.0 && self.1 == key.1
    }
}

/// How much of each record is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordLimits {
    /// Most recent executions kept in order ([`Records::executions`]).
    pub recent_executions: usize,
    /// Most (XID, procedure) pairs whose executions are counted; the oldest pair is forgotten
    /// first (counted in [`Records::forgotten`]).
    pub counted_xids: usize,
    /// Statuses kept per counted pair (the count itself is exact).
    pub statuses_per_xid: usize,
    /// Most recent DRC decisions kept in order (totals per decision are exact).
    pub recent_decisions: usize,
    /// Trace events kept until taken; older ones are dropped and counted.
    pub trace_lines: usize,
}

impl Default for RecordLimits {
    fn default() -> Self {
        RecordLimits {
            recent_executions: 4096,
            counted_xids: 8192,
            statuses_per_xid: 16,
            recent_decisions: 4096,
            trace_lines: 4096,
        }
    }
}

/// Executions of one (XID, procedure).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecutionCount {
    pub executions: u64,
    /// The first [`RecordLimits::statuses_per_xid`] statuses, in order.
    pub statuses: Vec<Status>,
}

/// Sizes of the records, for checking that they stay flat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordSizes {
    pub recent_executions: usize,
    pub counted_xids: usize,
    pub statuses: usize,
    pub recent_decisions: usize,
    pub trace_lines: usize,
}

impl RecordSizes {
    /// Everything held, in entries.
    pub fn total(&self) -> usize {
        self.recent_executions
            + self.counted_xids
            + self.statuses
            + self.recent_decisions
            + self.trace_lines
    }
}

/// The records (see the module docs).
#[derive(Debug, Default)]
pub struct Records {
    limits: RecordLimits,
    recent: VecDeque<Execution>,
    counts: HashMap<CountKey, ExecutionCount, RandomState>,
    /// Counted pairs, oldest first.
    order: VecDeque<CountKey>,
    executions_total: u64,
    forgotten: u64,
    decisions: VecDeque<DrcEvent>,
    decision_totals: BTreeMap<&'static str, u64>,
    trace: VecDeque<ServerEvent>,
    trace_dropped: u64,
}

impl Records {
    pub fn new(limits: RecordLimits) -> Self {
        Records {
            limits,
            // Sized for the steady state from the start, so memory is flat from the first calls:
            // under insert/remove churn a hash table filled past half its capacity doubles
            // once (its tombstones are cleared by a resize, not in place), which showed as a
            // 2 MB step in peak RSS after ~90k calls. At twice the limit it rehashes in place.
            counts: HashMap::with_capacity_and_hasher(
                limits.counted_xids.saturating_mul(2),
                RandomState::new(),
            ),
            order: VecDeque::with_capacity(limits.counted_xids.saturating_add(1)),
            recent: VecDeque::with_capacity(limits.recent_executions.saturating_add(1)),
            decisions: VecDeque::with_capacity(limits.recent_decisions.saturating_add(1)),
            ..Default::default()
        }
    }

    pub fn limits(&self) -> RecordLimits {
        self.limits
    }

    /// New limits; records already over them shrink at once.
    pub fn set_limits(&mut self, limits: RecordLimits) {
        self.limits = limits;
        while self.recent.len() > limits.recent_executions {
            self.recent.pop_front();
        }
        while self.order.len() > limits.counted_xids {
            self.forget_oldest();
        }
        for count in self.counts.values_mut() {
            count.statuses.truncate(limits.statuses_per_xid);
        }
        while self.decisions.len() > limits.recent_decisions {
            self.decisions.pop_front();
        }
        while self.trace.len() > limits.trace_lines {
            self.trace.pop_front();
            self.trace_dropped += 1;
        }
    }

    pub fn execution(&mut self, execution: Execution) {
        self.executions_total += 1;
        let key = (execution.xid, execution.procedure);
        let count = match self.counts.get_mut(&key) {
            Some(count) => count,
            None => {
                if self.limits.counted_xids == 0 {
                    self.forgotten += 1;
                    self.push_recent(execution);
                    return;
                }
                while self.order.len() >= self.limits.counted_xids {
                    self.forget_oldest();
                }
                self.order.push_back(key);
                self.counts.entry(key).or_default()
            }
        };
        count.executions += 1;
        if count.statuses.len() < self.limits.statuses_per_xid {
            count.statuses.push(execution.status);
        }
        self.push_recent(execution);
    }

    fn push_recent(&mut self, execution: Execution) {
        if self.limits.recent_executions == 0 {
            return;
        }
        if self.recent.len() >= self.limits.recent_executions {
            self.recent.pop_front();
        }
        self.recent.push_back(execution);
    }

    fn forget_oldest(&mut self) {
        if let Some(old) = self.order.pop_front() {
            self.counts.remove(&old);
            self.forgotten += 1;
        }
    }

    pub fn decision(&mut self, event: DrcEvent) {
        *self.decision_totals.entry(event.decision).or_default() += 1;
        if self.limits.recent_decisions == 0 {
            return;
        }
        if self.decisions.len() >= self.limits.recent_decisions {
            self.decisions.pop_front();
        }
        self.decisions.push_back(event);
    }

    pub fn trace_event(&mut self, event: ServerEvent) {
        if self.trace.len() >= self.limits.trace_lines {
            if self.trace.pop_front().is_none() {
                self.trace_dropped += 1;
                return;
            }
            self.trace_dropped += 1;
        }
        self.trace.push_back(event);
    }

    /// The trace since the last call, one line per event; a first line says how many were
    /// dropped, if any.
    pub fn take_trace(&mut self) -> Vec<String> {
        let mut out = Vec::with_capacity(self.trace.len() + 1);
        if self.trace_dropped > 0 {
            out.push(format!(
                "srv trace: {} earlier lines dropped (only the last {} are kept)",
                self.trace_dropped, self.limits.trace_lines
            ));
            self.trace_dropped = 0;
        }
        out.extend(self.trace.drain(..).map(|e| e.to_string()));
        out
    }

    /// The most recent executions, oldest first.
    pub fn executions(&self) -> &VecDeque<Execution> {
        &self.recent
    }

    /// Executions of `xid` as `procedure` (0 once the pair is forgotten).
    pub fn executions_of(&self, xid: u32, procedure: &str) -> u64 {
        self.counts
            .get(&CountLookup(xid, procedure))
            .map_or(0, |c| c.executions)
    }

    /// The counted (XID, procedure) pairs, in no particular order.
    pub fn counts(&self) -> impl Iterator<Item = (u32, &str, &ExecutionCount)> + '_ {
        self.counts
            .iter()
            .map(|((xid, procedure), count)| (*xid, *procedure, count))
    }

    /// Every execution ever, forgotten ones included.
    pub fn executions_total(&self) -> u64 {
        self.executions_total
    }

    /// (XID, procedure) pairs no longer counted.
    pub fn forgotten(&self) -> u64 {
        self.forgotten
    }

    /// The most recent DRC decisions, oldest first.
    pub fn decisions(&self) -> &VecDeque<DrcEvent> {
        &self.decisions
    }

    /// Every DRC decision ever, by name.
    pub fn decision_totals(&self) -> &BTreeMap<&'static str, u64> {
        &self.decision_totals
    }

    pub fn sizes(&self) -> RecordSizes {
        RecordSizes {
            recent_executions: self.recent.len(),
            counted_xids: self.counts.len(),
            statuses: self.counts.values().map(|c| c.statuses.len()).sum(),
            recent_decisions: self.decisions.len(),
            trace_lines: self.trace.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::nfs3::Nfsstat3;

    fn exec(xid: u32, status: Nfsstat3) -> Execution {
        Execution {
            xid,
            procedure: "REMOVE",
            status: Status::Nfs3(status),
            connection: 1,
        }
    }

    #[test]
    fn counts_are_exact_for_kept_xids_and_forgotten_ones_are_counted() {
        let mut r = Records::new(RecordLimits {
            recent_executions: 3,
            counted_xids: 2,
            statuses_per_xid: 2,
            recent_decisions: 2,
            trace_lines: 2,
        });
        for status in [Nfsstat3::Ok, Nfsstat3::Noent, Nfsstat3::Noent] {
            r.execution(exec(7, status));
        }
        r.execution(exec(8, Nfsstat3::Ok));
        assert_eq!(r.executions_of(7, "REMOVE"), 3);
        let (_, _, seven) = r.counts().find(|(x, _, _)| *x == 7).unwrap();
        let names: Vec<&str> = seven.statuses.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["NFS3_OK", "NFS3ERR_NOENT"]);
        r.execution(exec(9, Nfsstat3::Ok));
        assert_eq!(r.executions_of(7, "REMOVE"), 0, "oldest pair forgotten");
        assert_eq!((r.forgotten(), r.executions_total()), (1, 5));
        assert_eq!(r.executions().len(), 3);
        assert_eq!(r.executions().back().unwrap().xid, 9);
        for xid in [1, 2, 3] {
            r.trace_event(ServerEvent::Undecodable { xid });
        }
        let taken = r.take_trace();
        assert_eq!(taken.len(), 3);
        assert!(taken[0].contains("1 earlier lines dropped"), "{taken:?}");
        assert_eq!(
            &taken[1..],
            [
                "srv rpc xid=0x2 undecodable: dropped",
                "srv rpc xid=0x3 undecodable: dropped"
            ]
        );
        assert!(r.take_trace().is_empty());
        for decision in ["miss", "hit", "hit"] {
            r.decision(DrcEvent {
                xid: 1,
                procedure: "REMOVE",
                decision,
            });
        }
        assert_eq!(r.decisions().len(), 2);
        assert_eq!(r.decision_totals()["hit"], 2);
        assert_eq!(r.decision_totals()["miss"], 1);
    }
}
