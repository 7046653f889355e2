#!/usr/bin/env bash
# Fails when manifests/install.yaml or manifests/install-namespaced.yaml differ from what
# hack/update-manifests.sh renders now.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
OUTPUT=$scratch/install.yaml OUTPUT_NAMESPACED=$scratch/install-namespaced.yaml bash "$root/hack/update-manifests.sh"
status=0
for f in install.yaml install-namespaced.yaml; do
  if ! diff -q "$scratch/$f" "$root/manifests/$f" >/dev/null 2>&1; then
    echo "manifests/$f is stale: run make manifests"
    status=1
  fi
done
exit "$status"
