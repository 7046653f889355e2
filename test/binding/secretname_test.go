package binding_test

import (
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
)

// allowedPrefixes is the operator's --allowed-metadata-prefixes in these suites.
const allowedPrefixes = "example.com/,team.example.com/"

// secretNameAndMetadata walks one connection through the binding Secret's name, labels and
// annotations (spec.secretName and spec.template.secret.metadata, the Strimzi Access Operator's
// fields): a name taken by a foreign Secret is refused, not adopted; labels and annotations
// arrive and are restored after a hand edit; a key outside --allowed-metadata-prefixes is
// refused while the Secret keeps its last good binding; a removed annotation leaves the Secret;
// a rename writes the new Secret, points status.binding at it and removes the old one.
func (h *harness) secretNameAndMetadata(t *testing.T) {
	h.t = t
	ns := h.namespace("secretname")
	h.setKafka(ns, "my-cluster", []listener{plain}, nil)
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: ns}, Data: map[string][]byte{"mine": []byte("x")}}
	if _, err := h.kube.CoreV1().Secrets(ns).Create(h.ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	c := connection(ns, "app", "my-cluster", "", "", "")
	c.Spec.SecretName = "taken"
	h.createConnection(c)
	if c := h.waitReason(ns, "app", "SecretNotOwned"); c.Status.Binding != nil {
		t.Errorf("status.binding = %+v for a name kafkalink does not own", c.Status.Binding)
	}
	h.waitEvent(ns, "app", "Warning", "SecretNotOwned")

	h.updateConnection(ns, "app", func(c *kafkav1beta2.KafkaConnection) {
		c.Spec.SecretName = "kafka-binding"
		c.Spec.Template = &kafkav1beta2.ConnectionTemplate{Secret: &kafkav1beta2.SecretTemplate{Metadata: &kafkav1beta2.MetadataTemplate{
			Labels:      map[string]kafkav1beta2.LabelValue{"example.com/tier": "gold"},
			Annotations: map[string]kafkav1beta2.AnnotationValue{"team.example.com/owner": "ana"},
		}}}
	})
	if c := h.waitReason(ns, "app", "Bound"); c.Status.Binding == nil || c.Status.Binding.Name != "kafka-binding" {
		t.Fatalf("status.binding = %+v, want kafka-binding", c.Status.Binding)
	}
	h.waitSecretMeta(ns, "kafka-binding", "the template's label and annotation", map[string]string{"example.com/tier": "gold"}, map[string]string{"team.example.com/owner": "ana"}, nil)
	h.checkUntouched(foreign)
	h.checkNoSecret(ns, "app")

	// A hand edit of a template label is put back.
	s, err := h.kube.CoreV1().Secrets(ns).Get(h.ctx, "kafka-binding", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Labels["example.com/tier"] = "silver"
	if _, err := h.kube.CoreV1().Secrets(ns).Update(h.ctx, s, metav1.UpdateOptions{FieldManager: "hand"}); err != nil {
		t.Fatal(err)
	}
	h.waitSecretMeta(ns, "kafka-binding", "the label restored", map[string]string{"example.com/tier": "gold"}, nil, nil)

	// A label outside the allowed prefixes: refused in status; the Secret stays as it was.
	h.updateConnection(ns, "app", func(c *kafkav1beta2.KafkaConnection) {
		c.Spec.Template.Secret.Metadata.Labels["team"] = "payments"
	})
	if c := h.waitReason(ns, "app", "MetadataNotAllowed"); c.Status.Binding == nil || c.Status.Binding.Name != "kafka-binding" {
		t.Errorf("status.binding = %+v while the Secret keeps its last good binding", c.Status.Binding)
	}
	h.waitSecretMeta(ns, "kafka-binding", "no refused label", nil, nil, []string{"team"})

	// Back to allowed keys, the annotation dropped: it leaves the Secret.
	h.updateConnection(ns, "app", func(c *kafkav1beta2.KafkaConnection) {
		delete(c.Spec.Template.Secret.Metadata.Labels, "team")
		c.Spec.Template.Secret.Metadata.Annotations = nil
	})
	h.waitReason(ns, "app", "Bound")
	h.waitSecretMeta(ns, "kafka-binding", "the annotation removed", map[string]string{"example.com/tier": "gold"}, nil, []string{"team.example.com/owner"})

	// A rename: the new Secret, status.binding follows, the old Secret goes.
	h.updateConnection(ns, "app", func(c *kafkav1beta2.KafkaConnection) { c.Spec.SecretName = "kafka-binding-2" })
	h.poll("status.binding to follow the rename", func() (bool, error) {
		c, err := h.kl.KafkaV1beta2().KafkaConnections(ns).Get(h.ctx, "app", metav1.GetOptions{})
		return err == nil && c.Status.Binding != nil && c.Status.Binding.Name == "kafka-binding-2" && c.Status.ObservedGeneration == c.Generation, nil
	})
	h.waitSecret(ns, "kafka-binding-2", "the renamed binding", func(d map[string][]byte) bool { return string(d["security.protocol"]) == "PLAINTEXT" })
	h.waitSecretGone(ns, "kafka-binding")
	h.waitEvent(ns, "app", "Normal", "SecretDeleted")
	h.checkUntouched(foreign)
}

func (h *harness) updateConnection(ns, name string, edit func(*kafkav1beta2.KafkaConnection)) {
	h.t.Helper()
	c, err := h.kl.KafkaV1beta2().KafkaConnections(ns).Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	edit(c)
	if _, err := h.kl.KafkaV1beta2().KafkaConnections(ns).Update(h.ctx, c, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// waitSecretMeta waits until the Secret has the labels and annotations given and none of the
// keys in absent (as label or annotation).
func (h *harness) waitSecretMeta(ns, name, what string, labels, annotations map[string]string, absent []string) {
	h.t.Helper()
	h.poll("Secret "+ns+"/"+name+": "+what, func() (bool, error) {
		s, err := h.kube.CoreV1().Secrets(ns).Get(h.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, k := range absent {
			if _, ok := s.Labels[k]; ok {
				return false, nil
			}
			if _, ok := s.Annotations[k]; ok {
				return false, nil
			}
		}
		return contains(s.Labels, labels) && contains(s.Annotations, annotations), nil
	})
}

func contains(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// checkUntouched fails the test when a foreign Secret was changed or taken over.
func (h *harness) checkUntouched(s *corev1.Secret) {
	h.t.Helper()
	got, err := h.kube.CoreV1().Secrets(s.Namespace).Get(h.ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("foreign Secret %s: %v", s.Name, err)
	}
	if len(got.OwnerReferences) > 0 || len(got.Labels) > 0 || !maps.EqualFunc(got.Data, s.Data, func(a, b []byte) bool { return string(a) == string(b) }) {
		h.t.Errorf("foreign Secret %s was changed: %+v", s.Name, got)
	}
}

func (h *harness) checkNoSecret(ns, name string) {
	h.t.Helper()
	if _, err := h.kube.CoreV1().Secrets(ns).Get(h.ctx, name, metav1.GetOptions{}); err == nil {
		h.t.Errorf("Secret %s/%s exists: the binding has a name of its own", ns, name)
	}
}

// statusLeavesOthersFields: kafkalink's status write leaves the connection's other field managers
// their fields. A GitOps tool's ownership of a label and of kubectl's last-applied copy (which
// kafkalink's cache drops) survives the bind, so the tool still removes them when its manifest
// does.
func (h *harness) statusLeavesOthersFields(t *testing.T) {
	h.t = t
	ns := h.namespace("managers")
	h.setKafka(ns, "my-cluster", []listener{plain}, nil)
	c := connection(ns, "app", "my-cluster", "", "", "")
	c.Labels = map[string]string{"example.com/team": "payments"}
	c.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"kind":"KafkaConnection"}`}
	if _, err := h.kl.KafkaV1beta2().KafkaConnections(ns).Create(h.ctx, c, metav1.CreateOptions{FieldManager: "gitops"}); err != nil {
		t.Fatal(err)
	}
	got := h.waitReason(ns, "app", "Bound")
	var owned string
	for _, mf := range got.ManagedFields {
		if mf.Manager == "gitops" && mf.FieldsV1 != nil {
			owned += mf.FieldsV1.GetRawString()
		}
	}
	for _, f := range []string{`"f:example.com/team"`, `"f:` + corev1.LastAppliedConfigAnnotation + `"`} {
		if !strings.Contains(owned, f) {
			t.Errorf("the creating manager no longer owns %s after the status write; its fields: %s", f, owned)
		}
	}
}
