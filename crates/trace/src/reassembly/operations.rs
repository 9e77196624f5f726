//! RDMA operations delivered from packets in order: Sends and Writes assembled, Read requests
//! matched with their responses, acknowledgements retiring what the peer confirmed.

use super::*;

impl Reassembler {
    /// Execute a request packet in sequence: advance the expected PSN, reassemble. `payload_at`
    /// is where its payload is in the capture, if known (a held packet's was copied).
    /// Execute request packet `p`, in sequence on flow `key` (IBTA Vol 1 §9.7.5.1): a SEND or
    /// RDMA WRITE packet joins its message, a READ request waits for its responses. `resume`:
    /// where the sequence goes on after a late fill.
    pub(super) fn execute(
        &mut self,
        at: At,
        key: FlowKey,
        p: &IbPacket,
        resume: Option<u32>,
        payload_at: Option<usize>,
    ) {
        let mtu = self.path_mtu.get(&pair(key.src, key.dst)).copied();
        let mut out = Executed::default();
        let Some(state) = self.flows.get_mut(&key) else {
            return;
        };
        state.expected_psn = Some(ib::psn_add(p.psn, 1));
        let limits = &self.limits;
        use Opcode::*;
        let in_a_message = match p.opcode {
            SendFirst | SendMiddle | SendLast | SendLastImm | SendLastInvalidate | SendOnly
            | SendOnlyImm | SendOnlyInvalidate => send_packet(state, at, key, p, limits, &mut out),
            WriteFirst | WriteMiddle | WriteLast | WriteLastImm | WriteOnly | WriteOnlyImm => {
                write_packet(state, at, key, p, limits, payload_at, &mut out)
            }
            ReadRequest => {
                let reservations = &mut self.read_reservations;
                read_request(state, reservations, at, p, mtu, limits, &mut out);
                true
            }
            // Atomics carry no data we reassemble; responses are not requests.
            _ => true,
        };
        if let (true, Some(expected)) = (in_a_message, resume) {
            // A late fill does not move the sequence: new requests continue after the newest.
            state.expected_psn = Some(expected);
        }
        self.flush(at, key, out.events, out.deliveries);
    }

    pub(super) fn flush(
        &mut self,
        at: At,
        key: FlowKey,
        events: Vec<TransportEvent>,
        deliveries: Vec<Delivery>,
    ) {
        for e in events {
            self.event(at, Some(key), e);
        }
        self.out.extend(deliveries);
    }

    /// A positive ACK of PSN `psn` from the responder on `key` (responder → requester): if it
    /// covers a PSN that a flow towards that responder is waiting for, the responder has it and
    /// the capture lost it, so nothing will fill that gap: release the flow's held packets.
    pub(super) fn acknowledged(&mut self, key: FlowKey, psn: u32) {
        if self.held_packets == 0 {
            return;
        }
        let waiting: Vec<FlowKey> = self
            .flows_between(key.dst, key.src)
            .filter(|flow| {
                let Some(state) = self.flows.get(flow) else {
                    return false;
                };
                let Some(expected) = state.expected_psn else {
                    return false;
                };
                let newest = state
                    .held
                    .iter()
                    .map(|h| ib::psn_distance(h.psn, expected))
                    .max();
                newest.is_some_and(|newest| {
                    let acked = ib::psn_distance(psn, expected);
                    acked >= 0 && acked <= newest
                })
            })
            .collect();
        for flow in waiting {
            self.release_all(flow);
        }
    }

    pub(super) fn response(
        &mut self,
        at: At,
        key: FlowKey,
        p: &IbPacket,
        payload_at: Option<usize>,
    ) {
        if let Some(aeth) = p.aeth {
            if matches!(aeth.syndrome, AckSyndrome::Ack { .. }) {
                self.acknowledged(key, p.psn);
            } else {
                self.event(
                    at,
                    Some(key),
                    TransportEvent::Nak {
                        psn: p.psn,
                        syndrome: aeth.syndrome,
                    },
                );
                return;
            }
        }
        use Opcode::*;
        if !matches!(
            p.opcode,
            ReadResponseFirst | ReadResponseMiddle | ReadResponseLast | ReadResponseOnly
        ) {
            return;
        }
        // The request went the other way, to a QP we may not know: search the flows from the
        // responder's peer to the responder for the READ whose PSN range holds this PSN.
        let max_rdma = self.limits.max_rdma_bytes;
        let budget = self.limits.max_reserved_read_bytes;
        let mut found: Option<(FlowKey, usize)> = None;
        for flow in self.flows_between(key.dst, key.src) {
            let Some(state) = self.flows.get(&flow) else {
                continue;
            };
            for (i, r) in state.reads.iter().enumerate() {
                let span = ib::psn_distance(p.psn, r.psn);
                let within = match r.end_psn {
                    Some(end) => span >= 0 && ib::psn_distance(end, p.psn) > 0,
                    None => span >= 0 && span <= ib::psn_distance(r.next_psn, r.psn).max(0) + 1,
                };
                if within {
                    found = Some((flow, i));
                    break;
                }
            }
            if found.is_some() {
                break;
            }
        }
        let Some((req_flow, index)) = found else {
            self.event(
                at,
                Some(key),
                TransportEvent::UnmatchedResponse {
                    psn: p.psn,
                    opcode: p.opcode.name(),
                },
            );
            return;
        };
        let mut events = Vec::new();
        let mut delivery = None;
        if let Some(state) = self.flows.get_mut(&req_flow) {
            if let Some(read) = state.reads.get_mut(index) {
                let d = ib::psn_distance(p.psn, read.next_psn);
                if d < 0 {
                    events.push(TransportEvent::Duplicate {
                        psn: p.psn,
                        opcode: p.opcode.name(),
                    });
                } else if d > 0 {
                    // A response lost before it: the requester reads again from the missing
                    // PSN, and the responses from there on are the ones it keeps.
                    events.push(TransportEvent::OutOfSequence {
                        expected: read.next_psn,
                        psn: p.psn,
                        opcode: p.opcode.name(),
                    });
                } else {
                    let cap = (read.reth.dma_length as usize).min(max_rdma);
                    if read.first_response_frame.is_none() {
                        read.first_response_frame = Some(at.frame);
                        // Data copied out reserves the declared length once, within the
                        // budget; past it the data grows as it arrives. Charged here, given back
                        // when the READ completes or is dropped. Data left in the capture
                        // reserves nothing.
                        if payload_at.is_none() && self.read_reservations.try_take(cap, budget) {
                            read.data.reserve_copied(cap);
                            read.reserved = cap;
                        }
                    }
                    let room = cap.saturating_sub(read.data.len());
                    if p.payload.len() > room {
                        read.truncated = true;
                    }
                    read.data
                        .push(&p.payload[..p.payload.len().min(room)], payload_at);
                    read.next_psn = ib::psn_add(p.psn, 1);
                    if matches!(p.opcode, ReadResponseLast | ReadResponseOnly) {
                        if let Some(mut done) = state.reads.remove(index) {
                            self.read_reservations.give_back(&done);
                            if done.data.len() < done.reserved {
                                // Shorter than declared: give the rest of the reservation back.
                                done.data.shrink_to_fit();
                            }
                            if done.truncated {
                                events.push(TransportEvent::Overlong {
                                    what: "rdma_read",
                                    declared: u64::from(done.reth.dma_length),
                                });
                            }
                            delivery = Some(Delivery::Read {
                                at: At {
                                    frame: at.frame,
                                    first_frame: done.frame,
                                    time: at.time,
                                },
                                flow: req_flow,
                                reth: done.reth,
                                data: done.data,
                            });
                        }
                    }
                }
            }
        }
        for e in events {
            self.event(at, Some(req_flow), e);
        }
        self.out.extend(delivery);
    }
}
