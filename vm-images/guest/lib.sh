# Helpers for suite scripts (sourced by driver.sh; available to every case script).
# RESULT lines are the machine-readable contract with the host (interop/src/results.rs):
#   RESULT case=<case> role=<srv|cli> verdict=<pass|fail> [key=value ...]   (values: no spaces)
RIG_OUT=/rig/out
RIG_SYNC=/rig/out/sync
RIG_SERVER_IP=10.99.0.1
RIG_CLIENT_IP=10.99.0.2

# `set -x` traces carry the guest uptime, so slow steps show up in the case logs. PS4 is expanded
# for every traced line: reading the uptime with builtins costs a fork, where `cut` cost a fork and
# an exec (0.03-0.1 s a line under TCG, a third of a short case's time).
rig_uptime() { read -r up _ < /proc/uptime; echo "$up"; }
PS4='+[$(rig_uptime)] '

rig_log() { echo "[$RIG_name $(rig_uptime)] $*"; }

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

# rig_wait_file <path> <seconds>: poll for a file (9p, cache=none), bounded. The interval grows
# from 0.1 s to 0.5 s: most waits end within a second, and a waiting guest (the server waits for
# the client through every case) then spends at most two `sleep` execs a second of its TCG CPU.
rig_wait_file() {
  left=$(( $2 * 10 )) tenths=1
  while [ "$left" -gt 0 ]; do
    [ -e "$1" ] && return 0
    sleep "0.$tenths"; left=$(( left - tenths ))
    [ "$tenths" -lt 5 ] && tenths=$(( tenths + 1 ))
  done
  [ -e "$1" ]
}

# The server side of a case calls this once it is listening; the client waits for it.
rig_ready() { : > "$RIG_SYNC/$RIG_CASE.srv.ready"; }

# A server script waits here until the client side of the same case has finished.
rig_wait_client_done() { rig_wait_file "$RIG_SYNC/$RIG_CASE.cli.done" "${1:-120}"; }

# rig_clock: RIG_CLOCK_CS = the guest's uptime in centiseconds, read with builtins (no fork, no
# exec; `date` cost an exec per call under TCG). /proc/uptime always has two decimals.
rig_clock() {
  read -r up _ < /proc/uptime
  RIG_CLOCK_CS=$(( ${up%.*} * 100 + 1${up#*.} - 100 ))
}
