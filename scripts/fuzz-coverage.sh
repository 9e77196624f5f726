#!/usr/bin/env bash
# Line coverage of each fuzz target over its corpus (fuzz/corpus/<target>/, seeds included):
# `cargo fuzz coverage` (an -Cinstrument-coverage build, stable) then llvm-cov from the
# llvm-tools-preview component (installed with rustup when missing, and said so). Prints one
# table (lines covered per crate: wire, engine, trace, the rest of the workspace) and writes an
# HTML report per target to fuzz/coverage/<target>/html/index.html.
# Usage: scripts/fuzz-coverage.sh <target>...
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz missing: cargo install --locked cargo-fuzz" >&2; exit 2; }
if ! rustup component list --installed 2>/dev/null | grep -q '^llvm-tools'; then
  echo "fuzz-coverage: rustup component add llvm-tools-preview"
  rustup component add llvm-tools-preview
fi
host=$(rustc -vV | sed -n 's/^host: //p')
llvm=$(rustc --print sysroot)/lib/rustlib/$host/bin
rows=()
for target in "$@"; do
  extra=()
  [ "$target" = trace_capture ] && extra=(-max_len=16384)
  cargo fuzz coverage --sanitizer none "$target" "corpus/$target" -- "${extra[@]}" >"coverage-$target.log" 2>&1 \
    || { tail -20 "coverage-$target.log"; echo "fuzz-coverage: $target failed" >&2; exit 1; }
  rm -f "coverage-$target.log"
  exe=target/$host/coverage/$host/release/$target
  prof=coverage/$target/coverage.profdata
  ignore='(/\.cargo/registry/|/rustc/|/fuzz/fuzz_targets/|/library/)'
  "$llvm/llvm-cov" show "$exe" -instr-profile="$prof" -format=html -output-dir="coverage/$target/html" \
    -ignore-filename-regex="$ignore" >/dev/null
  json=$("$llvm/llvm-cov" export "$exe" -instr-profile="$prof" -summary-only -ignore-filename-regex="$ignore")
  rows+=("$(python3 -c '
import json, sys
data = json.loads(sys.stdin.read())["data"][0]["files"]
groups = {"wire": "/crates/wire/", "engine": "/crates/engine/", "trace": "/crates/trace/"}
sums = {k: [0, 0] for k in list(groups) + ["other", "total"]}
for f in data:
    lines = f["summary"]["lines"]
    key = next((k for k, p in groups.items() if p in f["filename"]), "other")
    for k in (key, "total"):
        sums[k][0] += lines["covered"]; sums[k][1] += lines["count"]
cell = lambda k: "%5.1f%% %5d/%-5d" % (100.0 * sums[k][0] / sums[k][1], sums[k][0], sums[k][1]) if sums[k][1] else "%19s" % "-"
print("%-18s %s %s %s %s %s" % (sys.argv[1], cell("wire"), cell("engine"), cell("trace"), cell("other"), cell("total")))
' "$target" <<<"$json")")
done
printf '%-18s %19s %19s %19s %19s %19s\n' target "wire lines" "engine lines" "trace lines" "other crates" total
printf '%s\n' "${rows[@]}"
echo "HTML: fuzz/coverage/<target>/html/index.html"
