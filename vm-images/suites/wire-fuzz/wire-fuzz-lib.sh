# Helpers of the wire-fuzz suite (shared as /rig/lib/wire-fuzz-lib.sh; sourced after
# rig-suite.sh). Run parameters come from /rig/etc/wire-fuzz.env when the recipe shares one.
RIG_SERVE_PORT=20050
# rig trace-relay (kernel-event feedback): TCP on the server's address.
TRACE_RELAY_PORT=20051
WIRE_FUZZ_STOP=$RIG_OUT/wire-fuzz.stop
WIRE_FUZZ_HITS=$RIG_OUT/kernel-watch.hits
# Lines of known findings over this transport (the run goes on past them).
WIRE_FUZZ_KNOWN=$RIG_OUT/kernel-watch.known
[ -f /rig/etc/wire-fuzz.env ] && . /rig/etc/wire-fuzz.env
WIRE_FUZZ_SECONDS=${WIRE_FUZZ_SECONDS:-180}
WIRE_FUZZ_SEED=${WIRE_FUZZ_SEED:-1}
WIRE_FUZZ_TIMEOUT_MS=${WIRE_FUZZ_TIMEOUT_MS:-1000}
WIRE_FUZZ_GUIDED=${WIRE_FUZZ_GUIDED:-0}
WIRE_FUZZ_KEEP_GOING=${WIRE_FUZZ_KEEP_GOING:-0}
# Replay mode: how many times the one case is sent (a race needs many tries; rig bounds it).
WIRE_FUZZ_REPLAY_REPEAT=${WIRE_FUZZ_REPLAY_REPEAT:-1}
# Bounded, whatever the env file says: the fuzz case's timeout is 1800 s.
[ "$WIRE_FUZZ_SECONDS" -gt 1500 ] 2>/dev/null && WIRE_FUZZ_SECONDS=1500

# The svcrdma profile rig serve answers headers as: the measured profile of the running kernel
# (fixtures/svcrdma-profiles/, compiled into rig), by `uname -r`; a kernel the matrix does not
# measure gets the upstream reference.
kernel_profile() {
  case $(uname -r) in
    6.1.0-50-*) echo debian-6.1.176 ;;
    6.1.*) echo debian-6.1.192 ;;
    6.12.117*) echo debian-6.12.117 ;;
    6.12.*) echo debian-6.12.118 ;;
    7.*) echo debian-7.2.13 ;;
    *) echo mainline-2026 ;;
  esac
}

# Kernel-log lines that stop a run: kernel_log::grep_pattern(WireFuzzWatch), i.e. the table in
# crates/kernel-log shared with the interop dmesg check (the wirefuzz test
# kernel_watch::the_guest_script_greps_for_exactly_the_table keeps this line in step; an rdma_rxe
# line only with "err"). rxe0 "do_complete: non-flush error status" lines are expected error completions.
KERNEL_WATCH_PATTERN='watchdog: BUG: soft lockup|KASAN: |UBSAN: |refcount_t: |blocked for more than|rcu: INFO: rcu_|Kernel panic|WARNING: CPU:|WARNING: at |WARNING: .*, [Cc][Pp][Uu]#|kernel BUG at|BUG: |Oops: |general protection fault|rdma_rxe: .*[Ee][Rr][Rr]'
