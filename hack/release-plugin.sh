#!/usr/bin/env bash
# Packages kubectl kafkalink (cmd/kubectl-kafkalink) for krew into OUT (default _output/release):
#   kubectl-kafkalink_<os>_<arch>.tar.gz   the binary (kubectl-kafkalink[.exe]) and LICENSE, per platform
#   kafkalink.krew.yaml                    the krew plugin manifest (plugins/kafkalink.yaml in a krew
#                                          index), each platform's archive URL and sha256
# The archives are reproducible: files sorted, owner and times fixed, gzip without a name or time.
# PLUGIN_PLATFORMS lists os/arch pairs; RELEASE_URL is where the archives will be downloaded from.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=${VERSION:-$(cat VERSION)}
revision=${REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
out=${OUT:-$root/_output/release}
platforms=${PLUGIN_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64}
release_url=${RELEASE_URL:-https://github.com/kafkalink/kafkalink/releases/download/v$version}
ldflags="-s -w -X github.com/kafkalink/kafkalink/pkg/version.Version=$version -X github.com/kafkalink/kafkalink/pkg/version.Revision=$revision"
mkdir -p "$out"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

manifest=$out/kafkalink.krew.yaml
cat >"$manifest" <<YAML
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: kafkalink
spec:
  version: v$version
  homepage: https://github.com/kafkalink/kafkalink
  shortDescription: Diagnose kafkalink and configure Kafka clients
  description: |
    kubectl kafkalink shows KafkaGateways and KafkaConnections as trees with each
    object's key condition (status), explains failing conditions and what to do
    (why), and writes a Kafka client's configuration from a KafkaConnection's
    binding Secret (config) for kcat, librdkafka, franz-go, Java, Spring Boot,
    Quarkus and kafkajs.
  caveats: |
    kubectl kafkalink config reads the binding Secret: it needs get on Secrets
    in the connection's namespace. The files it writes hold credentials.
  platforms:
YAML

for platform in $platforms; do
  os=${platform%/*} arch=${platform#*/}
  exe=kubectl-kafkalink
  [ "$os" = windows ] && exe=kubectl-kafkalink.exe
  dir=$scratch/${os}_$arch
  mkdir -p "$dir"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$dir/$exe" ./cmd/kubectl-kafkalink
  cp LICENSE "$dir/LICENSE"
  archive=kubectl-kafkalink_${os}_$arch.tar.gz
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$dir" -cf - LICENSE "$exe" | gzip -n -9 >"$out/$archive"
  sha=$(sha256sum "$out/$archive" | cut -d' ' -f1)
  cat >>"$manifest" <<YAML
    - selector:
        matchLabels: {os: $os, arch: $arch}
      uri: $release_url/$archive
      sha256: $sha
      files:
        - {from: $exe, to: .}
        - {from: LICENSE, to: .}
      bin: $exe
YAML
done
echo "$manifest"
