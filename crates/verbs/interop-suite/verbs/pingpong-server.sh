/rig/bin/verbs_pingpong --server "$RIG_SERVER_IP:20079" --timeout-secs 30 > /tmp/pp-srv.log 2>&1 &
pid=$!
sleep 1
rig_ready
wait $pid; rc=$?
cat /tmp/pp-srv.log
passes=$(grep -c '^PASS' /tmp/pp-srv.log); fails=$(grep -c '^FAIL' /tmp/pp-srv.log)
[ "$rc" = 0 ] && rig_result pass rc=0 passes=$passes fails=$fails || rig_result fail rc=$rc passes=$passes fails=$fails
