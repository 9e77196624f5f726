#!/usr/bin/env bash
# `just test` check of the ClusterFuzzLite build (.clusterfuzzlite/build.sh), without Docker:
# 1. as the builder image runs it (SANITIZER=address) with a stub cargo that only records its
#    arguments and writes placeholder binaries: the flags are `fuzz build -O` with no
#    `--sanitizer none`, and every [[bin]] of fuzz/Cargo.toml lands in $OUT with its seed zip,
#    dictionary and options;
# 2. for real on the stable toolchain (SANITIZER=none; cargo recorded, then run): the binaries in
#    $OUT are the fuzz targets, each loads its seed zip's inputs (-runs=0) and its dictionary.
# `just fuzz-smoke` builds the same targets first, so step 2 reuses that build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
real_cargo=$(command -v cargo)
# Independent of build.sh's parser: the line after each [[bin]] header.
mapfile -t targets < <(grep -A1 '^\[\[bin\]\]' "$root/fuzz/Cargo.toml" | sed -n 's/^name = "\(.*\)"$/\1/p')
[ ${#targets[@]} -gt 0 ] || { echo "test-cflite: no targets in fuzz/Cargo.toml" >&2; exit 1; }
fail() { echo "test-cflite: $*" >&2; exit 1; }

check_out() { # check_out <out> <mode>
  local out=$1 target seeds
  for target in "${targets[@]}"; do
    [ -x "$out/$target" ] || fail "$2: $out/$target missing"
    [ -f "$out/${target}_seed_corpus.zip" ] || fail "$2: no seed zip for $target"
    seeds=$(unzip -Z1 "$out/${target}_seed_corpus.zip" | wc -l)
    committed=$(cd "$root" && git ls-files "fuzz/corpus/$target" | wc -l)
    [ "$seeds" = "$committed" ] || fail "$2: $target seed zip has $seeds files, fuzz/corpus/$target commits $committed"
    unzip -Z1 "$out/${target}_seed_corpus.zip" | grep -qE '^[0-9a-f]{40}$' && fail "$2: $target zip holds libFuzzer-added files"
    [ -f "$out/$target.dict" ] || fail "$2: no dictionary for $target"
    grep -qx "dict = $target.dict" "$out/$target.options" || fail "$2: $target.options does not name its dictionary"
  done
  local extra
  extra=$(find "$out" -maxdepth 1 -type f | grep -cvE '/('"$(IFS='|'; echo "${targets[*]}")"')(_seed_corpus\.zip|\.dict|\.options)?$' || true)
  [ "$extra" = 0 ] || fail "$2: unexpected files in \$OUT"
}

# 1. Builder-image mode with a stub cargo.
mkdir -p "$tmp/stub" "$tmp/a/out" "$tmp/a/src" "$tmp/a/work" "$tmp/a/target/x86_64-unknown-linux-gnu/release"
cat >"$tmp/stub/cargo" <<STUB
#!/usr/bin/env bash
echo "\$*" >>"$tmp/a/cargo.log"
for t in ${targets[*]}; do printf '#!/bin/sh\n' >"$tmp/a/target/x86_64-unknown-linux-gnu/release/\$t"; chmod +x "$tmp/a/target/x86_64-unknown-linux-gnu/release/\$t"; done
STUB
chmod +x "$tmp/stub/cargo"
ln -s "$root" "$tmp/a/src/rpcrdma-rig"
PATH="$tmp/stub:$PATH" OUT="$tmp/a/out" SRC="$tmp/a/src" WORK="$tmp/a/work" SANITIZER=address \
  CARGO_TARGET_DIR="$tmp/a/target" bash "$root/.clusterfuzzlite/build.sh" >/dev/null
[ "$(cat "$tmp/a/cargo.log")" = "fuzz build -O" ] || fail "builder mode ran cargo $(cat "$tmp/a/cargo.log")"
check_out "$tmp/a/out" "builder mode"

# 2. Local mode, real build on stable.
mkdir -p "$tmp/b/out" "$tmp/b/work" "$tmp/rec"
cat >"$tmp/rec/cargo" <<REC
#!/usr/bin/env bash
echo "\$*" >>"$tmp/b/cargo.log"
exec "$real_cargo" "\$@"
REC
chmod +x "$tmp/rec/cargo"
PATH="$tmp/rec:$PATH" OUT="$tmp/b/out" SRC="$tmp/b" WORK="$tmp/b/work" SANITIZER=none PROJECT_DIR="$root" \
  bash "$root/.clusterfuzzlite/build.sh" >"$tmp/b/build.log" 2>&1 || { tail -20 "$tmp/b/build.log"; fail "local build failed"; }
# cargo-fuzz then runs `cargo build` itself (recorded too): the first call is build.sh's.
[ "$(head -1 "$tmp/b/cargo.log")" = "fuzz build -O --sanitizer none" ] || fail "local mode ran cargo $(head -1 "$tmp/b/cargo.log")"
check_out "$tmp/b/out" "local mode"
for target in "${targets[@]}"; do
  mkdir -p "$tmp/b/seeds/$target"
  unzip -q "$tmp/b/out/${target}_seed_corpus.zip" -d "$tmp/b/seeds/$target"
  log=$("$tmp/b/out/$target" -runs=0 -dict="$tmp/b/out/$target.dict" "$tmp/b/seeds/$target" 2>&1) || fail "$target -runs=0 failed: $log"
  grep -q "Dictionary: [1-9][0-9]* entries" <<<"$log" || fail "$target did not load its dictionary"
  loaded=$(sed -n 's/.*INFO: *\([0-9]*\) files found in.*/\1/p' <<<"$log" | head -1)
  [ "${loaded:-0}" -gt 0 ] || fail "$target read no seeds from its zip"
  printf '  %-18s %4s seeds  %s\n' "$target" "$loaded" "$(grep -o 'Dictionary: [0-9]* entries' <<<"$log")"
done
echo "test-cflite: build.sh puts ${#targets[@]} targets with seeds, dictionaries and options in \$OUT (builder-image flags and a real stable build)"
