# Client side of case premise.send-completion (the server side says what is measured): `rig
# send-completion` against nfsd's listener through the rig's relay. Its JSON is the server's
# input; its own RESULT only says whether it ran (the finding is the server's RESULT).
. /rig/lib/rig-suite.sh
rig_case_bin
out="$RIG_OUT/$RIG_CASE.client.json"
# 0.5 s of cut before the copy is asked for (the whole cut, with the server's poll for the
# signal and its copy, measured 1.5 s at 1 s here): well inside rxe's RC retry budget (the
# reply and 5 retransmissions were lost in 1.5 s; 7 retries exhaust it), so on rxe the Send is
# still outstanding, not failed, when the trace is copied; siw completed it within 0.6 ms.
"$RIG_CASE_BIN" send-completion --server "$RIG_SERVER_IP:$NFS_RDMA_PORT" --case "$RIG_CASE" \
  --cut-ms 500 --signal-cut "$RIG_SYNC/$RIG_CASE.cut" --await-copied "$RIG_SYNC/$RIG_CASE.copied" \
  > "$out" 2> "/tmp/$RIG_CASE.err"
rc=$?
cat "/tmp/$RIG_CASE.err" "$out"
if [ "$rc" = 0 ]; then rig_result pass; else rig_result fail step=send-completion rc=$rc; fi
exit 0
