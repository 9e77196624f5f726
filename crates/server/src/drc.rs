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

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::hash::{BuildHasher, Hash, RandomState};

use hashbrown::HashTable;

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
    /// acked-mark: acknowledged entries of a lost connection, released once
    /// [`MAX_LOST_CONNECTIONS`] later connections were lost.
    pub evicted_lost: u64,
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
    /// `connection` was lost: no Receive, Send completion or reply will come on it again
    /// (connections are never reused; a reconnecting client gets a new one).
    fn disconnected(&mut self, _connection: u64) {}
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

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Key {
    xid: u32,
    proc_: u32,
    prog: u32,
    vers: u32,
    client_addr: u32,
    len: usize,
    /// The checksum of the arguments in a checksummed store (classic), 0 in the others: every
    /// key of one store is of one kind.
    checksum: u32,
}

#[derive(Debug, Clone)]
enum State {
    InProgress,
    /// The cached results (a boxed slice: no spare capacity kept per entry).
    Done(Box<[u8]>),
}

#[derive(Debug, Clone)]
struct Entry {
    id: EntryId,
    key: Key,
    state: State,
    connection: u64,
    position: Option<u64>,
    last_use: u64,
    /// acked-mark: eviction waits until this many Receives were polled on the connection.
    mark: Option<u64>,
}

/// The entries, stored densely: a slot vector reused through a free list, found by id and by
/// key through two hash tables of slot numbers sized for the cap from the start. A `BTreeMap`
/// keyed by ever-increasing ids left its nodes about half full (about 225 bytes an entry), and
/// tables that held a copy of the key (48 bytes a bucket) and an id → slot map (16 bytes a
/// bucket) beside the slots were touched page by page as entries churned through them, so memory
/// grew until every bucket had been used; a 4-byte slot number per bucket costs a sixth of that.
#[derive(Debug)]
struct Slab {
    slots: Vec<Option<Entry>>,
    free: Vec<u32>,
    by_id: HashTable<u32>,
    by_key: HashTable<u32>,
    hasher: RandomState,
}

impl Slab {
    fn with_capacity(capacity: usize) -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            by_id: HashTable::with_capacity(capacity),
            by_key: HashTable::with_capacity(capacity),
            hasher: RandomState::new(),
        }
    }

    fn len(&self) -> usize {
        self.by_id.len()
    }

    fn hash<T: Hash>(hasher: &RandomState, value: &T) -> u64 {
        hasher.hash_one(value)
    }

    /// The entry in `slot` (every slot a table holds is occupied).
    fn at(slots: &[Option<Entry>], slot: u32) -> Option<&Entry> {
        slots.get(slot as usize)?.as_ref()
    }

    fn slot(&self, id: EntryId) -> Option<u32> {
        let slots = &self.slots;
        self.by_id
            .find(Slab::hash(&self.hasher, &id), |&slot| {
                Slab::at(slots, slot).is_some_and(|e| e.id == id)
            })
            .copied()
    }

    fn get(&self, id: &EntryId) -> Option<&Entry> {
        let slot = self.slot(*id)?;
        Slab::at(&self.slots, slot)
    }

    fn get_mut(&mut self, id: &EntryId) -> Option<&mut Entry> {
        let slot = self.slot(*id)?;
        self.slots.get_mut(slot as usize)?.as_mut()
    }

    /// The id of the entry with `key`.
    fn by_key(&self, key: &Key) -> Option<EntryId> {
        let slots = &self.slots;
        let slot = self
            .by_key
            .find(Slab::hash(&self.hasher, key), |&slot| {
                Slab::at(slots, slot).is_some_and(|e| e.key == *key)
            })
            .copied()?;
        Some(Slab::at(slots, slot)?.id)
    }

    /// Insert `entry` (its id and key not held yet: ids are never reused, and a key is inserted
    /// only after a lookup missed it).
    fn insert(&mut self, entry: Entry) {
        let (id_hash, key_hash) = (
            Slab::hash(&self.hasher, &entry.id),
            Slab::hash(&self.hasher, &entry.key),
        );
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(entry);
                slot
            }
            None => {
                // Slots never outnumber the entries held at once, which the policies bound.
                let slot = u32::try_from(self.slots.len()).unwrap_or(u32::MAX);
                self.slots.push(Some(entry));
                slot
            }
        };
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.by_id.insert_unique(id_hash, slot, |&s| {
            Slab::at(slots, s).map_or(0, |e| Slab::hash(hasher, &e.id))
        });
        self.by_key.insert_unique(key_hash, slot, |&s| {
            Slab::at(slots, s).map_or(0, |e| Slab::hash(hasher, &e.key))
        });
    }

    fn remove(&mut self, id: &EntryId) -> Option<Entry> {
        let slot = self.slot(*id)?;
        let entry = self.slots.get_mut(slot as usize)?.take()?;
        if let Ok(found) = self
            .by_id
            .find_entry(Slab::hash(&self.hasher, id), |&s| s == slot)
        {
            found.remove();
        }
        if let Ok(found) = self
            .by_key
            .find_entry(Slab::hash(&self.hasher, &entry.key), |&s| s == slot)
        {
            found.remove();
        }
        self.free.push(slot);
        Some(entry)
    }
}

/// Storage shared by the three policies, with an index for every question a policy asks, so no
/// operation scans the entries: lookups by key, the least recently used completed entry, "an
/// entry with this XID but another checksum", entries by (connection, reply position) and by
/// (connection, receive mark).
#[derive(Debug)]
struct Store {
    entries: Slab,
    /// Completed entries by last use: eviction under the cap takes the first.
    lru: BTreeSet<(u64, EntryId)>,
    /// Whether the key holds the checksum (classic): only then are the two tables below kept.
    checksummed: bool,
    /// (xid, client address) → entries, and (xid, client address, checksum) → entries, for
    /// `payload_misses`: an entry with another checksum exists when the first count is larger.
    /// Two flat tables sized from the start, not a table allocated per XID.
    by_xid: HashMap<(u32, u32), u32>,
    by_xid_sum: HashMap<(u32, u32, u32), u32>,
    /// Entries with a reply position and no receive mark, by (connection, position).
    posted: BTreeSet<(u64, u64, EntryId)>,
    /// acked-mark: entries waiting for their receive mark, by (connection, mark).
    marked: BTreeSet<(u64, u64, EntryId)>,
    /// Entries per connection (a connection's receive state is kept while it has any).
    per_connection: HashMap<u64, u64>,
    /// Connections whose last entry went since the policy last looked (acked-mark only, which
    /// drains it on every eviction pass).
    emptied: Vec<u64>,
    track_emptied: bool,
    /// Most entries held; completed entries are evicted least recently used first beyond it.
    max_entries: usize,
    next_id: EntryId,
    use_clock: u64,
    stats: DrcStats,
}

impl Store {
    /// A store of at most `max_entries` completed entries; `checksummed`: the key holds the
    /// checksum of the arguments (classic).
    fn new(max_entries: usize, checksummed: bool) -> Self {
        // The lookup tables are sized for a full cache from the start (see `Records::new`: a
        // churned hash table past half its capacity doubles once, a step in memory long after
        // the cache filled). Tests' unbounded caches start at the largest real bound.
        let presized = max_entries.clamp(1, ACKED_MAX_ENTRIES).saturating_mul(2);
        let counted = if checksummed { presized } else { 0 };
        Store {
            entries: Slab::with_capacity(presized),
            lru: BTreeSet::new(),
            checksummed,
            by_xid: HashMap::with_capacity(counted),
            by_xid_sum: HashMap::with_capacity(counted),
            posted: BTreeSet::new(),
            marked: BTreeSet::new(),
            per_connection: HashMap::new(),
            emptied: Vec::new(),
            track_emptied: false,
            max_entries: max_entries.max(1),
            next_id: 0,
            use_clock: 0,
            stats: DrcStats::default(),
        }
    }

    fn key(request: &DrcRequest, with_checksum: bool) -> Key {
        Key {
            xid: request.xid,
            proc_: request.proc_,
            prog: request.prog,
            vers: request.vers,
            client_addr: request.client_addr,
            len: request.len,
            checksum: if with_checksum { request.checksum } else { 0 },
        }
    }

    /// nfsd_cache_lookup: the shared part. `on_inprog` picks Drop or Park.
    fn lookup(&mut self, request: &DrcRequest, park: bool) -> Decision {
        if !request.cacheable {
            self.stats.nocache += 1;
            return Decision::Execute { entry: None };
        }
        let with_checksum = self.checksummed;
        let key = Store::key(request, with_checksum);
        self.use_clock += 1;
        let now = self.use_clock;
        if let Some(id) = self.entries.by_key(&key) {
            if let Some(entry) = self.entries.get_mut(&id) {
                if matches!(entry.state, State::Done(_)) {
                    self.lru.remove(&(entry.last_use, id));
                    self.lru.insert((now, id));
                }
                entry.last_use = now;
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
                            results: results.to_vec(),
                        }
                    }
                };
            }
        }
        if with_checksum {
            // An entry with this XID and client but another checksum (counted, not scanned).
            let with_xid = self
                .by_xid
                .get(&(key.xid, key.client_addr))
                .copied()
                .unwrap_or(0);
            let with_sum = self
                .by_xid_sum
                .get(&(key.xid, key.client_addr, key.checksum))
                .copied()
                .unwrap_or(0);
            let other = with_xid > with_sum;
            if other {
                self.stats.payload_misses += 1;
            }
        }
        self.stats.misses += 1;
        self.next_id += 1;
        let id = self.next_id;
        if with_checksum {
            *self.by_xid.entry((key.xid, key.client_addr)).or_default() += 1;
            *self
                .by_xid_sum
                .entry((key.xid, key.client_addr, key.checksum))
                .or_default() += 1;
        }
        *self.per_connection.entry(request.connection).or_default() += 1;
        self.entries.insert(Entry {
            id,
            key,
            state: State::InProgress,
            connection: request.connection,
            position: None,
            last_use: now,
            mark: None,
        });
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
            if !matches!(entry.state, State::Done(_)) {
                self.lru.insert((entry.last_use, id));
            }
            entry.state = State::Done(results.into());
        }
    }

    /// acked-mark: remove the entries of `connection` whose receive mark is at most `up_to`;
    /// returns how many went.
    fn remove_marked(&mut self, connection: u64, up_to: u64) -> u64 {
        let gone: Vec<EntryId> = self
            .marked
            .range((connection, 0, 0)..=(connection, up_to, EntryId::MAX))
            .map(|&(_, _, id)| id)
            .collect();
        for &id in &gone {
            self.remove(id);
        }
        gone.len() as u64
    }

    fn remove(&mut self, id: EntryId) {
        let Some(entry) = self.entries.remove(&id) else {
            return;
        };
        self.lru.remove(&(entry.last_use, id));
        if let Some(position) = entry.position {
            self.posted.remove(&(entry.connection, position, id));
        }
        if let Some(mark) = entry.mark {
            self.marked.remove(&(entry.connection, mark, id));
        }
        if self.checksummed {
            self.uncount_payload(&entry.key);
        }
        self.release_connection(entry.connection);
    }

    /// Take `key` out of the payload-miss counts.
    fn uncount_payload(&mut self, key: &Key) {
        let xid = (key.xid, key.client_addr);
        if let Some(n) = self.by_xid.get_mut(&xid) {
            *n -= 1;
            if *n == 0 {
                self.by_xid.remove(&xid);
            }
        }
        let sum = (key.xid, key.client_addr, key.checksum);
        if let Some(n) = self.by_xid_sum.get_mut(&sum) {
            *n -= 1;
            if *n == 0 {
                self.by_xid_sum.remove(&sum);
            }
        }
    }

    fn release_connection(&mut self, connection: u64) {
        if let Some(n) = self.per_connection.get_mut(&connection) {
            *n -= 1;
            if *n == 0 {
                self.per_connection.remove(&connection);
                if self.track_emptied {
                    self.emptied.push(connection);
                }
            }
        }
    }

    /// The reply for `id` was posted on `connection` at `position` (`keep_later`: a replay keeps
    /// the later of the two positions, acked-mark). Clears any receive mark (the entry waits
    /// for this reply's ack again).
    fn posted_at(&mut self, id: EntryId, connection: u64, position: u64, keep_later: bool) {
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        let old_connection = entry.connection;
        if let Some(old) = entry.position {
            self.posted.remove(&(old_connection, old, id));
        }
        if let Some(mark) = entry.mark.take() {
            self.marked.remove(&(old_connection, mark, id));
        }
        let position = match (keep_later, entry.position) {
            (true, Some(old)) => old.max(position),
            _ => position,
        };
        entry.connection = connection;
        entry.position = Some(position);
        self.posted.insert((connection, position, id));
        if old_connection != connection {
            *self.per_connection.entry(connection).or_default() += 1;
            self.release_connection(old_connection);
        }
    }

    /// Completed entries on `connection` whose reply position is at most `position`, taken out
    /// of the position index (in-progress ones, which never have a position, stay).
    fn take_acked(&mut self, connection: u64, position: u64) -> Vec<EntryId> {
        let acked: Vec<(u64, u64, EntryId)> = self
            .posted
            .range((connection, 0, 0)..=(connection, position, EntryId::MAX))
            .copied()
            .collect();
        let mut done = Vec::with_capacity(acked.len());
        for item in acked {
            let id = item.2;
            if self
                .entries
                .get(&id)
                .is_some_and(|e| matches!(e.state, State::Done(_)))
            {
                self.posted.remove(&item);
                done.push(id);
            }
        }
        done
    }

    fn evict_lru_over(&mut self, max: usize) {
        while self.entries.len() > max {
            let Some(&(_, id)) = self.lru.first() else {
                // Only entries in progress: they are bounded by the calls being executed.
                break;
            };
            self.remove(id);
            self.stats.evicted_lru += 1;
        }
    }
}

/// nfsd before the series.
#[derive(Debug)]
pub struct Classic {
    store: Store,
}

impl Classic {
    pub fn new(max_entries: usize) -> Self {
        Classic {
            store: Store::new(max_entries, true),
        }
    }
}

impl DrcPolicy for Classic {
    fn name(&self) -> &'static str {
        "classic"
    }
    fn lookup(&mut self, request: &DrcRequest) -> Decision {
        let d = self.store.lookup(request, false);
        self.store.evict_lru_over(self.store.max_entries);
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

/// Entries the `acked` and `acked-mark` policies hold at most (see docs/drc.md, "Bound"):
/// completed entries beyond it are evicted least recently used first, as nfsd's cache does under
/// its size limit.
pub const ACKED_MAX_ENTRIES: usize = 4096;

/// The 2026 series: evict on acknowledged reply position.
#[derive(Debug)]
pub struct Acked {
    store: Store,
}

impl Default for Acked {
    fn default() -> Self {
        Acked::new()
    }
}

impl Acked {
    pub fn new() -> Self {
        Acked::with_max_entries(ACKED_MAX_ENTRIES)
    }

    pub fn with_max_entries(max_entries: usize) -> Self {
        Acked {
            store: Store::new(max_entries, false),
        }
    }
}

impl DrcPolicy for Acked {
    fn name(&self) -> &'static str {
        "acked"
    }
    fn lookup(&mut self, request: &DrcRequest) -> Decision {
        // "NFSD: Remove DRC checksum": the key no longer includes the payload.
        let d = self.store.lookup(request, false);
        self.store.evict_lru_over(self.store.max_entries);
        d
    }
    fn complete(&mut self, entry: EntryId, results: &[u8]) {
        self.store.complete(entry, results);
    }
    fn reply_posted(&mut self, entry: EntryId, connection: u64, position: u64) {
        self.store.posted_at(entry, connection, position, false);
    }
    fn acked(&mut self, connection: u64, position: u64) {
        // "NFSD: Evict acknowledged DRC entries": the reply is in the client's buffer.
        for id in self.store.take_acked(connection, position) {
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

/// Receive states acked-mark keeps at most: the connections with entries or with Receives not
/// yet looked up. A connection lost with Receives pending keeps its state until it is the oldest
/// beyond this many; its entries then wait for the size cap instead of their mark.
pub const MAX_RECEIVE_STATES: usize = 4096;

/// Lost connections whose acknowledged entries acked-mark keeps for a retransmission on the
/// client's next connection (`after-reconnect`): the mark counts Receives on the lost
/// connection, which will never come, so only this bound releases them. A client reconnects
/// and retransmits at once; 64 connections lost after its own is long past that, and without
/// the bound every connection a fuzzer drops left one entry until the size cap (docs/drc.md).
pub const MAX_LOST_CONNECTIONS: usize = 64;

/// Acked eviction gated by a receive mark and the pending-request set; duplicates of an
/// in-progress call are parked and answered.
#[derive(Debug)]
pub struct AckedMark {
    store: Store,
    /// The credit window: the most credits ever granted on a connection.
    credit_window: u64,
    /// Receive state of the connections that have entries or Receives not yet looked up: the
    /// Receives polled so far on each.
    receives: BTreeMap<u64, u64>,
    /// Receives polled whose call has not reached the DRC yet (e.g. its Read chunk is being
    /// pulled), by (connection, Receive), for the connections in `receives` only. One set for
    /// all connections: a set per connection cost a node allocation (112 bytes) for the one or
    /// two Receives a connection usually has pending, and a lost connection keeps its own.
    pending: BTreeSet<(u64, u64)>,
    /// Connections whose receive state or marks changed since the last eviction pass: only
    /// their marked entries can have become evictable.
    dirty: BTreeSet<u64>,
    /// The last [`MAX_LOST_CONNECTIONS`] connections lost, oldest first: their acknowledged
    /// entries wait here for a retransmission on a new connection.
    lost: VecDeque<u64>,
}

impl AckedMark {
    pub fn new(credit_window: u32) -> Self {
        AckedMark::with_max_entries(credit_window, ACKED_MAX_ENTRIES)
    }

    pub fn with_max_entries(credit_window: u32, max_entries: usize) -> Self {
        AckedMark {
            store: Store {
                track_emptied: true,
                ..Store::new(max_entries, false)
            },
            credit_window: credit_window.into(),
            receives: BTreeMap::new(),
            pending: BTreeSet::new(),
            dirty: BTreeSet::new(),
            lost: VecDeque::new(),
        }
    }

    /// Evict the marked entries whose mark every Receive up to has been polled and looked up,
    /// on the connections that changed (the same entries a scan of all would find).
    fn evict_marked(&mut self) {
        for connection in std::mem::take(&mut self.dirty) {
            let Some(up_to) = self.evictable_up_to(connection) else {
                continue;
            };
            self.store.stats.evicted_acked += self.store.remove_marked(connection, up_to);
        }
        self.forget_idle_connections();
    }

    /// The highest mark on `connection` that is evictable: every Receive up to it polled and
    /// looked up (`None` without a receive state).
    fn evictable_up_to(&self, connection: u64) -> Option<u64> {
        let polled = *self.receives.get(&connection)?;
        match self.first_pending(connection) {
            Some(0) => None,
            Some(first) => Some(polled.min(first - 1)),
            None => Some(polled),
        }
    }

    /// The lowest Receive on `connection` not looked up yet.
    fn first_pending(&self, connection: u64) -> Option<u64> {
        self.pending
            .range((connection, 0)..=(connection, u64::MAX))
            .next()
            .map(|&(_, seq)| seq)
    }

    /// Drop the receive state of `connection`, its pending Receives with it.
    fn forget_receives(&mut self, connection: u64) {
        self.receives.remove(&connection);
        let pending: Vec<(u64, u64)> = self
            .pending
            .range((connection, 0)..=(connection, u64::MAX))
            .copied()
            .collect();
        for item in pending {
            self.pending.remove(&item);
        }
    }

    /// A connection's receive state is needed while it has entries or Receives not looked up;
    /// after that it is dropped (a later Receive starts it again with the same numbers), so a
    /// server that sees many connections does not keep one record per connection forever.
    /// Beyond [`MAX_RECEIVE_STATES`] the oldest connection's state goes first.
    fn forget_idle_connections(&mut self) {
        let emptied = std::mem::take(&mut self.store.emptied);
        for connection in emptied {
            self.forget_if_idle(connection);
        }
        while self.receives.len() > MAX_RECEIVE_STATES {
            let Some((&oldest, _)) = self.receives.first_key_value() else {
                break;
            };
            self.forget_receives(oldest);
        }
    }

    fn forget_if_idle(&mut self, connection: u64) {
        let idle = self.receives.contains_key(&connection)
            && self.first_pending(connection).is_none()
            && !self.store.per_connection.contains_key(&connection);
        if idle {
            self.receives.remove(&connection);
        }
    }
}

impl DrcPolicy for AckedMark {
    fn name(&self) -> &'static str {
        "acked-mark"
    }
    fn received(&mut self, connection: u64, recv_seq: u64) {
        let polled = self.receives.entry(connection).or_default();
        *polled = (*polled).max(recv_seq);
        self.pending.insert((connection, recv_seq));
        self.dirty.insert(connection);
    }
    fn discarded(&mut self, connection: u64, recv_seq: u64) {
        self.pending.remove(&(connection, recv_seq));
        self.dirty.insert(connection);
        self.evict_marked();
        self.forget_if_idle(connection);
    }
    fn lookup(&mut self, request: &DrcRequest) -> Decision {
        let d = self.store.lookup(request, true);
        self.pending.remove(&(request.connection, request.recv_seq));
        self.dirty.insert(request.connection);
        self.evict_marked();
        self.store.evict_lru_over(self.store.max_entries);
        // A hit or a parked duplicate is answered on this connection, which moves its entry
        // here (possibly from a lost connection): the Receives polled here must still be known
        // when that reply's ack sets the mark, or the mark would count from 0. The state goes
        // once that entry does.
        if !matches!(d, Decision::Replay { .. } | Decision::Park { .. }) {
            self.forget_if_idle(request.connection);
        }
        d
    }
    fn complete(&mut self, entry: EntryId, results: &[u8]) {
        self.store.complete(entry, results);
    }
    fn reply_posted(&mut self, entry: EntryId, connection: u64, position: u64) {
        // A replay is another reply the client may still be waiting for: re-arm.
        self.store.posted_at(entry, connection, position, true);
    }
    fn disconnected(&mut self, connection: u64) {
        // No Receive comes on a lost connection: its receive state can only hold memory. Its
        // acknowledged entries stay for the client's next connection to find (their marks are
        // out of reach now), until MAX_LOST_CONNECTIONS later losses release them.
        self.forget_receives(connection);
        self.dirty.remove(&connection);
        self.lost.push_back(connection);
        while self.lost.len() > MAX_LOST_CONNECTIONS {
            let Some(oldest) = self.lost.pop_front() else {
                break;
            };
            // An entry a retransmission answered since is re-armed on its new connection and
            // is no longer under the lost one's key.
            self.store.stats.evicted_lost += self.store.remove_marked(oldest, u64::MAX);
        }
        self.forget_idle_connections();
    }
    fn acked(&mut self, connection: u64, position: u64) {
        let polled = self.receives.get(&connection).copied().unwrap_or(0);
        let window = self.credit_window;
        for id in self.store.take_acked(connection, position) {
            if let Some(e) = self.store.entries.get_mut(&id) {
                // A credit-honouring client can have sent at most `window - 1` calls that it sent
                // before processing this reply and that arrive after this ack (docs/drc.md).
                let mark = polled + window;
                e.mark = Some(mark);
                self.store.marked.insert((connection, mark, id));
            }
        }
        self.dirty.insert(connection);
        self.evict_marked();
    }
    fn len(&self) -> usize {
        self.store.entries.len()
    }
    fn stats(&self) -> DrcStats {
        self.store.stats
    }
}

#[cfg(test)]
#[path = "drc_reference.rs"]
mod drc_reference;

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

    /// One call on `connection`, executed, answered at position 1 and acknowledged: the entry
    /// (returned) then waits for its receive mark.
    fn answered_and_acked(drc: &mut AckedMark, connection: u64, xid: u32) -> EntryId {
        drc.received(connection, 1);
        let Decision::Execute { entry: Some(entry) } = drc.lookup(&req_on(connection, xid, 1))
        else {
            panic!("a new call executes");
        };
        drc.complete(entry, b"reply");
        drc.reply_posted(entry, connection, 1);
        drc.acked(connection, 1);
        entry
    }

    #[test]
    fn a_retransmission_on_the_next_connection_finds_the_lost_connections_entry() {
        let mut drc = AckedMark::new(4);
        answered_and_acked(&mut drc, 1, 77);
        drc.disconnected(1);
        assert!(
            !drc.receives.contains_key(&1),
            "the lost connection's state went"
        );
        assert_eq!(drc.len(), 1, "its acknowledged entry stays");
        drc.received(2, 1);
        assert!(
            matches!(drc.lookup(&req_on(2, 77, 1)), Decision::Replay { .. }),
            "after-reconnect is answered from the cache"
        );
    }

    #[test]
    fn lost_connections_keep_acknowledged_entries_only_up_to_the_bound() {
        let mut drc = AckedMark::new(4);
        let lost = MAX_LOST_CONNECTIONS as u64 + 10;
        for connection in 1..=lost {
            answered_and_acked(&mut drc, connection, connection as u32);
            drc.disconnected(connection);
        }
        assert_eq!(drc.len(), MAX_LOST_CONNECTIONS);
        assert_eq!(drc.stats().evicted_lost, 10);
        assert!(drc.receives.is_empty() && drc.pending.is_empty());
        assert!(drc.lost.len() <= MAX_LOST_CONNECTIONS);
        // The newest lost connection's call is still answered from the cache on a new
        // connection; the oldest one's was released and executes again.
        let next = lost + 1;
        drc.received(next, 1);
        assert!(matches!(
            drc.lookup(&req_on(next, lost as u32, 1)),
            Decision::Replay { .. }
        ));
        drc.received(next, 2);
        assert!(matches!(
            drc.lookup(&req_on(next, 1, 2)),
            Decision::Execute { .. }
        ));
    }

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
        let e = answered_and_acked(&mut drc, 1, 1);
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

    /// Deterministic xorshift for the differential runs.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n.max(1)
        }
    }

    /// Drive `new` and `old` with the same random operations over three connections and
    /// compare every decision, size and counter.
    fn same_as_reference(mut new: Box<dyn DrcPolicy>, mut old: Box<dyn DrcPolicy>, seed: u64) {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut recv_seq = [0u64; 3];
        let mut pending: Vec<(u64, u64)> = Vec::new();
        let mut executing: Vec<EntryId> = Vec::new();
        let mut done: Vec<EntryId> = Vec::new();
        let mut position = [0u64; 3];
        for step in 0..3000 {
            let conn = rng.below(3);
            let c = conn as usize;
            match rng.below(7) {
                0 | 1 => {
                    recv_seq[c] += 1;
                    new.received(conn, recv_seq[c]);
                    old.received(conn, recv_seq[c]);
                    pending.push((conn, recv_seq[c]));
                }
                2 | 3 if !pending.is_empty() => {
                    let (conn, seq) = pending.remove(rng.below(pending.len() as u64) as usize);
                    if rng.below(8) == 0 {
                        new.discarded(conn, seq);
                        old.discarded(conn, seq);
                    } else {
                        let request = DrcRequest {
                            connection: conn,
                            recv_seq: seq,
                            client_addr: 7,
                            xid: rng.below(40) as u32,
                            prog: 100003,
                            vers: 3,
                            proc_: 12,
                            len: 100,
                            checksum: rng.below(3) as u32,
                            cacheable: rng.below(6) != 0,
                        };
                        let (a, b) = (new.lookup(&request), old.lookup(&request));
                        assert_eq!(a, b, "step {step}: lookup {request:?}");
                        if let Decision::Execute { entry: Some(id) } = a {
                            executing.push(id);
                        }
                        if let Decision::Replay { entry, .. } = a {
                            position[c] += 1;
                            new.reply_posted(entry, conn, position[c]);
                            old.reply_posted(entry, conn, position[c]);
                        }
                    }
                }
                4 if !executing.is_empty() => {
                    let id = executing.remove(rng.below(executing.len() as u64) as usize);
                    let size = if rng.below(10) == 0 { 300 } else { 8 };
                    let results = vec![step as u8; size];
                    new.complete(id, &results);
                    old.complete(id, &results);
                    done.push(id);
                }
                5 if !done.is_empty() => {
                    let id = done.remove(rng.below(done.len() as u64) as usize);
                    position[c] += 1;
                    new.reply_posted(id, conn, position[c]);
                    old.reply_posted(id, conn, position[c]);
                }
                _ => {
                    let acked = position[c].saturating_sub(rng.below(3));
                    new.acked(conn, acked);
                    old.acked(conn, acked);
                }
            }
            assert_eq!(new.len(), old.len(), "step {step}: entries");
            assert_eq!(new.stats(), old.stats(), "step {step}: stats");
        }
    }

    #[test]
    fn indexed_policies_decide_exactly_as_the_scanning_reference() {
        use super::drc_reference as reference;
        for seed in 1..=20 {
            same_as_reference(
                Box::new(Classic::new(16)),
                Box::new(reference::Classic::new(16)),
                seed,
            );
            same_as_reference(
                Box::new(Acked::with_max_entries(usize::MAX)),
                Box::new(reference::Acked::new()),
                seed,
            );
            same_as_reference(
                Box::new(AckedMark::with_max_entries(4, usize::MAX)),
                Box::new(reference::AckedMark::new(4)),
                seed,
            );
        }
    }

    #[test]
    fn acked_policies_are_capped_least_recently_used_first() {
        for mut drc in [
            Box::new(Acked::with_max_entries(8)) as Box<dyn DrcPolicy>,
            Box::new(AckedMark::with_max_entries(4, 8)),
        ] {
            // 100 completed entries whose replies are never acknowledged.
            for xid in 0..100 {
                drc.received(1, u64::from(xid) + 1);
                let Decision::Execute { entry: Some(e) } =
                    drc.lookup(&req(xid, 0, u64::from(xid) + 1))
                else {
                    panic!("executes");
                };
                drc.complete(e, b"r");
                drc.reply_posted(e, 1, u64::from(xid) + 1);
            }
            assert!(drc.len() <= 9, "{}: {}", drc.name(), drc.len());
            assert!(drc.stats().evicted_lru >= 91, "{}", drc.name());
            // The most recent entries are the ones kept.
            drc.received(1, 1000);
            assert!(
                matches!(drc.lookup(&req(99, 0, 1000)), Decision::Replay { .. }),
                "{}",
                drc.name()
            );
        }
        assert_eq!(
            policy_by_name("acked", 8).unwrap().name(),
            Acked::new().name()
        );
    }

    #[test]
    fn acknowledgements_take_time_linear_in_the_calls_not_the_entries() {
        // Entries never acknowledged pile up (no cap), while every call's own reply is acked:
        // the scanning reference looked at every entry on each ack.
        let run = |calls: u32| {
            let mut drc = AckedMark::with_max_entries(4, usize::MAX);
            // CPU time of this thread, not wall time: a loaded host (VMs beside the tests)
            // stretches wall time, not the work done.
            let cpu = || {
                let usage =
                    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_THREAD);
                usage.map_or(std::time::Duration::ZERO, |u| {
                    let (user, system) = (u.user_time(), u.system_time());
                    std::time::Duration::from_micros(
                        (user.tv_sec() + system.tv_sec()).max(0) as u64 * 1_000_000
                            + (user.tv_usec() + system.tv_usec()).max(0) as u64,
                    )
                })
            };
            let started = cpu();
            for xid in 0..calls {
                let seq = u64::from(xid) + 1;
                drc.received(1, seq);
                let Decision::Execute { entry: Some(e) } = drc.lookup(&req(xid, 0, seq)) else {
                    panic!("executes");
                };
                drc.complete(e, b"r");
                // Every other reply goes out on a connection that never acknowledges.
                let conn = 1 + u64::from(xid % 2);
                drc.reply_posted(e, conn, seq);
                drc.acked(1, seq);
            }
            (cpu().saturating_sub(started), drc.len())
        };
        let best = |calls| (0..3).map(|_| run(calls)).min().unwrap();
        // Over the limit, measure again (up to three times): noise on a busy host only adds
        // time, the scanning reference's quadratic cost stays ~100x every time.
        let mut ratio = f64::INFINITY;
        for _ in 0..3 {
            let (small, kept_small) = best(2_000);
            let (large, kept_large) = best(20_000);
            assert_eq!((kept_small, kept_large), (1_000 + 2, 10_000 + 2));
            ratio = ratio.min(large.as_secs_f64() / small.as_secs_f64().max(1e-6));
            if ratio <= 15.0 {
                break;
            }
        }
        eprintln!("acked-mark: 10x the calls, {ratio:.1}x the time");
        assert!(ratio <= 15.0, "20k calls took {ratio:.1}x the time of 2k");
    }

    #[test]
    fn a_receive_state_dropped_over_its_cap_takes_its_pending_receives_with_it() {
        let mut drc = AckedMark::new(1);
        // Receive 1 on connection 1 is never looked up (lost with its connection's state).
        drc.received(1, 1);
        for connection in 2..=(MAX_RECEIVE_STATES as u64 + 1) {
            drc.received(connection, 1);
        }
        // The cap holds after the next eviction pass (here: the last connection's Receive is
        // discarded, which also forgets that idle connection).
        let last = MAX_RECEIVE_STATES as u64 + 1;
        drc.discarded(last, 1);
        assert_eq!(drc.receives.len(), MAX_RECEIVE_STATES - 1);
        assert!(
            !drc.receives.contains_key(&1),
            "the oldest state went first"
        );
        assert_eq!(
            drc.first_pending(1),
            None,
            "and its pending Receive with it"
        );
        // Connection 1 starts again: its mark waits only for the Receives it now knows.
        drc.received(1, 2);
        let Decision::Execute { entry: Some(e) } = drc.lookup(&req(1, 0, 2)) else {
            panic!("executes");
        };
        drc.complete(e, b"r");
        drc.reply_posted(e, 1, 1);
        drc.acked(1, 1);
        assert_eq!(drc.len(), 1, "mark 3 not reached");
        drc.received(1, 3);
        drc.discarded(1, 3);
        assert_eq!(drc.len(), 0, "Receive 1 no longer holds eviction back");
    }

    fn req_on(connection: u64, xid: u32, recv_seq: u64) -> DrcRequest {
        DrcRequest {
            connection,
            ..req(xid, 0, recv_seq)
        }
    }

    #[test]
    fn a_hit_on_another_connections_entry_keeps_the_receive_count_for_its_mark() {
        let mut drc = AckedMark::new(2);
        // Connection 1 executes xid 1 and posts its reply, which is never acknowledged there.
        drc.received(1, 1);
        let Decision::Execute { entry: Some(e) } = drc.lookup(&req_on(1, 1, 1)) else {
            panic!("executes");
        };
        drc.complete(e, b"r");
        drc.reply_posted(e, 1, 1);
        // Connection 2 polls three uncached calls, then the retransmission of xid 1.
        for seq in 1..=3 {
            drc.received(2, seq);
            let uncached = DrcRequest {
                cacheable: false,
                ..req_on(2, 100 + seq as u32, seq)
            };
            drc.lookup(&uncached);
        }
        drc.received(2, 4);
        assert!(matches!(
            drc.lookup(&req_on(2, 1, 4)),
            Decision::Replay { .. }
        ));
        drc.reply_posted(e, 2, 1);
        drc.acked(2, 1);
        // The mark counts the 4 Receives polled on connection 2: 4 + 2.
        drc.received(2, 5);
        drc.discarded(2, 5);
        assert_eq!(drc.len(), 1, "mark 6 not reached at Receive 5");
        drc.received(2, 6);
        drc.discarded(2, 6);
        assert_eq!(drc.len(), 0, "mark 6 reached");
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
