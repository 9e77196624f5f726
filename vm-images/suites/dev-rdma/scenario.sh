# Case <policy>.<scenario>: one catalogue scenario from the client guest against `rig serve`
# (started by the preceding serve-<policy> case); the root handle comes from MOUNT over RDMA.
. /rig/lib/rig-suite.sh
policy=${RIG_CASE%%.*}
scenario=${RIG_CASE#*.}
run_scenario "$policy" "$scenario" --mount-rdma --export /export
