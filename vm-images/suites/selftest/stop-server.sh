# Stop the last `rig serve` (SIGTERM → stats JSON) and check every policy left its stats.
. /rig/lib/rig-suite.sh
serve_stop || { rig_result fail step=serve-stop; exit 1; }
missing=
for policy in classic acked acked-mark; do
  f=$RIG_OUT/serve-$policy.stats.json
  [ -s "$f" ] || missing="$missing,$policy"
  echo "== $f"; head -c 4000 "$f"; echo
done
if [ -z "$missing" ]; then rig_result pass stats=classic,acked,acked-mark
else rig_result fail step=stats missing=${missing#,}; fi
