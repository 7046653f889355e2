#!/usr/bin/env bash
# Regenerates everything derived from apis/: deepcopy and register code next to the types,
# clientset, listers, informers and applyconfigurations under generated/, and the CRDs under
# manifests/crds/. With OUTPUT_ROOT set, writes into that copy of the tree instead (verify uses it).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tree=${OUTPUT_ROOT:-$root}
module=github.com/kafkalink/kafkalink
cd "$tree"

# A fresh clone has no module cache yet: `go list -m` then names no folder.
go mod download k8s.io/code-generator
codegen_root=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
# kube_codegen.sh `go install`s the generators; keep them out of the user's GOPATH/bin.
export GOBIN="$root/_output/tools"
mkdir -p "$GOBIN"
# shellcheck source=/dev/null
source "$codegen_root/kube_codegen.sh"

boilerplate="$root/hack/boilerplate.go.txt"
kube::codegen::gen_helpers --boilerplate "$boilerplate" "$tree/apis"
kube::codegen::gen_register --boilerplate "$boilerplate" "$tree/apis"
kube::codegen::gen_client \
  --with-watch \
  --with-applyconfig \
  --plural-exceptions "KafkaGatewayParameters:KafkaGatewayParameters" \
  --output-dir "$tree/generated" \
  --output-pkg "$module/generated" \
  --boilerplate "$boilerplate" \
  "$tree/apis"

echo "Generating CRDs into manifests/crds"
rm -rf "$tree/manifests/crds"
go tool controller-gen crd:crdVersions=v1,allowDangerousTypes=false \
  paths="./apis/..." output:crd:artifacts:config="$tree/manifests/crds"
