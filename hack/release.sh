#!/usr/bin/env bash
# Builds the release assets of VERSION into _output/release without touching the tree:
#   kafkalink-VERSION.yaml                  install bundle (CRDs, namespace, RBAC, operator), images at VERSION
#   kafkalink-crds-VERSION.yaml             the CRDs alone (upgrades; Helm users apply these before helm upgrade)
#   kafkalink-VERSION.tgz                   the Helm chart, version and appVersion VERSION
#   kafkalink-{operator,proxy}-VERSION.oci.tar  multi-arch OCI image indexes (oci-archive)
#   images/kafkalink-{operator,proxy}/      the same as OCI image layout folders
#   kafkalink-bundle-VERSION.tar.gz         the OLM bundle (make bundle): bundle/{manifests,metadata,bundle.Dockerfile}
#   kafkalink-bundle-VERSION.oci.tar        the bundle image (REGISTRY/kafkalink-bundle:VERSION, linux/amd64 + arm64)
#   kafkalink-argocd-cm-patch-VERSION.yaml  the Argo CD health checks as an argocd-cm patch
#   kafkalink-argocd-VERSION.tar.gz         the same as Argo CD's resource_customizations tree, with tests
#   kubectl-kafkalink_<os>_<arch>.tar.gz    kubectl kafkalink per platform, and kafkalink.krew.yaml,
#                                           its krew manifest (hack/release-plugin.sh)
#   SHA256SUMS
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=${VERSION:-$(cat VERSION)}
export VERSION=$version REGISTRY=${REGISTRY:-ghcr.io/kafkalink}
out=$root/_output/release
rm -rf "$out"
mkdir -p "$out/images"

OUTPUT="$out/kafkalink-$version.yaml" bash hack/update-manifests.sh
{
  echo "# kafkalink $version CustomResourceDefinitions. Generated from manifests/crds; do not edit by hand."
  for f in manifests/crds/*.yaml; do
    echo "---"
    echo "# Source: $f"
    awk 'BEGIN{top=1} top && /^---$/ {next} {top=0; print}' "$f"
  done
} >"$out/kafkalink-crds-$version.yaml"

# The chart, stamped in a scratch copy (the tree keeps the VERSION file's version).
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -r charts "$scratch/"
OUTPUT_ROOT=$scratch bash hack/update-manifests.sh
(cd hack/tools && go tool helm lint --strict "$scratch/charts/kafkalink" >/dev/null)
(cd hack/tools && go tool helm package "$scratch/charts/kafkalink" --destination "$out")

# tarball DIR NAME OUT: a reproducible gzipped tar of DIR/NAME (sorted, no times or owners).
tarball() {
  tar -C "$1" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - "$2" | gzip -n >"$3"
}
(cd hack/bundle && go run . -root "$root" -out "$scratch/bundle" -version "$version" -registry "$REGISTRY" \
  -image-archive "$out/kafkalink-bundle-$version.oci.tar" >/dev/null)
tarball "$scratch" bundle "$out/kafkalink-bundle-$version.tar.gz"
cp manifests/argocd/argocd-cm-patch.yaml "$out/kafkalink-argocd-cm-patch-$version.yaml"
tarball manifests argocd "$out/kafkalink-argocd-$version.tar.gz"

OUT=$out/images bash hack/build-images.sh
for cmd in kafkalink-operator kafkalink-proxy; do
  mv "$out/images/$cmd.oci.tar" "$out/$cmd-$version.oci.tar"
done
OUT=$out bash hack/release-plugin.sh
(cd "$out" && sha256sum ./*.yaml ./*.tgz ./*.tar.gz ./*.oci.tar >SHA256SUMS)
ls -l "$out"
