# Stop `rig serve` (SIGTERM → stats JSON) and show the stats.
. /rig/lib/rig-suite.sh
policy=$(cat /tmp/serve.policy)
serve_stop || { rig_result fail step=serve-stop; exit 1; }
f=$RIG_OUT/serve-$policy.stats.json
cat "$RIG_OUT/serve-$policy.log"; echo "== $f"; head -c 6000 "$f"; echo
[ -s "$f" ] && rig_result pass stats=$policy || rig_result fail step=stats
