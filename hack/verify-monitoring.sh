#!/usr/bin/env bash
# Checks the monitoring pack (manifests/monitoring) with the real promtool, built from the Go
# module proxy in its own module (hack/tools/promtool): promtool check rules on the
# PrometheusRule's groups, promtool test rules on prometheusrule_test.yaml, and the dashboards'
# expressions through the PromQL parser (packcheck). The Go tests check the rest: dashboard
# structure (internal/monitoringpack) and that running binaries expose every metric the pack
# names (proxy/server, test/operator).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pack="$root/manifests/monitoring"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root/hack/tools/promtool"
go build -o "$tmp/promtool" github.com/prometheus/prometheus/cmd/promtool
go run ./packcheck "$pack" "$tmp/kafkalink-rules.yaml"
cp "$pack/prometheusrule_test.yaml" "$tmp/"
"$tmp/promtool" check rules "$tmp/kafkalink-rules.yaml"
(cd "$tmp" && ./promtool test rules prometheusrule_test.yaml)
