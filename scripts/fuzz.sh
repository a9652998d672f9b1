#!/usr/bin/env bash
# Runs every fuzz target of the module for SECONDS each (default 10):
#   scripts/fuzz.sh 30
# A failing input is written under the package's testdata/fuzz/ by go test, where it then
# runs as an ordinary test (as the seed corpora do in CI, with plain go test).
set -euo pipefail
secs="${1:-10}"
case "$secs" in
  ''|*[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
status=0
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "== $pkg $target (${secs}s)"
    if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "${secs}s" "$pkg"; then
      status=1
    fi
  done
done
exit "$status"
