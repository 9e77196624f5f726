//! Our NFSv3 + MOUNT v3 server ([`server::Server`]) over real verbs: one event loop sleeping in
//! poll(2) on the rdma_cm channel and every connection's completion channel.
//!
//! Each connection is hosted by a server *slot* (a [`server::Server`]: file system, DRC, one
//! connection at a time). A new connection takes the most recently used idle slot, so a client
//! that reconnects finds its duplicate reply cache, as with nfsd (which keys the DRC by client
//! address). Concurrent connections get slots of their own (separate namespaces, same root
//! handle) up to `max_connections`; beyond that connect requests are rejected.
//!
//! Everything the loop keeps is bounded for a server that runs for days: per-connection
//! statistics for the open connections and the [`MAX_CONNECTION_STATS`] most recent closed ones
//! (older ones are counted), each slot's records and DRC bounded in `server`, and the options
//! checked against the limits the verbs layer enforces ([`MAX_CONNECTIONS`], [`MAX_CREDITS`])
//! before anything is set up.

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use engine::endpoint::{Endpoint, Event, UpperLayer};
use engine::ConnectionConfig;
use serde::Serialize;
use server::drc::{policy_by_name, Decision};
use server::Server;
use verbs::cq::wait_any_readable;
use verbs::{CmEvent, CmEventKind, EventChannel, VerbsError};
use wire::nfs_client::Status;
use wire::private_data::PrivateData;
use wire::svcrdma::KernelModel;

use crate::conn::{conn_params, ConnCounters, Connection, Role};
use crate::serve_control::{ExecutionHold, Observed, MAX_DATAGRAM};

/// How often the loop wakes without I/O to look at the signal flags.
const TICK: Duration = Duration::from_millis(200);
/// Upper-layer steps run per wake-up before returning to poll(2) (fairness between connections).
const UPPER_LAYER_BUDGET: usize = 4096;
/// Most concurrent connections: one poll(2) watches the CM channel, the control socket and every
/// connection's completion channel, at most `verbs::cq::MAX_WAIT_FDS` fds.
pub const MAX_CONNECTIONS: usize = verbs::cq::MAX_WAIT_FDS - 2;
/// Most credits a connection grants: its Send Queue is sized for twice the grant (our requester
/// exceeds it on purpose), within `verbs::qp::MAX_CREDITS`.
pub const MAX_CREDITS: u32 = verbs::qp::MAX_CREDITS / 2;
/// Closed connections whose statistics are kept (the most recent; older ones are counted in
/// `connections_forgotten`). Open connections are always kept.
pub const MAX_CONNECTION_STATS: usize = 1024;

/// What `rig serve` was asked to do.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub listen: SocketAddr,
    pub policy: String,
    /// The kernel whose svcrdma answers every connection's headers (a modelled profile or a
    /// measured one: `wirefuzz::rules::kernel_model`).
    pub model: KernelModel,
    pub config: ConnectionConfig,
    pub max_connections: usize,
    /// Close each connection once after this many replies (the reconnect test).
    pub drop_after: Option<u64>,
    /// Size limits of each slot's in-memory file system.
    pub fs_limits: server::fs::Limits,
    /// Answer execution holds on this UDP address ([`crate::serve_control`]).
    pub control: Option<SocketAddr>,
}

/// Per-connection statistics.
#[derive(Debug, Clone, Serialize)]
pub struct ConnectionStats {
    pub connection: u64,
    pub slot: usize,
    /// The grant advertised in every reply (RFC 8166 §3.3.1).
    pub credits_granted: u32,
    /// Calls received (each consumed a credit).
    pub calls_received: u64,
    /// Replies whose Send completed (each returned a credit).
    pub credits_returned: u64,
    pub verbs: ConnCounters,
    pub peer_private_data: Option<String>,
    pub dropped_by_server: bool,
    pub open: bool,
}

/// One (XID, procedure) and how often it was executed.
#[derive(Debug, Clone, Serialize)]
pub struct ExecutionCount {
    pub slot: usize,
    pub xid: u32,
    pub procedure: String,
    pub executions: usize,
    /// Serialised as their names (`"NFS3_OK"` ...), which is what `rig judge` reads back.
    pub statuses: Vec<Status>,
}

/// What `rig serve --stats` writes. `executions` holds the per-(XID, procedure) counts of the
/// most recent XIDs of each slot (`server::records::RecordLimits::counted_xids`), exact for
/// those; `executions_total` and `drc_decisions` count everything; `xids_forgotten` and
/// `connections_forgotten` say what fell out of the bounded lists.
#[derive(Debug, Clone, Serialize)]
pub struct ServeStats {
    pub listen: String,
    pub policy: String,
    pub connections_seen: u64,
    pub connections_rejected: u64,
    pub connections: Vec<ConnectionStats>,
    pub connections_forgotten: u64,
    pub executions: Vec<ExecutionCount>,
    pub executions_total: u64,
    pub xids_forgotten: u64,
    pub drc_decisions: BTreeMap<String, u64>,
}

impl ServeStats {
    /// Empty statistics for a server on `listen` with `policy`.
    pub fn new(listen: &str, policy: &str) -> Self {
        ServeStats {
            listen: listen.to_string(),
            policy: policy.to_string(),
            connections_seen: 0,
            connections_rejected: 0,
            connections: Vec::new(),
            connections_forgotten: 0,
            executions: Vec::new(),
            executions_total: 0,
            xids_forgotten: 0,
            drc_decisions: BTreeMap::new(),
        }
    }
}

/// Per-connection statistics while serving: the open connections and the most recent closed
/// ones, by connection number.
#[derive(Debug, Default)]
struct ConnectionBook {
    by_number: BTreeMap<u64, ConnectionStats>,
    closed: usize,
    forgotten: u64,
    next: u64,
}

impl ConnectionBook {
    fn open(&mut self, mut stats: ConnectionStats) -> u64 {
        self.next += 1;
        stats.connection = self.next;
        self.by_number.insert(self.next, stats);
        self.next
    }

    fn get(&mut self, number: u64) -> Option<&mut ConnectionStats> {
        self.by_number.get_mut(&number)
    }

    /// Mark `number` closed; the oldest closed ones beyond [`MAX_CONNECTION_STATS`] go.
    fn close(&mut self, number: u64) {
        if let Some(stats) = self.by_number.get_mut(&number) {
            if stats.open {
                stats.open = false;
                self.closed += 1;
            }
        }
        while self.closed > MAX_CONNECTION_STATS {
            let oldest = self
                .by_number
                .iter()
                .find(|(_, s)| !s.open)
                .map(|(n, _)| *n);
            let Some(oldest) = oldest else { break };
            self.by_number.remove(&oldest);
            self.closed -= 1;
            self.forgotten += 1;
        }
    }

    fn to_stats(&self, stats: &mut ServeStats) {
        stats.connections = self.by_number.values().cloned().collect();
        stats.connections_forgotten = self.forgotten;
    }
}

/// Check `options` against what the verbs layer and the server accept, before any set-up.
pub fn check_options(options: &ServeOptions) -> Result<(), String> {
    if policy_by_name(&options.policy, options.config.credits).is_none() {
        return Err(format!(
            "unknown DRC policy {:?} (classic, acked, acked-mark)",
            options.policy
        ));
    }
    if !(1..=MAX_CREDITS).contains(&options.config.credits) {
        return Err(format!(
            "credits {} out of range 1..={MAX_CREDITS} (the Send Queue holds twice the grant, \
             at most verbs::qp::MAX_CREDITS work requests per credit slot)",
            options.config.credits
        ));
    }
    if !(1..=MAX_CONNECTIONS).contains(&options.max_connections) {
        return Err(format!(
            "max connections {} out of range 1..={MAX_CONNECTIONS} (one poll(2) watches every \
             connection, at most verbs::cq::MAX_WAIT_FDS fds)",
            options.max_connections
        ));
    }
    if options.drop_after == Some(0) {
        return Err("drop-after 0 would disconnect before any reply: give 1 or more".into());
    }
    Ok(())
}

struct Slot {
    server: Server,
    busy: bool,
    last_used: u64,
}

struct Live {
    conn: Connection,
    slot: usize,
    /// The connection's number in the statistics.
    number: u64,
    established: bool,
    dropped: bool,
}

/// Signals the loop watches (set from signal handlers).
pub struct Controls<'a> {
    /// Stop, write stats, return.
    pub stop: &'a AtomicBool,
    /// Disconnect every connection now (SIGUSR1), then clear the flag.
    pub drop_all: &'a AtomicBool,
    /// Called with up-to-date statistics each time a connection closes (`rig serve --stats`
    /// rewrites its file, so a client can count its executions before the server stops).
    pub checkpoint: Option<&'a dyn Fn(&ServeStats)>,
}

/// What the loop counts beside the slots.
struct Books {
    stats: ServeStats,
    connections: ConnectionBook,
}

/// Serve until `controls.stop` is set; returns the statistics.
pub fn serve(options: &ServeOptions, controls: Controls<'_>) -> Result<ServeStats, VerbsError> {
    if let Err(reason) = check_options(options) {
        eprintln!("rig serve: {reason}");
        return Err(VerbsError::InvalidState(
            "serve options out of range (unknown DRC policy, credits or max connections)",
        ));
    }
    let channel = EventChannel::new()?;
    let listener = channel.create_id()?;
    listener.bind_addr(options.listen)?;
    listener.listen(16)?;
    eprintln!(
        "rig serve: listening on {} (policy {}, {} credits)",
        options.listen, options.policy, options.config.credits
    );
    let mut slots: Vec<Slot> = Vec::new();
    let mut live: Vec<Live> = Vec::new();
    let mut books = Books {
        stats: ServeStats::new(&options.listen.to_string(), &options.policy),
        connections: ConnectionBook::default(),
    };
    let control = match options.control {
        Some(addr) => {
            let socket = UdpSocket::bind(addr).map_err(|e| {
                eprintln!("rig serve: control port {addr}: {e}");
                VerbsError::InvalidState("the control port could not be bound")
            })?;
            let _ = socket.set_nonblocking(true);
            eprintln!("rig serve: execution holds answered on UDP {addr}");
            Some(socket)
        }
        None => None,
    };
    let mut hold = ExecutionHold::default();
    let mut clock = 0u64;
    while !controls.stop.load(Ordering::Relaxed) {
        clock += 1;
        if controls.drop_all.swap(false, Ordering::Relaxed) {
            for l in live.iter_mut().filter(|l| l.established) {
                eprintln!("rig serve: SIGUSR1: disconnecting slot {}", l.slot);
                l.dropped = true;
                if let Some(entry) = books.connections.get(l.number) {
                    entry.dropped_by_server = true;
                }
                let _ = l.conn.id.disconnect();
            }
        }
        let mut fds = vec![channel.fd()];
        fds.extend(control.as_ref().map(|c| c.as_raw_fd()));
        fds.extend(live.iter().map(|l| l.conn.completion_fd()));
        let ready = wait_any_readable(&fds, TICK)?;
        if let Some(socket) = &control {
            answer_control(socket, &mut hold, &slots);
        }
        let held = hold.holds(Instant::now());
        if ready[0] {
            if let Ok(event) = channel.next_event(Duration::ZERO) {
                let closed = on_cm_event(event, options, &mut slots, &mut live, &mut books, clock);
                if let (true, Some(checkpoint)) = (closed, controls.checkpoint) {
                    tally(&slots, &mut books);
                    checkpoint(&books.stats);
                }
            }
        }
        for l in &mut live {
            let slot = &mut slots[l.slot];
            // Drained on every wake-up, not only when the fd fired: a completion may land
            // between draining and re-arming the CQ.
            let events = match l.conn.completions() {
                Ok(events) => events,
                Err(error) => {
                    eprintln!("rig serve: completion queue: {error}");
                    Vec::new()
                }
            };
            let Some(entry) = books.connections.get(l.number) else {
                continue;
            };
            for event in events {
                match &event {
                    Event::RecvCompleted { .. } => entry.calls_received += 1,
                    Event::SendCompleted { .. } => entry.credits_returned += 1,
                    _ => {}
                }
                slot.server.handle_event(event);
            }
            slot.server.hold_execution(held);
            drive(&mut slot.server, &mut l.conn);
            entry.verbs = l.conn.counters;
            if let Some(n) = options.drop_after {
                if !l.dropped && entry.credits_returned >= n {
                    eprintln!(
                        "rig serve: --drop-after {n}: disconnecting connection {}",
                        entry.connection
                    );
                    l.dropped = true;
                    entry.dropped_by_server = true;
                    let _ = l.conn.id.disconnect();
                }
            }
        }
    }
    for l in &live {
        // Still open at shutdown: the stats say so; then close it.
        let _ = l.conn.id.disconnect();
    }
    tally(&slots, &mut books);
    Ok(books.stats)
}

/// Recompute the per-(xid, procedure) execution counts, the totals and the DRC decision totals
/// of the statistics from every slot's records, and the connection list from the book.
fn tally(slots: &[Slot], books: &mut Books) {
    let stats = &mut books.stats;
    books.connections.to_stats(stats);
    stats.executions.clear();
    stats.drc_decisions.clear();
    stats.executions_total = 0;
    stats.xids_forgotten = 0;
    for (index, slot) in slots.iter().enumerate() {
        let records = slot.server.records();
        let mut counts: Vec<ExecutionCount> = records
            .counts()
            .map(|(xid, procedure, count)| ExecutionCount {
                slot: index,
                xid,
                procedure: procedure.to_string(),
                executions: usize::try_from(count.executions).unwrap_or(usize::MAX),
                statuses: count.statuses.clone(),
            })
            .collect();
        counts.sort_by(|a, b| (a.xid, &a.procedure).cmp(&(b.xid, &b.procedure)));
        stats.executions.extend(counts);
        stats.executions_total += records.executions_total();
        stats.xids_forgotten += records.forgotten();
        for (decision, n) in records.decision_totals() {
            *stats.drc_decisions.entry(decision.to_string()).or_default() += n;
        }
    }
}

/// Answer every control datagram waiting on `socket` (non-blocking; at most a bounded number per
/// wake-up): calls queued and DRC decisions for the XID asked, over every slot.
fn answer_control(socket: &UdpSocket, hold: &mut ExecutionHold, slots: &[Slot]) {
    let mut buf = [0u8; MAX_DATAGRAM];
    for _ in 0..CONTROL_BUDGET {
        let Ok((n, from)) = socket.recv_from(&mut buf) else {
            return;
        };
        let answer = hold.answer(&buf[..n], Instant::now(), |xid| {
            let decided = || {
                slots
                    .iter()
                    .flat_map(|s| s.server.decisions().iter())
                    .filter(move |d| d.xid == xid)
            };
            Observed {
                queued: slots.iter().map(|s| s.server.queued()).sum(),
                decisions: decided().count(),
                // A drop is final here: the server keeps no state to answer it later.
                dropped: Some(
                    decided()
                        .filter(|d| d.decision == Decision::Drop.name())
                        .count(),
                ),
                // No export cache, nothing deferred (an export-cache hold is refused).
                deferred: None,
            }
        });
        let _ = socket.send_to(&answer, from);
    }
}

/// Control datagrams answered per wake-up (the rest wait for the next one).
const CONTROL_BUDGET: usize = 16;

/// Post the server's work and run its upper layer until it has nothing left (bounded).
fn drive(server: &mut Server, conn: &mut Connection) {
    for _ in 0..UPPER_LAYER_BUDGET {
        let mut events = Vec::new();
        while let Some(work) = server.poll_work() {
            events.extend(conn.post(work));
        }
        let had_events = !events.is_empty();
        for event in events {
            server.handle_event(event);
        }
        if !server.run_upper_layer() && !had_events {
            break;
        }
    }
}

/// Handle one CM event; returns whether a connection closed.
fn on_cm_event(
    mut event: CmEvent,
    options: &ServeOptions,
    slots: &mut Vec<Slot>,
    live: &mut Vec<Live>,
    books: &mut Books,
    clock: u64,
) -> bool {
    let stats = &mut books.stats;
    match event.kind {
        CmEventKind::ConnectRequest => {
            let Some(id) = event.new_id.take() else {
                return false;
            };
            stats.connections_seen += 1;
            let slot = pick_slot(slots, options);
            let Some(slot) = slot else {
                eprintln!("rig serve: connection refused: --max-connections reached");
                stats.connections_rejected += 1;
                let _ = id.reject(&[]);
                return false;
            };
            let mut conn = match Connection::set_up(id, options.config.credits, Role::Responder) {
                Ok(conn) => conn,
                Err(error) => {
                    eprintln!("rig serve: connection set-up failed: {error}");
                    stats.connections_rejected += 1;
                    return false;
                }
            };
            // Like svcrdma, post the Receives before accepting: the client may send as soon as
            // it sees ESTABLISHED, which can be before our own ESTABLISHED event. RFC 8797 §4:
            // the requester's inline sizes came with its connect request.
            let server = &mut slots[slot].server;
            server.handle_event(Event::Connected {
                peer_private_data: Some(event.private_data.clone()),
            });
            drive(server, &mut conn);
            // RFC 8797 §4: the responder's inline sizes travel in the CM accept.
            let private = server.private_data().unwrap_or_default();
            if let Err(error) = conn
                .id
                .accept(&conn_params(private, Role::Responder, Some(&event)))
            {
                eprintln!("rig serve: accept failed: {error}");
                server.handle_event(Event::ConnectionLost);
                stats.connections_rejected += 1;
                return false;
            }
            slots[slot].busy = true;
            slots[slot].last_used = clock;
            let number = books.connections.open(ConnectionStats {
                connection: 0,
                slot,
                credits_granted: options.config.credits,
                calls_received: 0,
                credits_returned: 0,
                verbs: ConnCounters::default(),
                // RFC 8797 §4: absent or undecodable private data means the 1 KiB defaults.
                peer_private_data: PrivateData::decode(&event.private_data)
                    .ok()
                    .map(|p| format!("{p:?}")),
                dropped_by_server: false,
                open: true,
            });
            live.push(Live {
                conn,
                slot,
                number,
                established: false,
                dropped: false,
            });
        }
        CmEventKind::Established => {
            if let Some(l) = live.iter_mut().find(|l| event.is_for(&l.conn.id)) {
                l.established = true;
                eprintln!(
                    "rig serve: connection {} established (slot {})",
                    l.number, l.slot
                );
                if l.conn.established() {
                    eprintln!(
                        "rig serve: connection {}: closing as asked before it was established",
                        l.number
                    );
                }
            }
        }
        CmEventKind::Disconnected
        | CmEventKind::ConnectError
        | CmEventKind::Unreachable
        | CmEventKind::Rejected
        | CmEventKind::DeviceRemoval => {
            if let Some(index) = live.iter().position(|l| event.is_for(&l.conn.id)) {
                let mut l = live.swap_remove(index);
                let slot = &mut slots[l.slot];
                if let Ok(events) = l.conn.completions() {
                    for event in events {
                        slot.server.handle_event(event);
                    }
                }
                slot.server.handle_event(Event::ConnectionLost);
                drive(&mut slot.server, &mut l.conn);
                slot.busy = false;
                slot.last_used = clock;
                books.connections.close(l.number);
                eprintln!(
                    "rig serve: connection {} closed ({})",
                    l.number,
                    event.kind.name()
                );
                return true;
            }
        }
        _ => {}
    }
    false
}

fn pick_slot(slots: &mut Vec<Slot>, options: &ServeOptions) -> Option<usize> {
    let idle = slots
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.busy)
        .max_by_key(|(_, s)| s.last_used)
        .map(|(i, _)| i);
    if idle.is_some() {
        return idle;
    }
    if slots.len() >= options.max_connections {
        return None;
    }
    let drc = policy_by_name(&options.policy, options.config.credits)?;
    let mut server = Server::new(options.config, drc, 0x0a63_0002);
    server.set_model(options.model);
    *server.fs_mut() = server::fs::Fs::new(options.fs_limits);
    slots.push(Slot {
        server,
        busy: false,
        last_used: 0,
    });
    Some(slots.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::nfs3::Nfsstat3;

    fn options(max_connections: usize) -> ServeOptions {
        ServeOptions {
            listen: "127.0.0.1:20049".parse().unwrap(),
            policy: "acked".to_string(),
            model: wire::svcrdma::Profile::Linux2026.model(),
            config: ConnectionConfig::default(),
            max_connections,
            drop_after: None,
            fs_limits: server::fs::Limits::default(),
            control: None,
        }
    }

    #[test]
    fn a_reconnecting_client_finds_its_slot_and_concurrent_ones_are_bounded() {
        let options = options(2);
        let mut slots = Vec::new();
        let first = pick_slot(&mut slots, &options).unwrap();
        slots[first].busy = true;
        let second = pick_slot(&mut slots, &options).unwrap();
        assert_ne!(first, second);
        slots[second].busy = true;
        assert_eq!(pick_slot(&mut slots, &options), None);
        // The first connection closes; its reconnect gets the same server (and DRC) back.
        slots[first].busy = false;
        slots[first].last_used = 7;
        assert_eq!(pick_slot(&mut slots, &options), Some(first));
        // With both idle, the most recently used one wins.
        slots[second].busy = false;
        slots[second].last_used = 9;
        assert_eq!(pick_slot(&mut slots, &options), Some(second));
        assert_eq!(slots.len(), 2);
    }

    #[test]
    fn the_stats_json_is_what_rig_judge_counts_from() {
        let mut stats = ServeStats::new("10.99.0.1:20049", "classic");
        stats.connections_seen = 1;
        stats.executions_total = 2;
        for slot in [0, 1] {
            stats.executions.push(ExecutionCount {
                slot,
                xid: 0x5a3f_0012,
                procedure: "REMOVE".to_string(),
                executions: 1,
                statuses: vec![Status::Nfs3(Nfsstat3::Ok), Status::Nfs3(Nfsstat3::Noent)],
            });
        }
        let json = serde_json::to_string_pretty(&stats).unwrap();
        // The typed statuses are written as their names, as before they were typed.
        let written: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            written["executions"][0]["statuses"],
            serde_json::json!(["NFS3_OK", "NFS3ERR_NOENT"])
        );
        let counts = verdict::counted::ServeCounts::parse(&json).unwrap();
        assert_eq!(counts.executions(0x5a3f_0012, "REMOVE"), Ok(2));
    }

    #[test]
    fn unknown_policies_are_refused_before_any_rdma_call() {
        let mut options = options(1);
        options.policy = "lru".to_string();
        let stop = AtomicBool::new(false);
        let drop_all = AtomicBool::new(false);
        let err = serve(
            &options,
            Controls {
                stop: &stop,
                drop_all: &drop_all,
                checkpoint: None,
            },
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("unknown DRC policy"), "{err}");
    }

    #[test]
    fn options_out_of_range_are_refused_with_the_limit_named() {
        let ok = options(4);
        assert_eq!(check_options(&ok), Ok(()));
        let mut credits = options(4);
        for bad in [0, MAX_CREDITS + 1, 4096] {
            credits.config.credits = bad;
            let err = check_options(&credits).unwrap_err();
            assert!(err.contains(&format!("1..={MAX_CREDITS}")), "{err}");
        }
        credits.config.credits = MAX_CREDITS;
        assert_eq!(check_options(&credits), Ok(()));
        for bad in [0, MAX_CONNECTIONS + 1, 5000] {
            let err = check_options(&options(bad)).unwrap_err();
            assert!(err.contains(&format!("1..={MAX_CONNECTIONS}")), "{err}");
        }
        assert_eq!(check_options(&options(MAX_CONNECTIONS)), Ok(()));
        let mut drop = options(1);
        drop.drop_after = Some(0);
        assert!(check_options(&drop).unwrap_err().contains("drop-after"));
    }

    #[test]
    fn connection_statistics_keep_open_ones_and_the_most_recent_closed() {
        let mut book = ConnectionBook::default();
        let stats = |slot| ConnectionStats {
            connection: 0,
            slot,
            credits_granted: 8,
            calls_received: 0,
            credits_returned: 0,
            verbs: ConnCounters::default(),
            peer_private_data: None,
            dropped_by_server: false,
            open: true,
        };
        let long_lived = book.open(stats(0));
        for round in 0..(10 * MAX_CONNECTION_STATS) {
            let n = book.open(stats(1));
            book.get(n).unwrap().calls_received = round as u64;
            book.close(n);
        }
        let mut out = ServeStats::new("x", "acked");
        book.to_stats(&mut out);
        assert_eq!(out.connections.len(), MAX_CONNECTION_STATS + 1);
        assert_eq!(out.connections_forgotten, 9 * MAX_CONNECTION_STATS as u64);
        assert_eq!(out.connections[0].connection, long_lived);
        assert!(out.connections[0].open);
        let last = out.connections.last().unwrap();
        assert_eq!(last.connection, 10 * MAX_CONNECTION_STATS as u64 + 1);
        assert!(!last.open);
    }
}
