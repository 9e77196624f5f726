//! Fuzz target (operation sequence): client actions, raw malformed headers and transport faults over
//! requester + simulated RDMA + reference server, under each DRC policy. The invariants (credits,
//! bounded memory, executions per transmission of each fuzzer-sent call, Send completions
//! matched) are asserted inside `run_operations` after every operation; here, over the whole run:
//! every operation ran, and the server executed no more calls than it was sent (each accepted
//! transmission and each raw Send carries at most one call, and the harness's MNT is one more),
//! which the per-call check cannot see for XIDs the fuzzer never named.
#![no_main]
use arbitrary::{Arbitrary, Unstructured};
use client::fuzzing::{run_operations, Operation, MAX_OPERATIONS};
use libfuzzer_sys::fuzz_target;

/// Calls the harness itself sends before the operations: the MOUNT MNT that finds the root.
const HARNESS_CALLS: usize = 1;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(policy) = u8::arbitrary(&mut u) else {
        return;
    };
    let Ok(operations) = Vec::<Operation>::arbitrary(&mut u) else {
        return;
    };
    let report = run_operations(policy, &operations);
    assert_eq!(report.operations, operations.len().min(MAX_OPERATIONS));
    assert!(
        report.executions <= report.transmissions + report.raw_sends + HARNESS_CALLS,
        "{report:?}"
    );
});
