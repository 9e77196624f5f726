//! Fuzz target (operation sequence): client actions, raw malformed headers and transport faults over
//! requester + simulated RDMA + reference server, under each DRC policy. The invariants (credits,
//! bounded memory, executions per transmission, Send completions matched) are asserted inside
//! `run_operations` after every operation.
#![no_main]
use arbitrary::{Arbitrary, Unstructured};
use client::fuzzing::{run_operations, Operation};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(policy) = u8::arbitrary(&mut u) else {
        return;
    };
    let Ok(operations) = Vec::<Operation>::arbitrary(&mut u) else {
        return;
    };
    let report = run_operations(policy, &operations);
    assert!(report.operations <= operations.len());
});
