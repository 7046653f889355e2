#!/usr/bin/env bash
# Prints, to stdout, one tenant's identity in a member cluster (docs/stretch.md, "Registering a
# member"): a ServiceAccount of its own, kafkalink-member-TENANT in namespace kafkalink-member, bound
# with RoleBindings to the ClusterRoles of manifests/member/rbac.yaml in the tenant's namespaces
# only. Apply it in the MEMBER cluster, once per tenant:
#
#   bash hack/member-rbac.sh team-a apps orders | kubectl --context member-a apply -f -
#   bash hack/member-rbac.sh --copies-only team-b billing | kubectl --context member-a apply -f -
#
# Then build team-a's kubeconfig from a short-lived token of that ServiceAccount (kubectl create
# token kafkalink-member-team-a -n kafkalink-member --duration ...), never from a token shared with
# another tenant: a kubeconfig stored in the central cluster is readable by whoever reads Secrets
# in its namespace there, and with one identity for all tenants, each could write the others'
# copies in the member.
#
# --copies-only binds kafkalink-member only (binding Secret copies of KafkaConnection targets);
# without it, kafkalink-member-proxy too (proxies of KafkaGateways whose parameters list members).
# The output holds the Namespace and the two ClusterRoles, as manifests/member/rbac.yaml has them,
# so it applies on its own; it holds no long-lived token Secret.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() {
  echo "usage: $0 [--copies-only] TENANT NAMESPACE..." >&2
  exit 2
}
proxy=true
if [ "${1:-}" = "--copies-only" ]; then
  proxy=false
  shift
fi
[ $# -ge 2 ] || usage
tenant=$1
shift
dns_label='^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'
if ! [[ $tenant =~ $dns_label ]] || [ ${#tenant} -gt 40 ]; then
  echo "$0: a tenant is a DNS label of at most 40 characters (it names a ServiceAccount): '$tenant'" >&2
  exit 2
fi
declare -A seen=()
for ns in "$@"; do
  if ! [[ $ns =~ $dns_label ]] || [ ${#ns} -gt 63 ]; then
    echo "$0: not a namespace name: '$ns'" >&2
    exit 2
  fi
  if [ -n "${seen[$ns]:-}" ]; then
    echo "$0: namespace '$ns' given twice" >&2
    exit 2
  fi
  seen[$ns]=1
done
sa=kafkalink-member-$tenant

echo "# kafkalink's identity for tenant $tenant in a member cluster: hack/member-rbac.sh $tenant $*"
echo "# Apply in the member. Its kubeconfig: docs/stretch.md, \"Registering a member\"."
# The Namespace and ClusterRoles, from manifests/member/rbac.yaml (its single-tenant
# ServiceAccount, token Secret and comments at the top are left out).
awk '
  function flush() {
    if (keep) printf "---\n%s", doc
    doc = ""; keep = 0; n++
  }
  /^---[[:space:]]*$/ { flush(); next }
  n == 0 && /^#/ { next } # the file header, about its single-tenant use
  /^kind: (Namespace|ClusterRole)[[:space:]]*$/ { keep = 1 }
  { doc = doc $0 "\n" }
  END { flush() }
' "$root/manifests/member/rbac.yaml"
cat <<YAML
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: $sa
  namespace: kafkalink-member
  labels:
    kafkalink.io/member-tenant: $tenant
YAML
for ns in "$@"; do
  roles=kafkalink-member
  if $proxy; then
    roles="$roles kafkalink-member-proxy"
  fi
  for role in $roles; do
    cat <<YAML
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: $role-$tenant
  namespace: $ns
  labels:
    kafkalink.io/member-tenant: $tenant
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: $role
subjects:
  - kind: ServiceAccount
    name: $sa
    namespace: kafkalink-member
YAML
  done
done
