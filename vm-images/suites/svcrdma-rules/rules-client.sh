# Client: `rig svcrdma-rules` against kernel nfsd with the profile of the kernel under test
# (both guests boot the same kernel: the profile whose `release` line is this `uname -r`), then
# one RESULT line per rule from its table: pass when the negative case got the profile's answer
# and the positive control a reply, fail naming the rule and the kernel otherwise.
. /rig/lib/rig-suite.sh
[ -f /rig/etc/svcrdma-rules.env ] && . /rig/etc/svcrdma-rules.env
release=$(uname -r)
profile=
for f in /rig/etc/svcrdma-profiles/*.toml; do
  grep -qxF "release = \"$release\"" "$f" && { profile=$f; break; }
done
if [ -z "$profile" ]; then
  rig_result fail step=profile kernel=$release reason=no_profile_with_this_release_in_fixtures/svcrdma-profiles
  exit 1
fi
kernel=$(sed -n 's/^kernel = "\(.*\)"$/\1/p' "$profile" | head -1)
dangerous=
[ "${SVCRDMA_RULES_INCLUDE_DANGEROUS:-0}" = 1 ] && dangerous=--include-dangerous
table=$RIG_OUT/svcrdma-rules.txt
rig_case_bin
# 5 s per event: with three guest pairs under TCG on 2 cores, 7.x's reply to the
# read-list-truncated positive control (a WRITE pulling a 6644-byte Read chunk) once missed a
# 2 s deadline and counted as a drop (2026-12-02). Only the cases whose expected answer is a drop
# wait it out.
"$RIG_CASE_BIN" svcrdma-rules --target "$RIG_SERVER_IP:$NFS_RDMA_PORT" --profile "$profile" \
  $dangerous --timeout-ms "${SVCRDMA_RULES_TIMEOUT_MS:-5000}" \
  --report "$RIG_OUT/svcrdma-rules.report.json" \
  --write-profile "$RIG_OUT/svcrdma-rules.observed.toml" \
  --log "$RIG_OUT/svcrdma-rules.case-log.jsonl" > "$table" 2> /tmp/svcrdma-rules.err
rc=$?
cat "$table"
cat /tmp/svcrdma-rules.err
# Table rows: RULE negative|positive expected=A observed=B OK|MISMATCH|SKIPPED; one RESULT per
# rule, in table order, for every rule that ran (also when the run stopped early).
awk -v kernel="$kernel" '
  $2 == "negative" || $2 == "positive" {
    if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
    e = $3; sub(/^expected=/, "", e); o = $4; sub(/^observed=/, "", o)
    want[$1, $2] = e; got[$1, $2] = o; verdict[$1, $2] = $5
  }
  END {
    for (i = 1; i <= n; i++) {
      r = order[i]
      v = "pass"
      if (verdict[r, "negative"] == "MISMATCH" || verdict[r, "positive"] == "MISMATCH") v = "fail"
      extra = verdict[r, "negative"] == "SKIPPED" ? " skipped=dangerous" : ""
      printf "%s rule=%s kernel=%s expected=%s observed=%s control=%s%s\n", v, r, kernel, \
        want[r, "negative"], got[r, "negative"], got[r, "positive"], extra
    }
  }' "$table" > /tmp/svcrdma-rules.results
while read -r verdict fields; do
  # shellcheck disable=SC2086 # key=value words
  rig_result "$verdict" $fields
done < /tmp/svcrdma-rules.results
rules=$(wc -l < /tmp/svcrdma-rules.results)
# rc 1 = mismatches (already failed per rule above); 2 = the run itself failed (a connect refused
# after a kernel crash, a bad profile): the rules after it never ran.
if [ "$rc" -gt 1 ]; then
  rig_result fail step=svcrdma-rules rc=$rc kernel=$kernel rules_run=$rules \
    error=$(head -c 200 /tmp/svcrdma-rules.err | tr -s ' \n\t=' '____')
  exit 1
fi
rig_result pass step=summary kernel=$kernel release=$release rules_run=$rules rc=$rc \
  dangerous=${dangerous:+included}
[ "$rc" = 0 ]
