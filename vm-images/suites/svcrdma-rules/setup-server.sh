# Server: soft-RoCE and kernel nfsd with an RDMA listener on 20049 (tmpfs export), as the
# wire-fuzz suite sets it up. The kernel under test is this guest's: its svcrdma answers.
. /rig/lib/rig-suite.sh
set -x
nfsd_rdma_up "$NFSD_EXPORT_OPTS,fsid=1" -p "$MOUNT_TCP_PORT"
rig_result pass nfsd_rdma_port=$NFS_RDMA_PORT kernel=$(uname -r)
