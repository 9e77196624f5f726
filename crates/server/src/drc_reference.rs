//! The DRC policies as first written, scanning every entry on each operation: the reference the
//! indexed policies in `drc.rs` are checked against (test only).

use std::collections::{BTreeMap, BTreeSet};

use super::{Decision, DrcPolicy, DrcRequest, DrcStats, EntryId, MAX_CACHED_RESULT_BYTES};

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
