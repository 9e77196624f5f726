# Server: soft-RoCE, kernel nfsd with an RDMA listener on 20049 and NFSv4.1 on, /export as the
# NFSv4 pseudo-root (fsid=0: PUTROOTFH lands there, no MOUNT), a 10 s grace period and lease so
# REMOVE is not held off with NFS4ERR_GRACE for the default 90 s (the client waits it out).
. /rig/lib/rig-suite.sh
set -x
NFSD_GRACE_SECS=10
nfsd_rdma_up "$NFSD_EXPORT_OPTS,fsid=0"
# Wait the grace period out here, before any scenario's counters are read: the client's grace
# probes (REMOVEs answered NFS4ERR_GRACE, one a second) then stop at the first, and the first
# scenario's nfsd deltas and trace no longer vary with how long boot took.
sleep $((NFSD_GRACE_SECS + 1))
cat /proc/fs/nfsd/versions
grep -q '+4.1' /proc/fs/nfsd/versions || { rig_result fail step=versions versions=$(tr ' ' ',' < /proc/fs/nfsd/versions); exit 1; }
rig_result pass nfsd_rdma_port=$NFS_RDMA_PORT kernel=$(uname -r) versions=$(tr ' ' ',' < /proc/fs/nfsd/versions)
