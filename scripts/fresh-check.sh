#!/usr/bin/env bash
# `just fresh-check`: what a fresh Debian 12 machine sees. A minbase Debian 12 root is made by
# debootstrap (the way interop builds its guest roots), this commit is cloned into it, and only the
# host's Rust toolchain comes in from outside: $RUSTUP_HOME bind-mounted read-only, plus the
# rustup binary as the proxies (cargo, rustc, ...) the rustup installer would have put in
# ~/.cargo/bin. Nothing else of the host is visible: no host cargo binaries (cargo-fuzz, just),
# no crates cache, no Debian packages. Inside, as root, it runs the set-up lines of the README's
# first ```sh block (every line but the two `just` commands), then `just test`; with --interop
# also `just interop --suite smoke --kernel linux-6.12`. Everything runs in its own mount and PID
# namespace: every process it starts dies with it, and no mount outlives it.
#
# Prints one line at the end: `fresh-check: passed ...` or `fresh-check: FAILED ...` naming the
# missing program when the log shows one. Exit 0 only when passed.
#
# Usage: scripts/fresh-check.sh [--interop] [--keep]
#   --interop  also the smoke suite on linux-6.12 inside the root (builds VM images there: slower)
#   --keep     keep the root (target/fresh-check/root) for a look afterwards
# Uncommitted changes to tracked files are included (a `git stash create` commit); untracked
# files are not.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
interop=0
keep=0
for arg in "$@"; do
  case "$arg" in
    --interop) interop=1 ;;
    --keep) keep=1 ;;
    *) echo "fresh-check: unknown argument $arg (usage: scripts/fresh-check.sh [--interop] [--keep])" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "fresh-check: needs root (debootstrap, chroot, mount namespaces)" >&2; exit 2; }

missing=()
command -v debootstrap >/dev/null || missing+=(debootstrap)
[ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debian-archive-keyring)
. scripts/debian-packages.sh
install_debian_packages "fresh-check" fresh-check "${missing[@]}"

rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
rustup_bin=$(command -v rustup || echo "$HOME/.cargo/bin/rustup")
[ -d "$rustup_home/toolchains" ] && [ -x "$rustup_bin" ] || {
  echo "fresh-check: no rustup toolchain on this host ($rustup_home, $rustup_bin): the one prerequisite the README names" >&2
  exit 2
}

target=${CARGO_TARGET_DIR:-target}
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
work="$target/fresh-check"
root="$work/root"
log="$work/fresh-check.log"
mkdir -p "$work/debootstrap-cache"
# Never rm -rf through a mount (the toolchain is bind-mounted in while the check runs): refuse
# when anything is still mounted under the root.
remove_root() {
  [ -e "$root" ] || return 0
  if findmnt -rn -o TARGET | grep -q "^$root"; then
    echo "fresh-check: something is still mounted under $root; unmount it first" >&2
    exit 2
  fi
  rm -rf "$root"
}
remove_root
: >"$log"
say() { printf 'fresh-check: %s\n' "$*" | tee -a "$log"; }
started=$(date +%s)
elapsed() { echo $(($(date +%s) - $1)); }

# The commit to check: HEAD, or HEAD plus the uncommitted changes to tracked files.
rev=$(git stash create 2>/dev/null || true)
[ -n "$rev" ] || rev=$(git rev-parse HEAD)
desc="$(git rev-parse --short HEAD)$(git diff --quiet HEAD 2>/dev/null || echo '+uncommitted')"

# The host's Debian mirror (the first non-security URIs: line), as interop's apt.rs reads it.
mirror=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | grep -v security | head -1 || true)
mirror=${mirror:-http://deb.debian.org/debian}
security=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | grep security | head -1 || true)
security=${security:-http://deb.debian.org/debian-security}

say "debootstrap --variant=minbase bookworm ($mirror) into $root"
t=$(date +%s)
if ! debootstrap --variant=minbase --cache-dir="$work/debootstrap-cache" bookworm "$root" "$mirror" >>"$log" 2>&1; then
  echo "fresh-check: FAILED: debootstrap could not make the root (see $log)"
  exit 1
fi
say "root made in $(elapsed "$t") s"
# A stock Debian 12's sources: the release, its updates and its security pocket.
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The network's trust anchors, which are the machine's, not the project's: where https goes
# through an intercepting proxy, its CA is in the host's bundle and nowhere in Debian's. As a local
# CA it joins the root's bundle when the set-up line installs ca-certificates (update-ca-certificates).
if [ -s /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /etc/ssl/certs/ca-certificates.crt "$root/usr/local/share/ca-certificates/host-network.crt"
fi
rm -rf "$root/var/cache/apt/archives/"*.deb

# The clone, as a user would have it.
git clone --quiet --no-hardlinks "$repo" "$root/root/rpcrdma-rig"
git -C "$root/root/rpcrdma-rig" fetch --quiet "$repo" "$rev"
git -C "$root/root/rpcrdma-rig" checkout --quiet --detach "$rev"
# The toolchain: rustup's proxies in ~/.cargo/bin (what rustup-init installs), $RUSTUP_HOME mounted
# read-only below. ~/.cargo itself is the root's own: registry, `cargo install`ed tools.
mkdir -p "$root/root/.cargo/bin" "$root/root/.rustup"
for proxy in rustup cargo rustc rustdoc rustfmt cargo-fmt cargo-clippy clippy-driver; do
  cp "$rustup_bin" "$root/root/.cargo/bin/$proxy"
done

# The set-up lines: the README's first ```sh block, without its `just` commands and comments.
setup=$(awk '/^```sh$/ { inside = 1; next } inside && /^```$/ { exit } inside' README.md |
  sed 's/[[:space:]]*#.*$//' | grep -v '^[[:space:]]*$' | grep -v '^just ' || true)
[ -n "$setup" ] || { echo "fresh-check: FAILED: the README's first \`\`\`sh block has no set-up line"; exit 1; }
commands=("$setup" "just test")
[ "$interop" = 0 ] || commands+=("just interop --suite smoke --kernel linux-6.12")

inner="$root/root/fresh-check-inner.sh"
{
  echo '#!/bin/bash'
  echo 'set -uo pipefail'
  echo 'cd /root/rpcrdma-rig'
  echo 'step() { local name=$1; shift; local t=$(date +%s); echo "fresh-check: step: $name"; bash -euo pipefail -c "$*"; local rc=$?; echo "fresh-check: step-done: $name rc=$rc seconds=$(( $(date +%s) - t ))"; return $rc; }'
  for command in "${commands[@]}"; do
    printf 'step %q %q || exit 1\n' "$(echo "$command" | head -1)" "$command"
  done
} >"$inner"
chmod +x "$inner"

say "running in the root: $(printf '%s; ' "${commands[@]}" | tr '\n' ' ')"
t=$(date +%s)
status=0
# Own mount and PID namespaces: the mounts vanish with them, and --kill-child kills every process
# left in the namespace when its first process ends (or when this script is killed).
timeout --signal=KILL 5400 unshare --mount --pid --fork --kill-child --mount-proc="$root/proc" \
  bash -euo pipefail -c '
    root=$1 rustup_home=$2
    mount --make-rprivate /
    mount --rbind /dev "$root/dev"
    mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
    mount -t sysfs -o ro sysfs "$root/sys"
    mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
    mount --bind "$rustup_home" "$root/root/.rustup"
    mount -o remount,bind,ro "$root/root/.rustup"
    exec chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash \
      LANG=C.UTF-8 TERM=dumb CI="${CI:-}" \
      PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      /root/fresh-check-inner.sh
  ' fresh-check "$root" "$rustup_home" >>"$log" 2>&1 || status=$?
inside=$(elapsed "$t")

steps=$(sed -n 's/^fresh-check: step-done: //p' "$log" | tr '\n' ';' | sed 's/;$//; s/;/; /g')
if [ "$status" = 0 ]; then
  [ "$keep" = 1 ] || remove_root
  echo "fresh-check: passed in $(elapsed "$started") s ($desc; $steps)"
  exit 0
fi
# Name what was missing: the host-programs test's marker, else a shell's "not found".
program=$(grep -oE 'missing program: [^ ,;)]+' "$log" | head -1 | sed 's/missing program: //' || true)
if [ -z "$program" ]; then
  program=$(grep -oE '(^|: )[A-Za-z0-9_.+-]+: (command )?not found' "$log" | head -1 |
    sed -E 's/^: //; s/: (command )?not found$//' || true)
fi
failed=$(sed -n 's/^fresh-check: step: //p' "$log" | tail -1)
[ "$keep" = 1 ] || remove_root
if [ -n "$program" ]; then
  echo "fresh-check: FAILED at \`$failed\` after $inside s: missing program \`$program\` ($desc; log $log)"
else
  echo "fresh-check: FAILED at \`$failed\` after $inside s (exit $status; $desc; last lines of $log:)"
  grep -E 'error|panicked|FAILED|failed' "$log" | tail -5 | sed 's/^/  /'
fi
exit 1
