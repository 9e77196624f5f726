# Server: kernel-event feedback for the fuzzer (issue 16 item 2). `rig trace-relay` enables the
# rpcrdma, sunrpc and nfsd trace events (the noisy per-request/file-cache ones off again), follows
# trace_pipe and answers the client's `mark N` after each case with the normalised events since
# the previous mark, over TCP on this link. Its own session, so it outlives this script;
# finish-server.sh stops it. out/trace-events.txt lists the events this kernel has enabled; a
# replay (WIRE_FUZZ_REPLAY, `just findings`) also keeps every event line in out/trace-events.log
# (svcrdma's decode, Read posting and completion: a finding's root cause).
. /rig/lib/rig-suite.sh
. /rig/lib/wire-fuzz-lib.sh
set -x
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs tracefs $T
for group in rpcrdma sunrpc nfsd; do
  echo "$group: $(ls $T/events/$group 2>/dev/null | grep -vc '^enable$\|^filter$') events"
done
log_arg=
[ -n "${WIRE_FUZZ_REPLAY:-}" ] && log_arg="--log $RIG_OUT/trace-events.log"
setsid "$RIG" trace-relay --listen "$RIG_SERVER_IP:$TRACE_RELAY_PORT" \
  --events-out "$RIG_OUT/trace-events.txt" $log_arg \
  > "$RIG_OUT/trace-relay.log" 2>&1 < /dev/null &
echo $! > /tmp/trace-relay.pid
for i in $(seq 50); do
  kill -0 "$(cat /tmp/trace-relay.pid)" 2>/dev/null || { cat "$RIG_OUT/trace-relay.log"; rig_result fail step=trace-relay-start; exit 1; }
  grep -q "listening on" "$RIG_OUT/trace-relay.log" && break
  sleep 0.2
done
grep -q "listening on" "$RIG_OUT/trace-relay.log" || { rig_result fail step=trace-relay-listen; exit 1; }
rig_result pass port=$TRACE_RELAY_PORT events=$(wc -l < "$RIG_OUT/trace-events.txt") \
  pid=$(cat /tmp/trace-relay.pid)
