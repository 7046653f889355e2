package gatewaycontroller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gateway"
)

// Without the ReferenceGrant API, RefNotPermitted conditions about a missing ReferenceGrant say
// that the API is not installed; other conditions are left alone.
func TestNoteMissingGrantAPI(t *testing.T) {
	c := &Controller{grants: controller.NewOptionalInformer(controller.OptionalConfig{What: "ReferenceGrant"})}
	refs := metav1.Condition{Type: "ResolvedRefs", Status: metav1.ConditionFalse, Reason: gateway.ReasonRefNotPermitted,
		Message: "Service kafka/x is in another namespace and no ReferenceGrant there allows KafkaRoutes from namespace a to refer to it"}
	unwatched := metav1.Condition{Type: "ResolvedRefs", Status: metav1.ConditionFalse, Reason: gateway.ReasonRefNotPermitted,
		Message: "Secret kafka/x is in a namespace the operator does not watch"}
	res := &gateway.Result{RouteParents: map[string][]kroxyliciousv1alpha1.RouteParentStatus{
		"r": {{Conditions: []metav1.Condition{refs, unwatched, {Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"}}}},
	}}
	c.noteMissingGrantAPI(res)
	got := res.RouteParents["r"][0].Conditions
	if !strings.Contains(got[0].Message, "ReferenceGrant API (gateway.networking.k8s.io ReferenceGrant) is not installed") {
		t.Errorf("message not completed: %q", got[0].Message)
	}
	if got[1].Message != unwatched.Message || got[2].Message != "" {
		t.Errorf("other conditions changed: %+v", got[1:])
	}
}
