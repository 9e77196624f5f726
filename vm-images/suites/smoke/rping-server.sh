# Server side of rping: accept one connection, verify the data pattern. Ready only once the
# rdma_cm listener exists (rping's port 7174 in LISTEN, bounded wait), so the client's first
# attempt finds it; a server whose listener never shows is marked ready anyway after 5 s (older
# iproute2 may not print the port) and the client's retries cover it.
rping -s -a "$RIG_SERVER_IP" -C 10 -v > /tmp/rping-srv.log 2>&1 &
pid=$!
for i in $(seq 50); do
  rdma resource show cm_id 2>/dev/null | grep -q "LISTEN.*7174\|7174.*LISTEN" && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
echo "listening after $i polls"
rig_ready
wait $pid
rc=$?
tail -3 /tmp/rping-srv.log
[ "$rc" = 0 ] && rig_result pass rc=0 || rig_result fail rc=$rc
