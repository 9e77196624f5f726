# Server side of case nfsd.<scenario>: snapshot the kernel's view before the client starts the
# scenario (the driver starts the client only after rig_ready) and after it finished, and report
# the deltas: duplicate reply cache (/proc/fs/nfsd/reply_cache_stats), the `rc` and `proc3` lines
# of /proc/net/rpc/nfsd, and any new dmesg lines. The deltas go into the case's snapshot
# (out/<case>.kernel.txt) next to the client's verdict.
#
# Then the judgement: the ftrace events setup-server.sh enabled (cleared before rig_ready, so
# they hold this case only) are copied to out/<case>.ftrace.txt, and `rig judge` counts the
# executions of the client's XID under test in them, rewrites the client's verdict with the
# counted executions and judges it by the one rule (a non-idempotent call executed more often
# than it had argument sets; a reply to arguments never executed). Its key=value lines join the
# deltas; a failed judgement fails the case (reason=...).
#
# Everything after the client is done is on the case's critical path, and each process costs
# 50-200 ms under TCG: what can be read with shell builtins is (small files, /proc), what can be
# done before rig_ready is done there, and the rest is one `rig guest counted-case`.
. /rig/lib/rig-suite.sh
T=/sys/kernel/tracing
# copy_small <file> <to>: a few lines of /proc copied with builtins (no `cat` exec).
copy_small() {
  while IFS= read -r line || [ -n "$line" ]; do printf '%s\n' "$line"; done < "$1" > "$2"
}
snap() { # <dir> (made below, once)
  copy_small /proc/fs/nfsd/reply_cache_stats "$1/rcs"
  copy_small /proc/net/rpc/nfsd "$1/rpc"
  dmesg > "$1/dmesg"
}
[ -d /tmp/after ] || mkdir -p /tmp/before /tmp/after
snap /tmp/before
rig_case_bin
read -r release < /proc/sys/kernel/osrelease
trace_sources=
[ -f /tmp/rig-trace-sources ] && read -r trace_sources < /tmp/rig-trace-sources
[ -e $T/trace ] && : > $T/trace
rig_ready
rig_wait_client_done 120 || { rig_result fail step=client-not-done; exit 1; }
# Replies still in flight when the client exits are counted once nfsd finishes them.
sleep 0.3
snap /tmp/after
# The rest is one exec (crates/rig/src/guest.rs counted_case): the deltas, read by rig with
# wire's procedure names (crates/verdict/src/nfsd_stats.rs: the reply cache's counters, the `rc`,
# `rpc` and `proc3` lines of /proc/net/rpc/nfsd) into the case's kernel.txt; the trace copied
# with the sources enabled on this kernel as its first line (one byte over rig judge's 16 MiB
# limit at most, so an overflowing copy is refused rather than judged truncated); rig judge in
# it, whose key=value lines join the deltas; the judgement, the deltas and the new dmesg lines
# printed; and the RESULT line, from the judgement and the verdict read as rig's own type:
# pass, fail (the reason is the verdict's "failure"), no count (bad input: no verdict file, an
# unreadable trace, the XID missing from it) or nothing sent (a scenario this transport cannot
# run: a skip, whose reason the client's RESULT gives; or a client that failed before its XID,
# whose own RESULT fails the case). A count that failed is a harness failure of the case, never
# a pass. The script ends well either way: the RESULT line is the case's verdict.
rig_guest counted-case --verdict "$RIG_OUT/$RIG_CASE.verdict.json" --trace $T/trace \
  --trace-sources "$trace_sources" --ftrace "$RIG_OUT/$RIG_CASE.ftrace.txt" \
  --before /tmp/before --after /tmp/after --kernel-txt "$RIG_OUT/$RIG_CASE.kernel.txt" \
  --kernel "$release"
exit 0
