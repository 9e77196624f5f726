# Server: `rig serve` on 20050 next to nfsd, judging headers as this kernel's svcrdma profile
# (classic DRC policy: the DRC is not what the wire fuzzer compares). Its own session, so it
# outlives this script; finish-server.sh stops it (SIGTERM → stats JSON).
. /rig/lib/rig-suite.sh
. /rig/lib/wire-fuzz-lib.sh
set -x
ldd "$RIG" | grep -q 'not found' && { ldd "$RIG"; rig_result fail step=ldd; exit 1; }
profile=$(kernel_profile)
setsid "$RIG" serve --listen "$RIG_SERVER_IP:$RIG_SERVE_PORT" --policy classic \
  --profile "$profile" --export /export --stats "$RIG_OUT/serve.stats.json" \
  > "$RIG_OUT/serve.log" 2>&1 < /dev/null &
echo $! > /tmp/serve.pid
for i in $(seq 50); do
  kill -0 "$(cat /tmp/serve.pid)" 2>/dev/null || { cat "$RIG_OUT/serve.log"; rig_result fail step=serve-start; exit 1; }
  rdma resource show cm_id 2>/dev/null | grep -q "LISTEN.*$RIG_SERVE_PORT\|$RIG_SERVE_PORT.*LISTEN" && break
  sleep 0.2
done
rig_result pass port=$RIG_SERVE_PORT profile=$profile pid=$(cat /tmp/serve.pid)
