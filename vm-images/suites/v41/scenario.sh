# Client side of case nfsd.v41-<scenario>: one NFSv4.1 session scenario against kernel nfsd over
# RDMA (`rig scenarios --v41`: EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE, the grace wait,
# then the retransmission on one slot). Executions are inferred from NFSv4 statuses and judged by
# the one rule in the client: the server guest does not count COMPOUND executions per XID (its
# ftrace counting is the DRC's), so a failed judgement fails the case here.
. /rig/lib/rig-suite.sh
scenario=${RIG_CASE#*.}
run_scenario nfsd "$scenario" --v41 --grace-secs 40 || exit 1
# The judgement and the slot's answers, from the verdict read as rig's own type
# (crates/rig/src/guest.rs v41_result): exit 1 when the rule fails.
rig_guest v41-result --verdict "$RIG_OUT/$RIG_CASE.verdict.json"
