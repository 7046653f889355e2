#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, etcd and kubectl from the Go module
# proxy into _output/controlplane/<key>/bin, where <key> hashes the pins. A build whose
# key already exists is reused, so only the first run (or a change of pins) pays the
# cold build, which takes several minutes on two cores.
#
# Prints the bin folder on the last line of stdout; progress goes to stderr.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/hack/controlplane"
k8s_version=$(awk '$1=="k8s.io/kubernetes"{print $2}' "$src/go.mod")
key=$(cat "$src/go.mod" "$src/go.sum" "$src"/*/main.go "$0" | sha256sum | cut -c1-16)
out="$root/_output/controlplane/$key"
bin="$out/bin"

if [ -f "$out/.complete" ]; then
  echo "control plane $k8s_version: reusing $bin" >&2
  echo "$bin"
  exit 0
fi

major=$(echo "${k8s_version#v}" | cut -d. -f1)
minor=$(echo "${k8s_version#v}" | cut -d. -f2)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

mkdir -p "$bin"
start=$(date +%s)
cd "$src"
echo "control plane $k8s_version: downloading modules" >&2
go mod download
for cmd in etcd kube-apiserver kube-controller-manager kubectl; do
  t0=$(date +%s)
  echo "control plane: building $cmd (a cold build takes minutes; a dot per 100 packages)" >&2
  # -v names each package as it compiles: turn that into a progress line.
  if ! go build -v -trimpath -ldflags "$ldflags" -o "$bin/$cmd" "./$cmd" 2>&1 |
    awk '/^#|\.go:[0-9]/ {print > "/dev/stderr"; next} {n++; if (n%100==0) {printf "." > "/dev/stderr"; fflush("/dev/stderr")}} END {printf " %d packages\n", n > "/dev/stderr"}'; then
    echo "control plane: building $cmd failed" >&2
    exit 1
  fi
  echo "control plane: $cmd built in $(( $(date +%s) - t0 ))s" >&2
done
touch "$out/.complete"
echo "control plane $k8s_version: built in $(( $(date +%s) - start ))s into $bin" >&2
echo "$bin"
