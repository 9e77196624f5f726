# Server: soft-RoCE, kernel nfsd with an RDMA listener on 20049 (tmpfs export, as in the drc
# suite), and the kernel watch: dmesg --follow-new into out/kmsg.log, and a matching line into
# out/kernel-watch.hits and out/wire-fuzz.stop (the client's fuzz-wire checks it between cases).
. /rig/lib/rig-suite.sh
. /rig/lib/wire-fuzz-lib.sh
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
rm -f "$WIRE_FUZZ_STOP" "$WIRE_FUZZ_HITS"
: > "$WIRE_FUZZ_HITS"
# Only lines logged from now on: setup's own messages are the host dmesg check's business.
setsid sh -c '
  dmesg --follow-new --time-format iso 2>&1 | while IFS= read -r line; do
    printf "%s\n" "$line" >> "$1/kmsg.log"
    if printf "%s\n" "$line" | grep -Eq "$2"; then
      printf "%s\n" "$line" >> "$3"
      [ -e "$4" ] || printf "%s\n" "$line" > "$4"
    fi
  done' kernel-watch "$RIG_OUT" "$KERNEL_WATCH_PATTERN" "$WIRE_FUZZ_HITS" "$WIRE_FUZZ_STOP" \
  < /dev/null > /dev/null 2>&1 &
echo $! > /tmp/kernel-watch.pid
rig_result pass nfsd_rdma_port=$NFS_RDMA_PORT kernel=$(uname -r) watch_pid=$(cat /tmp/kernel-watch.pid)
