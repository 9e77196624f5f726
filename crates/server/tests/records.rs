//! A server that runs for days holds what it held after the first minutes: under 10k and 100k
//! simulated calls (REMOVEs the DRC caches, over the deterministic simulator) its records, DRC
//! entries and queues stay within 10 % of each other, for every policy; the per-XID counts of
//! the most recent XIDs stay exact.

use engine::{ConnectionConfig, OutgoingCall, Requester};
use server::drc::policy_by_name;
use server::{Held, Server};
use sim::{Side, Sim, SimConfig};
use wire::nfs3::{DirOpArgs3, Filename, Nfs3Call, RemoveArgs};

/// What a run leaves: what the server holds, and what it can still say about the XIDs.
#[derive(Debug)]
struct After {
    held: Held,
    executions_total: u64,
    last_xid_executions: usize,
    first_xid_executions: usize,
    forgotten: u64,
    decisions: u64,
}

/// Run `calls` REMOVE calls (each its own XID, one at a time) and say what the server holds.
fn held_after(policy: &str, calls: u32) -> After {
    let config = ConnectionConfig::default();
    let drc = policy_by_name(policy, config.credits).unwrap();
    let server = Server::new(config, drc, 0x0a63_0002);
    let root = server.fs().root_handle();
    let mut sim = Sim::new(Requester::new(config), server, SimConfig::default());
    sim.connect();
    for i in 0..calls {
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
        // What a driver does: drain the requester's outputs and everybody's trace.
        while sim.client.poll_output().is_some() {}
        let _ = sim.take_trace();
        let _ = sim.client.take_trace();
        if i % 1000 == 0 {
            // rig serve never takes the server's trace: only every 1000 calls here, so the
            // ring fills.
            let _ = sim.server.take_trace();
        }
    }
    let server: &Server = &sim.server;
    After {
        held: server.held(),
        executions_total: server.records().executions_total(),
        last_xid_executions: server.executions_of(0x1000 + calls - 1, "REMOVE"),
        first_xid_executions: server.executions_of(0x1000, "REMOVE"),
        forgotten: server.records().forgotten(),
        decisions: server.records().decision_totals().values().sum(),
    }
}

#[test]
fn records_stay_flat_from_10k_to_100k_calls_under_every_policy() {
    // The three policies side by side (each run is independent and deterministic).
    let runs: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = server::drc::POLICY_NAMES
            .iter()
            .map(|&policy| {
                scope.spawn(move || {
                    let small = held_after(policy, 10_000);
                    let large = held_after(policy, 100_000);
                    (policy, small, large)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (policy, small, large) in runs {
        let (s, l) = (small.held.total() as f64, large.held.total() as f64);
        assert!(
            (l - s).abs() <= 0.1 * s,
            "{policy}: {small:?} after 10k calls, {large:?} after 100k"
        );
        // Totals never forget; the most recent XIDs are counted exactly.
        assert_eq!(large.executions_total, 100_000, "{policy}");
        assert_eq!(large.decisions, 100_000, "{policy}");
        assert_eq!(large.last_xid_executions, 1, "{policy}");
        assert_eq!(large.first_xid_executions, 0, "{policy}: forgotten");
        assert!(large.forgotten > 0, "{policy}");
    }
}
