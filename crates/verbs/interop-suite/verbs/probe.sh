/rig/bin/verbs_probe; rc=$?
[ "$rc" = 0 ] && rig_result pass rc=0 || rig_result fail rc=$rc
