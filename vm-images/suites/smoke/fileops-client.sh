# Namespace operations over NFSv4.1/RDMA: mkdir, create, rename, remove, readdir.
set -x
MNT=/mnt/fileops
mkdir -p "$MNT"
rig_check mount mount -t nfs -o vers=4.1,proto=rdma,port=20049 "$RIG_SERVER_IP:/export" "$MNT"
D=$MNT/ops
rig_check mkdir mkdir "$D"
for i in 1 2 3 4 5; do echo "file $i" > "$D/f$i" || { rig_result fail step=create; exit 1; }; done
rig_check rename mv "$D/f1" "$D/renamed"
rig_check remove rm "$D/f2"
listing=$(ls "$D" | tr '\n' ',')
content=$(cat "$D/renamed")
rig_check rmtree rm -r "$D"
[ -e "$D" ] && { rig_result fail step=rmdir; exit 1; }
rig_check umount umount "$MNT"
if [ "$listing" = "f3,f4,f5,renamed," ] && [ "$content" = "file 1" ]; then
  rig_result pass listing=$listing
else
  rig_result fail listing=$listing
fi
