# Namespace operations through the kernel client: mkdir, create, rename, remove, symlink, readdir, rmdir.
. /rig/lib/rig-suite.sh
. /rig/kclient/kclient-lib.sh
set -x
mount_rig
rig_namespace_ops "$MNT/ops" yes
rig_check umount umount "$MNT"
if [ "$listing" = "f3,f4,f5,link,renamed," ] && [ "$content" = "file 1" ]; then
  rig_result pass listing=$listing
else
  rig_result fail listing=$listing content=$(echo "$content" | tr ' ' _)
fi
