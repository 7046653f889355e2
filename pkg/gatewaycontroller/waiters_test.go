package gatewaycontroller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kafkalink/kafkalink/pkg/gateway"
)

func TestNameWaiters(t *testing.T) {
	c := &Controller{waiters: newNameWaiters()}
	gw1, gw2 := cache.ObjectName{Namespace: "ns", Name: "gw1"}, cache.ObjectName{Namespace: "ns", Name: "gw2"}
	c.waiters.set(gw1, []gateway.ObjectKey{{Kind: "ConfigMap", Name: "taken"}})
	c.waiters.set(gw2, []gateway.ObjectKey{{Kind: "ConfigMap", Name: "taken"}, {Kind: "Service", Name: "svc"}})
	holder := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "taken"}}

	if got := c.generatedToGateways("ConfigMap")(holder); len(got) != 2 {
		t.Errorf("a held ConfigMap maps to %v, want both gateways", got)
	}
	if got := c.generatedToGateways("ConfigMap")(cache.DeletedFinalStateUnknown{Key: "ns/taken", Obj: holder}); len(got) != 2 {
		t.Errorf("a deleted held ConfigMap maps to %v, want both gateways", got)
	}
	if got := c.generatedToGateways("Service")(holder); len(got) != 0 {
		t.Errorf("a name is held per kind; got %v", got)
	}
	c.waiters.set(gw2, nil) // gw2 no longer waits (or was deleted)
	if got := c.generatedToGateways("ConfigMap")(holder); len(got) != 1 || got[0] != gw1 {
		t.Errorf("after gw2 stopped waiting: %v, want [gw1]", got)
	}
	c.waiters.set(gw1, nil)
	if len(c.waiters.byName) != 0 || len(c.waiters.byGateway) != 0 {
		t.Errorf("nothing waits, yet the maps hold %v and %v", c.waiters.byName, c.waiters.byGateway)
	}
}
