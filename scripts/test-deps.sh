#!/usr/bin/env bash
# What `just test` needs on a fresh Debian 12 machine, installed the way `just interop` installs
# its host packages: Debian packages as root (else the one `sudo apt-get install ...` line to run),
# the rustfmt/clippy components, cargo-fuzz. Prints what it installs; silent when all is present.
set -euo pipefail
export PATH="$HOME/.cargo/bin:$PATH"
# libibverbs-dev/librdmacm-dev link crates/verbs; pkg-config finds them; tshark is the live
# Wireshark oracle in the trace tests; util-linux gives setpriv (qemu's parent-death signal).
packages=(libibverbs-dev librdmacm-dev pkg-config tshark)
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
done
. "$(dirname "$0")/debian-packages.sh"
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
