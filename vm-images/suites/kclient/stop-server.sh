# Stop `rig serve` (SIGTERM → --stats JSON) and look for double executions: the stats list
# executions per (xid, procedure); a non-idempotent procedure executed more than once for one xid
# means a retransmit after the reconnect missed the DRC.
. /rig/lib/rig-suite.sh
serve_stop || { rig_result fail step=serve-stop; exit 1; }
f=$RIG_OUT/serve-classic.stats.json
[ -s "$f" ] || { rig_result fail step=no-stats; exit 1; }
cp "$f" "$RIG_OUT/kclient.stats.json"
head -c 6000 "$f"; echo
rig_result pass stats_bytes=$(stat -c %s "$f")
