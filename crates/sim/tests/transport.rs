//! Transport-level behaviour of the simulator: RNR, access checks, completion ordering, determinism.

use std::collections::VecDeque;

use engine::endpoint::{
    Access, CompletionError, Endpoint, Event, MemoryTable, RemoteMemory, UpperLayer, WorkRequest,
};
use sim::{Action, Side, Sim, SimConfig};

/// A scripted endpoint: posts what the test queues, records every event it sees.
#[derive(Default)]
struct Scripted {
    work: VecDeque<WorkRequest>,
    seen: Vec<Event>,
    memory: MemoryTable,
}

impl Endpoint for Scripted {
    fn handle_event(&mut self, event: Event) {
        self.seen.push(event);
    }
    fn poll_work(&mut self) -> Option<WorkRequest> {
        self.work.pop_front()
    }
}

impl RemoteMemory for Scripted {
    fn memory(&mut self) -> &mut MemoryTable {
        &mut self.memory
    }
}

/// These tests are about the transport: the scripted server has no upper layer.
impl UpperLayer for Scripted {
    fn run_upper_layer(&mut self) -> bool {
        false
    }
    fn has_upper_layer_work(&self) -> bool {
        false
    }
}

fn pair(seed: u64, rnr_retry_count: u32) -> Sim<Scripted, Scripted> {
    let mut sim = Sim::new(
        Scripted::default(),
        Scripted::default(),
        SimConfig {
            rnr_retry_count,
            seed,
        },
    );
    sim.connect();
    sim
}

fn send(wr_id: u64, len: usize) -> WorkRequest {
    WorkRequest::PostSend {
        wr_id,
        payload: vec![7; len],
    }
}

#[test]
fn send_lands_in_posted_receive_and_completes_both_sides() {
    let mut sim = pair(1, 0);
    sim.client.work.push_back(WorkRequest::PostRecv {
        wr_id: 1,
        capacity: 64,
    });
    sim.flush_work(Side::Client);
    sim.server.work.push_back(send(9, 10));
    sim.flush_work(Side::Server);
    assert!(sim.run_to_quiescence(100));
    assert!(sim.client.seen.contains(&Event::RecvCompleted {
        wr_id: 1,
        payload: vec![7; 10]
    }));
    assert!(sim.server.seen.contains(&Event::SendCompleted { wr_id: 9 }));
    assert!(sim.is_connected());
}

#[test]
fn receiver_not_ready_is_retried_until_a_receive_is_posted() {
    let mut sim = pair(3, 6);
    sim.server.work.push_back(send(9, 10));
    sim.flush_work(Side::Server);
    sim.hold(Action::PollSendQueue(Side::Server));
    assert_eq!(sim.step(), Some(Action::Transmit(Side::Server)));
    assert_eq!(sim.stats().rnr_naks, 1);
    // The client posts its Receive late (the passive-first race); the retry delivers.
    sim.client.work.push_back(WorkRequest::PostRecv {
        wr_id: 1,
        capacity: 64,
    });
    sim.flush_work(Side::Client);
    sim.release_all();
    assert!(sim.run_to_quiescence(100));
    assert!(sim.is_connected());
    assert!(sim.server.seen.contains(&Event::SendCompleted { wr_id: 9 }));
}

#[test]
fn rnr_retry_exhaustion_breaks_the_connection() {
    let mut sim = pair(3, 2);
    sim.server.work.push_back(send(9, 10));
    sim.flush_work(Side::Server);
    assert!(sim.run_to_quiescence(100));
    assert_eq!(sim.stats().rnr_naks, 3);
    assert!(!sim.is_connected());
    assert!(sim.server.seen.contains(&Event::WorkFailed {
        wr_id: 9,
        error: CompletionError::RnrRetryExceeded
    }));
    assert!(sim.client.seen.contains(&Event::ConnectionLost));
}

#[test]
fn oversized_send_is_a_local_length_error() {
    let mut sim = pair(1, 0);
    sim.client.work.push_back(WorkRequest::PostRecv {
        wr_id: 1,
        capacity: 8,
    });
    sim.flush_work(Side::Client);
    sim.server.work.push_back(send(9, 9));
    sim.flush_work(Side::Server);
    assert!(sim.run_to_quiescence(100));
    assert!(!sim.is_connected());
    assert!(sim.client.seen.contains(&Event::WorkFailed {
        wr_id: 1,
        error: CompletionError::LocalLength
    }));
}

#[test]
fn rdma_read_and_write_are_checked_against_registrations() {
    let mut sim = pair(1, 0);
    let readable = sim
        .client
        .memory
        .register(vec![1, 2, 3, 4], Access::RemoteRead);
    let writable = sim.client.memory.register(vec![0; 4], Access::RemoteWrite);
    sim.server.work.push_back(WorkRequest::RdmaRead {
        wr_id: 5,
        handle: readable,
        offset: 1,
        length: 3,
    });
    sim.server.work.push_back(WorkRequest::RdmaWrite {
        wr_id: 6,
        handle: writable,
        offset: 0,
        data: vec![9, 9],
    });
    sim.flush_work(Side::Server);
    assert!(sim.run_to_quiescence(100));
    assert!(sim.server.seen.contains(&Event::ReadCompleted {
        wr_id: 5,
        data: vec![2, 3, 4]
    }));
    assert_eq!(
        sim.client.memory.invalidate(writable).unwrap(),
        vec![9, 9, 0, 0]
    );
    // A write through the now-invalid handle breaks the connection, as verbs do.
    sim.server.work.push_back(WorkRequest::RdmaWrite {
        wr_id: 7,
        handle: writable,
        offset: 0,
        data: vec![1],
    });
    sim.flush_work(Side::Server);
    assert!(sim.run_to_quiescence(100));
    assert!(!sim.is_connected());
    assert!(sim.server.seen.contains(&Event::WorkFailed {
        wr_id: 7,
        error: CompletionError::RemoteAccess
    }));
}

#[test]
fn completions_wait_until_software_polls_them() {
    let mut sim = pair(1, 0);
    sim.client.work.push_back(WorkRequest::PostRecv {
        wr_id: 1,
        capacity: 64,
    });
    sim.flush_work(Side::Client);
    sim.server.work.push_back(send(9, 4));
    sim.flush_work(Side::Server);
    sim.hold(Action::PollRecvQueue(Side::Client));
    assert!(sim.run_to_quiescence(100));
    // The reply is in the client's buffer and acknowledged, but the client has not seen it.
    assert!(sim.server.seen.contains(&Event::SendCompleted { wr_id: 9 }));
    assert_eq!(sim.pending_receive_completions(Side::Client), 1);
    assert!(!sim
        .client
        .seen
        .iter()
        .any(|e| matches!(e, Event::RecvCompleted { .. })));
    assert!(sim.force(Action::PollRecvQueue(Side::Client)));
    assert!(sim
        .client
        .seen
        .iter()
        .any(|e| matches!(e, Event::RecvCompleted { .. })));
}

#[test]
fn same_seed_same_schedule() {
    let run = |seed| {
        let mut sim = pair(seed, 0);
        for i in 0..4 {
            sim.client.work.push_back(WorkRequest::PostRecv {
                wr_id: i,
                capacity: 64,
            });
            sim.server.work.push_back(WorkRequest::PostRecv {
                wr_id: 100 + i,
                capacity: 64,
            });
        }
        sim.flush_work(Side::Client);
        sim.flush_work(Side::Server);
        for i in 0..4 {
            sim.client.work.push_back(send(10 + i, 4));
            sim.server.work.push_back(send(20 + i, 4));
        }
        sim.flush_work(Side::Client);
        sim.flush_work(Side::Server);
        let mut actions = Vec::new();
        while let Some(a) = sim.step() {
            actions.push(a);
        }
        actions
    };
    assert_eq!(run(42), run(42));
    assert_ne!(run(42), run(43));
}
