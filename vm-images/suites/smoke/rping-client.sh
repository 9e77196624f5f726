# Client side of rping: 10 verified ping-pongs over RDMA (retry while the server starts listening).
for attempt in 1 2 3 4 5; do
  rping -c -a "$RIG_SERVER_IP" -C 10 -v > /tmp/rping-cli.log 2>&1 && break
  sleep 1
done
pings=$(grep -c 'ping data' /tmp/rping-cli.log)
tail -3 /tmp/rping-cli.log
if [ "$pings" -ge 10 ]; then rig_result pass pings=$pings attempts=$attempt; else rig_result fail pings=$pings attempts=$attempt; fi
