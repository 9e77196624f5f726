# Stop `rig serve` (SIGTERM → --stats JSON) and look for double executions: the stats list
# executions per (slot, xid, procedure); a non-idempotent namespace procedure executed more than
# once for one xid means a retransmit after the reconnect missed the DRC. A WRITE executed twice
# rewrites the same data (counted, not failed).
. /rig/lib/rig-suite.sh
serve_stop || { rig_result fail step=serve-stop; exit 1; }
f=$RIG_OUT/serve-classic.stats.json
[ -s "$f" ] || { rig_result fail step=no-stats; exit 1; }
cp "$f" "$RIG_OUT/kclient.stats.json"
head -c 6000 "$f"; echo
# Pretty JSON, ExecutionCount fields in declaration order: "procedure" comes before "executions".
count_double() { # <procedure regex>
  awk -v want="$1" '
    /"procedure":/ { p = $2; gsub(/[",]/, "", p) }
    /"executions": *[0-9]/ { n = $2; gsub(/,/, "", n); if (n + 0 > 1 && p ~ want) c++ }
    END { print c + 0 }' "$f"
}
double_namespace=$(count_double '^(CREATE|MKDIR|SYMLINK|MKNOD|REMOVE|RMDIR|RENAME|LINK|SETATTR)$')
double_write=$(count_double '^WRITE$')
executed=$(grep -c '"executions": *[0-9]' "$f")
if [ "$executed" -gt 0 ] && [ "$double_namespace" = 0 ]; then v=pass; else v=fail; fi
rig_result $v stats_bytes=$(stat -c %s "$f") xids_executed=$executed \
  double_namespace_executions=$double_namespace double_write_executions=$double_write \
  drc_hits=$(grep -o '"hit[^"]*": *[0-9]*' "$f" | head -1 | grep -o '[0-9]*$')
