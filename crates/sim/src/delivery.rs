//! What one scheduled action does on the simulated wire: work requests drained from an endpoint,
//! Sends delivered into posted Receives, RDMA Reads and Writes served from the peer's registered
//! memory (bounds and access checked as an HCA does), completions handed back, a broken
//! connection torn down on both sides.

use super::*;

impl<C: Endpoint + RemoteMemory, S: Endpoint + RemoteMemory + UpperLayer> Sim<C, S> {
    pub(super) fn note(&mut self, line: String) {
        self.trace.push(line);
    }

    pub(super) fn run(&mut self, action: Action) {
        self.stats.steps += 1;
        // Any other action lets a backed-off RNR retry timer expire.
        for side in [Side::Client, Side::Server] {
            if action != Action::Transmit(side) {
                self.ports[side.index()].rnr_backoff = false;
            }
        }
        match action {
            Action::Transmit(side) => self.transmit(side),
            Action::PollSendQueue(side) => {
                if let Some(ev) = self.ports[side.index()].send_queue_completions.pop_front() {
                    self.deliver(side, ev);
                }
            }
            Action::PollRecvQueue(side) => {
                if let Some(ev) = self.ports[side.index()].recv_queue_completions.pop_front() {
                    self.deliver(side, ev);
                }
            }
            Action::UpperLayer(Side::Server) => {
                self.server.run_upper_layer();
                self.drain(Side::Server);
            }
            // Never enabled: the client has no upper layer the simulator schedules.
            Action::UpperLayer(Side::Client) => {}
        }
    }

    pub(super) fn deliver(&mut self, side: Side, event: Event) {
        match side {
            Side::Client => self.client.handle_event(event),
            Side::Server => self.server.handle_event(event),
        }
        self.drain(side);
    }

    /// Collect everything `side` wants posted.
    pub(super) fn drain(&mut self, side: Side) {
        loop {
            let work = match side {
                Side::Client => self.client.poll_work(),
                Side::Server => self.server.poll_work(),
            };
            let Some(work) = work else { break };
            let port = &mut self.ports[side.index()];
            let transit = match work {
                WorkRequest::PostRecv { wr_id, capacity } => {
                    if self.connected {
                        port.posted_receives.push_back((wr_id, capacity));
                    }
                    continue;
                }
                WorkRequest::Disconnect => {
                    self.disconnect(side);
                    continue;
                }
                WorkRequest::PostSend { wr_id, payload } => Transit::Send {
                    wr_id,
                    payload,
                    rnr_retries_left: self.config.rnr_retry_count,
                },
                WorkRequest::RdmaRead {
                    wr_id,
                    handle,
                    offset,
                    length,
                } => Transit::Read {
                    wr_id,
                    handle,
                    offset,
                    length,
                },
                WorkRequest::RdmaWrite {
                    wr_id,
                    handle,
                    offset,
                    data,
                } => Transit::Write {
                    wr_id,
                    handle,
                    offset,
                    data,
                },
            };
            if self.connected {
                port.outbound.push_back(transit);
            } else {
                // Posting on a dead QP flushes immediately.
                port.send_queue_completions.push_back(Event::WorkFailed {
                    wr_id: transit.wr_id(),
                    error: CompletionError::Flushed,
                });
            }
        }
    }

    pub(super) fn transmit(&mut self, side: Side) {
        let peer = side.peer();
        let Some(transit) = self.ports[side.index()].outbound.pop_front() else {
            return;
        };
        match transit {
            Transit::Send {
                wr_id,
                payload,
                rnr_retries_left,
            } => {
                let Some((recv_wr, capacity)) =
                    self.ports[peer.index()].posted_receives.pop_front()
                else {
                    self.stats.rnr_naks += 1;
                    if rnr_retries_left == 0 {
                        self.note(format!(
                            "wire  {}->{} Send RNR retry exceeded",
                            side.name(),
                            peer.name()
                        ));
                        self.ports[side.index()].send_queue_completions.push_back(
                            Event::WorkFailed {
                                wr_id,
                                error: CompletionError::RnrRetryExceeded,
                            },
                        );
                        self.break_connection();
                    } else {
                        self.note(format!(
                            "wire  {}->{} Send RNR NAK (retries left {})",
                            side.name(),
                            peer.name(),
                            rnr_retries_left
                        ));
                        let port = &mut self.ports[side.index()];
                        port.outbound.push_front(Transit::Send {
                            wr_id,
                            payload,
                            rnr_retries_left: rnr_retries_left - 1,
                        });
                        port.rnr_backoff = true;
                    }
                    return;
                };
                if payload.len() > capacity {
                    self.note(format!(
                        "wire  {}->{} Send {}B > Receive {}B: local length error",
                        side.name(),
                        peer.name(),
                        payload.len(),
                        capacity
                    ));
                    self.ports[peer.index()]
                        .recv_queue_completions
                        .push_back(Event::WorkFailed {
                            wr_id: recv_wr,
                            error: CompletionError::LocalLength,
                        });
                    self.break_connection();
                    return;
                }
                self.stats.sends_delivered += 1;
                self.ports[peer.index()]
                    .recv_queue_completions
                    .push_back(Event::RecvCompleted {
                        wr_id: recv_wr,
                        payload,
                    });
                self.ports[side.index()]
                    .send_queue_completions
                    .push_back(Event::SendCompleted { wr_id });
            }
            Transit::Read {
                wr_id,
                handle,
                offset,
                length,
            } => {
                let result = match peer {
                    Side::Client => self.client.memory().remote_read(handle, offset, length),
                    Side::Server => self.server.memory().remote_read(handle, offset, length),
                };
                match result {
                    Ok(data) => self.ports[side.index()]
                        .send_queue_completions
                        .push_back(Event::ReadCompleted { wr_id, data }),
                    Err(e) => self.remote_access_error(side, wr_id, format!("{e:?}")),
                }
            }
            Transit::Write {
                wr_id,
                handle,
                offset,
                data,
            } => {
                let result = match peer {
                    Side::Client => self.client.memory().remote_write(handle, offset, &data),
                    Side::Server => self.server.memory().remote_write(handle, offset, &data),
                };
                match result {
                    Ok(()) => self.ports[side.index()]
                        .send_queue_completions
                        .push_back(Event::WriteCompleted { wr_id }),
                    Err(e) => self.remote_access_error(side, wr_id, format!("{e:?}")),
                }
            }
        }
    }

    pub(super) fn remote_access_error(&mut self, side: Side, wr_id: WrId, why: String) {
        self.note(format!(
            "wire  {} RDMA remote access error: {why}",
            side.name()
        ));
        self.ports[side.index()]
            .send_queue_completions
            .push_back(Event::WorkFailed {
                wr_id,
                error: CompletionError::RemoteAccess,
            });
        self.break_connection();
    }

    /// The QP goes to error: everything posted is flushed, both sides learn of the disconnect.
    /// Completions already generated stay in the queues for software to poll.
    pub(super) fn break_connection(&mut self) {
        if !self.connected {
            return;
        }
        self.connected = false;
        self.stats.connection_errors += 1;
        self.note("conn  lost".to_string());
        for side in [Side::Client, Side::Server] {
            let port = &mut self.ports[side.index()];
            port.rnr_backoff = false;
            let flushed: Vec<WrId> = port.outbound.drain(..).map(|t| t.wr_id()).collect();
            for wr_id in flushed {
                port.send_queue_completions.push_back(Event::WorkFailed {
                    wr_id,
                    error: CompletionError::Flushed,
                });
            }
            port.posted_receives.clear();
        }
        self.deliver(Side::Server, Event::ConnectionLost);
        self.deliver(Side::Client, Event::ConnectionLost);
    }
}
