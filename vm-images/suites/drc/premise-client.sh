# Client side of case premise.send-completion (the server side says what is measured): `rig
# send-completion` against nfsd's listener through the rig's relay. Its JSON is the server's
# input; its own RESULT only says whether it ran (the finding is the server's RESULT).
. /rig/lib/rig-suite.sh
rig_case_bin
out="$RIG_OUT/$RIG_CASE.client.json"
# 1 s of cut: inside rxe's RC retry budget (7 retries of its ~0.5 s timer) so the Send is still
# outstanding, not failed, when the trace is copied; siw hands the message to TCP at once.
"$RIG_CASE_BIN" send-completion --server "$RIG_SERVER_IP:$NFS_RDMA_PORT" --case "$RIG_CASE" \
  --cut-ms 1000 --signal-cut "$RIG_SYNC/$RIG_CASE.cut" --await-copied "$RIG_SYNC/$RIG_CASE.copied" \
  > "$out" 2> "/tmp/$RIG_CASE.err"
rc=$?
cat "/tmp/$RIG_CASE.err" "$out"
if [ "$rc" = 0 ]; then rig_result pass; else rig_result fail step=send-completion rc=$rc; fi
exit 0
