# Case files-<size>: write a file of that size through the kernel client, unmount, drop caches,
# remount, read it back; the checksums must agree (the host re-checks the equal keys).
. /rig/lib/rig-suite.sh
. /rig/kclient/kclient-lib.sh
set -x
size=${RIG_CASE#files-}
case $size in 4k) kib=4 ;; 1m) kib=1024 ;; 16m) kib=16384 ;; *) rig_result fail step=size; exit 1 ;; esac
mount_rig
rig_write_remount_read mount_rig "$MNT" "$RIG_CASE.blob" "$kib"
if [ "$written" = "$read_back" ] && [ "$bytes" = $((kib * 1024)) ]; then v=pass; else v=fail; fi
rig_result $v bytes=$bytes md5_written=$written md5_read=$read_back
