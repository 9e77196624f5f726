# Client: `rig svcrdma-rules` against kernel nfsd with the profile of the kernel under test
# (both guests boot the same kernel: the profile whose `release` line is this `uname -r`), then
# one RESULT line per rule from its rows: pass when the negative case got the profile's answer
# and the positive control a reply, fail naming the rule and the kernel otherwise.
. /rig/lib/rig-suite.sh
[ -f /rig/etc/svcrdma-rules.env ] && . /rig/etc/svcrdma-rules.env
release=$(uname -r)
rig_case_bin
profile=$("$RIG_CASE_BIN" guest svcrdma-profile --dir /rig/etc/svcrdma-profiles --release "$release")
if [ -z "$profile" ]; then
  rig_result fail step=profile kernel=$release reason=no_profile_with_this_release_in_fixtures/svcrdma-profiles
  exit 1
fi
dangerous=
[ "${SVCRDMA_RULES_INCLUDE_DANGEROUS:-0}" = 1 ] && dangerous=--include-dangerous
table=$RIG_OUT/svcrdma-rules.txt
# 5 s per event: with three guest pairs under TCG on 2 cores, 7.x's reply to the
# read-list-truncated positive control (a WRITE pulling a 6644-byte Read chunk) once missed a
# 2 s deadline and counted as a drop (2026-12-02). Only the cases whose expected answer is a drop
# wait it out.
"$RIG_CASE_BIN" svcrdma-rules --target "$RIG_SERVER_IP:$NFS_RDMA_PORT" --profile "$profile" \
  $dangerous --timeout-ms "${SVCRDMA_RULES_TIMEOUT_MS:-5000}" \
  --report "$RIG_OUT/svcrdma-rules.report.json" \
  --write-profile "$RIG_OUT/svcrdma-rules.observed.toml" \
  --log "$RIG_OUT/svcrdma-rules.case-log.jsonl" --rows "$RIG_OUT/svcrdma-rules.rows.jsonl" \
  > "$table" 2> /tmp/svcrdma-rules.err
rc=$?
cat "$table"
cat /tmp/svcrdma-rules.err
# One RESULT per rule that ran (also when the run stopped early), from the rows read as rig's own
# type, then the run's (crates/rig/src/guest.rs svcrdma_results): rc 1 = mismatches (failed per
# rule); 2 = the run itself failed (a connect refused after a kernel crash, a bad profile): the
# rules after it never ran.
rig_guest svcrdma-results --rows "$RIG_OUT/svcrdma-rules.rows.jsonl" --profile "$profile" \
  --rc "$rc" --stderr /tmp/svcrdma-rules.err --release "$release" ${dangerous:+--dangerous}
