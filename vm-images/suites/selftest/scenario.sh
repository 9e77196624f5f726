# Case <policy>.<scenario>: one catalogue scenario from the client guest against `rig serve`
# (started by the preceding serve-<policy> case). The root handle comes from MOUNT over TCP, as
# against kernel nfsd (MNT over the RDMA connection answered PROG_UNAVAIL in the first run).
. /rig/lib/rig-suite.sh
policy=${RIG_CASE%%.*}
scenario=${RIG_CASE#*.}
run_scenario "$policy" "$scenario" --mount-tcp "$RIG_SERVER_IP:$MOUNT_TCP_PORT" --export /export
