//! Duplicate reply cache (DRC) policies, pluggable behind [`DrcPolicy`].
//!
//! - [`Classic`]: nfsd before the 2026 series (fs/nfsd/nfscache.c): key = xid, procedure,
//!   program/version, client address, call length and a checksum of the call; only the
//!   non-idempotent NFSv3 procedures are cached; a duplicate of an in-progress call is dropped; a
//!   reply whose results exceed 256 bytes is not kept; size bounded, least recently used evicted.
//! - [`Acked`]: the series: no checksum, no hard cap; each reply has a position (its Send's
//!   sequence number) and an entry is evicted when its connection's acknowledged position reaches
//!   it.
//! - [`AckedMark`]: our proposal for a client that retransmits on a live connection: eviction also
//!   waits for a receive mark (a credit window of further Receives, all looked up) and a duplicate
//!   of an in-progress call is parked and answered, not dropped. See docs/drc.md.
//!
//! Architecture Invariant: a policy never sees a clock. Everything it decides is a function of the
//! sequence of calls, replies, Receives and Send completions it was told about.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

/// nfsd: results longer than this are not cached (`nfsd_cache_update`: `len > (256 >> 2)` words).
pub const MAX_CACHED_RESULT_BYTES: usize = 256;
/// nfsd's checksum covers at most this many bytes of the arguments (RC_CSUMLEN).
pub const CHECKSUM_BYTES: usize = 256;

/// What the DRC knows about one received call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrcRequest {
    pub connection: u64,
    pub recv_seq: u64,
    pub client_addr: u32,
    pub xid: u32,
    pub prog: u32,
    pub vers: u32,
    pub proc_: u32,
    /// Length of the whole call message.
    pub len: usize,
    /// Checksum of the first [`CHECKSUM_BYTES`] of the arguments.
    pub checksum: u32,
    /// Whether the procedure's replies are cached at all (nfsd's `pc_cachetype != RC_NOCACHE`).
    pub cacheable: bool,
}

/// Identifies a cache entry.
pub type EntryId = u64;

/// The lookup verdict (nfsd's RC_DOIT / RC_DROPIT / RC_REPLY, plus parking).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Execute; when `entry` is set, report completion with [`DrcPolicy::complete`].
    Execute { entry: Option<EntryId> },
    /// A duplicate of a call still in progress: send nothing.
    Drop,
    /// A duplicate of a call still in progress: answer it when the original completes.
    Park { entry: EntryId },
    /// A duplicate of a completed call: send these cached results.
    Replay { entry: EntryId, results: Vec<u8> },
}

impl Decision {
    /// Short name for traces and verdicts.
    pub fn name(&self) -> &'static str {
        match self {
            Decision::Execute { entry: None } => "nocache",
            Decision::Execute { entry: Some(_) } => "miss",
            Decision::Drop => "drop-inprog",
            Decision::Park { .. } => "park-inprog",
            Decision::Replay { .. } => "hit",
        }
    }
}

/// Counters every policy keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DrcStats {
    pub hits: u64,
    pub misses: u64,
    pub drops: u64,
    pub parks: u64,
    pub nocache: u64,
    /// XID matched but checksum differed (classic only; the series removes it).
    pub payload_misses: u64,
    pub evicted_lru: u64,
    pub evicted_acked: u64,
    pub not_cached_too_big: u64,
    pub entries_high_water: u64,
}

/// A duplicate reply cache policy.
pub trait DrcPolicy {
    fn name(&self) -> &'static str;
    /// A Receive was polled on `connection` (before any Read chunk pull).
    fn received(&mut self, _connection: u64, _recv_seq: u64) {}
    /// A polled Receive never reached [`DrcPolicy::lookup`] (transport error, malformed).
    fn discarded(&mut self, _connection: u64, _recv_seq: u64) {}
    fn lookup(&mut self, request: &DrcRequest) -> Decision;
    /// The call of `entry` executed; `results` are the encoded procedure results. (Calls parked
    /// on the entry are the server's to answer with the same results.)
    fn complete(&mut self, entry: EntryId, results: &[u8]);
    /// The reply for `entry` was posted with this position on `connection`.
    fn reply_posted(&mut self, _entry: EntryId, _connection: u64, _position: u64) {}
    /// A Send completion published `position` as acknowledged on `connection`.
    fn acked(&mut self, _connection: u64, _position: u64) {}
    /// Number of entries held.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn stats(&self) -> DrcStats;
}

/// FNV-1a over the first [`CHECKSUM_BYTES`] of the arguments (nfsd uses csum_partial; any
/// deterministic checksum serves the key).
pub fn checksum(args: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in &args[..args.len().min(CHECKSUM_BYTES)] {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    xid: u32,
    proc_: u32,
    prog: u32,
    vers: u32,
    client_addr: u32,
    len: usize,
    checksum: Option<u32>,
}

#[derive(Debug, Clone)]
enum State {
    InProgress,
    Done(Vec<u8>),
}

#[derive(Debug, Clone)]
struct Entry {
    key: Key,
    state: State,
    connection: u64,
    position: Option<u64>,
    last_use: u64,
    /// acked-mark: eviction waits until this many Receives were polled on the connection.
    mark: Option<u64>,
}

/// Storage shared by the three policies.
#[derive(Debug, Default)]
struct Store {
    entries: BTreeMap<EntryId, Entry>,
    by_key: BTreeMap<Key, EntryId>,
    next_id: EntryId,
    use_clock: u64,
    stats: DrcStats,
}

impl Store {
    fn key(request: &DrcRequest, with_checksum: bool) -> Key {
        Key {
            xid: request.xid,
            proc_: request.proc_,
            prog: request.prog,
            vers: request.vers,
            client_addr: request.client_addr,
            len: request.len,
            checksum: with_checksum.then_some(request.checksum),
        }
    }

    /// nfsd_cache_lookup: the shared part. `on_inprog` picks Drop or Park.
    fn lookup(&mut self, request: &DrcRequest, with_checksum: bool, park: bool) -> Decision {
        if !request.cacheable {
            self.stats.nocache += 1;
            return Decision::Execute { entry: None };
        }
        let key = Store::key(request, with_checksum);
        self.use_clock += 1;
        if let Some(entry) = self
            .by_key
            .get(&key)
            .copied()
            .and_then(|id| self.entries.get_mut(&id).map(|e| (id, e)))
        {
            let (id, entry) = entry;
            entry.last_use = self.use_clock;
            return match &entry.state {
                State::InProgress if park => {
                    self.stats.parks += 1;
                    Decision::Park { entry: id }
                }
                State::InProgress => {
                    self.stats.drops += 1;
                    Decision::Drop
                }
                State::Done(results) => {
                    self.stats.hits += 1;
                    Decision::Replay {
                        entry: id,
                        results: results.clone(),
                    }
                }
            };
        }
        if with_checksum
            && self.by_key.keys().any(|k| {
                k.xid == key.xid && k.client_addr == key.client_addr && k.checksum != key.checksum
            })
        {
            self.stats.payload_misses += 1;
        }
        self.stats.misses += 1;
        self.next_id += 1;
        let id = self.next_id;
        self.entries.insert(
            id,
            Entry {
                key: key.clone(),
                state: State::InProgress,
                connection: request.connection,
                position: None,
                last_use: self.use_clock,
                mark: None,
            },
        );
        self.by_key.insert(key, id);
        self.stats.entries_high_water =
            self.stats.entries_high_water.max(self.entries.len() as u64);
        Decision::Execute { entry: Some(id) }
    }

    fn complete(&mut self, id: EntryId, results: &[u8]) {
        if results.len() > MAX_CACHED_RESULT_BYTES {
            // nfsd_cache_update: too large to keep; the entry is freed.
            self.stats.not_cached_too_big += 1;
            self.remove(id);
        } else if let Some(entry) = self.entries.get_mut(&id) {
            entry.state = State::Done(results.to_vec());
        }
    }

    fn remove(&mut self, id: EntryId) {
        if let Some(entry) = self.entries.remove(&id) {
            self.by_key.remove(&entry.key);
        }
    }

    fn evict_lru_over(&mut self, max: usize) {
        while self.entries.len() > max {
            let oldest = self
                .entries
                .iter()
                .filter(|(_, e)| matches!(e.state, State::Done(_)))
                .min_by_key(|(_, e)| e.last_use)
                .map(|(id, _)| *id);
            match oldest {
                Some(id) => {
                    self.remove(id);
                    self.stats.evicted_lru += 1;
                }
                None => break,
            }
        }
    }
}

/// nfsd before the series.
#[derive(Debug)]
pub struct Classic {
    store: Store,
    max_entries: usize,
}

impl Classic {
    pub fn new(max_entries: usize) -> Self {
        Classic {
            store: Store::default(),
            max_entries,
        }
    }
}

impl DrcPolicy for Classic {
    fn name(&self) -> &'static str {
        "classic"
    }
    fn lookup(&mut self, request: &DrcRequest) -> Decision {
        let d = self.store.lookup(request, true, false);
        self.store.evict_lru_over(self.max_entries);
        d
    }
    fn complete(&mut self, entry: EntryId, results: &[u8]) {
        self.store.complete(entry, results);
    }
    fn len(&self) -> usize {
        self.store.entries.len()
    }
    fn stats(&self) -> DrcStats {
        self.store.stats
    }
}

/// The 2026 series: evict on acknowledged reply position.
#[derive(Debug, Default)]
pub struct Acked {
    store: Store,
}

impl Acked {
    pub fn new() -> Self {
        Acked::default()
    }
}

impl DrcPolicy for Acked {
    fn name(&self) -> &'static str {
        "acked"
    }
    fn lookup(&mut self, request: &DrcRequest) -> Decision {
        // "NFSD: Remove DRC checksum": the key no longer includes the payload.
        self.store.lookup(request, false, false)
    }
    fn complete(&mut self, entry: EntryId, results: &[u8]) {
        self.store.complete(entry, results);
    }
    fn reply_posted(&mut self, entry: EntryId, connection: u64, position: u64) {
        if let Some(e) = self.store.entries.get_mut(&entry) {
            e.connection = connection;
            e.position = Some(position);
        }
    }
    fn acked(&mut self, connection: u64, position: u64) {
        // "NFSD: Evict acknowledged DRC entries": the reply is in the client's buffer.
        let gone: Vec<EntryId> = self
            .store
            .entries
            .iter()
            .filter(|(_, e)| {
                e.connection == connection
                    && matches!(e.state, State::Done(_))
                    && e.position.is_some_and(|p| p <= position)
            })
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            self.store.remove(id);
            self.store.stats.evicted_acked += 1;
        }
    }
    fn len(&self) -> usize {
        self.store.entries.len()
    }
    fn stats(&self) -> DrcStats {
        self.store.stats
    }
}

#[derive(Debug, Default)]
struct ReceiveState {
    /// Receives polled so far on the connection.
    polled: u64,
    /// Receives polled whose call has not reached the DRC yet (e.g. its Read chunk is being pulled).
    pending: BTreeSet<u64>,
}

/// Acked eviction gated by a receive mark and the pending-request set; duplicates of an
/// in-progress call are parked and answered.
#[derive(Debug)]
pub struct AckedMark {
    store: Store,
    /// The credit window: the most credits ever granted on a connection.
    credit_window: u64,
    receives: BTreeMap<u64, ReceiveState>,
}

impl AckedMark {
    pub fn new(credit_window: u32) -> Self {
        AckedMark {
            store: Store::default(),
            credit_window: credit_window.into(),
            receives: BTreeMap::new(),
        }
    }

    fn evict_marked(&mut self) {
        let receives = &self.receives;
        let gone: Vec<EntryId> = self
            .store
            .entries
            .iter()
            .filter(|(_, e)| {
                let Some(mark) = e.mark else { return false };
                let Some(state) = receives.get(&e.connection) else {
                    return false;
                };
                // Every Receive up to the mark has been polled *and* looked up.
                state.polled >= mark && state.pending.range(..=mark).next().is_none()
            })
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            self.store.remove(id);
            self.store.stats.evicted_acked += 1;
        }
    }
}

impl DrcPolicy for AckedMark {
    fn name(&self) -> &'static str {
        "acked-mark"
    }
    fn received(&mut self, connection: u64, recv_seq: u64) {
        let state = self.receives.entry(connection).or_default();
        state.polled = state.polled.max(recv_seq);
        state.pending.insert(recv_seq);
    }
    fn discarded(&mut self, connection: u64, recv_seq: u64) {
        if let Some(state) = self.receives.get_mut(&connection) {
            state.pending.remove(&recv_seq);
        }
        self.evict_marked();
    }
    fn lookup(&mut self, request: &DrcRequest) -> Decision {
        let d = self.store.lookup(request, false, true);
        if let Some(state) = self.receives.get_mut(&request.connection) {
            state.pending.remove(&request.recv_seq);
        }
        self.evict_marked();
        d
    }
    fn complete(&mut self, entry: EntryId, results: &[u8]) {
        self.store.complete(entry, results);
    }
    fn reply_posted(&mut self, entry: EntryId, connection: u64, position: u64) {
        if let Some(e) = self.store.entries.get_mut(&entry) {
            // A replay is another reply the client may still be waiting for: re-arm.
            e.connection = connection;
            e.position = Some(e.position.map_or(position, |p| p.max(position)));
            e.mark = None;
        }
    }
    fn acked(&mut self, connection: u64, position: u64) {
        let polled = self.receives.get(&connection).map_or(0, |s| s.polled);
        let window = self.credit_window;
        for e in self.store.entries.values_mut() {
            if e.connection == connection
                && e.mark.is_none()
                && matches!(e.state, State::Done(_))
                && e.position.is_some_and(|p| p <= position)
            {
                // A credit-honouring client can have sent at most `window - 1` calls that it sent
                // before processing this reply and that arrive after this ack (docs/drc.md).
                e.mark = Some(polled + window);
            }
        }
        self.evict_marked();
    }
    fn len(&self) -> usize {
        self.store.entries.len()
    }
    fn stats(&self) -> DrcStats {
        self.store.stats
    }
}

/// The policies by name, for the command line and the scenario matrix.
pub const POLICY_NAMES: [&str; 3] = ["classic", "acked", "acked-mark"];

/// Build a policy by name; `credits` is the server's grant (acked-mark's window).
pub fn policy_by_name(name: &str, credits: u32) -> Option<Box<dyn DrcPolicy>> {
    match name {
        // nfsd sizes its cache from memory; a small cap keeps LRU behaviour observable.
        "classic" => Some(Box::new(Classic::new(1024))),
        "acked" => Some(Box::new(Acked::new())),
        "acked-mark" => Some(Box::new(AckedMark::new(credits))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(xid: u32, checksum: u32, recv_seq: u64) -> DrcRequest {
        DrcRequest {
            connection: 1,
            recv_seq,
            client_addr: 7,
            xid,
            prog: 100003,
            vers: 3,
            proc_: 12,
            len: 100,
            checksum,
            cacheable: true,
        }
    }

    #[test]
    fn classic_drops_inprog_replays_done_and_keys_on_checksum() {
        let mut drc = Classic::new(8);
        let Decision::Execute { entry: Some(e) } = drc.lookup(&req(1, 10, 1)) else {
            panic!("first lookup executes");
        };
        assert_eq!(drc.lookup(&req(1, 10, 2)), Decision::Drop);
        drc.complete(e, b"results");
        assert_eq!(
            drc.lookup(&req(1, 10, 3)),
            Decision::Replay {
                entry: e,
                results: b"results".to_vec()
            }
        );
        // Same xid, different payload: a different request.
        assert!(matches!(
            drc.lookup(&req(1, 11, 4)),
            Decision::Execute { entry: Some(_) }
        ));
        assert_eq!(drc.stats().payload_misses, 1);
    }

    #[test]
    fn classic_does_not_keep_large_results_and_evicts_lru() {
        let mut drc = Classic::new(2);
        let Decision::Execute { entry: Some(e) } = drc.lookup(&req(1, 0, 1)) else {
            panic!("executes");
        };
        drc.complete(e, &[0; MAX_CACHED_RESULT_BYTES + 4]);
        assert!(matches!(
            drc.lookup(&req(1, 0, 2)),
            Decision::Execute { .. }
        ));
        for xid in 10..14 {
            if let Decision::Execute { entry: Some(e) } = drc.lookup(&req(xid, 0, 3)) {
                drc.complete(e, b"r");
            }
        }
        assert!(drc.len() <= 3);
        assert!(drc.stats().evicted_lru >= 2);
    }

    #[test]
    fn acked_evicts_on_ack_and_ignores_checksum() {
        let mut drc = Acked::new();
        let Decision::Execute { entry: Some(e) } = drc.lookup(&req(1, 10, 1)) else {
            panic!("executes");
        };
        drc.complete(e, b"r");
        drc.reply_posted(e, 1, 5);
        assert!(matches!(
            drc.lookup(&req(1, 99, 2)),
            Decision::Replay { .. }
        ));
        drc.acked(1, 4);
        assert_eq!(drc.len(), 1);
        drc.acked(1, 5);
        assert_eq!(drc.len(), 0);
        assert!(matches!(
            drc.lookup(&req(1, 10, 3)),
            Decision::Execute { entry: Some(_) }
        ));
    }

    #[test]
    fn acked_mark_waits_for_the_credit_window_and_pending_lookups() {
        let mut drc = AckedMark::new(2);
        drc.received(1, 1);
        let Decision::Execute { entry: Some(e) } = drc.lookup(&req(1, 0, 1)) else {
            panic!("executes");
        };
        drc.complete(e, b"r");
        drc.reply_posted(e, 1, 1);
        drc.acked(1, 1);
        // mark = 1 polled + window 2 = 3: two more Receives must be polled and looked up.
        assert_eq!(drc.len(), 1);
        drc.received(1, 2);
        assert!(matches!(drc.lookup(&req(1, 0, 2)), Decision::Replay { .. }));
        drc.received(1, 3);
        assert_eq!(drc.len(), 1, "Receive 3 is polled but not looked up yet");
        drc.discarded(1, 3);
        // The replay re-armed the entry, so the mark moved; ack the replay and move past it.
        drc.reply_posted(e, 1, 2);
        drc.acked(1, 2);
        drc.received(1, 4);
        drc.discarded(1, 4);
        drc.received(1, 5);
        drc.discarded(1, 5);
        assert_eq!(drc.len(), 0);
    }

    #[test]
    fn acked_mark_parks_duplicates_of_inprogress_calls() {
        let mut drc = AckedMark::new(4);
        assert!(matches!(
            drc.lookup(&req(1, 0, 1)),
            Decision::Execute { .. }
        ));
        assert!(matches!(drc.lookup(&req(1, 0, 2)), Decision::Park { .. }));
    }
}
