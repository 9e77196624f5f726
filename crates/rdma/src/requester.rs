//! The requester over real verbs: connect with RFC 8797 private data, post the engine's work,
//! feed completions and CM events back, and let a scenario hold Receive completions back (the
//! reply is in our buffer, acknowledged by our HCA, but our software has not processed it).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use engine::endpoint::Event;
use engine::requester::TransmissionId;
use engine::{CallError, ConnectionConfig, OutgoingCall, Requester, RequesterOutput};
use verbs::cq::wait_any_readable;
use verbs::{CmEventKind, EventChannel, VerbsError, CONNECT_ATTEMPTS_PORT_IN_USE};

use crate::conn::{conn_params, Connection, Role};
use crate::memory::DeviceMemory;

/// Longest single sleep of the event loop (bounds how late a deadline is noticed).
const MAX_SLEEP: Duration = Duration::from_millis(200);

/// Why the client driver failed.
#[derive(Debug)]
pub enum ClientError {
    Verbs(VerbsError),
    Call(CallError),
    /// The peer refused the connection or it failed to come up.
    NotEstablished(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Verbs(e) => write!(f, "verbs: {e}"),
            ClientError::Call(e) => write!(f, "call refused: {e:?}"),
            ClientError::NotEstablished(why) => write!(f, "connection not established: {why}"),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<VerbsError> for ClientError {
    fn from(e: VerbsError) -> Self {
        ClientError::Verbs(e)
    }
}

/// Our requester on a real connection (reconnectable).
pub struct RdmaClient {
    server: SocketAddr,
    channel: EventChannel,
    conn: Option<Connection>,
    /// The requester, registering its chunk memory in the connection's protection domain.
    pub engine: Requester<DeviceMemory>,
    config: ConnectionConfig,
    timeout: Duration,
    /// When set, Receive completions are kept here instead of reaching the engine.
    pub hold_receives: bool,
    held: Vec<Event>,
    outputs: Vec<RequesterOutput>,
    connects: u32,
}

impl RdmaClient {
    /// Resolve, connect and wait for ESTABLISHED (each step bounded by `timeout`).
    pub fn connect(
        server: SocketAddr,
        config: ConnectionConfig,
        timeout: Duration,
    ) -> Result<RdmaClient, ClientError> {
        let mut client = RdmaClient {
            server,
            channel: EventChannel::new()?,
            conn: None,
            engine: Requester::with_memory(config, DeviceMemory::default()),
            config,
            timeout,
            hold_receives: false,
            held: Vec::new(),
            outputs: Vec::new(),
            connects: 0,
        };
        client.establish()?;
        Ok(client)
    }

    /// Connect, again with a fresh CM id while `rdma_connect` finds its port in use.
    fn establish(&mut self) -> Result<(), ClientError> {
        let mut attempt = 1;
        loop {
            match self.establish_once() {
                Err(ClientError::Verbs(e))
                    if e.is_connect_port_in_use() && attempt < CONNECT_ATTEMPTS_PORT_IN_USE =>
                {
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    fn establish_once(&mut self) -> Result<(), ClientError> {
        let id = self.channel.create_id()?;
        id.resolve_addr(self.server, self.timeout)?;
        self.channel
            .expect_event(CmEventKind::AddrResolved, self.timeout)?;
        id.resolve_route(self.timeout)?;
        self.channel
            .expect_event(CmEventKind::RouteResolved, self.timeout)?;
        let conn = Connection::set_up(id, self.config.credits, Role::Requester)?;
        self.engine.memory_mut().attach(conn.pd().clone());
        // RFC 8797 §4: the requester's inline sizes travel in the CM connect request.
        let private = self.engine.private_data().unwrap_or_default();
        conn.id
            .connect(&conn_params(private, Role::Requester, None))?;
        let established = self.channel.next_event(self.timeout)?;
        if established.kind != CmEventKind::Established || established.status != 0 {
            return Err(ClientError::NotEstablished(format!(
                "{} status {}",
                established.kind.name(),
                established.status
            )));
        }
        self.conn = Some(conn);
        self.connects += 1;
        self.engine.handle_event(Event::Connected {
            peer_private_data: Some(established.private_data),
        });
        self.flush_work();
        self.collect();
        Ok(())
    }

    /// Connections made so far (1 after `connect`).
    pub fn connects(&self) -> u32 {
        self.connects
    }

    pub fn is_connected(&self) -> bool {
        self.conn.is_some() && self.engine.is_connected()
    }

    /// Disconnect (rdma_disconnect), wait for DISCONNECTED, and tell the engine.
    pub fn disconnect(&mut self) -> Result<(), ClientError> {
        if let Some(conn) = &self.conn {
            let _ = conn.id.disconnect();
        }
        let deadline = Instant::now() + self.timeout;
        while self.conn.is_some() && Instant::now() < deadline {
            self.pump(MAX_SLEEP)?;
        }
        if self.conn.take().is_some() {
            self.lost();
        }
        self.held.clear();
        self.collect();
        Ok(())
    }

    /// Disconnect if needed and connect again (a new connection: credits restart at one).
    pub fn reconnect(&mut self) -> Result<(), ClientError> {
        if self.conn.is_some() {
            self.disconnect()?;
        }
        self.establish()
    }

    /// Send one transmission.
    pub fn call(
        &mut self,
        call: OutgoingCall,
        honour_credits: bool,
    ) -> Result<TransmissionId, ClientError> {
        let id = self
            .engine
            .call(call, honour_credits)
            .map_err(ClientError::Call)?;
        self.flush_work();
        Ok(id)
    }

    /// Post a raw Send (fuzzing and negative tests).
    pub fn send_raw(&mut self, payload: Vec<u8>) {
        self.engine.send_raw(payload);
        self.flush_work();
    }

    fn flush_work(&mut self) {
        // Bounded: the engine's queue is finite and posting never adds work to it.
        let mut events = Vec::new();
        if let Some(conn) = &mut self.conn {
            while let Some(work) = self.engine.poll_work() {
                events.extend(conn.post(work));
            }
        } else {
            while self.engine.poll_work().is_some() {}
        }
        for event in events {
            self.engine.handle_event(event);
        }
    }

    fn collect(&mut self) {
        while let Some(output) = self.engine.poll_output() {
            self.outputs.push(output);
        }
    }

    /// The reply sits in our Receive buffer, then the connection goes before we process it
    /// (what xprtrdma does on a timeout): wait up to `timeout` for a held reply, drop the
    /// connection with the held replies unprocessed and connect again. Returns whether a reply
    /// was held and how many were lost with the connection.
    pub fn reconnect_losing_held_replies(
        &mut self,
        timeout: Duration,
    ) -> Result<(bool, usize), ClientError> {
        let held = self.run_until(timeout, |c| c.held_receives() >= 1)?;
        let lost = self.held_receives();
        self.disconnect()?;
        self.hold_receives = false;
        self.reconnect()?;
        Ok((held, lost))
    }

    /// Receive completions held back by [`RdmaClient::hold_receives`].
    pub fn held_receives(&self) -> usize {
        self.held.len()
    }

    /// Let held Receive completions reach the engine, in arrival order.
    pub fn release_receives(&mut self) {
        self.hold_receives = false;
        for event in std::mem::take(&mut self.held) {
            self.engine.handle_event(event);
        }
        self.flush_work();
        self.collect();
    }

    /// Take what the engine reported so far.
    pub fn take_outputs(&mut self) -> Vec<RequesterOutput> {
        self.collect();
        std::mem::take(&mut self.outputs)
    }

    /// Sleep until a completion or CM event arrives (at most `timeout`) and process it. Returns
    /// whether anything happened.
    pub fn pump(&mut self, timeout: Duration) -> Result<bool, ClientError> {
        let mut fds = vec![self.channel.fd()];
        if let Some(conn) = &self.conn {
            fds.push(conn.completion_fd());
        }
        let ready = wait_any_readable(&fds, timeout.min(MAX_SLEEP))?;
        let mut progressed = false;
        if ready.get(1).copied().unwrap_or(false) || self.conn.is_some() {
            // Completions are drained even without a notification: one may have landed between
            // the last drain and re-arming.
            if let Some(conn) = &mut self.conn {
                let events = conn.completions()?;
                progressed |= !events.is_empty();
                for event in events {
                    if self.hold_receives && matches!(event, Event::RecvCompleted { .. }) {
                        self.held.push(event);
                    } else {
                        self.engine.handle_event(event);
                    }
                }
            }
        }
        if ready.first().copied().unwrap_or(false) {
            if let Ok(event) = self.channel.next_event(Duration::ZERO) {
                progressed = true;
                if matches!(
                    event.kind,
                    CmEventKind::Disconnected | CmEventKind::DeviceRemoval
                ) {
                    if let Some(mut conn) = self.conn.take() {
                        // Completions already reported stay valid; flushed ones are moot.
                        if let Ok(events) = conn.completions() {
                            for event in events {
                                if !self.hold_receives {
                                    self.engine.handle_event(event);
                                }
                            }
                        }
                    }
                    self.lost();
                }
            }
        }
        self.flush_work();
        self.collect();
        Ok(progressed)
    }

    /// The connection is gone: the engine abandons its transmissions (invalidating their chunk
    /// registrations), and nothing more is registered until the next connection.
    fn lost(&mut self) {
        self.engine.handle_event(Event::ConnectionLost);
        self.engine.memory_mut().detach();
    }

    /// Pump until `done` holds or `timeout` passes; returns whether `done` held.
    pub fn run_until(
        &mut self,
        timeout: Duration,
        mut done: impl FnMut(&RdmaClient) -> bool,
    ) -> Result<bool, ClientError> {
        let deadline = Instant::now() + timeout;
        loop {
            if done(self) {
                return Ok(true);
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Ok(false);
            }
            self.pump(remaining)?;
        }
    }

    /// Outputs collected and not yet taken.
    pub fn outputs(&self) -> &[RequesterOutput] {
        &self.outputs
    }
}
