#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build of the host fuzz targets: every [[bin]] of fuzz/Cargo.toml is
# built with `cargo fuzz build -O` (in the builder image cargo adds the $SANITIZER flags) and lands
# in $OUT with <target>_seed_corpus.zip (the committed seeds of fuzz/corpus/<target>/, never the
# sha1-named files libFuzzer added locally), <target>.dict and <target>.options.
#
# Also runs without Docker, on the stable toolchain: set OUT, SRC and WORK to local folders,
# SANITIZER=none, and either put the checkout at $SRC/rpcrdma-rig or set PROJECT_DIR
# (scripts/test-cflite.sh does exactly that in `just test`).
project=${PROJECT_DIR:-$SRC/rpcrdma-rig}
: "${OUT:?OUT must name the output folder}" "${WORK:?WORK must name a scratch folder}"
cd "$project/fuzz"
mkdir -p "$OUT" "$WORK"

targets=$(awk '/^\[\[bin\]\]/ { bin = 1; next } /^\[/ { bin = 0 } bin && /^name *=/ { gsub(/[" ]/, "", $0); sub(/^name=/, "", $0); print }' Cargo.toml)
[ -n "$targets" ] || { echo "build.sh: no [[bin]] targets in fuzz/Cargo.toml" >&2; exit 1; }

flags=(-O)
# Outside the builder image there is no sanitizer runtime on stable: SANITIZER=none builds plain.
[ "${SANITIZER:-address}" = none ] && flags+=(--sanitizer none)
cargo fuzz build "${flags[@]}"

built=${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-gnu/release
for target in $targets; do
  cp "$built/$target" "$OUT/$target"
  rm -f "$OUT/${target}_seed_corpus.zip"
  if [ -d "corpus/$target" ]; then
    seeds=$(cd "corpus/$target" && find . -maxdepth 1 -type f -printf '%f\n' | grep -vE '^[0-9a-f]{40}$' | sort || true)
    if [ -n "$seeds" ]; then
      (cd "corpus/$target" && echo "$seeds" | zip -q -X "$OUT/${target}_seed_corpus.zip" -@)
    fi
  fi
  [ -f "dict/$target.dict" ] && cp "dict/$target.dict" "$OUT/$target.dict"
  [ -f "options/$target.options" ] && cp "options/$target.options" "$OUT/$target.options"
  echo "build.sh: $target -> $OUT/$target"
done
