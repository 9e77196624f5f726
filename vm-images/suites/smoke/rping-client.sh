# Client side of rping: 10 verified ping-pongs over RDMA. The server marks itself ready once
# `rping -s` listens (or after 5 s without seeing it): retry a rejected attempt, once a second. An
# attempt that exchanged all 10 pings ends the loop even when rping exits non-zero (its
# teardown can race the server's disconnect); the server verifies the data pattern itself.
for attempt in 1 2 3 4 5; do
  rping -c -a "$RIG_SERVER_IP" -C 10 -v > "/tmp/rping-cli.$attempt.log" 2>&1
  rc=$?
  pings=$(grep -c 'ping data' "/tmp/rping-cli.$attempt.log")
  echo "attempt $attempt: rc=$rc pings=$pings"
  tail -3 "/tmp/rping-cli.$attempt.log"
  [ "$rc" = 0 ] || [ "$pings" -ge 10 ] && break
  sleep 1
done
if [ "$pings" -ge 10 ]; then v=pass; else v=fail; fi
rig_result $v pings=$pings attempts=$attempt rc=$rc
