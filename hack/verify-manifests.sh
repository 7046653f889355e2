#!/usr/bin/env bash
# Fails when manifests/install.yaml, install-namespaced.yaml or the chart's generated files (crds/, files/rbac/, the version
# in Chart.yaml) differ from what 'make manifests' writes for the VERSION file's version, then lints
# and renders the chart with Helm (built from the Go module proxy: hack/tools/go.mod).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

unset VERSION OUTPUT
OUTPUT_ROOT=$scratch bash "$root/hack/update-manifests.sh"
status=0
for f in manifests/install.yaml manifests/install-namespaced.yaml manifests/kustomize/base/install.yaml charts/kafkalink/Chart.yaml; do
  if ! diff -u "$root/$f" "$scratch/$f" >"$scratch/diff" 2>&1; then
    echo "$f is stale: run 'make manifests' and commit the result." >&2
    head -n 20 "$scratch/diff" >&2
    status=1
  fi
done
for d in charts/kafkalink/crds charts/kafkalink/files/rbac; do
  if ! diff -ruN "$root/$d" "$scratch/$d" >"$scratch/diff" 2>&1; then
    echo "$d is stale: run 'make manifests' and commit the result." >&2
    head -n 20 "$scratch/diff" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] || exit "$status"
if grep -rn ':latest\b' "$root/manifests/install.yaml" "$root/charts/kafkalink" >&2; then
  echo "no :latest image references, please" >&2
  exit 1
fi

helm() { (cd "$root/hack/tools" && go tool helm "$@"); }
chart=$root/charts/kafkalink
helm lint --strict "$chart"
helm lint --strict "$chart" --set 'watchNamespaces={team-a,team-b}' --set podMonitor.enabled=true
helm template kafkalink "$chart" --namespace kafkalink-system --include-crds >"$scratch/default.yaml"
helm template kafkalink "$chart" --namespace kafkalink-system \
  --set 'watchNamespaces={team-a,team-b}' --set replicas=1 --set podMonitor.enabled=true >"$scratch/namespaced.yaml"
# What the two renders must hold: cluster-wide bindings by default; per-namespace Roles otherwise.
grep -q '^kind: ClusterRoleBinding' "$scratch/default.yaml" || { echo "default render has no ClusterRoleBinding" >&2; exit 1; }
grep -q '^kind: PodDisruptionBudget' "$scratch/default.yaml" || { echo "default render (2 replicas) has no PodDisruptionBudget" >&2; exit 1; }
if grep -q '^kind: ClusterRoleBinding' "$scratch/namespaced.yaml"; then
  echo "watchNamespaces render still binds ClusterRoles cluster-wide" >&2; exit 1
fi
[ "$(grep -c '^kind: RoleBinding' "$scratch/namespaced.yaml")" -ge 2 ] || { echo "watchNamespaces render lacks a RoleBinding per namespace" >&2; exit 1; }
grep -q '^kind: PodMonitor' "$scratch/namespaced.yaml" || { echo "podMonitor.enabled renders no PodMonitor" >&2; exit 1; }
echo "manifests and chart are up to date; helm lint and template pass"
