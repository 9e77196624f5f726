//! Kernel-event signatures of fuzz cases (issue 16, item 2): what a case made the responder do,
//! as a small normalised set of trace events, so a guided run can tell which cases took the
//! kernel somewhere new.
//!
//! - [`normalise_line`] turns one ftrace line (`trace_pipe` format) of the server guest's
//!   rpcrdma/sunrpc/nfsd events into `event key=value ...` with identities dropped (addresses,
//!   completion ids, XIDs, pointers, hashes, latencies, timestamps, task and CPU) and numbers
//!   reduced to exact small codes (status, errors, versions, procedures) or log2 buckets.
//! - [`MarkCollector`] attributes lines to cases: the relay writes `rigmark N` into
//!   `trace_marker` after case N, and every event line before that mark (and after mark N-1)
//!   belongs to case N.
//! - [`RelayReply`] is the relay's one-line answer on its TCP link (encode/decode).
//! - [`Signature`] is a case's bounded event set; [`SignatureTracker`] counts distinct
//!   signatures over a run and samples the count at fixed intervals (the caller passes the
//!   elapsed time in: no clock here).
//!
//! Everything here reads untrusted text (trace lines from a fuzzed kernel, relay answers):
//! lengths are capped before anything is kept, nothing panics, every loop is bounded.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The text the relay writes into `trace_marker` before a case's number.
pub const MARK_PREFIX: &str = "rigmark ";
/// Longest trace line looked at (longer ones are cut here first).
pub const MAX_LINE_BYTES: usize = 1024;
/// Longest normalised event kept.
pub const MAX_EVENT_BYTES: usize = 160;
/// Most distinct events in one case's signature (more set [`Signature::truncated`]).
pub const MAX_EVENTS_PER_SIGNATURE: usize = 48;
/// Most trace lines attributed to one case (the rest are counted, not normalised).
pub const MAX_LINES_PER_CASE: u64 = 4096;
/// Longest relay answer line accepted.
pub const MAX_REPLY_BYTES: usize = MAX_EVENTS_PER_SIGNATURE * (MAX_EVENT_BYTES + 1) + 128;
/// Distinct signatures remembered by a tracker (more are counted as `saturated`).
pub const MAX_DISTINCT: usize = 1 << 16;
/// Signatures listed in a report with their events.
pub const MAX_LISTED: usize = 200;
/// Timeline points kept (a 1500 s run sampled every 10 s needs 150).
pub const MAX_TIMELINE_POINTS: usize = 1000;

/// Keys whose values identify a connection, a request, memory or a moment, never a behaviour.
const DROPPED_KEYS: &[&str] = &[
    "addr",
    "boot_time",
    "cached-csum",
    "cid",
    "client",
    "cq.id",
    "dma_addr",
    "dr",
    "dst_fh_hash",
    "execute-us",
    "fh_hash",
    "file",
    "head",
    "ingress-csum",
    "inode",
    "inv_rkey",
    "latency-us",
    "nf_file",
    "pid",
    "ref",
    "sc_sq_avail",
    "server",
    "sessionid",
    "src_fh_hash",
    "svsk",
    "tail",
    "updated",
    "verifier",
    "wakeup-us",
    "xid",
];

/// Keys whose small numeric values are codes (kept exactly, not bucketed).
const EXACT_KEYS: &[&str] = &[
    "err", "error", "op", "opnum", "proc", "prog", "rc", "result", "ret", "status", "vers",
];
/// Largest magnitude of an exact code; beyond it the value is bucketed like any number.
const MAX_EXACT: i64 = 1 << 16;

/// One trace line, split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceLine<'a> {
    /// A `trace_marker` line carrying `rigmark N`.
    Mark(u64),
    /// An event: its name and the text after `name: `.
    Event { name: &'a str, fields: &'a str },
}

/// Split an ftrace `trace_pipe` line (`  task-pid  [cpu] flags  secs.usecs: name: fields`).
/// `None` for anything else (headers, lost-event notices, garbage).
pub fn parse_line(line: &str) -> Option<TraceLine<'_>> {
    let line = cut(line, MAX_LINE_BYTES);
    // The CPU field `[NNN]` ends the task part (a task name may hold anything but `]`+space
    // is where ftrace puts it); the timestamp ends with ": ".
    let after_cpu = line.find("] ").map(|i| &line[i + 2..])?;
    let (_, rest) = after_cpu.split_once(": ")?;
    let (name, fields) = match rest.split_once(": ") {
        Some((name, fields)) => (name, fields),
        None => (rest.trim_end_matches(':'), ""),
    };
    let name = name.trim();
    if name.is_empty()
        || name.len() > 64
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return None;
    }
    if name == "tracing_mark_write" {
        let number = fields.trim().strip_prefix(MARK_PREFIX)?;
        return number.trim().parse().ok().map(TraceLine::Mark);
    }
    Some(TraceLine::Event { name, fields })
}

/// The normalised form of an event line: `name key=value ...`, identities dropped, numbers
/// exact (codes) or bucketed. `None` for a line that is not an event (marks included).
pub fn normalise_line(line: &str) -> Option<String> {
    match parse_line(line)? {
        TraceLine::Mark(_) => None,
        TraceLine::Event { name, fields } => Some(normalise_event(name, fields)),
    }
}

/// Normalise an event given as name and `key=value` fields (tokens without `=` are dropped).
pub fn normalise_event(name: &str, fields: &str) -> String {
    let mut out = String::with_capacity(64);
    out.push_str(cut(name, 64));
    for token in cut(fields, MAX_LINE_BYTES)
        .split_ascii_whitespace()
        .take(32)
    {
        let Some((key, value)) = token.split_once('=') else {
            continue;
        };
        if key.is_empty()
            || key.len() > 32
            || !key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
            || DROPPED_KEYS.contains(&key)
        {
            continue;
        }
        let Some(value) = normalise_value(key, value) else {
            continue;
        };
        let item = format!(" {key}={value}");
        if out.len() + item.len() > MAX_EVENT_BYTES {
            break;
        }
        out.push_str(&item);
    }
    out
}

/// A value's normal form, or `None` to drop it (addresses, pointers, odd text).
fn normalise_value(key: &str, value: &str) -> Option<String> {
    let value = value.trim_end_matches(',');
    if let Some(n) = parse_number(value) {
        if EXACT_KEYS.contains(&key) && n.unsigned_abs() <= MAX_EXACT as u64 {
            return Some(n.to_string());
        }
        return Some(bucket(n));
    }
    // Symbolic values (RDMA_MSG, nfsd, GETATTR, flag lists) are behaviour; anything with
    // address-like punctuation is identity.
    let symbolic = !value.is_empty()
        && value.len() <= 48
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'|' | b'-' | b'?'))
        && !value.bytes().all(|b| b.is_ascii_hexdigit());
    symbolic.then(|| value.to_string())
}

fn parse_number(value: &str) -> Option<i64> {
    if let Some(hex) = value.strip_prefix("0x") {
        return (!hex.is_empty() && hex.len() <= 16)
            .then(|| u64::from_str_radix(hex, 16).ok())
            .flatten()
            .map(|n| n as i64);
    }
    if value.is_empty() || value.len() > 20 {
        return None;
    }
    value
        .parse::<i64>()
        .ok()
        .or_else(|| value.parse::<u64>().ok().map(|n| n as i64))
}

/// The log2 class of a number: `0`, `1`, `~2` (2-3), `~4` (4-7), ... ; negative: `neg`.
pub fn bucket(n: i64) -> String {
    match n {
        i64::MIN..=-1 => "neg".to_string(),
        0 => "0".to_string(),
        1 => "1".to_string(),
        n => format!("~{}", 1u64 << (63 - (n as u64).leading_zeros())),
    }
}

/// `s` cut to at most `max` bytes on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// One case's events: a bounded set of normalised events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Signature {
    events: BTreeSet<String>,
    /// Events past [`MAX_EVENTS_PER_SIGNATURE`] were seen and left out.
    pub truncated: bool,
}

impl Signature {
    pub fn new() -> Signature {
        Signature::default()
    }

    /// Add one normalised event (cut to [`MAX_EVENT_BYTES`]).
    pub fn insert(&mut self, event: &str) {
        let event = cut(event, MAX_EVENT_BYTES);
        if self.events.contains(event) {
            return;
        }
        if self.events.len() >= MAX_EVENTS_PER_SIGNATURE {
            self.truncated = true;
            return;
        }
        self.events.insert(event.to_string());
    }

    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a str>) -> Signature {
        let mut signature = Signature::new();
        for event in events.into_iter().take(MAX_LINES_PER_CASE as usize) {
            signature.insert(event);
        }
        signature
    }

    pub fn events(&self) -> impl Iterator<Item = &str> {
        self.events.iter().map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// A stable 64-bit id (FNV-1a over the sorted events): the same set always gets the same
    /// id, on every host and Rust version (corpus file names use it).
    pub fn id(&self) -> u64 {
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        let mut eat = |bytes: &[u8]| {
            for &b in bytes {
                hash ^= u64::from(b);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
        };
        for event in &self.events {
            eat(event.as_bytes());
            eat(b"\n");
        }
        eat(if self.truncated { b"+" } else { b"." });
        hash
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, event) in self.events.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            f.write_str(event)?;
        }
        if self.truncated {
            f.write_str("; ...")?;
        }
        Ok(())
    }
}

/// Attributes `trace_pipe` lines to cases by the marks between them (the relay's core).
#[derive(Debug, Default)]
pub struct MarkCollector {
    signature: Signature,
    lines: u64,
}

/// The events the collector gathered for one case.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaseEvents {
    pub signature: Signature,
    /// Event lines attributed to the case (counted up to [`MAX_LINES_PER_CASE`]).
    pub lines: u64,
}

impl MarkCollector {
    pub fn new() -> MarkCollector {
        MarkCollector::default()
    }

    /// Take one line: `Some(n)` when it is mark `n` (the events so far belong to the case it
    /// closes; take them with [`MarkCollector::take`]), `None` otherwise.
    pub fn feed(&mut self, line: &str) -> Option<u64> {
        match parse_line(line)? {
            TraceLine::Mark(n) => Some(n),
            TraceLine::Event { name, fields } => {
                if self.lines < MAX_LINES_PER_CASE {
                    self.lines += 1;
                    self.signature.insert(&normalise_event(name, fields));
                } else {
                    self.signature.truncated = true;
                }
                None
            }
        }
    }

    /// The events gathered since the last take.
    pub fn take(&mut self) -> CaseEvents {
        CaseEvents {
            signature: std::mem::take(&mut self.signature),
            lines: std::mem::take(&mut self.lines),
        }
    }
}

/// The relay's answer to `mark N`: the events of case N (those before mark N), or the news
/// that mark N did not show up in time (`timed_out`: the events are whatever came so far).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayReply {
    pub mark: u64,
    pub timed_out: bool,
    pub events: CaseEvents,
}

/// A relay answer that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayError(pub String);

impl fmt::Display for RelayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "trace relay: {}", self.0)
    }
}

impl std::error::Error for RelayError {}

impl RelayReply {
    /// One line: `events N LINES TRUNCATED TIMED_OUT` then `\t`-separated events, `\n`.
    pub fn encode(&self) -> String {
        let mut out = format!(
            "events {} {} {} {}",
            self.mark,
            self.events.lines,
            u8::from(self.events.signature.truncated),
            u8::from(self.timed_out)
        );
        for event in self.events.signature.events() {
            out.push('\t');
            // Events come from normalise_event (no tabs or newlines); keep it so for any text.
            out.extend(event.chars().map(|c| if c.is_control() { ' ' } else { c }));
        }
        out.push('\n');
        out
    }

    pub fn decode(line: &str) -> Result<RelayReply, RelayError> {
        if line.len() > MAX_REPLY_BYTES {
            return Err(RelayError(format!("answer of {} bytes", line.len())));
        }
        let mut parts = line.trim_end_matches(['\n', '\r']).split('\t');
        let head = parts.next().unwrap_or_default();
        let words: Vec<&str> = head.split(' ').take(6).collect();
        let number = |i: usize| -> Result<u64, RelayError> {
            words
                .get(i)
                .and_then(|w| w.parse().ok())
                .ok_or_else(|| RelayError(format!("bad answer {:?}", cut(head, 80))))
        };
        if words.len() != 5 || words[0] != "events" {
            return Err(RelayError(format!("bad answer {:?}", cut(head, 80))));
        }
        let mark = number(1)?;
        let lines = number(2)?;
        let truncated = number(3)? != 0;
        let timed_out = number(4)? != 0;
        let mut signature = Signature::from_events(parts.take(MAX_EVENTS_PER_SIGNATURE + 1));
        signature.truncated |= truncated;
        Ok(RelayReply {
            mark,
            timed_out,
            events: CaseEvents { signature, lines },
        })
    }
}

/// The number of distinct signatures at one moment of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelinePoint {
    pub secs: u64,
    pub cases: u64,
    pub signatures: u64,
}

/// A signature listed in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedSignature {
    pub id: String,
    pub events: Vec<String>,
    pub truncated: bool,
    pub first_index: u64,
    pub first_family: String,
    pub cases: u64,
}

/// Distinct signatures over a run, sampled every `interval`.
#[derive(Debug)]
pub struct SignatureTracker {
    interval: Duration,
    seen: HashSet<u64>,
    listed: BTreeMap<u64, ListedSignature>,
    saturated: bool,
    cases: u64,
    distinct: u64,
    timeline: Vec<TimelinePoint>,
    next_sample: Duration,
}

impl SignatureTracker {
    /// A tracker sampling every `interval` (at least 1 ms).
    pub fn new(interval: Duration) -> SignatureTracker {
        let interval = interval.max(Duration::from_millis(1));
        SignatureTracker {
            interval,
            seen: HashSet::new(),
            listed: BTreeMap::new(),
            saturated: false,
            cases: 0,
            distinct: 0,
            timeline: Vec::new(),
            next_sample: interval,
        }
    }

    /// Record case (`index`, `family`) with `signature`, `elapsed` after the run started.
    /// Returns whether the signature is new. Samples due before `elapsed` are taken first,
    /// with the counts as they were then.
    pub fn record(
        &mut self,
        index: u64,
        family: &str,
        signature: &Signature,
        elapsed: Duration,
    ) -> bool {
        self.advance(elapsed);
        self.cases += 1;
        let id = signature.id();
        if let Some(listed) = self.listed.get_mut(&id) {
            listed.cases += 1;
        }
        if self.seen.contains(&id) {
            return false;
        }
        if self.seen.len() >= MAX_DISTINCT {
            // Remembering no more: count it as new only once per id is no longer possible.
            self.saturated = true;
            return false;
        }
        self.seen.insert(id);
        self.distinct += 1;
        if self.listed.len() < MAX_LISTED {
            self.listed.insert(
                id,
                ListedSignature {
                    id: format!("{id:016x}"),
                    events: signature.events().map(str::to_string).collect(),
                    truncated: signature.truncated,
                    first_index: index,
                    first_family: family.to_string(),
                    cases: 1,
                },
            );
        }
        true
    }

    /// Take the samples due up to `elapsed`.
    pub fn advance(&mut self, elapsed: Duration) {
        while self.next_sample <= elapsed && self.timeline.len() < MAX_TIMELINE_POINTS {
            self.timeline.push(TimelinePoint {
                secs: self.next_sample.as_secs(),
                cases: self.cases,
                signatures: self.distinct,
            });
            self.next_sample += self.interval;
        }
    }

    pub fn distinct(&self) -> u64 {
        self.distinct
    }

    pub fn cases(&self) -> u64 {
        self.cases
    }

    pub fn saturated(&self) -> bool {
        self.saturated
    }

    /// The samples so far.
    pub fn timeline(&self) -> &[TimelinePoint] {
        &self.timeline
    }

    /// The first [`MAX_LISTED`] signatures, by the index of the case that found them.
    pub fn listed(&self) -> Vec<ListedSignature> {
        let mut listed: Vec<ListedSignature> = self.listed.values().cloned().collect();
        listed.sort_by_key(|l| l.first_index);
        listed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DECODE: &str = "          nfsd-1071    [001] ..... 1234.567890: svcrdma_decode_rqst: \
        cq.id=4 cid=117 xid=0x57000003 vers=1 credits=32 proc=RDMA_MSG hdrlen=28";

    #[test]
    fn events_lose_their_identities_and_keep_their_behaviour() {
        assert_eq!(
            normalise_line(DECODE).unwrap(),
            "svcrdma_decode_rqst vers=1 credits=~32 proc=RDMA_MSG hdrlen=~16"
        );
        // The same event for another connection, request and moment normalises the same.
        let other = DECODE
            .replace(
                "cq.id=4 cid=117 xid=0x57000003",
                "cq.id=9 cid=3 xid=0x9000001",
            )
            .replace("1234.567890", "99.000001")
            .replace("nfsd-1071", "nfsd-2");
        assert_eq!(normalise_line(&other), normalise_line(DECODE));
        let line = "  kworker/u8:2-77 [000] d..1. 5.000001: svcrdma_send_err: \
            addr=10.0.2.15:20049 xid=0x12345678 status=-107";
        assert_eq!(
            normalise_line(line).unwrap(),
            "svcrdma_send_err status=-107"
        );
        let line = " nfsd-9 [000] ..... 7.1: svc_process: addr=10.0.2.16:40000 xid=0x1 \
            service=nfsd vers=3 proc=GETATTR";
        assert_eq!(
            normalise_line(line).unwrap(),
            "svc_process service=nfsd vers=3 proc=GETATTR"
        );
        let line = " nfsd-9 [000] ..... 7.1: svcrdma_decode_rseg: cq.id=1 cid=2 segno=0 \
            position=124 4096@0x00007f0000001000:0x00001234";
        assert_eq!(
            normalise_line(line).unwrap(),
            "svcrdma_decode_rseg segno=0 position=~64"
        );
        // A huge exact-key value is bucketed, a negative non-code is "neg".
        assert_eq!(
            normalise_event("x", "vers=4294967295 n=-3"),
            "x vers=~2147483648 n=neg"
        );
    }

    #[test]
    fn marks_and_garbage() {
        let mark = "  rig-1 [000] ..... 9.5: tracing_mark_write: rigmark 42";
        assert_eq!(parse_line(mark), Some(TraceLine::Mark(42)));
        assert_eq!(normalise_line(mark), None);
        for garbage in [
            "",
            "# tracer: nop",
            "CPU:1 [LOST 12 EVENTS]",
            "x] y: Bad-Name: a=b",
            "  a-1 [000] ..... 9.5: tracing_mark_write: someone else",
            "\u{0}\u{1}] \u{2}: \u{3}",
        ] {
            assert_eq!(normalise_line(garbage), None, "{garbage:?}");
        }
        // A huge line is cut before it is looked at; the event stays bounded.
        let long = format!("{DECODE} {}", "k=v ".repeat(100_000));
        assert!(normalise_line(&long).unwrap().len() <= MAX_EVENT_BYTES);
        // Multi-byte text at the cut does not panic.
        let utf8 = format!("a-1 [000] . 1.0: ev: k={}", "é".repeat(2000));
        assert!(normalise_line(&utf8).unwrap().starts_with("ev"));
    }

    #[test]
    fn the_collector_gives_each_case_the_events_before_its_mark() {
        let mut collector = MarkCollector::new();
        let event = |name: &str| format!(" nfsd-1 [000] ..... 1.0: {name}: cid=1 status=0");
        assert_eq!(collector.feed(&event("svc_process")), None);
        assert_eq!(collector.feed(&event("svcrdma_post_send")), None);
        assert_eq!(collector.feed(&event("svc_process")), None);
        assert_eq!(
            collector.feed(" rig-2 [001] ..... 1.1: tracing_mark_write: rigmark 0"),
            Some(0)
        );
        let first = collector.take();
        assert_eq!(first.lines, 3);
        assert_eq!(
            first.signature.events().collect::<Vec<_>>(),
            ["svc_process status=0", "svcrdma_post_send status=0"]
        );
        assert_eq!(collector.take(), CaseEvents::default());
        // Too many lines for one case: counted up to the bound, flagged.
        for i in 0..MAX_LINES_PER_CASE + 10 {
            collector.feed(&format!(" a-1 [000] . 1.0: ev{}: ", i % 100));
        }
        let flood = collector.take();
        assert_eq!(flood.lines, MAX_LINES_PER_CASE);
        assert!(flood.signature.truncated);
        assert_eq!(flood.signature.len(), MAX_EVENTS_PER_SIGNATURE);
    }

    #[test]
    fn relay_replies_round_trip_and_bad_ones_are_refused() {
        let reply = RelayReply {
            mark: 7,
            timed_out: false,
            events: CaseEvents {
                signature: Signature::from_events(["svc_drop", "svcrdma_err_chunk"]),
                lines: 5,
            },
        };
        let line = reply.encode();
        assert!(line.ends_with('\n') && line.lines().count() == 1);
        assert_eq!(RelayReply::decode(&line).unwrap(), reply);
        let empty = RelayReply {
            mark: 8,
            timed_out: true,
            events: CaseEvents::default(),
        };
        assert_eq!(RelayReply::decode(&empty.encode()).unwrap(), empty);
        for bad in [
            "",
            "events 1 2 3",
            "events x 1 0 0",
            "nope 1 1 0 0",
            "events 1 1 0 0 9",
        ] {
            assert!(RelayReply::decode(bad).is_err(), "{bad:?}");
        }
        assert!(RelayReply::decode(&"x".repeat(MAX_REPLY_BYTES + 1)).is_err());
        let many = format!("events 1 1 0 0{}", "\tev".repeat(1000));
        assert!(RelayReply::decode(&many).unwrap().events.signature.len() <= 1);
    }

    #[test]
    fn the_tracker_counts_distinct_signatures_and_samples_them_per_interval() {
        let mut tracker = SignatureTracker::new(Duration::from_secs(10));
        let a = Signature::from_events(["svc_process"]);
        let b = Signature::from_events(["svc_process", "svc_drop"]);
        assert!(tracker.record(0, "valid", &a, Duration::from_secs(1)));
        assert!(!tracker.record(1, "valid", &a, Duration::from_secs(2)));
        assert!(tracker.record(2, "version", &b, Duration::from_secs(25)));
        tracker.advance(Duration::from_secs(31));
        assert_eq!(
            tracker.timeline(),
            [
                TimelinePoint {
                    secs: 10,
                    cases: 2,
                    signatures: 1
                },
                TimelinePoint {
                    secs: 20,
                    cases: 2,
                    signatures: 1
                },
                TimelinePoint {
                    secs: 30,
                    cases: 3,
                    signatures: 2
                },
            ]
        );
        let listed = tracker.listed();
        assert_eq!(listed.len(), 2);
        assert_eq!((listed[0].first_index, listed[0].cases), (0, 2));
        assert_eq!(listed[1].first_family, "version");
        // Ids are stable and order-free.
        assert_eq!(
            Signature::from_events(["b", "a"]).id(),
            Signature::from_events(["a", "b"]).id()
        );
        assert_ne!(Signature::from_events(["a"]).id(), Signature::new().id());
    }
}
