# Sourced by the scripts that install what they lack: missing_debian_packages ENTRY... prints,
# one per line, the package of each ENTRY that dpkg does not have installed; an ENTRY
# `package:program` counts as present when the program is on PATH from elsewhere.
missing_debian_packages() {
  local entry pkg program
  for entry in "$@"; do
    pkg=${entry%%:*} program=${entry#*:}
    [ "$program" != "$entry" ] && command -v "$program" >/dev/null && continue
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || echo "$pkg"
  done
}

# install_debian_packages WHO TAG PACKAGE...
# installs the missing PACKAGEs as root, printing "TAG: installing ..."; not as root, it prints
# the one `sudo apt-get install ...` line WHO needs run and exits 2. Nothing when none is missing.
install_debian_packages() {
  local who=$1 tag=$2
  shift 2
  [ $# -gt 0 ] || return 0
  if [ "$(id -u)" != 0 ]; then
    echo "$who needs Debian packages that are missing; run:" >&2
    echo "  sudo apt-get install -y --no-install-recommends $*" >&2
    exit 2
  fi
  echo "$tag: installing $*"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/dev/null
}
