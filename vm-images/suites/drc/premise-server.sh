# Server side of case premise.send-completion: the Send-completion premise of the 2026 DRC
# series measured on this kernel's svcrdma ("a reply whose Send has completed is in the client's
# receive buffer"). The svcrdma Send tracepoints are enabled and the trace cleared before
# rig_ready; the client answers one NULL, cuts every frame from this guest on the rig's relay,
# sends a second NULL and, after the cut has stood a while, writes <case>.cut. The trace copied
# at that moment holds what svcrdma posted and what completed while the client had nothing of
# the reply; <case>.copied lets the client mend the cut. `rig guest send-completion-result`
# (crates/verdict/src/send_completion.rs) judges the premise from the two.
# Kernel: svc_rdma_post_send traces svcrdma_post_send; svc_rdma_wc_send traces svcrdma_wc_send
# on IB_WC_SUCCESS only, svcrdma_wc_send_flush / _err otherwise
# (net/sunrpc/xprtrdma/svc_rdma_sendto.c, see docs/findings.md for the lines per kernel).
. /rig/lib/rig-suite.sh
T=/sys/kernel/tracing
rig_case_bin
events="svcrdma_post_send svcrdma_wc_send svcrdma_wc_send_err svcrdma_wc_send_flush"
for e in $events; do
  f=$T/events/rpcrdma/$e/enable
  [ -e "$f" ] || { rig_result fail step=tracepoint reason=no-rpcrdma:$e; exit 1; }
  echo 1 > "$f"
done
: > $T/trace
rig_ready
cut_seen=yes
rig_wait_file "$RIG_SYNC/$RIG_CASE.cut" 90 || cut_seen=no
# Bounded copy (rig reads at most its input limit anyway).
head -c 1048576 $T/trace > "$RIG_OUT/$RIG_CASE.during-cut.txt"
: > "$RIG_SYNC/$RIG_CASE.copied"
rig_wait_client_done 120 || { rig_result fail step=client-not-done; exit 1; }
head -c 1048576 $T/trace > "$RIG_OUT/$RIG_CASE.after-mend.txt"
for e in $events; do echo 0 > $T/events/rpcrdma/$e/enable; done
echo "== svcrdma Send events while the cut stood (cut signalled: $cut_seen)"
grep -v '^#' "$RIG_OUT/$RIG_CASE.during-cut.txt"
echo "== svcrdma Send events once mended"
grep -v '^#' "$RIG_OUT/$RIG_CASE.after-mend.txt"
echo "== client"
cat "$RIG_OUT/$RIG_CASE.client.json"
rig_guest send-completion-result --client "$RIG_OUT/$RIG_CASE.client.json" \
  --trace-during-cut "$RIG_OUT/$RIG_CASE.during-cut.txt" --kernel-txt "$RIG_OUT/$RIG_CASE.kernel.txt"
exit 0
