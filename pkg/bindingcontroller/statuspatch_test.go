package bindingcontroller

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
)

func TestStatusPatch(t *testing.T) {
	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonBound, Message: "bound", ObservedGeneration: 1}
	bound := kafkav1beta2.KafkaConnectionStatus{ObservedGeneration: 1, Listener: "tls", BootstrapServers: "k:9093",
		Binding: &kafkav1beta2.BindingReference{Name: "app"}, Conditions: []metav1.Condition{ready},
		Stretch: &kafkav1beta2.StretchStatus{Addressing: "a", Clusters: []string{"c1"}}}
	cases := map[string]struct {
		old, want kafkav1beta2.KafkaConnectionStatus
		patch     string
	}{
		"a first status is written whole": {
			want:  bound,
			patch: `{"metadata":{"resourceVersion":"7"},"status":{"binding":{"name":"app"},"bootstrapServers":"k:9093","conditions":[{"lastTransitionTime":null,"message":"bound","observedGeneration":1,"reason":"Bound","status":"True","type":"Ready"}],"listener":"tls","observedGeneration":1,"stretch":{"addressing":"a","clusters":["c1"]}}}`,
		},
		"only what changed goes, nested objects member by member": {
			old: bound,
			want: func() kafkav1beta2.KafkaConnectionStatus {
				st := *bound.DeepCopy()
				st.Listener, st.Stretch.Addressing = "scram", "b"
				return st
			}(),
			patch: `{"metadata":{"resourceVersion":"7"},"status":{"listener":"scram","stretch":{"addressing":"b"}}}`,
		},
		"fields no longer wanted are nulled": {
			old: bound,
			want: kafkav1beta2.KafkaConnectionStatus{ObservedGeneration: 1, Listener: "tls", Conditions: []metav1.Condition{ready},
				Stretch: &kafkav1beta2.StretchStatus{Clusters: []string{"c1"}}},
			patch: `{"metadata":{"resourceVersion":"7"},"status":{"binding":null,"bootstrapServers":null,"stretch":{"addressing":""}}}`,
		},
		"an unchanged status patches nothing": {
			old: bound, want: bound,
			patch: `{"metadata":{"resourceVersion":"7"},"status":{}}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := statusPatch(&tc.old, &tc.want, "7")
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.patch), &w); err != nil {
				t.Fatal(err)
			}
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(w)
			if string(gj) != string(wj) {
				t.Errorf("patch\n%s\nwant\n%s", gj, wj)
			}
		})
	}
}
