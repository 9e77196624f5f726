#!/usr/bin/env bash
# Run cargo-fuzz targets for a bounded time each and print exec/s per target.
# Usage: scripts/fuzz.sh <sanitizer: none|address> <seconds> <target>...
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
sanitizer=$1 seconds=$2
shift 2
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz missing: cargo install --locked cargo-fuzz" >&2; exit 2; }
mkdir -p corpus artifacts
cargo fuzz build --sanitizer "$sanitizer"  # all targets in one build
summary=()
for target in "$@"; do
  mkdir -p "corpus/$target"
  seeds=()
  [ -d "seeds/$target" ] && seeds=("seeds/$target")
  case $target in
    # Whole Send payloads, named by kind: hand-built ok/err fixtures and the captured kernel traffic.
    rpcrdma_header|svcrdma_classify)
      seeds+=(../fixtures/ok ../fixtures/err ../fixtures/pcap-messages/linux-6.1 ../fixtures/pcap-messages/linux-7.2);;
    # Real captures (-max_len below keeps mutating 250 KB files affordable).
    trace_capture) seeds+=(../fixtures/pcap);;
  esac
  extra=()
  [ "$target" = trace_capture ] && extra=(-max_len=16384)
  # The target's libFuzzer dictionary (RPC-over-RDMA/RPC/NFS words; also named in fuzz/options/).
  [ -f "dict/$target.dict" ] && extra+=(-dict="dict/$target.dict")
  log=$(mktemp)
  # corpus/<target> holds the committed seeds (scripts/fuzz-seeds.sh) and grows between runs (what
  # libFuzzer adds is gitignored); seeds/ is committed and read-only.
  if ! cargo fuzz run --sanitizer "$sanitizer" "$target" "corpus/$target" "${seeds[@]}" -- \
      -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 "${extra[@]}" >"$log" 2>&1; then
    tail -40 "$log"; echo "fuzz target $target FAILED (artifacts in fuzz/artifacts/$target)" >&2; exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  rate=$(( runs / (secs > 0 ? secs : 1) ))
  summary+=("$(printf '%-20s %10s runs %5ss %9s exec/s  cov %s' "$target" "$runs" "$secs" "$rate" "${cov:-?}")")
  rm -f "$log"
done
echo "fuzz summary (sanitizer=$sanitizer, ${seconds}s per target):"
printf '  %s\n' "${summary[@]}"
