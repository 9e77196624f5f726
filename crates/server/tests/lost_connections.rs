//! A server that sees many short connections (what `rig fuzz-wire` does to it: a case often ends
//! its connection) holds a bounded DRC however many come and go: under `acked-mark` a lost
//! connection's acknowledged entries and receive state are released at once, instead of waiting
//! for Receives that cannot come until the size cap pushes them out.

use engine::{ConnectionConfig, OutgoingCall, Requester};
use server::drc::{policy_by_name, ACKED_MAX_ENTRIES};
use server::Server;
use sim::{Side, Sim, SimConfig};
use wire::nfs3::{DirOpArgs3, Filename, Nfs3Call, RemoveArgs};

/// `connections` connections, each carrying one REMOVE (answered and acknowledged) before the
/// client drops it; returns the most DRC entries held after any of them, and the last stats.
fn run(policy: &str, connections: u32) -> (usize, server::drc::DrcStats) {
    let config = ConnectionConfig::default();
    let drc = policy_by_name(policy, config.credits).unwrap();
    let server = Server::new(config, drc, 0x0a63_0002);
    let root = server.fs().root_handle();
    let mut sim = Sim::new(Requester::new(config), server, SimConfig::default());
    let mut most = 0;
    for i in 0..connections {
        sim.connect();
        let xid = 0x1000 + i;
        let args = Nfs3Call::Remove(RemoveArgs {
            object: DirOpArgs3 {
                dir: root.clone(),
                name: Filename(format!("f{}", i % 64).into_bytes()),
            },
        });
        let message = wire::nfs_client::nfs3_call(xid, &args);
        sim.client
            .call(OutgoingCall::inline(xid, message), true)
            .unwrap();
        sim.flush_work(Side::Client);
        assert!(sim.run_to_quiescence(10_000), "call {i} settled");
        while sim.client.poll_output().is_some() {}
        sim.disconnect(Side::Client);
        assert!(sim.run_to_quiescence(10_000), "connection {i} torn down");
        while sim.client.poll_output().is_some() {}
        let _ = sim.take_trace();
        let _ = sim.client.take_trace();
        let _ = sim.server.take_trace();
        most = most.max(sim.server.held().drc_entries);
    }
    (most, sim.server.drc().stats())
}

#[test]
fn acked_mark_releases_each_lost_connections_entries() {
    // More connections than the cap holds entries: without the release the cache would be
    // full (4096) by the end.
    let connections = ACKED_MAX_ENTRIES as u32 + 500;
    let (most, stats) = run("acked-mark", connections);
    assert!(
        most <= 1,
        "at most the current connection's entry, held {most}"
    );
    assert_eq!(stats.evicted_lost, u64::from(connections));
    assert_eq!(stats.evicted_lru, 0);
}

#[test]
fn acked_holds_no_entry_of_a_lost_connection_either() {
    // The series evicts on the ack itself, before the connection goes.
    let (most, stats) = run("acked", 2_000);
    assert_eq!(most, 0);
    assert_eq!((stats.evicted_lost, stats.evicted_lru), (0, 0));
}
