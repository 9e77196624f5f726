#!/usr/bin/env bash
# Minimise each target's corpus (fuzz/corpus/<target>/) with libFuzzer's -merge=1: the committed
# seeds (descriptive names) always stay; the files libFuzzer added (sha1 names, gitignored) are
# replaced by the smallest set that keeps the coverage of seeds + corpus. Prints before/after.
# Usage: scripts/fuzz-cmin.sh <target>...
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz missing: cargo install --locked cargo-fuzz" >&2; exit 2; }
cargo fuzz build --sanitizer none
bin=target/x86_64-unknown-linux-gnu/release
for target in "$@"; do
  dir=corpus/$target
  mkdir -p "$dir"
  before=$(find "$dir" -maxdepth 1 -type f | wc -l)
  tmp=$(mktemp -d)
  extra=()
  [ "$target" = trace_capture ] && extra=(-max_len=16384)
  "$bin/$target" -merge=1 -timeout=10 -rss_limit_mb=2048 "${extra[@]}" "$tmp/min" "$dir" >"$tmp/log" 2>&1 \
    || { tail -20 "$tmp/log"; echo "fuzz-cmin: merge of $target failed" >&2; rm -rf "$tmp"; exit 1; }
  # libFuzzer names merged files by the sha1 of their content: a seed's copy is dropped.
  declare -A seed_sums=()
  while read -r sum _; do seed_sums[$sum]=1; done < <(find "$dir" -maxdepth 1 -type f -printf '%f\n' | grep -vE '^[0-9a-f]{40}$' | sed "s|^|$dir/|" | xargs -r -d '\n' sha1sum)
  find "$dir" -maxdepth 1 -type f -regextype posix-extended -regex '.*/[0-9a-f]{40}' -delete
  kept=0
  for f in "$tmp"/min/*; do
    [ -e "$f" ] || continue
    name=$(basename "$f")
    [ -n "${seed_sums[$name]:-}" ] && continue
    mv "$f" "$dir/$name"; kept=$((kept + 1))
  done
  unset seed_sums
  after=$(find "$dir" -maxdepth 1 -type f | wc -l)
  printf 'fuzz-cmin: %-18s %6d -> %6d files (%d added by fuzzing kept)\n' "$target" "$before" "$after" "$kept"
  rm -rf "$tmp"
done
