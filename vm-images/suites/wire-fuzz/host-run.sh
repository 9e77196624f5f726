#!/bin/sh
# Host side of `just fuzz-wire` (not a guest script): run the wire-fuzz suite on each kernel,
# one kernel at a time, each into its own output dir (RIG_INTEROP_OUT, so other suites' runs are
# not blocked), then collect per kernel:
#   target/interop/wire-fuzz/<kernel>/report.json     rig fuzz-wire's report (cases, outcome
#                                                     histogram per target, divergences) plus
#                                                     kernel_log_hits / kernel_log_lines
#   target/interop/wire-fuzz/<kernel>/summary.txt     its text summary + kernel_log_hits
# and on a kernel-watch hit target/interop/findings/<kernel>-<seed>-<index>/ with console.log,
# kmsg.log, case-log.jsonl, finding.json and reproducer.jsonl (the last logged case: the first
# suspect; ddmin over the log needs one guest boot per test and is not automated yet).
# Usage: host-run.sh SECONDS SEED KERNEL... [-- extra interop run args]
#        WIRE_FUZZ_REPLAY_FILE=case.json host-run.sh 0 0 KERNEL...   (replay one case per kernel
#        on a fresh boot: does the finding reproduce from that case alone?)
#        WIRE_FUZZ_SKIP_FAMILIES="read-overlap" host-run.sh ...   (fuzz past a known crash)
#        WIRE_FUZZ_KEEP_GOING=1 host-run.sh ...   (do not stop at a kernel-watch hit)
#        WIRE_FUZZ_GUIDED=1 host-run.sh ...   (guided: corpus mutants besides the families; every
#        run reports distinct kernel-event signatures over time and keeps <kernel>/corpus/)
set -u
seconds=$1; seed=$2; shift 2
kernels=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do kernels="$kernels $1"; shift; done
[ "${1:-}" = "--" ] && shift
root=$(pwd)
base=$root/target/interop/wire-fuzz
mkdir -p "$base" "$root/target/interop/findings"
env_file=$base/wire-fuzz.env
printf 'WIRE_FUZZ_SECONDS=%s\nWIRE_FUZZ_SEED=%s\nWIRE_FUZZ_TIMEOUT_MS=%s\nWIRE_FUZZ_SKIP_FAMILIES="%s"\nWIRE_FUZZ_GUIDED=%s\nWIRE_FUZZ_KEEP_GOING=%s\n' \
  "$seconds" "$seed" "${WIRE_FUZZ_TIMEOUT_MS:-1000}" "${WIRE_FUZZ_SKIP_FAMILIES:-}" \
  "${WIRE_FUZZ_GUIDED:-0}" "${WIRE_FUZZ_KEEP_GOING:-0}" > "$env_file"
replay_args=""
if [ -n "${WIRE_FUZZ_REPLAY_FILE:-}" ]; then
  echo "WIRE_FUZZ_REPLAY=/rig/etc/replay.json" >> "$env_file"
  replay_args="--share-file $WIRE_FUZZ_REPLAY_FILE:etc/replay.json"
fi
status=0
for kernel in $kernels; do
  # A replay keeps its own directories, so the run it replays stays intact.
  out=$base/$kernel${WIRE_FUZZ_REPLAY_FILE:+-replay}
  rm -rf "$out"; mkdir -p "$out"
  echo "== wire-fuzz on $kernel: ${seconds}s, seed $seed"
  RIG_INTEROP_OUT=$out cargo run -q -p interop --release -- run --suite wire-fuzz \
    --kernel "$kernel" --jobs 1 --share-file "$env_file:etc/wire-fuzz.env" $replay_args "$@" || status=1
  # Each interop run keeps its own directory under runs/; `last` links to this one.
  run=$out/last/runs/$kernel/wire-fuzz
  share=$run/share/out
  [ -s "$share/wire-fuzz.report.json" ] && cp "$share/wire-fuzz.report.json" "$out/report.json"
  # Kernel-event feedback: the cases that found a new signature, and the events enabled.
  [ -d "$share/corpus" ] && cp -r "$share/corpus" "$out/corpus"
  [ -s "$share/trace-events.txt" ] && cp "$share/trace-events.txt" "$out/"
  # The per-kernel report also carries the kernel watch's hits (first 100 lines).
  if [ -s "$out/report.json" ]; then
    python3 - "$out/report.json" "$share/kernel-watch.hits" "$kernel" <<'PY'
import json, sys
path, hits, kernel = sys.argv[1:4]
report = json.load(open(path))
try:
    with open(hits) as f:
        lines = [line.rstrip("\n") for line in f][:100]
except OSError:
    lines = None
report["kernel"] = kernel
report["kernel_log_hits"] = None if lines is None else len(lines)
report["kernel_log_lines"] = lines or []
with open(path, "w") as f:
    json.dump(report, f, indent=2)
    f.write("\n")
PY
  fi
  {
    cat "$share/wire-fuzz.summary.txt" 2>/dev/null || echo "no fuzz-wire summary (see $run)"
    echo "kernel_log_hits $(wc -l < "$share/kernel-watch.hits" 2>/dev/null || echo unknown)"
  } > "$out/summary.txt"
  cat "$out/summary.txt"
  # New (unlisted) divergences fail the recipe, as `rig fuzz-wire` does on the host.
  new=$(sed -n 's/^  "unknown_divergences": \([0-9]*\).*/\1/p' "$out/report.json" 2>/dev/null)
  [ "${new:-0}" -gt 0 ] && { echo "$kernel: $new new divergence(s), see $share/divergences"; status=1; }
  if [ -s "$share/kernel-watch.hits" ]; then
    status=1
    last=$(tail -n 1 "$share/wire-fuzz.case-log.jsonl" 2>/dev/null)
    index=$(printf '%s' "$last" | sed -n 's/.*"index": *\([0-9]*\).*/\1/p')
    tag=${index:-unknown}
    # A keep-going run did not stop at the hit: its last case is no suspect.
    [ "${WIRE_FUZZ_KEEP_GOING:-0}" = 1 ] && { tag=keep-going; index=""; }
    finding=$root/target/interop/findings/$kernel-$seed-$tag${WIRE_FUZZ_REPLAY_FILE:+-replay}
    mkdir -p "$finding"
    cp "$run/srv.console" "$finding/console.log" 2>/dev/null
    cp "$share/kmsg.log" "$share/wire-fuzz.case-log.jsonl" "$finding/" 2>/dev/null
    mv "$finding/wire-fuzz.case-log.jsonl" "$finding/case-log.jsonl" 2>/dev/null
    printf '%s\n' "$last" > "$finding/reproducer.jsonl"
    first=$(head -n 1 "$share/kernel-watch.hits" | sed 's/\\/\\\\/g; s/"/\\"/g')
    printf '{"kernel": "%s", "seed": %s, "index": %s, "line": "%s", "target": "nfsd:20049"}\n' \
      "$kernel" "$seed" "${index:-null}" "$first" > "$finding/finding.json"
    echo "KERNEL-LOG HIT on $kernel: $finding"
  fi
done
echo "== wire-fuzz summary (seed $seed, ${seconds}s per kernel)"
for kernel in $kernels; do
  r=$base/$kernel${WIRE_FUZZ_REPLAY_FILE:+-replay}/report.json
  if [ -s "$r" ]; then
    sed -n 's/^  "\(cases_sent\|cases_per_sec\|unknown_divergences\)": \(.*\),$/\1=\2/p' "$r" |
      tr '\n' ' ' | sed "s/^/$kernel: /"; echo "$(tail -n 1 "${r%/report.json}/summary.txt")"
  else
    echo "$kernel: no report"
  fi
done
exit $status
