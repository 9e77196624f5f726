# Server: soft-RoCE, kernel nfsd with an RDMA listener on 20049 (tmpfs export, as in the drc
# suite), and the kernel watch: dmesg --follow-new into out/kmsg.log, and a matching line into
# out/kernel-watch.hits and out/wire-fuzz.stop (the client's fuzz-wire checks it between cases).
. /rig/lib/rig-suite.sh
. /rig/lib/wire-fuzz-lib.sh
set -x
nfsd_rdma_up "$NFSD_EXPORT_OPTS,fsid=1" -p "$MOUNT_TCP_PORT"
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
