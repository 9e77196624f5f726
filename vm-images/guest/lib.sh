# Helpers for suite scripts (sourced by driver.sh; available to every case script).
# RESULT lines are the machine-readable contract with the host (interop/src/results.rs):
#   RESULT case=<case> role=<srv|cli> verdict=<pass|fail> [key=value ...]   (values: no spaces)
RIG_OUT=/rig/out
RIG_SYNC=/rig/out/sync
RIG_SERVER_IP=10.99.0.1
RIG_CLIENT_IP=10.99.0.2

# `set -x` traces carry the guest uptime, so slow steps show up in the case logs.
PS4='+[$(cut -d" " -f1 /proc/uptime)] '

rig_log() { echo "[$RIG_name $(cut -d' ' -f1 /proc/uptime)] $*"; }

# rig_result <pass|fail> [key=value ...]
rig_result() {
  verdict=$1; shift
  echo "RESULT case=$RIG_CASE role=$RIG_name verdict=$verdict $*"
}

# rig_check <label> <command...>: run a command, report fail with its exit code if it fails.
rig_check() {
  label=$1; shift
  "$@"; rc=$?
  [ "$rc" = 0 ] && return 0
  rig_result fail step=$label rc=$rc
  exit 1
}

# rig_wait_file <path> <seconds>: poll for a file (9p, cache=none), bounded.
rig_wait_file() {
  n=$(( $2 * 5 ))
  while [ "$n" -gt 0 ]; do
    [ -e "$1" ] && return 0
    sleep 0.2; n=$(( n - 1 ))
  done
  return 1
}

# The server side of a case calls this once it is listening; the client waits for it.
rig_ready() { touch "$RIG_SYNC/$RIG_CASE.srv.ready"; }

# A server script waits here until the client side of the same case has finished.
rig_wait_client_done() { rig_wait_file "$RIG_SYNC/$RIG_CASE.cli.done" "${1:-120}"; }

rig_now_ms() { date +%s%3N; }
