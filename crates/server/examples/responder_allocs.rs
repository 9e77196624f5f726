//! Heap allocations per received call on the responder side: the engine's `Responder` and the
//! reference server (what `rig serve` runs), driven by our requester over the simulator with the
//! calls a mount sees most (NULL, GETATTR, LOOKUP, a WRITE whose data moves in a Read chunk, a READ
//! whose data lands in a Write chunk, a READDIR answered through a Reply chunk). What is counted
//! and how: `common/responder_rig.rs`.
//!
//! `cargo run --release -p rpcrdma-server --example responder_allocs -- [CALLS] [POLICY]`
//! (`just bench` runs it).

#[path = "common/responder_rig.rs"]
mod responder_rig;

use engine::ConnectionConfig;
use server::drc::policy_by_name;

fn main() {
    let mut args = std::env::args().skip(1);
    let calls: u64 = args
        .next()
        .map(|a| a.parse().expect("CALLS: a number of calls per procedure"))
        .unwrap_or(2000);
    let policy = args.next().unwrap_or_else(|| "acked".to_owned());
    let Some(drc) = policy_by_name(&policy, ConnectionConfig::default().credits) else {
        eprintln!("responder_allocs: unknown policy {policy} (classic, acked, acked-mark)");
        std::process::exit(2);
    };
    let (warm_up, costs) = responder_rig::measure(drc, calls);
    println!(
        "responder allocations per call (engine responder + reference server, policy {policy}, \
         {calls} calls each after {warm_up} warm-up calls)"
    );
    println!(
        "  {:<22} {:>12} {:>12}",
        "call", "allocs/call", "bytes/call"
    );
    let (mut all_allocations, mut all_bytes) = (0, 0);
    for cost in &costs {
        all_allocations += cost.allocations;
        all_bytes += cost.bytes;
        println!(
            "  {:<22} {:>12.2} {:>12.1}",
            cost.kind.name(),
            cost.allocations as f64 / cost.calls as f64,
            cost.bytes as f64 / cost.calls as f64
        );
    }
    let total = calls * costs.len() as u64;
    println!(
        "  {:<22} {:>12.2} {:>12.1}",
        "all",
        all_allocations as f64 / total as f64,
        all_bytes as f64 / total as f64
    );
}
