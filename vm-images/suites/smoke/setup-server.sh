# Server: soft-RoCE on eth0, RoCEv2 capture, nfsd with an RDMA listener on 20049 and /export.
set -x
rdma_up
tcpdump -i eth0 -s 0 -U -w /tmp/srv.pcap $RIG_CAPTURE_FILTER 2>/tmp/tcpdump.err &
echo $! > /tmp/tcpdump.pid
mkdir -p /proc/fs/nfsd /export /var/lib/nfs/v4recovery /run/rpcbind
rig_check nfsd-fs mount -t nfsd nfsd /proc/fs/nfsd
rig_check export-fs mount -t tmpfs -o size=96m tmpfs /export
echo hello-from-server > /export/hello.txt
echo "/export $RIG_CLIENT_IP/32(rw,no_root_squash,insecure,sync,no_subtree_check,fsid=1)" > /etc/exports
rig_check rpcbind rpcbind -w
rig_check exportfs exportfs -ra
rig_check mountd rpc.mountd
# short grace so NFSv4.1 OPEN(CREATE) is not held off for the default 90 s
echo 10 > /proc/fs/nfsd/nfsv4gracetime
echo 10 > /proc/fs/nfsd/nfsv4leasetime
rig_check nfsd rpc.nfsd 8
rig_check rdma-listener sh -c "echo 'rdma 20049' > /proc/fs/nfsd/portlist"
cat /proc/fs/nfsd/portlist
grep -q 'rdma 20049' /proc/fs/nfsd/portlist || { rig_result fail step=portlist; exit 1; }
rig_result pass $RIG_TRANSPORT=$RIG_RDMA_DEV nfsd_rdma_port=20049 kernel=$(uname -r)
