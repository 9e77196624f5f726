# Case <op>-<size> (or `null`): the same workload against our server and kernel nfsd, back to
# back over the same link, one RESULT line per target. `rig bench-rpc` prints one JSON object:
# size_requested, size_used, limited_by, fsinfo_rtmax, fsinfo_wtmax, calls, errors, seconds,
# calls_per_sec, latency_p50_us, latency_p99_us, mib_per_sec.
. /rig/lib/rig-suite.sh
case $RIG_CASE in
  null) op=null; size=0 ;;
  read-4k) op=read; size=4096 ;;
  read-64k) op=read; size=65536 ;;
  write-4k) op=write; size=4096 ;;
  write-64k) op=write; size=65536 ;;
  *) rig_result fail step=unknown-case; exit 1 ;;
esac
seconds=${BENCH_SECONDS:-5}
verdict=pass
for target in rig nfsd; do
  if [ $target = rig ]; then port=20050; mountd=20047; else port=20049; mountd=$MOUNT_TCP_PORT; fi
  out=$RIG_OUT/$RIG_CASE.$target.bench.json
  "$RIG" bench-rpc --server "$RIG_SERVER_IP:$port" --mount-tcp "$RIG_SERVER_IP:$mountd" --export /export \
    --op $op --size $size --seconds "$seconds" > "$out" 2> /tmp/bench.err
  rc=$?
  cat /tmp/bench.err "$out"
  if [ $rc != 0 ]; then
    rig_guest failed-result --rc "$rc" --stderr /tmp/bench.err target=$target op=$op size=$size
    verdict=fail
    continue
  fi
  # The measurement read as rig's own type (crates/rig/src/guest.rs bench_fields). size_used <
  # size_requested when the server's FSINFO rtmax/wtmax is smaller (limited_by says which);
  # then the two targets measured different sizes.
  rig_guest bench-result --measurement "$out" target=$target op=$op size=$size
done
[ $verdict = pass ]
