# Case <policy>.<scenario>: one catalogue scenario from the client guest against `rig serve`
# (started by the preceding serve-<policy> case). The root handle comes from MOUNT over TCP, as
# against kernel nfsd (MNT over the RDMA connection answered PROG_UNAVAIL in the first run).
# --execution-hold: the scenarios that hold the server's execution hold it in `rig serve`.
# Then the verdict is re-judged with the executions `rig serve` counted for the XID under test
# (its --stats, shared through /rig/out and rewritten whenever a connection closes): a second
# RESULT line, fail when the rule fails.
. /rig/lib/rig-suite.sh
policy=${RIG_CASE%%.*}
scenario=${RIG_CASE#*.}
stats="$RIG_OUT/serve-$policy.stats.json"
SCENARIO_JUDGE_ARGS="--serve-stats $stats --closed-before $(closed_connections "$stats")"
run_scenario "$policy" "$scenario" --mount-tcp "$RIG_SERVER_IP:$MOUNT_TCP_PORT" --export /export \
  --execution-hold "$RIG_SERVER_IP:$EXECUTION_HOLD_PORT" || exit $?
