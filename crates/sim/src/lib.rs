//! A deterministic simulated reliable-connected (RC) RDMA transport between two sans-IO endpoints.
//!
//! The model keeps the properties RPC-over-RDMA relies on and the orderings that matter to a
//! duplicate reply cache, and nothing else:
//! - each direction is one ordered channel (RC): Sends, RDMA Reads and RDMA Writes posted by one side
//!   are executed in posting order;
//! - a Send consumes the peer's oldest posted Receive; with none posted the peer answers
//!   receiver-not-ready (RNR) and the Send is retried after something else has happened, up to the
//!   RNR retry count, after which the connection breaks (as an RC QP does);
//! - a delivered Send produces two completions: a Receive completion in the receiver's receive queue
//!   ("landed in the buffer") and a Send completion in the sender's send queue ("acknowledged"). When
//!   each endpoint's *software* polls those queues is a separate step, so "the reply is in the
//!   client's buffer", "the server saw its Send complete" and "the client processed the reply" can be
//!   ordered any way a real host can order them;
//! - RDMA Read/Write check the peer's registered handle, bounds and access right; a violation breaks
//!   the connection (remote access error), as verbs do.
//!
//! Scheduling is a seeded PRNG (splitmix64) choosing among the enabled actions, minus those a
//! scenario holds. Same seed, same script → same run, byte for byte. There is no clock.
//!
//! Architecture Invariant: the simulator never inspects RPC-over-RDMA headers; it moves bytes.

mod delivery;

use std::collections::{BTreeSet, VecDeque};

use engine::endpoint::{
    CompletionError, Endpoint, Event, RemoteMemory, UpperLayer, WorkRequest, WrId,
};

/// splitmix64 (Steele, Lea, Flood 2014): small, fast, and good enough to pick among a handful of
/// enabled actions. Also the wire fuzzer's case generator (`wirefuzz::rng`), whose tests pin its
/// outputs to the reference sequence: case files depend on them.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform-ish index below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// One of the two endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Side {
    /// The active side (RPC requester, the NFS client).
    Client,
    /// The passive side (RPC responder, the NFS server).
    Server,
}

impl Side {
    fn index(self) -> usize {
        match self {
            Side::Client => 0,
            Side::Server => 1,
        }
    }

    fn peer(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }
}

/// One schedulable step of the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    /// Execute the oldest operation `Side` posted (deliver a Send, serve a Read/Write).
    Transmit(Side),
    /// `Side`'s software polls one completion from its send queue.
    PollSendQueue(Side),
    /// `Side`'s software polls one completion from its receive queue.
    PollRecvQueue(Side),
    /// `Side` runs one unit of upper-layer work (an nfsd thread executing a request). Only ever
    /// enabled for the server (see [`Sim`]'s methods).
    UpperLayer(Side),
}

#[derive(Debug, Clone)]
enum Transit {
    Send {
        wr_id: WrId,
        payload: Vec<u8>,
        rnr_retries_left: u32,
    },
    Read {
        wr_id: WrId,
        handle: u32,
        offset: u64,
        length: u32,
    },
    Write {
        wr_id: WrId,
        handle: u32,
        offset: u64,
        data: Vec<u8>,
    },
}

impl Transit {
    fn wr_id(&self) -> WrId {
        match self {
            Transit::Send { wr_id, .. }
            | Transit::Read { wr_id, .. }
            | Transit::Write { wr_id, .. } => *wr_id,
        }
    }
}

#[derive(Debug, Default)]
struct Port {
    posted_receives: VecDeque<(WrId, usize)>,
    send_queue_completions: VecDeque<Event>,
    recv_queue_completions: VecDeque<Event>,
    outbound: VecDeque<Transit>,
    /// Set after an RNR NAK: the retry waits until some other action has run (the RNR timer).
    rnr_backoff: bool,
}

/// Simulator knobs.
#[derive(Debug, Clone, Copy)]
pub struct SimConfig {
    /// How many RNR retries a Send gets before the connection breaks (IB allows 0-6; 7 = forever).
    pub rnr_retry_count: u32,
    /// Seed for the scheduler.
    pub seed: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            rnr_retry_count: 6,
            seed: 1,
        }
    }
}

/// Counters a verdict can use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimStats {
    pub steps: u64,
    pub sends_delivered: u64,
    pub rnr_naks: u64,
    pub connection_errors: u64,
    pub connections: u64,
    /// Connection-management messages lost once ([`Sim::lose_cm_message`]) and sent again.
    pub cm_messages_lost: u64,
}

/// A connection-management message that can be lost once (IBTA vol. 1 §12.6: REP and DREP are
/// the passive side's answers to REQ and DREQ, RTU the active side's last word of the connect).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmMessage {
    /// The server's reply to the client's connect request.
    Rep,
    /// The client's "ready to use" that completes the three-way handshake.
    Rtu,
    /// The server's answer to the client's disconnect request.
    Drep,
}

impl CmMessage {
    /// The message's name in the IBTA's terms.
    pub fn name(self) -> &'static str {
        match self {
            CmMessage::Rep => "REP",
            CmMessage::Rtu => "RTU",
            CmMessage::Drep => "DREP",
        }
    }
}

/// Two endpoints joined by a simulated RC connection.
pub struct Sim<C, S> {
    pub client: C,
    pub server: S,
    ports: [Port; 2],
    connected: bool,
    config: SimConfig,
    rng: SplitMix64,
    held: BTreeSet<Action>,
    stats: SimStats,
    trace: Vec<String>,
    /// A connection-management message the next connect or disconnect loses once.
    cm_loss: Option<CmMessage>,
}

/// Both sides are transports whose registered memory the simulated HCA serves; only the server
/// has an upper layer the scheduler runs. The client's upper layer is the scenario itself,
/// which drives `sim.client` directly and then calls [`Sim::flush_work`].
impl<C: Endpoint + RemoteMemory, S: Endpoint + RemoteMemory + UpperLayer> Sim<C, S> {
    /// Join `client` and `server`; the connection is not yet established (see [`Sim::connect`]).
    pub fn new(client: C, server: S, config: SimConfig) -> Self {
        Sim {
            client,
            server,
            ports: [Port::default(), Port::default()],
            connected: false,
            config,
            rng: SplitMix64::new(config.seed),
            held: BTreeSet::new(),
            stats: SimStats::default(),
            trace: Vec::new(),
            cm_loss: None,
        }
    }

    /// Establish a (new) connection: fresh queues, then `Connected` to the server first (the passive
    /// side learns of ESTABLISHED first on the wire) and then to the client.
    ///
    /// A REP or RTU lost under [`Sim::lose_cm_message`] costs the handshake one retry and
    /// nothing else: the simulator has no CM timers, so the connection is established all the
    /// same, with the loss in the trace. (Over rxe the passive side's QP is ready to receive
    /// and send before its REP leaves, so a call sent while the server waits for the repeated
    /// RTU is served; the simulator's order of `Connected` events stands for that.)
    pub fn connect(&mut self) {
        match self.cm_loss {
            Some(CmMessage::Rep) => self.lose_pending_cm("the client's REQ is sent again"),
            Some(CmMessage::Rtu) => self.lose_pending_cm("the server's REP is sent again"),
            _ => {}
        }
        self.ports = [Port::default(), Port::default()];
        self.connected = true;
        self.stats.connections += 1;
        self.note(format!("conn  established #{}", self.stats.connections));
        // The CM carries each side's private data to the other (RFC 8797).
        let from_client = self.client.private_data();
        let from_server = self.server.private_data();
        self.deliver(
            Side::Server,
            Event::Connected {
                peer_private_data: from_client,
            },
        );
        self.deliver(
            Side::Client,
            Event::Connected {
                peer_private_data: from_server,
            },
        );
    }

    pub fn is_connected(&self) -> bool {
        self.connected
    }

    pub fn stats(&self) -> SimStats {
        self.stats
    }

    /// Transport-level trace lines (interleaved with the endpoints' own lines) taken so far.
    pub fn take_trace(&mut self) -> Vec<String> {
        std::mem::take(&mut self.trace)
    }

    /// Forbid `action` until released.
    pub fn hold(&mut self, action: Action) {
        self.held.insert(action);
    }

    pub fn release(&mut self, action: Action) {
        self.held.remove(&action);
    }

    pub fn release_all(&mut self) {
        self.held.clear();
    }

    /// Collect what `side` wants posted after a scenario drove it directly (e.g. issued a call
    /// through `sim.client`).
    pub fn flush_work(&mut self, side: Side) {
        self.drain(side);
    }

    /// Break the connection as `side`'s software asked (a client timing out).
    pub fn disconnect(&mut self, side: Side) {
        if self.connected {
            self.note(format!("conn  {} disconnects", side.name()));
            if self.cm_loss == Some(CmMessage::Drep) {
                self.lose_pending_cm("the DREQ is sent again");
            }
            self.break_connection();
        }
    }

    /// Lose `message` once at the next connect (REP, RTU) or disconnect (DREP).
    pub fn lose_cm_message(&mut self, message: CmMessage) {
        self.cm_loss = Some(message);
    }

    /// The pending CM loss happens now: counted, and traced with the `retry` that recovers it.
    fn lose_pending_cm(&mut self, retry: &str) {
        if let Some(lost) = self.cm_loss.take() {
            self.stats.cm_messages_lost += 1;
            self.note(format!(
                "conn  CM {} lost once: {retry} and answered",
                lost.name()
            ));
        }
    }

    /// Actions that could run now, in a stable order, minus held ones.
    pub fn enabled(&self) -> Vec<Action> {
        let mut out = Vec::new();
        for side in [Side::Client, Side::Server] {
            let port = &self.ports[side.index()];
            if self.connected && !port.outbound.is_empty() && !port.rnr_backoff {
                out.push(Action::Transmit(side));
            }
            if !port.send_queue_completions.is_empty() {
                out.push(Action::PollSendQueue(side));
            }
            if !port.recv_queue_completions.is_empty() {
                out.push(Action::PollRecvQueue(side));
            }
            if side == Side::Server && self.server.has_upper_layer_work() {
                out.push(Action::UpperLayer(side));
            }
        }
        out.retain(|a| !self.held.contains(a));
        if out.is_empty() {
            // Only RNR-backed-off Sends remain: let their retry timer fire.
            for side in [Side::Client, Side::Server] {
                let port = &self.ports[side.index()];
                let action = Action::Transmit(side);
                if self.connected
                    && !port.outbound.is_empty()
                    && port.rnr_backoff
                    && !self.held.contains(&action)
                {
                    out.push(action);
                }
            }
        }
        out
    }

    /// Run one enabled action chosen by the seeded scheduler. `None` when nothing can run.
    pub fn step(&mut self) -> Option<Action> {
        let enabled = self.enabled();
        if enabled.is_empty() {
            return None;
        }
        let action = enabled[self.rng.below(enabled.len())];
        self.run(action);
        Some(action)
    }

    /// Run a specific action if it is enabled (ignoring holds). Returns whether it ran.
    pub fn force(&mut self, action: Action) -> bool {
        let held = self.held.remove(&action);
        let ok = self.enabled().contains(&action);
        if held {
            self.held.insert(action);
        }
        if ok {
            self.run(action);
        }
        ok
    }

    /// Step until `done` holds (checked before each step) or nothing can run or `max_steps` ran.
    /// Returns whether `done` held.
    pub fn run_until(&mut self, max_steps: u64, mut done: impl FnMut(&Self) -> bool) -> bool {
        for _ in 0..max_steps {
            if done(self) {
                return true;
            }
            if self.step().is_none() {
                break;
            }
        }
        done(self)
    }

    /// Step until nothing can run (or `max_steps`). Returns whether the run went quiet.
    pub fn run_to_quiescence(&mut self, max_steps: u64) -> bool {
        for _ in 0..max_steps {
            if self.step().is_none() {
                return true;
            }
        }
        false
    }

    /// Number of Receives `side` has posted and not yet consumed.
    pub fn posted_receives(&self, side: Side) -> usize {
        self.ports[side.index()].posted_receives.len()
    }

    /// Completions waiting in `side`'s receive queue (landed, not yet seen by software).
    pub fn pending_receive_completions(&self, side: Side) -> usize {
        self.ports[side.index()].recv_queue_completions.len()
    }

    /// Completions waiting in `side`'s send queue.
    pub fn pending_send_completions(&self, side: Side) -> usize {
        self.ports[side.index()].send_queue_completions.len()
    }

    /// Operations `side` posted that have not executed yet.
    pub fn in_flight(&self, side: Side) -> usize {
        self.ports[side.index()].outbound.len()
    }
}
