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
# 50-200 ms under TCG: what can be read with shell builtins is (small files, /proc), and what
# can be done before rig_ready is done there.
. /rig/lib/rig-suite.sh
T=/sys/kernel/tracing
snap() { # <dir>
  mkdir -p "$1"
  cat /proc/fs/nfsd/reply_cache_stats > "$1/rcs"
  cat /proc/net/rpc/nfsd > "$1/rpc"
  dmesg > "$1/dmesg"
}
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
# The deltas, read by rig with wire's procedure names (crates/verdict/src/nfsd_stats.rs): the
# reply cache's counters (hits/misses/not cached/...), the `rc`, `rpc` and `proc3` lines of
# /proc/net/rpc/nfsd, into the case's kernel.txt; it prints the number of new dmesg lines.
kernel_txt=$RIG_OUT/$RIG_CASE.kernel.txt
new_dmesg=$("$RIG_CASE_BIN" guest nfsd-deltas --counters nfs3 --before /tmp/before --after /tmp/after \
  --out "$kernel_txt")
# The trace, with the sources enabled on this kernel as its first line; one byte over rig judge's
# 16 MiB limit at most, so an overflowing copy is refused rather than judged truncated.
verdict_file="$RIG_OUT/$RIG_CASE.verdict.json"
ftrace="$RIG_OUT/$RIG_CASE.ftrace.txt"
first="# rig-sources: $trace_sources"
printf '%s\n' "$first" > "$ftrace"
[ -e $T/trace ] && head -c $(( 16777217 - ${#first} - 1 )) $T/trace >> "$ftrace"
"$RIG_CASE_BIN" judge --verdict "$verdict_file" --ftrace "$ftrace" --write > /tmp/judge.out 2>&1
judge_rc=$?
echo "== rig judge (exit $judge_rc)"
while IFS= read -r line || [ -n "$line" ]; do
  printf '%s\n' "$line"
  # rig judge's key=value lines (a key of [a-z_] only) join the deltas.
  key=${line%%=*}
  case $line in *=*) case $key in ''|*[!a-z_]*) ;; *) printf '%s\n' "$line" >> "$kernel_txt" ;; esac ;; esac
done < /tmp/judge.out
echo "== deltas"
deltas=
while IFS= read -r line || [ -n "$line" ]; do
  printf '%s\n' "$line"
  deltas="$deltas $line"
done < "$kernel_txt"
echo "== new dmesg lines ($new_dmesg)"
[ "$new_dmesg" = 0 ] || tail -n "$new_dmesg" /tmp/after/dmesg
# The RESULT line, from rig judge's exit status and the verdict read as rig's own type
# (crates/rig/src/guest.rs counted_result): 0 pass, 1 fail (the reason is the verdict's
# "failure"), 2 no count (bad input: no verdict file, an unreadable trace, the XID missing from
# it), 3 nothing sent (a scenario this transport cannot run: a skip, whose reason the client's
# RESULT gives; or a client that failed before its XID, whose own RESULT fails the case). A
# count that failed is a harness failure of the case, never a pass. The script ends well either
# way: the RESULT line is the case's verdict.
rig_guest counted-result --verdict "$verdict_file" --judge-output /tmp/judge.out \
  --judge-rc "$judge_rc" kernel="$release" dmesg_new="$new_dmesg" $deltas
exit 0
