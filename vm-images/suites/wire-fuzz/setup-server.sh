# Server: soft-RDMA, kernel nfsd with an RDMA listener on 20049 (tmpfs export, as in the drc
# suite), and the kernel watch: dmesg --follow-new into out/kmsg.log, and a matching line into
# out/kernel-watch.hits and out/wire-fuzz.stop (the client's fuzz-wire checks it between cases).
# A matching line that is a known finding of this transport goes to out/kernel-watch.known
# instead: reported, and the run goes on past it. etc/kernel-watch-known.txt (written by the host
# from fixtures/findings/findings.toml) has one finding per line: the grep -E pattern of its kind
# (WARN, BUG...), a tab, its signature (a fixed string); a line must match both.
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
      known=
      if [ -n "$5" ]; then
        while IFS="$(printf "\t")" read -r kind_ere signature; do
          printf "%s\n" "$line" | grep -Eq "$kind_ere" &&
            printf "%s\n" "$line" | grep -Fq -- "$signature" && known=yes && break
        done < "$5"
      fi
      if [ -n "$known" ]; then
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
