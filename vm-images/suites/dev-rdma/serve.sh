# Case serve-<policy>: (re)start `rig serve` with that DRC policy. The previous policy's server
# is stopped first, which writes its --stats JSON.
. /rig/lib/rig-suite.sh
policy=${RIG_CASE#serve-}
if serve_start "$policy"; then
  rig_result pass policy=$policy pid=$(cat /tmp/serve.pid)
else
  rig_result fail step=serve-start policy=$policy
  exit 1
fi
