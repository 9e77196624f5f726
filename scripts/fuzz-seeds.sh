#!/usr/bin/env bash
# The committed seeds of each cargo-fuzz target live in its default corpus, fuzz/corpus/<target>/,
# so a plain `cargo fuzz run <target>` starts from them (libFuzzer adds what it finds there too:
# those files have 40-hex-digit names and are gitignored; seeds have descriptive names).
# This copies each target's seeds there from their sources:
#   nfs3, rpc_message, private_data   fuzz/seeds/<target>/ (crates/wire/examples/gen_fuzz_seeds.rs)
#   nfs4                              fuzz/seeds/nfs4/ (crates/trace/examples/gen_nfs4_seeds.rs over
#                                     the NFSv4.1 fixture captures)
#   rpcrdma_header, svcrdma_classify  fixtures/ok, fixtures/err, fixtures/pcap-messages/<kernel>/
#   trace_capture                     the first 16 KiB of frames of each fixtures/pcap capture
#                                     (committed as trace_capture/head-*.pcap, -max_len is 16384)
#   engine_ops                        fixed byte patterns (a policy byte, then operations)
# Usage: scripts/fuzz-seeds.sh [--check]   --check: exit 1 when a committed seed is missing or stale.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = --check ] && check=1
problems=0
put() { # put <target> <name> <source file>
  local dest="fuzz/corpus/$1/$2"
  if [ $check = 1 ]; then
    if ! cmp -s "$3" "$dest"; then echo "fuzz-seeds: $dest missing or differs from $3" >&2; problems=$((problems + 1)); fi
  else
    mkdir -p "fuzz/corpus/$1"; cp "$3" "$dest"
  fi
}
for target in nfs3 nfs4 rpc_message private_data; do
  for f in fuzz/seeds/$target/*; do put "$target" "$(basename "$f")" "$f"; done
done
for target in rpcrdma_header svcrdma_classify; do
  for kind in ok err; do
    for f in fixtures/$kind/*.bin; do put "$target" "$kind-$(basename "$f")" "$f"; done
  done
  for dir in fixtures/pcap-messages/*/; do
    kernel=$(basename "$dir")
    for f in "$dir"*.bin; do put "$target" "$kernel-$(basename "$f")" "$f"; done
  done
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# engine_ops: arbitrary-decoded; one seed per DRC policy byte, each with a counting byte run.
for policy in 0 1 2; do
  { printf "\\x0$policy"; for i in $(seq 0 63); do printf "\\x$(printf %02x $((i * 4 + policy)))"; done; } >"$tmp/policy-$policy.bin"
  put engine_ops "policy-$policy.bin" "$tmp/policy-$policy.bin"
done
for capture in fixtures/pcap/*.pcap; do
  seed="fuzz/corpus/trace_capture/head-$(basename "$capture")"
  if [ ! -s "$seed" ]; then echo "fuzz-seeds: $seed missing" >&2; problems=$((problems + 1)); fi
done
if [ $check = 1 ]; then
  [ $problems = 0 ] || { echo "fuzz-seeds: $problems seeds stale; run scripts/fuzz-seeds.sh and commit fuzz/corpus" >&2; exit 1; }
  echo "fuzz-seeds: every committed seed matches its source"
else
  for t in fuzz/corpus/*/; do
    printf '  %-18s %4d seeds\n' "$(basename "$t")" "$(git ls-files --others --cached --exclude-standard "$t" | wc -l)"
  done
fi
