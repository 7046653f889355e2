#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 10s): a short run in `make test`
# that catches panics and unbounded allocations on untrusted bytes early.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fuzztime=${FUZZTIME:-10s}
found=0
while IFS=: read -r file name; do
  pkg="./$(dirname "$file")"
  echo "fuzz: $pkg $name ($fuzztime)"
  go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" -fuzzminimizetime=50x "$pkg"
  found=$((found + 1))
done < <(grep -rHoE --include='*_test.go' '^func (Fuzz[A-Za-z0-9_]+)' --exclude-dir=_output . |
         sed -E 's#^\./##; s#:func #:#' | sort -u)
echo "fuzz: ran $found fuzz targets"
