//! RPC-level refusals from the reference server over the simulated transport (RFC 5531 §9).

use client::harness::Harness;
use engine::OutgoingCall;
use wire::rpc::{CallHeader, NFS_PROGRAM};
use wire::Xdr;

fn raw_call(xid: u32, prog: u32, vers: u32, proc_: u32, args: &[u8]) -> OutgoingCall {
    let mut message = CallHeader::new(xid, prog, vers, proc_).to_bytes();
    message.extend_from_slice(args);
    OutgoingCall::inline(xid, message)
}

#[test]
fn unknown_program_version_procedure_and_garbage_arguments_are_refused() {
    let mut h = Harness::new("classic", 1).expect("policy exists");
    h.mount();
    let cases = [
        (0x9001, 400_000, 1, 0, vec![], "PROG_UNAVAIL"),
        (0x9002, NFS_PROGRAM, 4, 0, vec![], "PROG_MISMATCH"),
        (0x9003, NFS_PROGRAM, 3, 99, vec![], "PROC_UNAVAIL"),
        // GETATTR with a file handle longer than NFS3_FHSIZE.
        (0x9004, NFS_PROGRAM, 3, 1, vec![0, 0, 1, 0], "GARBAGE_ARGS"),
    ];
    for (xid, prog, vers, proc_, args, _) in &cases {
        h.send(raw_call(*xid, *prog, *vers, *proc_, args), true);
        h.settle();
    }
    for (xid, .., expected) in &cases {
        let statuses: Vec<&str> = h.replies(*xid).iter().map(|r| r.status.as_str()).collect();
        assert_eq!(statuses, vec![*expected], "xid {xid:#x}");
        assert!(
            h.decisions(*xid).is_empty(),
            "refused calls never reach the DRC"
        );
    }
    assert!(h.credits_balanced());
}

#[test]
fn bytes_that_are_not_an_rpc_call_are_dropped_without_reply() {
    let mut h = Harness::new("acked-mark", 1).expect("policy exists");
    h.mount();
    let call = OutgoingCall::inline(0x9100, vec![0, 0, 0x91, 0, 0, 0, 0, 1]);
    h.send(call, true);
    h.settle();
    assert!(h.replies(0x9100).is_empty());
    assert!(h.connected());
}
