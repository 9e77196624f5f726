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
. /rig/lib/rig-suite.sh
T=/sys/kernel/tracing
snap() { # <dir>
  mkdir -p "$1"
  cat /proc/fs/nfsd/reply_cache_stats > "$1/rcs"
  cat /proc/net/rpc/nfsd > "$1/rpc"
  dmesg > "$1/dmesg"
}
snap /tmp/before
[ -e $T/trace ] && : > $T/trace
rig_ready
rig_wait_client_done 120 || { rig_result fail step=client-not-done; exit 1; }
# Replies still in flight when the client exits are counted once nfsd finishes them.
sleep 0.3
snap /tmp/after
# reply_cache_stats: "name: value" lines; keep the counters (hits/misses/not cached/...).
rcs_delta() {
  awk -F: 'NR == FNR { before[$1] = $2 + 0; next }
           { v = $2 + 0; d = v - before[$1]; key = $1; gsub(/ /, "_", key)
             if (key ~ /hits|misses|not_cached|num_entries|payload|acked_evictions/) printf "%s=%d\n", key, d }' \
    /tmp/before/rcs /tmp/after/rcs
}
# /proc/net/rpc/nfsd "rc hits misses nocache" and "proc3 <n> null getattr ... commit".
rpc_delta() {
  awk 'NR == FNR { for (i = 2; i <= NF; i++) before[$1, i] = $i; next }
       $1 == "rc" { printf "rc_hits=%d\nrc_misses=%d\nrc_nocache=%d\n", $2 - before["rc", 2], $3 - before["rc", 3], $4 - before["rc", 4] }
       $1 == "rpc" { printf "rpc_calls=%d\nrpc_badcalls=%d\n", $2 - before["rpc", 2], $3 - before["rpc", 3] }
       $1 == "proc3" {
         split("null getattr setattr lookup access readlink read write create mkdir symlink mknod remove rmdir rename link readdir readdirplus fsstat fsinfo pathconf commit", names, " ")
         for (i = 3; i <= NF && i - 2 <= 22; i++) { d = $i - before["proc3", i]; if (d) printf "proc3_%s=%d\n", names[i - 2], d }
       }' /tmp/before/rpc /tmp/after/rpc
}
new_dmesg=$(( $(wc -l < /tmp/after/dmesg) - $(wc -l < /tmp/before/dmesg) ))
[ "$new_dmesg" -lt 0 ] && new_dmesg=0
{ rcs_delta; rpc_delta; } > "$RIG_OUT/$RIG_CASE.kernel.txt"
# The trace, with the sources enabled on this kernel as its first line; one byte over rig judge's
# 16 MiB limit at most, so an overflowing copy is refused rather than judged truncated.
verdict_file="$RIG_OUT/$RIG_CASE.verdict.json"
ftrace="$RIG_OUT/$RIG_CASE.ftrace.txt"
{ echo "# rig-sources: $(cat /tmp/rig-trace-sources 2>/dev/null)"
  [ -e $T/trace ] && cat $T/trace; } | head -c 16777217 > "$ftrace"
rig_case_bin
"$RIG_CASE_BIN" judge --verdict "$verdict_file" --ftrace "$ftrace" --write > /tmp/judge.out 2>&1
judge_rc=$?
grep -E '^[a-z_]+=' /tmp/judge.out >> "$RIG_OUT/$RIG_CASE.kernel.txt"
echo "== rig judge (exit $judge_rc)"; cat /tmp/judge.out
echo "== deltas"; cat "$RIG_OUT/$RIG_CASE.kernel.txt"
echo "== new dmesg lines ($new_dmesg)"; tail -n "$new_dmesg" /tmp/after/dmesg
# rig judge: 0 pass, 1 fail (the reason is the verdict's "failure"), 2 bad input (no verdict from
# the client, whose own RESULT already says why; or an unreadable trace): recorded, not failed.
verdict=pass judged=pass reason=
case $judge_rc in
  0) ;;
  1) verdict=fail judged=fail
     reason=$(json_field failure "$verdict_file")
     [ -n "$reason" ] || reason=$(sed -n 's/^rig judge: fail: //p' /tmp/judge.out | head -1)
     reason=$(printf '%s' "$reason" | tr -s ' \t=' '___') ;;
  *) judged=error ;;
esac
rig_result $verdict kernel=$(uname -r) dmesg_new=$new_dmesg judge=$judged ${reason:+"reason=$reason"} \
  $(tr '\n' ' ' < "$RIG_OUT/$RIG_CASE.kernel.txt")
