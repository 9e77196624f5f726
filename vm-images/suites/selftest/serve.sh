# Case serve-<policy>: (re)start `rig serve` with that DRC policy, MOUNT3 also over TCP 20048
# (the same path the drc suite uses against rpc.mountd). The previous policy's server is stopped
# first, which writes its --stats JSON.
. /rig/lib/rig-suite.sh
policy=${RIG_CASE#serve-}
# --stats-on-close: the stats are rewritten as each connection closes, so every scenario case
# can count its own executions (SCENARIO_JUDGE_ARGS) while this server runs. --control: the
# scenario cases hold its execution (a duplicate then meets its original in progress).
if serve_start "$policy" --mount-tcp "$RIG_SERVER_IP:$MOUNT_TCP_PORT" --stats-on-close \
  --control "$RIG_SERVER_IP:$EXECUTION_HOLD_PORT"; then
  rig_result pass policy=$policy pid=$(cat /tmp/serve.pid)
else
  rig_result fail step=serve-start policy=$policy
  exit 1
fi
