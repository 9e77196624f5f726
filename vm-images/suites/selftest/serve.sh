# Case serve-<policy>: (re)start `rig serve` with that DRC policy, MOUNT3 also over TCP 20048
# (the same path the drc suite uses against rpc.mountd). The previous policy's server is stopped
# first, which writes its --stats JSON.
. /rig/lib/rig-suite.sh
policy=${RIG_CASE#serve-}
if serve_start "$policy" --mount-tcp "$RIG_SERVER_IP:$MOUNT_TCP_PORT"; then
  rig_result pass policy=$policy pid=$(cat /tmp/serve.pid)
else
  rig_result fail step=serve-start policy=$policy
  exit 1
fi
