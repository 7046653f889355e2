#!/usr/bin/env bash
# Builds the operator and proxy images for every platform in PLATFORMS without a container engine:
# static binaries cross-compiled by Go, packed by hack/image into one OCI image index per command.
# Writes OUT/<cmd>/ (OCI image layout) and OUT/<cmd>.oci.tar (the same, as an oci-archive).
# Push with:  crane push OUT/<cmd> REF   or   skopeo copy --all oci-archive:OUT/<cmd>.oci.tar docker://REF
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=${VERSION:-$(cat VERSION)}
revision=${REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
registry=${REGISTRY:-ghcr.io/kafkalink}
platforms=${PLATFORMS:-linux/amd64 linux/arm64}
out=$(mkdir -p "${OUT:-_output/images}" && cd "${OUT:-_output/images}" && pwd)
ldflags="-s -w -X github.com/kafkalink/kafkalink/pkg/version.Version=$version -X github.com/kafkalink/kafkalink/pkg/version.Revision=$revision"

declare -A description=(
  [kafkalink-operator]="kafkalink operator: Service Binding Secrets for Strimzi Kafka and Kafka gateways"
  [kafkalink-proxy]="kafkalink-proxy: Kafka-aware SNI proxy"
)
for cmd in kafkalink-operator kafkalink-proxy; do
  args=()
  for platform in $platforms; do
    os=${platform%%/*} arch=${platform#*/}
    bin=$root/_output/bin/${os}_${arch}/$cmd
    echo "building $cmd for $platform"
    CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$bin" "./cmd/$cmd"
    args+=(-binary "$platform=$bin")
  done
  (cd hack/image && go run . "${args[@]}" -name "$registry/$cmd:$version" \
    -version "$version" -revision "$revision" -description "${description[$cmd]}" \
    -out "$out/$cmd" -oci-archive "$out/$cmd.oci.tar")
done
