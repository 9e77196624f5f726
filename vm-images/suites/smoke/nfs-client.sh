# Shared body of nfs3-client.sh / nfs41-client.sh: mount over RDMA (NFS_VERS), write 1 MiB,
# unmount, drop caches, remount, read back; compare checksums.
set -x
MNT=/mnt/$RIG_CASE
BLOB=$RIG_CASE.blob
mount_rdma() {
  rig_mount_nfs_rdma "$MNT" "vers=$NFS_VERS,proto=rdma,port=20049$NFS_OPTS" "$RIG_SERVER_IP:/export"
}
mount_rdma
rig_check hello grep -q hello-from-server "$MNT/hello.txt"
rig_write_remount_read mount_rdma "$MNT" "$BLOB" 1024
if [ "$written" = "$read_back" ] && [ "$bytes" = 1048576 ]; then v=pass; else v=fail; fi
rig_result $v vers=$NFS_VERS bytes=$bytes md5_written=$written md5_read=$read_back
