# NFSv4.1 over RDMA.
NFS_VERS=4.1
NFS_OPTS=
. /rig/smoke/nfs-client.sh
