# Server: soft-RoCE; kernel nfsd on RDMA 20049 (+ rpc.mountd on TCP 20048) and our server
# (`rig serve`, classic DRC) on RDMA 20050 with its MOUNT on TCP 20047, side by side on the
# same rxe link.
. /rig/lib/rig-suite.sh
set -x
nfsd_rdma_up "$(echo "$NFSD_EXPORT_OPTS" | sed s/,sync,/,async,/),fsid=1" -p "$MOUNT_TCP_PORT"
NFS_RDMA_PORT=20050
serve_start classic --mount-tcp "$RIG_SERVER_IP:20047" || { rig_result fail step=serve-start; exit 1; }
rig_result pass nfsd_port=20049 rig_serve_port=20050 kernel=$(uname -r)
