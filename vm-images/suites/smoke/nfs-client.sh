# Shared body of nfs3-client.sh / nfs41-client.sh: mount over RDMA (NFS_VERS), write 1 MiB,
# unmount, drop caches, remount, read back; compare checksums.
set -x
MNT=/mnt/$RIG_CASE
BLOB=$RIG_CASE.blob
mkdir -p "$MNT"
mount_rdma() {
  rig_check mount mount -t nfs -o "vers=$NFS_VERS,proto=rdma,port=20049$NFS_OPTS" "$RIG_SERVER_IP:/export" "$MNT"
  grep " $MNT " /proc/mounts
  grep " $MNT " /proc/mounts | grep -q 'proto=rdma' || { rig_result fail step=proto-not-rdma; exit 1; }
}
mount_rdma
rig_check hello grep -q hello-from-server "$MNT/hello.txt"
dd if=/dev/urandom of=/tmp/$BLOB bs=1024 count=1024 2>/dev/null
written=$(md5sum < /tmp/$BLOB | cut -d' ' -f1)
rig_check write cp /tmp/$BLOB "$MNT/$BLOB"
sync
rig_check umount umount "$MNT"
echo 3 > /proc/sys/vm/drop_caches
mount_rdma
read_back=$(md5sum < "$MNT/$BLOB" | cut -d' ' -f1)
size=$(stat -c %s "$MNT/$BLOB")
rig_check umount2 umount "$MNT"
if [ "$written" = "$read_back" ] && [ "$size" = 1048576 ]; then v=pass; else v=fail; fi
rig_result $v vers=$NFS_VERS bytes=$size md5_written=$written md5_read=$read_back
