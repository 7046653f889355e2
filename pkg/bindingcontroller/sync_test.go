package bindingcontroller

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

func ptr[T any](v T) *T { return &v }

func TestGrantAllows(t *testing.T) {
	from := gatewayv1beta1.ReferenceGrantFrom{Group: "kafka.strimzi.io", Kind: "KafkaConnection", Namespace: "apps"}
	grant := func(f gatewayv1beta1.ReferenceGrantFrom, to ...gatewayv1beta1.ReferenceGrantTo) *gatewayv1beta1.ReferenceGrant {
		return &gatewayv1beta1.ReferenceGrant{Spec: gatewayv1beta1.ReferenceGrantSpec{From: []gatewayv1beta1.ReferenceGrantFrom{f}, To: to}}
	}
	user := gatewayv1beta1.ReferenceGrantTo{Group: "kafka.strimzi.io", Kind: "KafkaUser"}
	cases := map[string]struct {
		grant *gatewayv1beta1.ReferenceGrant
		want  bool
	}{
		"a grant to every KafkaUser allows":        {grant(from, user), true},
		"a grant to this KafkaUser by name allows": {grant(from, gatewayv1beta1.ReferenceGrantTo{Group: "kafka.strimzi.io", Kind: "KafkaUser", Name: ptr(gatewayv1beta1.ObjectName("alice"))}), true},
		"a grant to another KafkaUser does not":    {grant(from, gatewayv1beta1.ReferenceGrantTo{Group: "kafka.strimzi.io", Kind: "KafkaUser", Name: ptr(gatewayv1beta1.ObjectName("bob"))}), false},
		"a grant to the user's Secret allows":      {grant(from, gatewayv1beta1.ReferenceGrantTo{Group: "", Kind: "Secret", Name: ptr(gatewayv1beta1.ObjectName("alice-secret"))}), true},
		"a grant to another Secret does not":       {grant(from, gatewayv1beta1.ReferenceGrantTo{Group: "", Kind: "Secret", Name: ptr(gatewayv1beta1.ObjectName("other"))}), false},
		"a grant from another namespace does not":  {grant(gatewayv1beta1.ReferenceGrantFrom{Group: "kafka.strimzi.io", Kind: "KafkaConnection", Namespace: "elsewhere"}, user), false},
		"a grant from another kind does not":       {grant(gatewayv1beta1.ReferenceGrantFrom{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute", Namespace: "apps"}, user), false},
		"a grant to Kafkas does not":               {grant(from, gatewayv1beta1.ReferenceGrantTo{Group: "kafka.strimzi.io", Kind: "Kafka"}), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := grantAllows(tc.grant, "apps", "alice", "alice-secret"); got != tc.want {
				t.Errorf("grantAllows = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestDesiredStatus(t *testing.T) {
	conn := &kafkav1beta2.KafkaConnection{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Generation: 3},
		Status:     kafkav1beta2.KafkaConnectionStatus{Listener: "old", BootstrapServers: "old:9092"},
	}
	ok := binding.Result{Choice: binding.Choice{Listener: strimzi.Listener{Name: "tls"}, BootstrapServers: "b:9093", SecurityProtocol: "SSL"}}
	cases := map[string]struct {
		res                        binding.Result
		failure                    *binding.Failure
		bound                      string
		wantReason, wantListener   string
		wantBootstrap, wantBinding string
	}{
		"a built binding describes the new listener": {ok, nil, "app", ReasonBound, "tls", "b:9093", "app"},
		"a failure with the Secret in place keeps describing it": {
			binding.Result{}, &binding.Failure{Reason: binding.ReasonUserNotReady}, "app", binding.ReasonUserNotReady, "old", "old:9092", "app"},
		"a failure without a Secret has no binding and no bootstrap": {
			binding.Result{}, &binding.Failure{Reason: binding.ReasonKafkaNotFound}, "", binding.ReasonKafkaNotFound, "old", "", ""},
		"an assembly failure without a Secret reports the chosen listener": {
			binding.Result{Choice: ok.Choice}, &binding.Failure{Reason: binding.ReasonCACertificateMissing}, "", binding.ReasonCACertificateMissing, "tls", "b:9093", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := desiredStatus(conn, tc.res, tc.failure, tc.bound)
			c := readyCondition(&st)
			if c == nil || c.Reason != tc.wantReason || c.ObservedGeneration != 3 || st.ObservedGeneration != 3 {
				t.Fatalf("condition = %+v, observedGeneration %d", c, st.ObservedGeneration)
			}
			if (c.Status == metav1.ConditionTrue) != (tc.failure == nil) {
				t.Errorf("status = %s", c.Status)
			}
			binding := ""
			if st.Binding != nil {
				binding = st.Binding.Name
			}
			if st.Listener != tc.wantListener || st.BootstrapServers != tc.wantBootstrap || binding != tc.wantBinding {
				t.Errorf("listener %q bootstrap %q binding %q", st.Listener, st.BootstrapServers, binding)
			}
		})
	}
}

func TestSameStatusIgnoresTransitionTimeOnly(t *testing.T) {
	a := kafkav1beta2.KafkaConnectionStatus{ObservedGeneration: 1, Listener: "l", Conditions: []metav1.Condition{
		{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonBound, Message: "m", ObservedGeneration: 1}}}
	b := *a.DeepCopy()
	b.Conditions[0].LastTransitionTime = metav1.Now()
	if !sameStatus(&a, &b) {
		t.Error("a different lastTransitionTime counts as a change")
	}
	b.Conditions[0].Message = "other"
	if sameStatus(&a, &b) {
		t.Error("a different message does not count as a change")
	}
}

func TestDigestTransformIsIdempotentAndMatchesDesiredData(t *testing.T) {
	data := map[string][]byte{"a": []byte("b"), "type": []byte("kafka")}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{wellknown.LabelBinding: wellknown.LabelBindingValue, wellknown.LabelManagedBy: wellknown.LabelManagedByValue}},
		Type:       binding.SecretType,
		Data:       data,
	}
	meta, _ := binding.SecretMetadata(&kafkav1beta2.KafkaConnection{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, nil)
	s.Annotations = meta.Annotations
	once, _ := digestBindingSecret(s)
	twice, _ := digestBindingSecret(once)
	if !upToDate(twice.(*corev1.Secret), meta, dataDigest(map[string][]byte{"type": []byte("kafka"), "a": []byte("b")})) {
		t.Fatal("a Secret with the wanted data is not up to date after the transform ran twice")
	}
	if upToDate(twice.(*corev1.Secret), meta, dataDigest(map[string][]byte{"a": []byte("b")})) {
		t.Fatal("an extra entry goes unnoticed")
	}
	if dataDigest(map[string][]byte{"ab": []byte("c")}) == dataDigest(map[string][]byte{"a": []byte("bc")}) {
		t.Fatal("digests collide by concatenation")
	}
}

func TestBindingSecretMapsToItsController(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "kafka.strimzi.io/v1beta2", Kind: "KafkaConnection", Name: "owner", Controller: ptr(true)}}}}
	r := &reconciler{}
	if got := r.bindingSecretToConnection(s); len(got) != 1 || got[0].Name != "owner" || got[0].Namespace != "ns" {
		t.Errorf("keys = %v", got)
	}
}

func TestPruneSourceSecretKeepsWhatTheBindingReads(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alice", ResourceVersion: "7",
		Labels: map[string]string{"strimzi.io/cluster": "c"}, Annotations: map[string]string{"a": "b"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "KafkaUser", Name: "alice"}}}, Data: map[string][]byte{
		"ca.crt": nil, "ca-2025.crt": nil, "ca.p12": nil, "ca.password": nil, "ca.key": nil,
		"password": nil, "sasl.jaas.config": nil, "user.crt": nil, "user.key": nil, "user.p12": nil, "user.password": nil,
		"my-cluster-kafka-0.key": nil,
	}}
	o, _ := pruneSourceSecret(s)
	out := o.(*corev1.Secret)
	if out.Name != "alice" || out.Namespace != "ns" || out.ResourceVersion != "7" {
		t.Errorf("identity lost: %+v", out.ObjectMeta)
	}
	if out.Labels != nil || out.Annotations != nil || out.OwnerReferences != nil {
		t.Errorf("metadata the binding does not read was kept: %+v", out.ObjectMeta)
	}
	var kept []string
	for k := range out.Data {
		kept = append(kept, k)
	}
	slices.Sort(kept)
	want := []string{"ca-2025.crt", "ca.crt", "ca.p12", "ca.password", "password", "user.crt", "user.key", "user.password"}
	if !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
}

func TestStripManagedFieldsDropsLastApplied(t *testing.T) {
	ann := map[string]string{corev1.LastAppliedConfigAnnotation: "{...}", "kafkalink.io/abandon-targets": "a"}
	c := &kafkav1beta2.KafkaConnection{ObjectMeta: metav1.ObjectMeta{Annotations: ann,
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	o, _ := stripManagedFields(c)
	got := o.(*kafkav1beta2.KafkaConnection)
	if got.ManagedFields != nil || len(got.Annotations) != 1 || got.Annotations["kafkalink.io/abandon-targets"] != "a" {
		t.Errorf("managedFields %v, annotations %v", got.ManagedFields, got.Annotations)
	}
	if _, ok := ann[corev1.LastAppliedConfigAnnotation]; !ok {
		t.Error("the informer's object was changed in place")
	}
}
