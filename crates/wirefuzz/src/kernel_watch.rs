//! Kernel watch (issue #7 part 4, the seam for the guest runs): the console lines that stop a
//! run against in-kernel nfsd. The guest driver streams dmesg through [`scan_line`]; on the
//! first hit the run saves the console, the case log, and a reproducer shrunk with
//! [`crate::minimise::minimise`] under `target/interop/findings/` (see docs/wire-fuzz.md).

/// Why a console line stops the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelFinding {
    Warn,
    Bug,
    Oops,
    Kasan,
    Ubsan,
    Refcount,
    HungTask,
    RxeError,
}

impl KernelFinding {
    pub fn name(self) -> &'static str {
        match self {
            KernelFinding::Warn => "warn",
            KernelFinding::Bug => "bug",
            KernelFinding::Oops => "oops",
            KernelFinding::Kasan => "kasan",
            KernelFinding::Ubsan => "ubsan",
            KernelFinding::Refcount => "refcount",
            KernelFinding::HungTask => "hung-task",
            KernelFinding::RxeError => "rxe-error",
        }
    }
}

/// Markers, most specific first (a KASAN report also contains "BUG:").
const MARKERS: [(&str, KernelFinding); 9] = [
    ("BUG: KASAN:", KernelFinding::Kasan),
    ("UBSAN:", KernelFinding::Ubsan),
    ("refcount_t:", KernelFinding::Refcount),
    ("blocked for more than", KernelFinding::HungTask),
    ("WARNING: CPU:", KernelFinding::Warn),
    ("kernel BUG at", KernelFinding::Bug),
    ("BUG:", KernelFinding::Bug),
    ("Oops:", KernelFinding::Oops),
    ("rdma_rxe: ", KernelFinding::RxeError),
];

/// Classify one console line; `None` for ordinary output. rxe lines count only when they
/// report an error (rxe logs its setup on the same prefix).
pub fn scan_line(line: &str) -> Option<KernelFinding> {
    MARKERS.iter().find_map(|&(marker, finding)| {
        let hit = line.contains(marker)
            && (finding != KernelFinding::RxeError || line.to_ascii_lowercase().contains("err"));
        hit.then_some(finding)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_console_lines() {
        let cases = [
            (
                "[  12.3] WARNING: CPU: 1 PID: 77 at net/sunrpc/xprtrdma/svc_rdma_rw.c:123",
                Some(KernelFinding::Warn),
            ),
            (
                "[  12.3] BUG: KASAN: slab-out-of-bounds in svc_rdma_build_read_segment",
                Some(KernelFinding::Kasan),
            ),
            (
                "[  12.3] UBSAN: shift-out-of-bounds in net/sunrpc/xprtrdma/svc_rdma_pcl.c",
                Some(KernelFinding::Ubsan),
            ),
            (
                "[  12.3] refcount_t: underflow; use-after-free.",
                Some(KernelFinding::Refcount),
            ),
            (
                "[ 300.0] INFO: task nfsd:812 blocked for more than 120 seconds.",
                Some(KernelFinding::HungTask),
            ),
            (
                "[  12.3] Oops: general protection fault",
                Some(KernelFinding::Oops),
            ),
            (
                "[  12.3] kernel BUG at mm/slub.c:42!",
                Some(KernelFinding::Bug),
            ),
            (
                "[  12.3] rdma_rxe: rxe0: qp#17 moved to error state",
                Some(KernelFinding::RxeError),
            ),
            ("[   1.0] rdma_rxe: loaded", None),
            ("[   1.0] svcrdma: svc_rdma_accept: connected", None),
        ];
        for (line, want) in cases {
            assert_eq!(scan_line(line), want, "{line}");
        }
    }
}
