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
# The stats read as rig's own type (crates/rig/src/guest.rs serve_stats_result).
rig_guest serve-stats-result --stats "$f"
