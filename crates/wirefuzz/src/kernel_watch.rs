//! Kernel watch: the console lines that stop a wire-fuzz run against in-kernel nfsd. The markers
//! are `kernel_log::MARKERS` (shared with the interop dmesg check) read as
//! [`kernel_log::Reader::WireFuzzWatch`]; the guest's `grep -E` pattern in
//! `vm-images/suites/wire-fuzz/wire-fuzz-lib.sh` is [`kernel_log::grep_pattern`] of the same
//! table (a test below keeps the script in step). On the first hit the guest saves the console,
//! the case log and the hit lines under `out/` (see docs/wire-fuzz.md).

pub use kernel_log::Kind as KernelFinding;

/// The `grep -E` pattern the guest watch runs (`KERNEL_WATCH_PATTERN`).
pub fn shell_pattern() -> String {
    kernel_log::grep_pattern(kernel_log::Reader::WireFuzzWatch)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines the watch stops on, as the shared table classifies them for this reader.
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
            assert_eq!(
                kernel_log::classify(line, kernel_log::Reader::WireFuzzWatch),
                want,
                "{line}"
            );
        }
    }

    #[test]
    fn the_guest_script_greps_for_exactly_the_table() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../vm-images/suites/wire-fuzz/wire-fuzz-lib.sh"
        );
        let script = std::fs::read_to_string(path).expect(path);
        let line = script
            .lines()
            .find(|l| l.starts_with("KERNEL_WATCH_PATTERN="))
            .expect("KERNEL_WATCH_PATTERN= line");
        let want = format!("KERNEL_WATCH_PATTERN='{}'", shell_pattern());
        assert!(
            !shell_pattern().contains('\''),
            "single-quoted in the script"
        );
        assert_eq!(
            line, want,
            "wire-fuzz-lib.sh is out of step with kernel_log::MARKERS; replace its line with the expected one"
        );
    }
}
