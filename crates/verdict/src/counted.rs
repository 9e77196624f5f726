//! Executions *counted* by the server rather than inferred from NFS statuses: from kernel ftrace
//! text (`/sys/kernel/tracing/trace` with `sunrpc:svc_process`, `nfsd:nfsd_drc_found` and a
//! `rig_cache_update` kprobe on `nfsd_cache_update` enabled, plus `sunrpc:svc_defer` and
//! `nfsd:nfsd_garbage_args_err` where the kernel has them), or from `rig serve --stats` JSON.
//!
//! What a `svc_process` line is not (6.12.117 fs/nfsd/nfssvc.c:1020-1071, nfsd_dispatch): a call
//! whose arguments did not decode (`out_decode_err`, `nfsd_garbage_args_err`, before the cache
//! lookup: no execution, no cache update); a call deferred by svc_defer (an export-cache upcall
//! in fh_verify, net/sunrpc/svc_xprt.c:1222) whose first pass ends in `out_update_drop` — one
//! `nfsd_cache_update(RC_NOCACHE)` that frees the entry, and a second `svc_process` when the
//! request is revisited. Both are subtracted per XID; the deferred pass's cache update is
//! subtracted from the cross-check. Services nfsacl and nfslocalio go through nfsd_dispatch
//! too (fs/nfsd/nfssvc.c:122-145), so they count toward the totals the kprobe is checked against.
//!
//! Both inputs come from a guest and are untrusted: the text is read bounded by the caller, lines
//! that do not parse are counted and ignored, at most [`MAX_XIDS`] XIDs are kept, and nothing
//! panics.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

/// Most XIDs kept per trace; calls of further XIDs only reach the totals.
pub const MAX_XIDS: usize = 65_536;

/// The kprobe the drc suite puts on `nfsd_cache_update` (one hit per executed nfsd procedure).
pub const CACHE_UPDATE_PROBE: &str = "rig_cache_update";

/// A comment line the guest script writes at the top of the copied trace, naming the event
/// sources it managed to enable: `# rig-sources: svc_process nfsd_drc_found rig_cache_update`.
pub const SOURCES_HEADER: &str = "# rig-sources:";

/// The `svc_process` services nfsd_dispatch runs (fs/nfsd/nfssvc.c:122-145): NFS, NFSACL and
/// LOCALIO; lockd and others are not nfsd's and are not counted.
pub const NFSD_DISPATCHED: [&str; 3] = ["nfsd", "nfsacl", "nfslocalio"];

/// A `svc_process` pass that executed nothing, by the event that says so.
#[derive(Debug, Clone, Copy)]
enum NotExecuted {
    Deferred,
    GarbageArgs,
}

/// What ftrace says about one XID.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct XidCounts {
    /// `svc_process` lines of service nfsd: calls nfsd began to process.
    pub calls: usize,
    /// `nfsd_drc_found result=REPLY`: answered from the cache.
    pub replays: usize,
    /// `nfsd_drc_found result=DROPIT`: in-progress duplicates dropped.
    pub drops: usize,
    /// `nfsd_drc_found result=DOIT`: found in the cache but executed anyway.
    pub found_doit: usize,
    /// `svc_defer` after a `svc_process` of the XID: passes deferred inside nfsd_dispatch (an
    /// export-cache upcall in fh_verify), revisited later as a new `svc_process`.
    pub deferred: usize,
    /// `svc_defer` with no `svc_process` of the XID since its last pass: deferred while
    /// authenticating (an auth.unix.ip or auth.unix.gid upcall in `pg_authenticate`, before
    /// `trace_svc_process`, net/sunrpc/svc.c:1435-1483): no pass to subtract, no cache update.
    pub deferred_before_dispatch: usize,
    /// Whether this XID has a pass open: a `svc_process` not yet closed by its reply
    /// (`svc_send`), its drop (`svc_drop`, a DRC REPLY/DROPIT) or its own deferral. A `svc_defer`
    /// in an open pass was deferred inside nfsd_dispatch; outside one, while authenticating.
    pub in_pass: bool,
    /// `nfsd_garbage_args_err`: calls whose arguments did not decode (never executed).
    pub garbage_args: usize,
    /// The procedure named by the last `svc_process` line.
    pub procedure: Option<String>,
}

impl XidCounts {
    /// calls − replays − drops − deferred passes − undecodable calls; `None` when the lines are
    /// inconsistent (more of those than calls: the trace began in the middle of this XID).
    pub fn executions(&self) -> Option<usize> {
        let not_executed = self
            .replays
            .checked_add(self.drops)?
            .checked_add(self.deferred)?
            .checked_add(self.garbage_args)?;
        self.calls.checked_sub(not_executed)
    }
}

/// Which event sources the trace says were enabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sources {
    pub svc_process: bool,
    pub drc_found: bool,
    pub cache_update: bool,
    /// `sunrpc:svc_defer` (absent: a deferral would count as an execution).
    pub defer: bool,
    /// `nfsd:nfsd_garbage_args_err` (absent: an undecodable call would count as one).
    pub garbage_args: bool,
    /// Whether a [`SOURCES_HEADER`] line said so (otherwise all are assumed enabled).
    pub declared: bool,
}

/// Everything counted in one ftrace text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FtraceCounts {
    pub xids: BTreeMap<u32, XidCounts>,
    /// Lines naming an XID that was not kept (the [`MAX_XIDS`] cap).
    pub xids_dropped: usize,
    /// Over every XID of service nfsd.
    pub total_calls: usize,
    pub total_replays: usize,
    pub total_drops: usize,
    pub total_deferred: usize,
    pub total_garbage_args: usize,
    /// `rig_cache_update` kprobe hits.
    pub cache_update_hits: usize,
    /// Events the ring buffer reported lost (`[LOST n EVENTS]`).
    pub lost_events: u64,
    /// Lines neither comments nor understood.
    pub lines_ignored: usize,
    pub sources: Sources,
}

/// Why a count could not be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CountError {
    /// The guest could not enable an event the count needs.
    SourceMissing(&'static str),
    /// The ring buffer overflowed: some events are missing.
    LostEvents(u64),
    /// The XID was not kept (too many XIDs in the trace).
    XidNotKept(u32),
    /// No `svc_process` line of service nfsd for the XID.
    XidNotSeen(u32),
    /// More cache answers than calls for the XID.
    Inconsistent { xid: u32, counts: XidCounts },
    /// `rig serve --stats` has no entry for the XID.
    NotInStats(u32),
    /// The stats JSON does not parse.
    BadStats(String),
}

impl fmt::Display for CountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CountError::SourceMissing(event) => {
                write!(f, "event {event} was not enabled on this kernel")
            }
            CountError::LostEvents(n) => write!(f, "the trace lost {n} events"),
            CountError::XidNotKept(xid) => {
                write!(
                    f,
                    "XID {xid:#010x} not kept (over {MAX_XIDS} XIDs in the trace)"
                )
            }
            CountError::XidNotSeen(xid) => {
                write!(f, "no svc_process line of service nfsd for XID {xid:#010x}")
            }
            CountError::Inconsistent { xid, counts } => write!(
                f,
                "XID {xid:#010x}: {} calls but {} replays and {} drops",
                counts.calls, counts.replays, counts.drops
            ),
            CountError::NotInStats(xid) => {
                write!(f, "no execution of XID {xid:#010x} in the rig serve stats")
            }
            CountError::BadStats(why) => write!(f, "rig serve stats: {why}"),
        }
    }
}

impl std::error::Error for CountError {}

/// The value of `key=` in `fields` (the token after it; `key=   v` skips the padding).
fn field<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    let mut rest = fields;
    loop {
        let at = rest.find(key)?;
        let before_ok = at == 0 || rest.as_bytes()[at - 1] == b' ';
        let after = &rest[at + key.len()..];
        if before_ok {
            if let Some(value) = after.strip_prefix('=') {
                return value.split_whitespace().next();
            }
        }
        rest = after;
    }
}

fn parse_xid(fields: &str) -> Option<u32> {
    let hex = field(fields, "xid")?;
    let hex = hex.strip_prefix("0x").or_else(|| hex.strip_prefix("0X"))?;
    u32::from_str_radix(hex, 16).ok()
}

/// The fields after `<event>: ` when the line is that event, found after the ftrace prefix
/// (`comm-pid [cpu] flags timestamp: `).
fn event_fields<'a>(line: &'a str, event: &str) -> Option<&'a str> {
    let mut rest = line;
    loop {
        let at = rest.find(event)?;
        let after = &rest[at + event.len()..];
        let before_ok = at > 0 && rest.as_bytes()[at - 1] == b' ';
        if before_ok {
            if let Some(fields) = after.strip_prefix(':') {
                return Some(fields.trim_start());
            }
        }
        rest = after;
    }
}

/// Whether an ftrace `line` is an `event` line (the event's own name, not a longer one it
/// begins: `svc_defer` is not `svc_defer_queue`).
pub fn is_event(line: &str, event: &str) -> bool {
    event_fields(line, event).is_some()
}

/// What nfsd's DRC lookup decided for a call it found in the cache (`nfsd_drc_found`'s
/// `result=`, fs/nfsd/trace.h `show_drc_retval`; fs/nfsd/nfscache.c:522-537 in 6.12.118).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrcFound {
    /// `REPLY`: answered from the cache.
    Reply,
    /// `DROPIT`: dropped, never answered (the original is still in progress).
    DropIt,
    /// `DOIT`: found, but executed anyway (a cached reply an insecure port may not see).
    DoIt,
}

/// The XID and result of an `nfsd_drc_found` event's fields; `None` when they do not parse.
fn drc_found_fields(fields: &str) -> Option<(u32, DrcFound)> {
    let found = match field(fields, "result")? {
        "REPLY" => DrcFound::Reply,
        "DROPIT" => DrcFound::DropIt,
        "DOIT" => DrcFound::DoIt,
        _ => return None,
    };
    Some((parse_xid(fields)?, found))
}

/// The XID and result of an ftrace `nfsd_drc_found` line (`None` for any other line, or one
/// whose fields do not parse): the one reading of it, for the counts here and for
/// `rig hold-export`'s drop count.
pub fn drc_found_event(line: &str) -> Option<(u32, DrcFound)> {
    drc_found_fields(event_fields(line, "nfsd_drc_found")?)
}

/// `CPU:0 [LOST 123 EVENTS]` (or without the CPU prefix).
fn lost_events(line: &str) -> Option<u64> {
    let at = line.find("[LOST ")?;
    let rest = &line[at + "[LOST ".len()..];
    let n = rest.split_whitespace().next()?;
    rest.contains("EVENTS]").then(|| n.parse().ok())?
}

/// Events the ring buffer overwrote before the trace was read: the `trace` file's header
/// `# entries-in-buffer/entries-written: 9/12   #P:2` says 12 were written and 9 are left (no
/// `[LOST]` line marks those, unlike the events a full buffer refused).
fn overwritten_events(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("# entries-in-buffer/entries-written:")?;
    let (in_buffer, written) = rest.split_whitespace().next()?.split_once('/')?;
    let (in_buffer, written) = (in_buffer.parse::<u64>().ok()?, written.parse::<u64>().ok()?);
    Some(written.saturating_sub(in_buffer))
}

impl FtraceCounts {
    /// Count the events in ftrace text. Never fails: what is not understood is ignored.
    pub fn parse(text: &str) -> FtraceCounts {
        let mut counts = FtraceCounts {
            xids: BTreeMap::new(),
            xids_dropped: 0,
            total_calls: 0,
            total_replays: 0,
            total_drops: 0,
            total_deferred: 0,
            total_garbage_args: 0,
            cache_update_hits: 0,
            lost_events: 0,
            lines_ignored: 0,
            sources: Sources {
                svc_process: true,
                drc_found: true,
                cache_update: true,
                defer: true,
                garbage_args: true,
                declared: false,
            },
        };
        for line in text.lines() {
            if let Some(declared) = line.strip_prefix(SOURCES_HEADER) {
                let names: Vec<&str> = declared.split_whitespace().collect();
                let has = |name: &str| names.iter().any(|n| n.ends_with(name));
                counts.sources = Sources {
                    svc_process: has("svc_process"),
                    drc_found: has("nfsd_drc_found"),
                    cache_update: has(CACHE_UPDATE_PROBE),
                    defer: has(":svc_defer"),
                    garbage_args: has("nfsd_garbage_args_err"),
                    declared: true,
                };
                continue;
            }
            if let Some(overwritten) = overwritten_events(line) {
                counts.lost_events = counts.lost_events.saturating_add(overwritten);
                continue;
            }
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            if let Some(n) = lost_events(line) {
                counts.lost_events = counts.lost_events.saturating_add(n);
            } else if let Some(fields) = event_fields(line, "svc_process") {
                counts.svc_process(fields);
            } else if let Some(fields) = event_fields(line, "nfsd_drc_found") {
                counts.drc_found(fields);
            } else if let Some(fields) = event_fields(line, "svc_defer") {
                counts.not_executed(fields, NotExecuted::Deferred);
            } else if let Some(fields) =
                event_fields(line, "svc_send").or_else(|| event_fields(line, "svc_drop"))
            {
                counts.pass_closed(fields);
            } else if let Some(fields) = event_fields(line, "nfsd_garbage_args_err") {
                counts.not_executed(fields, NotExecuted::GarbageArgs);
            } else if event_fields(line, CACHE_UPDATE_PROBE).is_some() {
                counts.cache_update_hits += 1;
            } else {
                counts.lines_ignored += 1;
            }
        }
        counts
    }

    fn entry(&mut self, xid: u32) -> Option<&mut XidCounts> {
        if !self.xids.contains_key(&xid) && self.xids.len() >= MAX_XIDS {
            self.xids_dropped += 1;
            return None;
        }
        Some(self.xids.entry(xid).or_default())
    }

    fn svc_process(&mut self, fields: &str) {
        let (Some(xid), Some(service)) = (parse_xid(fields), field(fields, "service")) else {
            self.lines_ignored += 1;
            return;
        };
        if !NFSD_DISPATCHED.contains(&service) {
            return;
        }
        self.total_calls += 1;
        let procedure = field(fields, "proc").map(|p| p.chars().take(32).collect::<String>());
        if let Some(entry) = self.entry(xid) {
            entry.calls += 1;
            entry.in_pass = true;
            if procedure.is_some() {
                entry.procedure = procedure;
            }
        }
    }

    /// A `svc_defer` or `nfsd_garbage_args_err` line: a `svc_process` of this XID that executed
    /// nothing.
    fn not_executed(&mut self, fields: &str, why: NotExecuted) {
        let Some(xid) = parse_xid(fields) else {
            self.lines_ignored += 1;
            return;
        };
        // Whether this XID's last event was its svc_process (unknown for an XID not kept:
        // counted as a dispatch-time deferral in the totals).
        let in_pass = self.entry(xid).map(|entry| {
            let in_pass = entry.in_pass;
            entry.in_pass = false;
            match why {
                NotExecuted::Deferred if in_pass => entry.deferred += 1,
                NotExecuted::Deferred => entry.deferred_before_dispatch += 1,
                NotExecuted::GarbageArgs => entry.garbage_args += 1,
            }
            in_pass
        });
        match why {
            NotExecuted::Deferred if in_pass.unwrap_or(true) => self.total_deferred += 1,
            NotExecuted::Deferred => {}
            NotExecuted::GarbageArgs => self.total_garbage_args += 1,
        }
    }

    /// A `svc_send` or `svc_drop` line: this XID's pass is over (a later `svc_defer` of it
    /// belongs to a new pass, deferred before its `svc_process`).
    fn pass_closed(&mut self, fields: &str) {
        let Some(xid) = parse_xid(fields) else {
            self.lines_ignored += 1;
            return;
        };
        if let Some(entry) = self.xids.get_mut(&xid) {
            entry.in_pass = false;
        }
    }

    fn drc_found(&mut self, fields: &str) {
        let Some((xid, found)) = drc_found_fields(fields) else {
            self.lines_ignored += 1;
            return;
        };
        match found {
            DrcFound::Reply => self.total_replays += 1,
            DrcFound::DropIt => self.total_drops += 1,
            DrcFound::DoIt => {}
        }
        if let Some(entry) = self.entry(xid) {
            match found {
                DrcFound::Reply => entry.replays += 1,
                DrcFound::DropIt => entry.drops += 1,
                DrcFound::DoIt => entry.found_doit += 1,
            }
            // A replayed or dropped pass ends here; DOIT goes on to execute.
            if found != DrcFound::DoIt {
                entry.in_pass = false;
            }
        }
    }

    /// Executions of every XID nfsd dispatched, together (calls − replays − drops − deferred
    /// passes − undecodable calls), when the sources allow.
    pub fn total_executions(&self) -> Option<usize> {
        if !self.sources.svc_process || !self.sources.drc_found || self.lost_events > 0 {
            return None;
        }
        let not_executed = self
            .total_replays
            .checked_add(self.total_drops)?
            .checked_add(self.total_deferred)?
            .checked_add(self.total_garbage_args)?;
        self.total_calls.checked_sub(not_executed)
    }

    /// Whether the per-XID arithmetic agrees with the `nfsd_cache_update` hits (one per
    /// execution, plus one per deferred pass: its `RC_NOCACHE` update, nfssvc.c:1063); `None`
    /// when the kprobe (or another source) was missing.
    pub fn counts_agree(&self) -> Option<bool> {
        if !self.sources.cache_update {
            return None;
        }
        let expected_updates = self.total_executions()?.checked_add(self.total_deferred)?;
        Some(expected_updates == self.cache_update_hits)
    }

    /// The counts for `xid`, if the trace can vouch for them.
    pub fn xid(&self, xid: u32) -> Result<XidCounts, CountError> {
        if !self.sources.svc_process {
            return Err(CountError::SourceMissing("sunrpc:svc_process"));
        }
        if !self.sources.drc_found {
            return Err(CountError::SourceMissing("nfsd:nfsd_drc_found"));
        }
        if self.lost_events > 0 {
            return Err(CountError::LostEvents(self.lost_events));
        }
        let counts = match self.xids.get(&xid) {
            Some(c) => c.clone(),
            None if self.xids_dropped > 0 => return Err(CountError::XidNotKept(xid)),
            None => return Err(CountError::XidNotSeen(xid)),
        };
        if counts.calls == 0 {
            return Err(CountError::XidNotSeen(xid));
        }
        if counts.executions().is_none() {
            return Err(CountError::Inconsistent { xid, counts });
        }
        Ok(counts)
    }
}

#[derive(Debug, Deserialize)]
struct StatsIn {
    executions: Vec<ExecutionIn>,
    #[serde(default)]
    connections: Vec<ConnectionIn>,
    #[serde(default)]
    drc_decisions: std::collections::BTreeMap<String, u64>,
}

#[derive(Debug, Deserialize)]
struct ConnectionIn {
    open: bool,
}

#[derive(Debug, Deserialize)]
struct ExecutionIn {
    xid: u32,
    procedure: String,
    executions: usize,
}

/// The per-XID execution counts of `rig serve --stats` JSON.
#[derive(Debug)]
pub struct ServeCounts {
    executions: Vec<ExecutionIn>,
    closed_connections: usize,
    drc_decisions: std::collections::BTreeMap<String, u64>,
}

impl ServeCounts {
    /// Parse the stats; only `executions[].{xid, procedure, executions}` are read.
    pub fn parse(json: &str) -> Result<ServeCounts, CountError> {
        let stats: StatsIn =
            serde_json::from_str(json).map_err(|e| CountError::BadStats(e.to_string()))?;
        Ok(ServeCounts {
            executions: stats.executions,
            closed_connections: stats.connections.iter().filter(|c| !c.open).count(),
            drc_decisions: stats.drc_decisions,
        })
    }

    /// Every listed (XID, procedure, executions), one per server slot that executed it.
    pub fn listed(&self) -> impl Iterator<Item = (u32, &str, usize)> + '_ {
        self.executions
            .iter()
            .map(|e| (e.xid, e.procedure.as_str(), e.executions))
    }

    /// How often the server's DRC decided each way (`hit`, `miss`, `nocache`, ...).
    pub fn drc_decisions(&self) -> &std::collections::BTreeMap<String, u64> {
        &self.drc_decisions
    }

    /// The connections `rig serve` has seen close (each is listed with `"open": false`).
    pub fn closed_connections(&self) -> usize {
        self.closed_connections
    }

    /// Executions of `xid` as `procedure`, summed over the server's slots.
    pub fn executions(&self, xid: u32, procedure: &str) -> Result<usize, CountError> {
        let mut matching = self
            .executions
            .iter()
            .filter(|e| e.xid == xid && e.procedure.eq_ignore_ascii_case(procedure))
            .peekable();
        if matching.peek().is_none() {
            return Err(CountError::NotInStats(xid));
        }
        Ok(matching.fold(0usize, |n, e| n.saturating_add(e.executions)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 9/9   #P:2
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
            nfsd-812     [001] ..... 1234.000100: svc_process: addr=10.99.0.2 xid=0x5a3f0011 service=nfsd vers=3 proc=CREATE
            nfsd-812     [001] ..... 1234.000200: rig_cache_update: (nfsd_cache_update+0x0/0x2a0 [nfsd])
            nfsd-812     [001] ..... 1234.000300: svc_process: addr=10.99.0.2 xid=0x5a3f0012 service=nfsd vers=3 proc=REMOVE
            nfsd-812     [001] ..... 1234.000400: rig_cache_update: (nfsd_cache_update+0x0/0x2a0 [nfsd])
            nfsd-813     [000] ..... 1234.000500: svc_process: xid=0x5a3f0012 server=10.99.0.1:20049 client=10.99.0.2:40000 service=nfsd vers=3 proc=REMOVE
            nfsd-813     [000] ..... 1234.000600: nfsd_drc_found: boot_time=   6571a2b3c xid=0x5a3f0012 result=REPLY
            lockd-90     [000] ..... 1234.000700: svc_process: addr=10.99.0.2 xid=0x00000001 service=lockd vers=4 proc=NULL
            nfsd-813     [000] ..... 1234.000800: svc_process: addr=10.99.0.2 xid=0x5a3f0012 service=nfsd vers=3 proc=REMOVE
            nfsd-813     [000] ..... 1234.000900: nfsd_drc_found: boot_time=   6571a2b3c xid=0x5a3f0012 result=DROPIT
            nfsd-813     [000] ..... 1234.001000: svc_rdma_sendto: something we do not parse
";

    #[test]
    fn counts_calls_replays_and_drops_per_xid() {
        let c = FtraceCounts::parse(TRACE);
        let remove = c.xid(0x5a3f_0012).unwrap();
        assert_eq!(remove.calls, 3);
        assert_eq!(remove.replays, 1);
        assert_eq!(remove.drops, 1);
        assert_eq!(remove.executions(), Some(1));
        assert_eq!(remove.procedure.as_deref(), Some("REMOVE"));
        assert_eq!(c.xid(0x5a3f_0011).unwrap().executions(), Some(1));
        // lockd is not nfsd: neither counted nor kept.
        assert_eq!(c.xid(1), Err(CountError::XidNotSeen(1)));
        assert_eq!(c.total_calls, 4);
        assert_eq!(c.total_executions(), Some(2));
        assert_eq!(c.cache_update_hits, 2);
        assert_eq!(c.counts_agree(), Some(true));
        assert_eq!(c.lines_ignored, 1);
    }

    #[test]
    fn an_nfsd_drc_found_line_reads_as_its_xid_and_result() {
        let found: Vec<_> = TRACE.lines().filter_map(drc_found_event).collect();
        assert_eq!(
            found,
            [
                (0x5a3f_0012, DrcFound::Reply),
                (0x5a3f_0012, DrcFound::DropIt)
            ]
        );
        let line = |fields: &str| format!("nfsd-1 [000] ..... 1.0: nfsd_drc_found: {fields}");
        assert_eq!(
            drc_found_event(&line("boot_time=1 xid=0x00000007 result=DOIT")),
            Some((7, DrcFound::DoIt))
        );
        // A result nfsd does not print, a missing XID, another event that ends in the name.
        assert_eq!(drc_found_event(&line("xid=0x00000007 result=MAYBE")), None);
        assert_eq!(drc_found_event(&line("boot_time=1 result=DROPIT")), None);
        assert_eq!(
            drc_found_event("nfsd-1 [000] ..... 1.0: my_nfsd_drc_found: xid=0x1 result=DROPIT"),
            None
        );
    }

    /// A REMOVE deferred by an export-cache upcall, then revisited (the 6.12 event lines), an
    /// nfsacl GETACL, and a call whose arguments did not decode.
    const DEFERRED: &str = "\
# rig-sources: sunrpc:svc_process nfsd:nfsd_drc_found kprobes:rig_cache_update sunrpc:svc_defer nfsd:nfsd_garbage_args_err
# entries-in-buffer/entries-written: 11/11   #P:2
            nfsd-812     [001] ..... 1234.000100: svc_process: addr=10.99.0.2 xid=0x5a3f0021 service=nfsd vers=3 proc=REMOVE
            nfsd-812     [001] ..... 1234.000200: svc_defer: xid=0x5a3f0021 server=10.99.0.1:20049 client=10.99.0.2:40000 flags=RQ_USEDEFERRAL|RQ_DROPME
            nfsd-812     [001] ..... 1234.000300: rig_cache_update: (nfsd_cache_update+0x0/0x2a0 [nfsd])
            nfsd-813     [000] ..... 1239.000100: svc_defer_recv: addr=10.99.0.2:40000 dr=00000000deadbeef xid=0x5a3f0021
            nfsd-813     [000] ..... 1239.000200: svc_process: addr=10.99.0.2 xid=0x5a3f0021 service=nfsd vers=3 proc=REMOVE
            nfsd-813     [000] ..... 1239.000300: rig_cache_update: (nfsd_cache_update+0x0/0x2a0 [nfsd])
            nfsd-813     [000] ..... 1239.000400: svc_process: addr=10.99.0.2 xid=0x5a3f0022 service=nfsacl vers=3 proc=GETACL
            nfsd-813     [000] ..... 1239.000500: rig_cache_update: (nfsd_cache_update+0x0/0x2a0 [nfsd])
            nfsd-813     [000] ..... 1239.000600: svc_process: addr=10.99.0.2 xid=0x5a3f0023 service=nfsd vers=3 proc=WRITE
            nfsd-813     [000] ..... 1239.000700: nfsd_garbage_args_err: xid=0x5a3f0023 vers=3 proc=7
";

    #[test]
    fn deferred_passes_undecodable_calls_and_nfsacl_are_counted_as_what_they_are() {
        let c = FtraceCounts::parse(DEFERRED);
        assert!(c.sources.defer && c.sources.garbage_args);
        let remove = c.xid(0x5a3f_0021).unwrap();
        assert_eq!((remove.calls, remove.deferred), (2, 1));
        // Deferred once, revisited once: one execution, not two.
        assert_eq!(remove.executions(), Some(1));
        let garbage = c.xid(0x5a3f_0023).unwrap();
        assert_eq!((garbage.calls, garbage.garbage_args), (1, 1));
        assert_eq!(garbage.executions(), Some(0));
        assert_eq!(c.xid(0x5a3f_0022).unwrap().executions(), Some(1));
        // REMOVE once, GETACL once; three kprobe hits (the deferred pass's RC_NOCACHE update
        // among them): the cross-check agrees.
        assert_eq!(c.total_executions(), Some(2));
        assert_eq!(c.cache_update_hits, 3);
        assert_eq!(c.counts_agree(), Some(true));
        // A deferral while authenticating comes before any svc_process of its pass: nothing
        // to subtract (the revisit's svc_process is the one pass), no cache update either.
        let auth_time = "\
# rig-sources: sunrpc:svc_process nfsd:nfsd_drc_found kprobes:rig_cache_update sunrpc:svc_defer nfsd:nfsd_garbage_args_err
            nfsd-812     [001] ..... 1234.000200: svc_defer: xid=0x5a3f0031 server=10.99.0.1:20049 client=10.99.0.2:40000 flags=RQ_USEDEFERRAL
            nfsd-813     [000] ..... 1239.000200: svc_process: addr=10.99.0.2 xid=0x5a3f0031 service=nfsd vers=3 proc=REMOVE
            nfsd-813     [000] ..... 1239.000300: rig_cache_update: (nfsd_cache_update+0x0/0x2a0 [nfsd])
";
        let c = FtraceCounts::parse(auth_time);
        let remove = c.xid(0x5a3f_0031).unwrap();
        assert_eq!((remove.deferred, remove.deferred_before_dispatch), (0, 1));
        assert_eq!(remove.executions(), Some(1));
        assert_eq!(c.counts_agree(), Some(true));
        // The same, for a retransmit after an executed and answered first pass: its svc_send
        // closed that pass, so the retransmit's auth-time deferral is not taken for a
        // dispatch-time one (which would subtract the first execution).
        let retransmit = "\
# rig-sources: sunrpc:svc_process nfsd:nfsd_drc_found kprobes:rig_cache_update sunrpc:svc_defer nfsd:nfsd_garbage_args_err sunrpc:svc_send sunrpc:svc_drop
            nfsd-812     [001] ..... 1234.000100: svc_process: addr=10.99.0.2 xid=0x5a3f0041 service=nfsd vers=3 proc=REMOVE
            nfsd-812     [001] ..... 1234.000200: rig_cache_update: (nfsd_cache_update+0x0/0x2a0 [nfsd])
            nfsd-812     [001] ..... 1234.000300: svc_send: xid=0x5a3f0041 server=10.99.0.1:20049 client=10.99.0.2:0 status=0 flags=SECURE|DATA
            nfsd-813     [000] ..... 1235.000200: svc_defer: xid=0x5a3f0041 server=10.99.0.1:20049 client=10.99.0.2:40000 flags=RQ_USEDEFERRAL
            nfsd-813     [000] ..... 1240.000200: svc_process: addr=10.99.0.2 xid=0x5a3f0041 service=nfsd vers=3 proc=REMOVE
            nfsd-813     [000] ..... 1240.000300: nfsd_drc_found: boot_time=   6571a2b3c xid=0x5a3f0041 result=REPLY
            nfsd-813     [000] ..... 1240.000400: svc_send: xid=0x5a3f0041 server=10.99.0.1:20049 client=10.99.0.2:0 status=0 flags=SECURE|DATA
";
        let c = FtraceCounts::parse(retransmit);
        let remove = c.xid(0x5a3f_0041).unwrap();
        assert_eq!((remove.calls, remove.replays, remove.deferred), (2, 1, 0));
        assert_eq!(remove.deferred_before_dispatch, 1);
        assert_eq!(remove.executions(), Some(1));
        assert_eq!(c.counts_agree(), Some(true));
        assert_eq!(c.lines_ignored, 0);
        // Without svc_defer in the trace, the deferral reads as a second execution and the
        // cross-check (two hits for that XID) cannot tell: the events are what make it right.
        let blind = DEFERRED.replace("svc_defer: xid", "svc_unknown_event: xid");
        let c = FtraceCounts::parse(&blind);
        assert_eq!(c.xid(0x5a3f_0021).unwrap().executions(), Some(2));
    }

    #[test]
    fn a_re_execution_is_counted() {
        let trace = TRACE.replace("result=REPLY", "result=DOIT");
        let c = FtraceCounts::parse(&trace);
        let remove = c.xid(0x5a3f_0012).unwrap();
        assert_eq!(remove.executions(), Some(2));
        assert_eq!(remove.found_doit, 1);
        // Two executions per the arithmetic, two kprobe hits: the cross-check says so.
        assert_eq!(c.total_executions(), Some(3));
        assert_eq!(c.counts_agree(), Some(false));
    }

    #[test]
    fn declared_sources_gate_the_counts() {
        let all = format!("{SOURCES_HEADER} sunrpc:svc_process nfsd:nfsd_drc_found kprobes:rig_cache_update\n{TRACE}");
        let c = FtraceCounts::parse(&all);
        assert!(c.sources.declared && c.sources.cache_update);
        assert!(c.xid(0x5a3f_0012).is_ok());
        let no_drc =
            format!("{SOURCES_HEADER} sunrpc:svc_process kprobes:rig_cache_update\n{TRACE}");
        let c = FtraceCounts::parse(&no_drc);
        assert_eq!(
            c.xid(0x5a3f_0012),
            Err(CountError::SourceMissing("nfsd:nfsd_drc_found"))
        );
        assert_eq!(c.counts_agree(), None);
        let no_probe = format!("{SOURCES_HEADER} sunrpc:svc_process nfsd:nfsd_drc_found\n{TRACE}");
        let c = FtraceCounts::parse(&no_probe);
        assert!(c.xid(0x5a3f_0012).is_ok());
        assert_eq!(c.counts_agree(), None);
    }

    #[test]
    fn events_the_ring_buffer_overwrote_are_lost_too() {
        let overwritten = TRACE.replace("9/9   #P:2", "9/12   #P:2");
        let c = FtraceCounts::parse(&overwritten);
        assert_eq!(c.lost_events, 3);
        assert_eq!(c.xid(0x5a3f_0012), Err(CountError::LostEvents(3)));
        assert_eq!(c.total_executions(), None);
        // All of them still there: nothing lost.
        assert_eq!(FtraceCounts::parse(TRACE).lost_events, 0);
        assert_eq!(
            overwritten_events("# entries-in-buffer/entries-written: x/2"),
            None
        );
    }

    #[test]
    fn lost_events_and_inconsistencies_are_unknown_not_wrong() {
        let lost = format!("{TRACE}CPU:1 [LOST 17 EVENTS]\n");
        let c = FtraceCounts::parse(&lost);
        assert_eq!(c.lost_events, 17);
        assert_eq!(c.xid(0x5a3f_0012), Err(CountError::LostEvents(17)));
        assert_eq!(c.counts_agree(), None);
        let orphan =
            "  nfsd-1 [000] ..... 1.0: nfsd_drc_found: boot_time= 1 xid=0x00000007 result=REPLY\n";
        let c = FtraceCounts::parse(orphan);
        assert!(matches!(c.xid(7), Err(CountError::XidNotSeen(7))));
        let both = format!(
            "{orphan}  nfsd-1 [000] ..... 1.0: svc_process: addr=a xid=0x00000007 service=nfsd vers=3 proc=REMOVE\n{orphan}"
        );
        let c = FtraceCounts::parse(&both);
        assert!(matches!(
            c.xid(7),
            Err(CountError::Inconsistent { xid: 7, .. })
        ));
    }

    #[test]
    fn garbage_never_panics_and_is_ignored() {
        let junk = "svc_process:\n svc_process: xid=0xzz service=nfsd\n svc_process: xid=0x1\n\
                    nfsd_drc_found: xid=0x1 result=MAYBE\n xid= service= \u{fffd}\u{0}\n\
                    [LOST x EVENTS]\n rig_cache_updates: no\n";
        let c = FtraceCounts::parse(junk);
        assert_eq!(c.total_calls, 0);
        assert_eq!(c.cache_update_hits, 0);
        assert_eq!(c.lost_events, 0);
        assert!(c.xids.is_empty());
        assert_eq!(c.lines_ignored, 7);
    }

    #[test]
    fn xids_beyond_the_cap_are_not_kept() {
        let mut text = String::new();
        for xid in 0..=MAX_XIDS as u32 {
            text.push_str(&format!(
                " n-1 [000] . 1.0: svc_process: xid={xid:#010x} service=nfsd proc=NULL\n"
            ));
        }
        let c = FtraceCounts::parse(&text);
        assert_eq!(c.xids.len(), MAX_XIDS);
        assert_eq!(c.xids_dropped, 1);
        assert_eq!(c.total_calls, MAX_XIDS + 1);
        assert_eq!(
            c.xid(MAX_XIDS as u32),
            Err(CountError::XidNotKept(MAX_XIDS as u32))
        );
    }

    #[test]
    fn serve_stats_are_summed_over_slots() {
        let json = r#"{"listen": "10.99.0.1:20049", "policy": "classic", "executions": [
            {"slot": 0, "xid": 7, "procedure": "REMOVE", "executions": 1, "statuses": ["NFS3_OK"]},
            {"slot": 1, "xid": 7, "procedure": "REMOVE", "executions": 1, "statuses": ["NFS3ERR_NOENT"]},
            {"slot": 0, "xid": 7, "procedure": "LOOKUP", "executions": 5, "statuses": []},
            {"slot": 0, "xid": 8, "procedure": "REMOVE", "executions": 1, "statuses": []}
        ]}"#;
        let counts = ServeCounts::parse(json).unwrap();
        assert_eq!(counts.executions(7, "REMOVE"), Ok(2));
        assert_eq!(counts.closed_connections(), 0);
        assert_eq!(counts.listed().count(), 4);
        assert!(counts.drc_decisions().is_empty());
        let with_connections = r#"{"executions": [], "connections": [
            {"open": false}, {"open": true}, {"open": false}], "drc_decisions": {"hit": 4}}"#;
        assert_eq!(
            ServeCounts::parse(with_connections)
                .unwrap()
                .closed_connections(),
            2
        );
        assert_eq!(
            ServeCounts::parse(with_connections)
                .unwrap()
                .drc_decisions()["hit"],
            4
        );
        assert_eq!(
            counts.executions(9, "REMOVE"),
            Err(CountError::NotInStats(9))
        );
        for bad in [
            "{",
            "[]",
            r#"{"executions": [{"xid": -1}]}"#,
            r#"{"policy": "x"}"#,
        ] {
            assert!(
                matches!(ServeCounts::parse(bad), Err(CountError::BadStats(_))),
                "{bad}"
            );
        }
    }
}
