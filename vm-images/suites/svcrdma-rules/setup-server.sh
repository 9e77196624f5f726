# Server: soft-RoCE and kernel nfsd with an RDMA listener on 20049 (tmpfs export), as the
# wire-fuzz suite sets it up. The kernel under test is this guest's: its svcrdma answers.
. /rig/lib/rig-suite.sh
set -x
rxe_up
mkdir -p /proc/fs/nfsd /export /var/lib/nfs/v4recovery /run/rpcbind
rig_check nfsd-fs mount -t nfsd nfsd /proc/fs/nfsd
rig_check export-fs mount -t tmpfs -o size=96m tmpfs /export
chmod 0777 /export
echo "/export $RIG_CLIENT_IP/32(rw,sec=sys:none,anonuid=0,anongid=0,no_root_squash,insecure,sync,no_subtree_check,fsid=1)" > /etc/exports
rig_check rpcbind rpcbind -w
rig_check exportfs exportfs -ra
rig_check mountd rpc.mountd -p "$MOUNT_TCP_PORT"
rig_check nfsd rpc.nfsd 8
rig_check rdma-listener sh -c "echo 'rdma $NFS_RDMA_PORT' > /proc/fs/nfsd/portlist"
grep -q "rdma $NFS_RDMA_PORT" /proc/fs/nfsd/portlist || { rig_result fail step=portlist; exit 1; }
rig_result pass nfsd_rdma_port=$NFS_RDMA_PORT kernel=$(uname -r)
