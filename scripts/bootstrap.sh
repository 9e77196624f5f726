#!/usr/bin/env bash
# The README's one set-up line, for a stock Debian 12 with a Rust toolchain (rustup) and this
# clone: the Debian packages any Rust build needs (gcc and libc6-dev: rustc links through `cc`;
# ca-certificates: crates.io over https; git: the tests and recipes run `git ls-files`), then
# `just` from crates.io. `pip install rust-just` is not used: a stock Debian 12 Python refuses it
# (PEP 668, "externally-managed-environment"). Everything else is installed by the recipes
# themselves (`just test` through scripts/test-deps.sh, `just interop` through interop's host
# check). As root it installs; otherwise it prints the one `sudo apt-get install ...` line.
# `just fresh-check` runs this line in a fresh debootstrap root, so it stays true.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
command -v cargo >/dev/null || {
  echo "bootstrap: no cargo on PATH; install a Rust toolchain first (https://rustup.rs), then rerun" >&2
  exit 2
}
. scripts/debian-packages.sh
mapfile -t missing < <(missing_debian_packages gcc libc6-dev ca-certificates git)
install_debian_packages "bootstrap" bootstrap "${missing[@]}"
# Pinned: the version this rig was last checked with (a newer one may need a newer rustc).
just_version=1.59.0
if ! command -v just >/dev/null; then
  echo "bootstrap: cargo install --locked just@$just_version (into ~/.cargo/bin)"
  cargo install --quiet --locked "just@$just_version"
fi
echo "bootstrap: $(just --version); now: just interop, just test"
