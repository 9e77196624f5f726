# Client side of case nfsd.v41-<scenario>: one NFSv4.1 session scenario against kernel nfsd over
# RDMA (`rig scenarios --v41`: EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE, the grace wait,
# then the retransmission on one slot). Executions are inferred from NFSv4 statuses and judged by
# the one rule in the client: the server guest does not count COMPOUND executions per XID (its
# ftrace counting is the DRC's), so a failed judgement fails the case here.
. /rig/lib/rig-suite.sh
scenario=${RIG_CASE#*.}
run_scenario nfsd "$scenario" --v41 --grace-secs 40 || exit 1
out="$RIG_OUT/$RIG_CASE.verdict.json"
judgement=$(json_field judgement "$out")
slot_answer=$(json_field slot_answer "$out" | tr -s ' \t=' '___')
slot_after=$(json_field slot_after "$out" | tr -s ' \t=' '___')
if [ "$judgement" = fail ]; then
  rig_result fail step=judge count=inferred slot_answer=$slot_answer slot_after=$slot_after \
    reason=$(json_field failure "$out" | tr -s ' \t=' '___')
  exit 1
fi
rig_result pass step=judge count=inferred slot_answer=$slot_answer slot_after=$slot_after
