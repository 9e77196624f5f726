//! A long run of the reference server, as `rig serve` lives under the wire fuzzer: CALLS calls
//! (REMOVEs, every eighth one retransmitted with its XID so the DRC replays it) through the
//! deterministic simulator with the default record limits, printing the process's peak RSS at
//! 10k, 100k and 1M calls. Flat means the records, the DRC and the queues stopped growing.
//!
//! `cargo run --release -p rpcrdma-server --example soak -- [CALLS] [POLICY]` (`just soak`).

use engine::{ConnectionConfig, OutgoingCall, Requester};
use nix::sys::resource::{getrusage, UsageWho};
use server::drc::policy_by_name;
use server::Server;
use sim::{Side, Sim, SimConfig};
use wire::nfs3::{DirOpArgs3, Filename, Nfs3Call, RemoveArgs};

/// Peak resident set of this process so far, KiB (Linux reports `ru_maxrss` in KiB).
fn peak_rss_kib() -> i64 {
    getrusage(UsageWho::RUSAGE_SELF).map_or(0, |u| u.max_rss())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let calls: u32 = args
        .next()
        .map(|a| a.parse().expect("CALLS: a number of calls"))
        .unwrap_or(1_000_000);
    let policy = args.next().unwrap_or_else(|| "acked".to_owned());
    let config = ConnectionConfig::default();
    let Some(drc) = policy_by_name(&policy, config.credits) else {
        eprintln!("soak: unknown policy {policy} (classic, acked, acked-mark)");
        std::process::exit(2);
    };
    let server = Server::new(config, drc, 0x0a63_0002);
    let root = server.fs().root_handle();
    let mut sim = Sim::new(Requester::new(config), server, SimConfig::default());
    sim.connect();
    let checkpoints = [10_000u32, 100_000, 1_000_000, 10_000_000];
    println!("policy {policy}: {calls} calls");
    for i in 0..calls {
        // Every eighth call reuses the previous call's XID: a retransmission on a live connection.
        let xid = if i % 8 == 7 {
            0x1000 + i - 1
        } else {
            0x1000 + i
        };
        let args = Nfs3Call::Remove(RemoveArgs {
            object: DirOpArgs3 {
                dir: root.clone(),
                name: Filename(format!("f{}", i % 64).into_bytes()),
            },
        });
        let message = wire::nfs_client::nfs3_call(xid, &args);
        if sim
            .client
            .call(OutgoingCall::inline(xid, message), true)
            .is_err()
        {
            eprintln!("soak: call {i} refused by the requester");
            std::process::exit(1);
        }
        sim.flush_work(Side::Client);
        if !sim.run_to_quiescence(10_000) {
            eprintln!("soak: call {i} did not settle");
            std::process::exit(1);
        }
        // What rig serve's driver does: drain outputs and traces as it goes.
        while sim.client.poll_output().is_some() {}
        let _ = sim.take_trace();
        let _ = sim.client.take_trace();
        let _ = sim.server.take_trace();
        let done = i + 1;
        if checkpoints.contains(&done) || done == calls {
            let held = sim.server.held();
            println!(
                "calls {done:>8}: peak RSS {:>6} KiB, server holds {} entries (records {}, DRC {})",
                peak_rss_kib(),
                held.total(),
                held.records.total(),
                held.drc_entries
            );
        }
    }
}
