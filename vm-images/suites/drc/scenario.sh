# Client side of case nfsd.<scenario>: one catalogue scenario against kernel nfsd over RDMA; the
# root handle comes from MOUNT over TCP (rpc.mountd -p 20048 on the server guest). Executions on
# a foreign server are inferred from NFS statuses (rig reports them as inferred).
# --execution-hold: `rig hold-export` in the server guest freezes the export on request;
# --export-cache-hold: it also stops rpc.mountd and flushes nfsd's export caches (`deferred`).
. /rig/lib/rig-suite.sh
scenario=${RIG_CASE#*.}
run_scenario nfsd "$scenario" --mount-tcp "$RIG_SERVER_IP:$MOUNT_TCP_PORT" --export /export \
  --execution-hold "$RIG_SERVER_IP:$EXECUTION_HOLD_PORT" --export-cache-hold
