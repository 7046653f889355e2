#!/usr/bin/env bash
# Runs govulncheck (a `tool` line in go.mod, built from the module proxy) on every package.
# Its database is GOVULNDB (https://vuln.go.dev by default), which is not a Go module: the
# module proxy does not serve golang.org/x/vulndb, so a machine whose only network is the
# module proxy cannot reach any database. There the check says so in one line and passes;
# everywhere else a known vulnerability in reachable code fails it.
set -uo pipefail
db=${GOVULNDB:-https://vuln.go.dev}
out=$(go tool govulncheck -db "$db" ./... 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -qiE 'no such host|dial tcp|could not resolve|connection refused|i/o timeout|fetching vulnerabilities' <<<"$out"; then
  echo "govulncheck: vulnerability database $db unreachable from this machine; not checked"
  echo "$out" | grep -iE 'no such host|dial tcp|fetching' | head -n 1 | sed 's/^/  /'
  exit 0
fi
echo "$out"
exit $rc
