# Server: soft-RoCE, kernel nfsd with an RDMA listener on 20049 and NFSv4.1 on, /export as the
# NFSv4 pseudo-root (fsid=0: PUTROOTFH lands there, no MOUNT), a 10 s grace period and lease so
# REMOVE is not held off with NFS4ERR_GRACE for the default 90 s (the client waits it out).
. /rig/lib/rig-suite.sh
set -x
rxe_up
mkdir -p /proc/fs/nfsd /export /var/lib/nfs/v4recovery /run/rpcbind
rig_check nfsd-fs mount -t nfsd nfsd /proc/fs/nfsd
rig_check export-fs mount -t tmpfs -o size=96m tmpfs /export
# rig's NFSv4.1 calls carry AUTH_SYS root; sec=sys:none and the anonymous user mapped to root
# keep AUTH_NONE working too (as in the drc suite).
chmod 0777 /export
echo "/export $RIG_CLIENT_IP/32(rw,sec=sys:none,anonuid=0,anongid=0,no_root_squash,insecure,sync,no_subtree_check,fsid=0)" > /etc/exports
rig_check rpcbind rpcbind -w
rig_check exportfs exportfs -ra
rig_check mountd rpc.mountd
echo 10 > /proc/fs/nfsd/nfsv4gracetime
echo 10 > /proc/fs/nfsd/nfsv4leasetime
rig_check nfsd rpc.nfsd 8
rig_check rdma-listener sh -c "echo 'rdma $NFS_RDMA_PORT' > /proc/fs/nfsd/portlist"
cat /proc/fs/nfsd/portlist /proc/fs/nfsd/versions
grep -q "rdma $NFS_RDMA_PORT" /proc/fs/nfsd/portlist || { rig_result fail step=portlist; exit 1; }
grep -q '+4.1' /proc/fs/nfsd/versions || { rig_result fail step=versions versions=$(tr ' ' ',' < /proc/fs/nfsd/versions); exit 1; }
rig_result pass nfsd_rdma_port=$NFS_RDMA_PORT kernel=$(uname -r) versions=$(tr ' ' ',' < /proc/fs/nfsd/versions)
