# NFSv3 over RDMA (MOUNT itself runs over TCP).
NFS_VERS=3
NFS_OPTS=,nolock
. /rig/smoke/nfs-client.sh
