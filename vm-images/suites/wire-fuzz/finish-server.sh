# Server: stop rig serve (SIGTERM → stats) and the kernel watch; report the kernel-log hits.
. /rig/lib/rig-suite.sh
. /rig/lib/wire-fuzz-lib.sh
serve_stop || { rig_result fail step=serve-stop; exit 1; }
# The trace relay is its own session (setsid): end exactly it.
[ -s /tmp/trace-relay.pid ] && kill -TERM "$(cat /tmp/trace-relay.pid)" 2>/dev/null
sleep 1  # let the watch take the last kernel lines
# setsid made the watch its own process group: end exactly that group (sh, dmesg, reader).
kill -TERM -- "-$(cat /tmp/kernel-watch.pid)" 2>/dev/null
hits=$(wc -l < "$WIRE_FUZZ_HITS")
known=$(wc -l < "$WIRE_FUZZ_KNOWN" 2>/dev/null || echo 0)
echo "== kernel-watch hits ($hits)"; head -50 "$WIRE_FUZZ_HITS"
echo "== known findings' lines ($known)"; head -20 "$WIRE_FUZZ_KNOWN" 2>/dev/null
echo "== nfsd RDMA stats"; cat /proc/sys/sunrpc/svc_rdma/rdma_stat_* 2>/dev/null | head -20
verdict=pass
[ "$hits" -gt 0 ] && verdict=fail
rig_result $verdict kernel_log_hits=$hits kernel_log_known=$known kmsg_lines=$(wc -l < "$RIG_OUT/kmsg.log" 2>/dev/null || echo 0)
[ $verdict = pass ]
