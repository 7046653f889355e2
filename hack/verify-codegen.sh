#!/usr/bin/env bash
# Regenerates into a scratch copy of the tree and fails if anything differs from what is committed
# here: generated code is never edited by hand, and never stale.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

tar -C "$root" --exclude=./_output --exclude=./.git -cf - . | tar -C "$scratch" -xf -
OUTPUT_ROOT="$scratch" bash "$root/hack/update-codegen.sh" >/dev/null

status=0
for dir in apis generated manifests/crds; do
  if ! diff -ruN "$root/$dir" "$scratch/$dir" >"$scratch.diff" 2>&1; then
    echo "$dir is stale: run 'make generate' and commit the result. Differences:" >&2
    head -n 40 "$scratch.diff" >&2
    status=1
  fi
done
rm -f "$scratch.diff"
[ "$status" -eq 0 ] && echo "generated code is up to date"
exit "$status"
