# Namespace operations through the kernel client: mkdir, create, rename, remove, readdir, rmdir.
. /rig/lib/rig-suite.sh
. /rig/kclient/kclient-lib.sh
set -x
mount_rig
D=$MNT/ops
rig_check mkdir mkdir "$D"
for i in 1 2 3 4 5; do echo "file $i" > "$D/f$i" || { rig_result fail step=create; exit 1; }; done
rig_check rename mv "$D/f1" "$D/renamed"
rig_check remove rm "$D/f2"
rig_check symlink ln -s renamed "$D/link"
listing=$(ls "$D" | tr '\n' ',')
content=$(cat "$D/link")
rig_check rmtree rm -r "$D"
[ -e "$D" ] && { rig_result fail step=rmdir; exit 1; }
rig_check umount umount "$MNT"
if [ "$listing" = "f3,f4,f5,link,renamed," ] && [ "$content" = "file 1" ]; then
  rig_result pass listing=$listing
else
  rig_result fail listing=$listing content=$(echo "$content" | tr ' ' _)
fi
