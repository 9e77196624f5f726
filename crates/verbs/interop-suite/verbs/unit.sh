# The crate's unit tests on a machine WITH rxe: the device-present branches run here.
/rig/bin/verbs_unit --test-threads 1 > /tmp/unit.log 2>&1; rc=$?
tail -5 /tmp/unit.log
[ "$rc" = 0 ] && rig_result pass rc=0 || { cat /tmp/unit.log; rig_result fail rc=$rc; }
