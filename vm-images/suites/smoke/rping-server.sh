# Server side of rping: accept one connection, verify the data pattern.
rig_ready
rping -s -a "$RIG_SERVER_IP" -C 10 -v > /tmp/rping-srv.log 2>&1
rc=$?
tail -3 /tmp/rping-srv.log
[ "$rc" = 0 ] && rig_result pass rc=0 || rig_result fail rc=$rc
