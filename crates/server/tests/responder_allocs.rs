//! Per-call heap allocations on the responder side stay at or below what they were brought down
//! to (issue 13: typed trace events, one decode of each header, no re-encode). The counts are
//! deterministic (same calls, same allocations), so any growth is a change to look at, not noise.
//! The rig and what it counts: `examples/common/responder_rig.rs`; `just responder-allocs`
//! prints the figures.

#[path = "../examples/common/responder_rig.rs"]
mod responder_rig;

use engine::ConnectionConfig;
use responder_rig::Kind;
use server::drc::policy_by_name;

/// Allocations per call measured after the change (release and test builds alike), per kind.
/// Before it: NULL 40, GETATTR 51, LOOKUP 55, WRITE 86, READ 81, READDIR 103.
fn ceiling(kind: Kind) -> u64 {
    match kind {
        Kind::Null => 4,
        Kind::Getattr => 5,
        Kind::Lookup => 7,
        Kind::WriteReadChunk => 24,
        Kind::ReadWriteChunk => 11,
        Kind::ReaddirReplyChunk => 38,
    }
}

#[test]
fn responder_allocations_per_call_stay_at_or_below_their_ceiling() {
    let drc = policy_by_name("acked", ConnectionConfig::default().credits).unwrap();
    let calls = 100;
    let (_, costs) = responder_rig::measure(drc, calls);
    let over: Vec<String> = costs
        .iter()
        .filter(|c| c.allocations > ceiling(c.kind) * c.calls)
        .map(|c| {
            format!(
                "{}: {:.2} allocations ({:.0} bytes) per call, ceiling {}",
                c.kind.name(),
                c.allocations as f64 / c.calls as f64,
                c.bytes as f64 / c.calls as f64,
                ceiling(c.kind)
            )
        })
        .collect();
    assert!(over.is_empty(), "{over:#?}");
}
