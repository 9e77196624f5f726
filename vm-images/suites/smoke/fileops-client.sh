# Namespace operations over NFSv4.1/RDMA: mkdir, create, rename, remove, readdir.
set -x
MNT=/mnt/fileops
rig_mount_nfs_rdma "$MNT" vers=4.1,proto=rdma,port=20049 "$RIG_SERVER_IP:/export"
rig_namespace_ops "$MNT/ops" no
rig_check umount umount "$MNT"
if [ "$listing" = "f3,f4,f5,renamed," ] && [ "$content" = "file 1" ]; then
  rig_result pass listing=$listing
else
  rig_result fail listing=$listing
fi
