/rig/bin/verbs_pingpong --client "$RIG_SERVER_IP:20079" --timeout-secs 30 > /tmp/pp-cli.log 2>&1; rc=$?
cat /tmp/pp-cli.log
passes=$(grep -c '^PASS' /tmp/pp-cli.log); fails=$(grep -c '^FAIL' /tmp/pp-cli.log)
[ "$rc" = 0 ] && rig_result pass rc=0 passes=$passes fails=$fails || rig_result fail rc=$rc passes=$passes fails=$fails
