package gateway

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
)

// Without the ReferenceGrant API, every case translates as with it, except that each
// RefNotPermitted condition about a missing ReferenceGrant ends with GrantAPIMissing: exactly
// what the controller used to add to the translation by reading its messages.
func TestGrantAPIMissingCompletesRefusedGrants(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	noted := 0
	for _, in := range cases {
		t.Run(strings.TrimSuffix(filepath.Base(in), ".in.yaml"), func(t *testing.T) {
			want := Translate(loadCase(t, in))
			note := func(conds []metav1.Condition) {
				for i := range conds {
					if conds[i].Reason == ReasonRefNotPermitted && strings.Contains(conds[i].Message, "no ReferenceGrant") {
						conds[i].Message += gatewaymodel.GrantAPIMissing
						noted++
					}
				}
			}
			note(want.GatewayStatus.Conditions)
			for i := range want.GatewayStatus.Listeners {
				note(want.GatewayStatus.Listeners[i].Conditions)
			}
			for _, parents := range want.RouteParents {
				for i := range parents {
					note(parents[i].Conditions)
				}
			}
			for _, a := range want.PolicyAncestors {
				if a != nil {
					note(a.Conditions)
				}
			}
			s := loadCase(t, in)
			s.Env.ReferenceGrants = false
			if got, w := render(t, Translate(s)), render(t, want); !bytes.Equal(got, w) {
				t.Errorf("without the ReferenceGrant API:\n%s\nwant:\n%s", got, w)
			}
		})
	}
	if noted == 0 {
		t.Error("no case refuses a reference for want of a ReferenceGrant")
	}
}
