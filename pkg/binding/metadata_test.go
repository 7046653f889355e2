package binding

import (
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/internal/golden"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

func connWith(secretName string, labels map[string]kafkav1beta2.LabelValue, annotations map[string]kafkav1beta2.AnnotationValue) *kafkav1beta2.KafkaConnection {
	c := &kafkav1beta2.KafkaConnection{ObjectMeta: metav1.ObjectMeta{Name: "my-connection", Namespace: "app"}}
	c.Spec.SecretName = secretName
	if labels != nil || annotations != nil {
		c.Spec.Template = &kafkav1beta2.ConnectionTemplate{Secret: &kafkav1beta2.SecretTemplate{
			Metadata: &kafkav1beta2.MetadataTemplate{Labels: labels, Annotations: annotations}}}
	}
	return c
}

// TestSecretMetadataGolden pins the binding Secret's name, labels and annotations, and the
// refusals of keys the operator does not allow, in testdata/secret-metadata.golden.
func TestSecretMetadataGolden(t *testing.T) {
	cases := []struct {
		name     string
		conn     *kafkav1beta2.KafkaConnection
		prefixes []string
	}{
		{"no template: the connection's name and kafkalink's labels", connWith("", nil, nil), nil},
		{"a Secret name of the user's choice", connWith("kafka-binding", nil, nil), nil},
		{"labels and annotations with any key allowed", connWith("", map[string]kafkav1beta2.LabelValue{"team": "payments", "example.com/tier": "gold"},
			map[string]kafkav1beta2.AnnotationValue{"reflector.v1.k8s.emberstack.com/reflection-allowed": "true"}), nil},
		{"keys under the allowed prefixes", connWith("", map[string]kafkav1beta2.LabelValue{"example.com/tier": "gold"},
			map[string]kafkav1beta2.AnnotationValue{"team.example.com/owner": "ana"}), []string{"example.com/", "team.example.com/"}},
		{"keys outside the allowed prefixes are all named", connWith("b", map[string]kafkav1beta2.LabelValue{"team": "payments", "example.com/tier": "gold"},
			map[string]kafkav1beta2.AnnotationValue{"kubectl.kubernetes.io/last-applied-configuration": "{}"}), []string{"example.com/"}},
		{"an empty allowed list refuses every key", connWith("", map[string]kafkav1beta2.LabelValue{"team": "payments"}, nil), []string{}},
		{"kafkalink's own label key is refused even with any key allowed", connWith("", map[string]kafkav1beta2.LabelValue{wellknown.LabelBinding: "x"}, nil), nil},
	}
	type out struct {
		Case        string            `json:"case"`
		Name        string            `json:"name,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
		Failure     *Failure          `json:"failure,omitempty"`
	}
	var all []out
	for _, tc := range cases {
		m, f := SecretMetadata(tc.conn, tc.prefixes)
		all = append(all, out{Case: tc.name, Name: m.Name, Labels: m.Labels, Annotations: m.Annotations, Failure: f})
	}
	got, err := yaml.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "secret-metadata.golden"), got)
}

func TestMetadataHashSeesEveryChange(t *testing.T) {
	base, _ := SecretMetadata(connWith("", map[string]kafkav1beta2.LabelValue{"a": "b"}, nil), nil)
	cases := map[string]*kafkav1beta2.KafkaConnection{
		"a label removed":                      connWith("", nil, nil),
		"a label's value changed":              connWith("", map[string]kafkav1beta2.LabelValue{"a": "c"}, nil),
		"the label moved to the annotations":   connWith("", nil, map[string]kafkav1beta2.AnnotationValue{"a": "b"}),
		"key and value split differently":      connWith("", map[string]kafkav1beta2.LabelValue{"ab": ""}, nil),
		"a label added":                        connWith("", map[string]kafkav1beta2.LabelValue{"a": "b", "c": "d"}, nil),
		"an empty template, not a missing one": connWith("", map[string]kafkav1beta2.LabelValue{}, map[string]kafkav1beta2.AnnotationValue{"x": ""}),
	}
	for name, conn := range cases {
		t.Run(name, func(t *testing.T) {
			m, f := SecretMetadata(conn, nil)
			if f != nil {
				t.Fatal(f)
			}
			if m.Annotations[wellknown.AnnotationAppliedHash] == base.Annotations[wellknown.AnnotationAppliedHash] {
				t.Errorf("same applied hash %s as the base template", base.Annotations[wellknown.AnnotationAppliedHash])
			}
		})
	}
}

func TestMetadataCurrent(t *testing.T) {
	want, _ := SecretMetadata(connWith("", map[string]kafkav1beta2.LabelValue{"team": "a"}, map[string]kafkav1beta2.AnnotationValue{"note": "n"}), nil)
	copyOf := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	cases := map[string]struct {
		edit func(labels, annotations map[string]string)
		want bool
	}{
		"exactly what kafkalink wants":                   {func(map[string]string, map[string]string) {}, true},
		"another controller's label added is left alone": {func(l, _ map[string]string) { l["other"] = "x" }, true},
		"a template label changed by hand":               {func(l, _ map[string]string) { l["team"] = "b" }, false},
		"a template annotation deleted by hand":          {func(_, a map[string]string) { delete(a, "note") }, false},
		"the binding label deleted by hand":              {func(l, _ map[string]string) { delete(l, wellknown.LabelBinding) }, false},
		"the applied hash edited by hand":                {func(_, a map[string]string) { a[wellknown.AnnotationAppliedHash] = "0" }, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, a := copyOf(want.Labels), copyOf(want.Annotations)
			tc.edit(l, a)
			if got := MetadataCurrent(want, l, a); got != tc.want {
				t.Errorf("MetadataCurrent = %v, want %v", got, tc.want)
			}
		})
	}
}
