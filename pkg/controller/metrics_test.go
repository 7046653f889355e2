package controller

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func cond(t, status, reason string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason}
}

func TestCountConditions(t *testing.T) {
	tests := map[string]struct {
		objs []ObjectConditions
		want map[ConditionKey]int
	}{
		"objects with the same condition add up per namespace": {
			objs: []ObjectConditions{
				{Namespace: "a", Conditions: [][]metav1.Condition{{cond("Ready", "False", "KafkaNotFound")}}},
				{Namespace: "a", Conditions: [][]metav1.Condition{{cond("Ready", "False", "KafkaNotFound")}}},
				{Namespace: "b", Conditions: [][]metav1.Condition{{cond("Ready", "True", "Ready")}}},
			},
			want: map[ConditionKey]int{
				{"a", "Ready", "False", "KafkaNotFound"}: 2,
				{"b", "Ready", "True", "Ready"}:          1,
			},
		},
		"an object whose two listeners conflict counts once": {
			objs: []ObjectConditions{{Namespace: "a", Conditions: [][]metav1.Condition{
				{cond("Programmed", "True", "Programmed")},
				{cond("Conflicted", "True", "HostnameConflict")},
				{cond("Conflicted", "True", "HostnameConflict")},
			}}},
			want: map[ConditionKey]int{
				{"a", "Programmed", "True", "Programmed"}:       1,
				{"a", "Conflicted", "True", "HostnameConflict"}: 1,
			},
		},
		"an object without status counts nowhere": {
			objs: []ObjectConditions{{Namespace: "a"}},
			want: map[ConditionKey]int{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CountConditions(tc.objs)); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorReason(t *testing.T) {
	gr := schema.GroupResource{Group: "kafka.strimzi.io", Resource: "kafkaconnections"}
	tests := map[string]struct {
		err  error
		want string
	}{
		"a panic":                        {err: errPanic{value: "boom"}, want: "panic"},
		"a wrapped conflict":             {err: fmt.Errorf("apply: %w", apierrors.NewConflict(gr, "c", errors.New("stale"))), want: "conflict"},
		"a forbidden write":              {err: apierrors.NewForbidden(gr, "c", errors.New("no")), want: "Forbidden"},
		"an API server under load":       {err: apierrors.NewTooManyRequests("slow down", 1), want: "TooManyRequests"},
		"an error with no status reason": {err: errors.New("dial tcp: connection refused"), want: ReasonOther},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := errorReason(tc.err); got != tc.want {
				t.Errorf("errorReason = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestObjectConditionsCollector(t *testing.T) {
	SetConditionSources(ConditionSource{Kind: "KafkaConnection", List: func() []ObjectConditions {
		return []ObjectConditions{
			{Namespace: "apps", Conditions: [][]metav1.Condition{{cond("Ready", "False", "KafkaNotFound")}}},
			{Namespace: "apps", Conditions: [][]metav1.Condition{{cond("Ready", "False", "KafkaNotFound")}}},
		}
	}})
	defer SetConditionSources()
	want := `# HELP kafkalink_object_conditions ` + objectConditionsHelp + `
# TYPE kafkalink_object_conditions gauge
kafkalink_object_conditions{condition="Ready",kind="KafkaConnection",object_namespace="apps",reason="KafkaNotFound",status="False"} 2
`
	if err := testutil.CollectAndCompare(objectConditions, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
