//! Connections: the CM exchange that opens and closes them, which connection a flow belongs to, and
//! who sent a CM message.

use super::*;

impl Builder<'_> {
    pub(super) fn cm(&mut self, src: IpAddr, dst: IpAddr, message: &CmMessage) {
        match message {
            CmMessage::Request {
                local_comm_id,
                service_id,
                local_qpn,
                private_data,
                ..
            } => {
                let port = service_port(*service_id);
                let magic = wire::private_data::PrivateData::decode(private_data).is_ok();
                self.cm_requests.insert(
                    (src, *local_comm_id),
                    (*local_qpn, port, magic || port == Some(NFS_RDMA_PORT)),
                );
            }
            CmMessage::Reply {
                local_comm_id,
                remote_comm_id,
                local_qpn,
                ..
            } => {
                // The REP goes from the server (src) to the client (dst).
                let Some((client_qp, port, rpcrdma)) =
                    self.cm_requests.remove(&(dst, *remote_comm_id))
                else {
                    return;
                };
                let id = self.conns.len();
                let client_flow = FlowKey {
                    src: dst,
                    dst: src,
                    dest_qp: *local_qpn,
                };
                let server_flow = FlowKey {
                    src,
                    dst,
                    dest_qp: client_qp,
                };
                self.conns.push(ConnState {
                    info: Connection {
                        id,
                        client: Some(dst),
                        server: Some(src),
                        client_qp: Some(client_qp),
                        server_qp: Some(*local_qpn),
                        port,
                        rpcrdma,
                        from_cm: true,
                    },
                    flows: [Some(client_flow), Some(server_flow)],
                    classified: rpcrdma,
                    ..Default::default()
                });
                self.comm_ids.insert((dst, *remote_comm_id), id);
                self.comm_ids.insert((src, *local_comm_id), id);
                // A new connection may reuse QP numbers: the newest REP wins.
                self.flow_conn.insert(client_flow, (id, Role::Client));
                self.flow_conn.insert(server_flow, (id, Role::Server));
            }
            _ => {}
        }
    }

    /// An iWARP connection's MPA Request opens a connection (both flows known from the TCP
    /// 4-tuple); its other connection events land on it. Returns the event's connection and
    /// sender.
    pub(super) fn transport_connection(
        &mut self,
        client: FlowKey,
        server: FlowKey,
        from: Role,
        name: &str,
        port: u16,
        rpcrdma: bool,
    ) -> (Option<usize>, Option<Role>) {
        if name != "MPA_REQ" {
            return match self.flow_conn.get(&client) {
                Some((id, _)) => (Some(*id), Some(from)),
                None => (None, Some(from)),
            };
        }
        let id = self.conns.len();
        self.conns.push(ConnState {
            info: Connection {
                id,
                client: Some(client.src),
                server: Some(client.dst),
                client_qp: Some(server.dest_qp),
                server_qp: Some(client.dest_qp),
                port: Some(port),
                rpcrdma,
                from_cm: true,
            },
            flows: [Some(client), Some(server)],
            classified: rpcrdma,
            ..Default::default()
        });
        self.flow_conn.insert(client, (id, Role::Client));
        self.flow_conn.insert(server, (id, Role::Server));
        (Some(id), Some(from))
    }

    /// The connection and role of a flow, creating a traffic-paired connection if needed.
    pub(super) fn connection_for(
        &mut self,
        flow: FlowKey,
        hint: Option<Role>,
    ) -> (usize, Option<Role>) {
        if let Some((id, role)) = self.flow_conn.get(&flow) {
            return (*id, Some(*role));
        }
        // No CM: pair with the newest CM-less connection between the same two addresses whose
        // other direction is known and whose slot for this role is free (indexed: a capture of
        // many CM-less flows must not compare each with every connection).
        let newest = |this: &Self, role: Role| {
            this.half_open
                .get(&(flow.dst, flow.src, role))
                .and_then(|ids| ids.last().copied())
        };
        let candidate = match hint {
            Some(role) => newest(self, role.peer()).map(|id| (id, role.peer())),
            None => match (newest(self, Role::Client), newest(self, Role::Server)) {
                (Some(c), Some(s)) if s > c => Some((s, Role::Server)),
                (Some(c), _) => Some((c, Role::Client)),
                (None, Some(s)) => Some((s, Role::Server)),
                (None, None) => None,
            },
        };
        let id = match candidate {
            Some((id, known)) => {
                // Both directions known now: no longer a candidate.
                if let Some(ids) = self.half_open.get_mut(&(flow.dst, flow.src, known)) {
                    ids.pop();
                    if ids.is_empty() {
                        self.half_open.remove(&(flow.dst, flow.src, known));
                    }
                }
                id
            }
            None => {
                let id = self.conns.len();
                self.conns.push(ConnState {
                    info: Connection {
                        id,
                        ..Default::default()
                    },
                    ..Default::default()
                });
                id
            }
        };
        let conn = &mut self.conns[id];
        let role = match hint {
            Some(role) => role,
            None => {
                // The other direction's role decides; else the flow is the client's (it spoke first).
                match conn.flows {
                    [Some(_), None] => Role::Server,
                    _ => Role::Client,
                }
            }
        };
        conn.flows[slot(role)] = Some(flow);
        if candidate.is_none() {
            self.half_open
                .entry((flow.src, flow.dst, role))
                .or_default()
                .push(id);
        }
        match role {
            Role::Client => {
                conn.info.client = Some(flow.src);
                conn.info.server = Some(flow.dst);
                conn.info.server_qp = Some(flow.dest_qp);
            }
            Role::Server => {
                conn.info.server = Some(flow.src);
                conn.info.client = Some(flow.dst);
                conn.info.client_qp = Some(flow.dest_qp);
            }
        }
        self.flow_conn.insert(flow, (id, role));
        (id, Some(role))
    }

    pub(super) fn cm_role(
        &self,
        src: IpAddr,
        message: &CmMessage,
    ) -> (Option<usize>, Option<Role>) {
        let local = match message {
            CmMessage::Request { local_comm_id, .. }
            | CmMessage::Reply { local_comm_id, .. }
            | CmMessage::ReadyToUse { local_comm_id, .. }
            | CmMessage::Reject { local_comm_id, .. }
            | CmMessage::DisconnectRequest { local_comm_id, .. }
            | CmMessage::DisconnectReply { local_comm_id, .. } => Some(*local_comm_id),
            CmMessage::Other { .. } => None,
        };
        let Some(conn) = local.and_then(|id| self.comm_ids.get(&(src, id)).copied()) else {
            return (None, None);
        };
        let info = &self.conns[conn].info;
        let role = if info.client == Some(src) {
            Some(Role::Client)
        } else if info.server == Some(src) {
            Some(Role::Server)
        } else {
            None
        };
        (Some(conn), role)
    }
}
