# Server: soft-RDMA, kernel nfsd with an RDMA listener on 20049 (tmpfs export, as in the drc
# suite), and the kernel watch: dmesg --follow-new into out/kmsg.log, and a matching line into
# out/kernel-watch.hits and out/wire-fuzz.stop (the client's fuzz-wire checks it between cases).
# A matching line that holds the signature of a known finding of this transport
# (etc/kernel-watch-known.txt, fixed strings from fixtures/findings/findings.toml, written by the
# host) goes to out/kernel-watch.known instead: reported, and the run goes on past it.
. /rig/lib/rig-suite.sh
. /rig/lib/wire-fuzz-lib.sh
set -x
nfsd_rdma_up "$NFSD_EXPORT_OPTS,fsid=1" -p "$MOUNT_TCP_PORT"
rm -f "$WIRE_FUZZ_STOP" "$WIRE_FUZZ_HITS" "$WIRE_FUZZ_KNOWN"
: > "$WIRE_FUZZ_HITS"
: > "$WIRE_FUZZ_KNOWN"
known_file=/rig/etc/kernel-watch-known.txt
[ -s "$known_file" ] || known_file=
# Only lines logged from now on: setup's own messages are the host dmesg check's business.
setsid sh -c '
  dmesg --follow-new --time-format iso 2>&1 | while IFS= read -r line; do
    printf "%s\n" "$line" >> "$1/kmsg.log"
    if printf "%s\n" "$line" | grep -Eq "$2"; then
      if [ -n "$5" ] && printf "%s\n" "$line" | grep -Fq -f "$5"; then
        printf "%s\n" "$line" >> "$6"
      else
        printf "%s\n" "$line" >> "$3"
        [ -e "$4" ] || printf "%s\n" "$line" > "$4"
      fi
    fi
  done' kernel-watch "$RIG_OUT" "$KERNEL_WATCH_PATTERN" "$WIRE_FUZZ_HITS" "$WIRE_FUZZ_STOP" \
  "$known_file" "$WIRE_FUZZ_KNOWN" < /dev/null > /dev/null 2>&1 &
echo $! > /tmp/kernel-watch.pid
rig_result pass nfsd_rdma_port=$NFS_RDMA_PORT kernel=$(uname -r) watch_pid=$(cat /tmp/kernel-watch.pid) \
  known_signatures=$(grep -c . "${known_file:-/dev/null}")
