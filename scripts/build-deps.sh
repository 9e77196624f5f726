#!/usr/bin/env bash
# What `cargo build -p rig` needs before `just interop` can run anything: the guests' rig links
# rdma-core (crates/verbs), so its headers and libraries come first, installed the way
# scripts/test-deps.sh installs its list (as root; otherwise the one `sudo apt-get install ...`
# line to run). `just interop` installs the rest of what it lacks itself (interop/src/host.rs),
# but only once it is built. Silent when all is present.
set -euo pipefail
# Also sourced by scripts/test-deps.sh, which installs these with its own list in one go.
build_packages=(
  gcc             # cc: rustc links through it; build scripts of -sys crates compile C
  libc6-dev       # the C library headers and crt objects the links need
  libibverbs-dev  # crates/verbs links libibverbs
  librdmacm-dev   # crates/verbs links librdmacm
  pkg-config      # crates/verbs' build script finds both
)
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  . "$(dirname "$0")/debian-packages.sh"
  mapfile -t missing < <(missing_debian_packages "${build_packages[@]}")
  install_debian_packages "just interop" build-deps "${missing[@]}"
fi
