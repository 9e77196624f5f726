# Server: soft-RoCE, kernel nfsd with an RDMA listener on 20049, rpc.mountd on TCP 20048 (our
# client's MOUNT), an ext4 export the cases can freeze (`rig hold-export`: the execution hold of
# before-execution, burst and large-write-read-chunk; with rpc.mountd stopped and the export
# caches flushed, the export-cache hold of deferred), a fresh duplicate reply cache, and the
# ftrace events that count nfsd's executions per XID.
. /rig/lib/rig-suite.sh
set -x
NFSD_EXPORT_FS=ext4 nfsd_rdma_up "$NFSD_EXPORT_OPTS,fsid=1" -p "$MOUNT_TCP_PORT"
cat /proc/fs/nfsd/reply_cache_stats
# Executions counted in the kernel (`rig judge` in observe-nfsd.sh, per case): sunrpc:svc_process
# (every call nfsd begins), nfsd:nfsd_drc_found (REPLY = replayed from the cache, DROPIT = an
# in-progress duplicate dropped) and a kprobe on nfsd_cache_update (one hit per executed
# procedure: the cross-check); sunrpc:svc_defer (a pass deferred by an export-cache upcall, whose
# revisit is a second svc_process) and nfsd:nfsd_garbage_args_err (a call that did not decode,
# never executed) are subtracted; sunrpc:svc_send and sunrpc:svc_drop end a pass, so a svc_defer
# is told apart: inside a pass (deferred in nfsd_dispatch, subtracted) or before its svc_process
# (deferred while authenticating, nothing to subtract). `rig hold-export` counts svc_defer and
# nfsd_drc_found DROPIT in its own instance (below). Enabled once, after nfsd is loaded; a source this kernel lacks
# is left out and named in this case's RESULT (trace_sources_missing=), and /tmp/rig-trace-sources
# lists those enabled (rig judge counts nothing without the first three).
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs tracefs $T
sources=
if [ -e $T/trace ]; then
  echo 0 > $T/tracing_on
  echo 4096 > $T/buffer_size_kb
  for ev in sunrpc/svc_process nfsd/nfsd_drc_found sunrpc/svc_defer nfsd/nfsd_garbage_args_err sunrpc/svc_send sunrpc/svc_drop; do
    [ -e "$T/events/$ev/enable" ] && echo 1 > "$T/events/$ev/enable" && sources="$sources ${ev%%/*}:${ev#*/}"
  done
  if [ -e $T/kprobe_events ] && echo 'p:rig_cache_update nfsd_cache_update' >> $T/kprobe_events &&
     [ -e $T/events/kprobes/rig_cache_update/enable ] && echo 1 > $T/events/kprobes/rig_cache_update/enable; then
    sources="$sources kprobes:rig_cache_update"
  fi
  : > $T/trace
  echo 1 > $T/tracing_on
fi
sources=${sources# }
echo "$sources" > /tmp/rig-trace-sources
# The execution hold, for the whole suite in its own session (the guest stops with the run).
# Started once tracefs is mounted: it counts nfsd's drops and deferrals in an ftrace instance
# of its own (instances/rig-hold-export), never in the trace above.
setsid "$RIG" hold-export --listen "$RIG_SERVER_IP:$EXECUTION_HOLD_PORT" --path /export \
  > "$RIG_OUT/hold-export.log" 2>&1 < /dev/null &
echo $! > /tmp/hold-export.pid
sleep 0.5
kill -0 "$(cat /tmp/hold-export.pid)" 2>/dev/null || { cat "$RIG_OUT/hold-export.log"; rig_result fail step=hold-export; exit 1; }
missing=
for want in sunrpc:svc_process nfsd:nfsd_drc_found kprobes:rig_cache_update sunrpc:svc_defer nfsd:nfsd_garbage_args_err sunrpc:svc_send sunrpc:svc_drop; do
  case " $sources " in *" $want "*) ;; *) missing="$missing,$want" ;; esac
done
missing=${missing#,}
[ -n "$missing" ] && echo "trace sources this kernel lacks (counts that need them are errors, never inferred passes): $missing"
rig_result pass nfsd_rdma_port=$NFS_RDMA_PORT mountd_tcp_port=$MOUNT_TCP_PORT kernel=$(uname -r) \
  trace_sources=$(echo "${sources:-none}" | tr ' ' ',') trace_sources_missing=${missing:-none}
