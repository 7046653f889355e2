#!/usr/bin/env bash
# Installs what the tests and the demo need beyond Go: Debian's kcat (a real librdkafka client),
# iproute2 (network namespaces give kcat its own hosts file), gcc (the race detector of
# `make test-unit` needs cgo, and so does Ory Hydra's SQLite store in the OAUTHBEARER tests)
# and openssl (a TLS client that offers one TLS 1.3 cipher suite).
# Go modules come from the module proxy on first use.
set -euo pipefail
need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need[@]}" >/dev/null
fi
go mod download
