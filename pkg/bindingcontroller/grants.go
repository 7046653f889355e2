package bindingcontroller

import (
	"k8s.io/client-go/tools/cache"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
)

// grantsIn lists the ReferenceGrants of a namespace; none while the ReferenceGrant API is not
// served (or its cache not synced), so every cross-namespace reference is then not permitted.
func (r *reconciler) grantsIn(namespace string) []*gatewayv1beta1.ReferenceGrant {
	if r.grants == nil {
		return nil
	}
	return controller.ByIndex[*gatewayv1beta1.ReferenceGrant](r.grants.Indexer(), cache.NamespaceIndex, namespace)
}

// grantAPIMissing completes a RefNotPermitted message when no ReferenceGrant can exist yet.
func (r *reconciler) grantAPIMissing() string {
	if r.grants.Served() {
		return ""
	}
	return gatewaymodel.GrantAPIMissing
}
