package bindingcontroller

// Fast tests of the binding controller's writes, applySecret and writeStatus, on fake clientsets
// (sample-controller style): objects built with option funcs, one call, the recorded actions
// asserted. The control-plane suites in test/binding cover the informers and the API server.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kafkalinkfake "github.com/kafkalink/kafkalink/generated/clientset/versioned/fake"
	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

// writeFixture is a reconciler whose clients are fakes that record their actions.
type writeFixture struct {
	t         *testing.T
	kube      *kubefake.Clientset
	kafkalink *kafkalinkfake.Clientset
	recorder  *record.FakeRecorder
	r         *reconciler
}

var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newWriteFixture makes the fakes; live are the objects the API server holds.
func newWriteFixture(t *testing.T, live ...runtime.Object) *writeFixture {
	return newWriteFixtureWith(t, nil, live...)
}

// newWriteFixtureWith makes the fakes with KafkaConnections conns too.
func newWriteFixtureWith(t *testing.T, conns []runtime.Object, live ...runtime.Object) *writeFixture {
	f := &writeFixture{
		t: t,
		// NewClientset tracks field managers, so a Secret's server-side apply behaves like the API
		// server's (entries other managers own survive it).
		kube: kubefake.NewClientset(live...),
		// Its tracker applies the status's merge patch to the connections in conns.
		kafkalink: kafkalinkfake.NewSimpleClientset(conns...),
		recorder:  record.NewFakeRecorder(100),
	}
	f.r = &reconciler{kube: f.kube, kafkalink: f.kafkalink, recorder: f.recorder, clock: clocktesting.NewFakePassiveClock(testNow)}
	return f
}

// writes lists the recorded writes as "verb resource[/subresource] namespace/name patchType", in
// order; reads are left out.
func (f *writeFixture) writes() []string {
	var out []string
	for _, a := range slices.Concat(f.kube.Actions(), f.kafkalink.Actions()) {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		res := a.GetResource().Resource
		if a.GetSubresource() != "" {
			res += "/" + a.GetSubresource()
		}
		w := fmt.Sprintf("%s %s %s", a.GetVerb(), res, a.GetNamespace())
		if p, ok := a.(clienttesting.PatchAction); ok {
			w += fmt.Sprintf("/%s %s", p.GetName(), p.GetPatchType())
		}
		out = append(out, w)
	}
	return out
}

func newConnection(opts ...func(*kafkav1beta2.KafkaConnection)) *kafkav1beta2.KafkaConnection {
	c := &kafkav1beta2.KafkaConnection{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app", UID: "conn-uid", Generation: 2, ResourceVersion: "41"}}
	for _, o := range opts {
		o(c)
	}
	return c
}

func withTemplateLabel(k, v string) func(*kafkav1beta2.KafkaConnection) {
	return func(c *kafkav1beta2.KafkaConnection) {
		c.Spec.Template = &kafkav1beta2.ConnectionTemplate{Secret: &kafkav1beta2.SecretTemplate{
			Metadata: &kafkav1beta2.MetadataTemplate{Labels: map[string]kafkav1beta2.LabelValue{k: kafkav1beta2.LabelValue(v)}}}}
	}
}

func withLabel(s *corev1.Secret, k, v string) *corev1.Secret {
	s.Labels[k] = v
	return s
}

func withBinding(c *kafkav1beta2.KafkaConnection) {
	c.Status.Binding = &kafkav1beta2.BindingReference{Name: c.Name}
}

func withReady(status metav1.ConditionStatus, reason, message string) func(*kafkav1beta2.KafkaConnection) {
	return func(c *kafkav1beta2.KafkaConnection) {
		c.Status.ObservedGeneration = c.Generation
		c.Status.Conditions = []metav1.Condition{{Type: ConditionReady, Status: status, Reason: reason, Message: message,
			ObservedGeneration: c.Generation, LastTransitionTime: metav1.NewTime(testNow.Add(-time.Hour))}}
	}
}

// newBindingSecret is a binding Secret with data, controlled by the connection whose UID is owner
// ("" for none).
func newBindingSecret(owner types.UID, data map[string][]byte) *corev1.Secret {
	meta, _ := binding.SecretMetadata(newConnection(), nil)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app", UID: "secret-uid", Labels: meta.Labels, Annotations: meta.Annotations},
		Type:       corev1.SecretType(binding.SecretType), Data: data,
	}
	if owner != "" {
		s.OwnerReferences = []metav1.OwnerReference{{APIVersion: kafkav1beta2.SchemeGroupVersion.String(), Kind: kafkaConnectionKind,
			Name: "app", UID: owner, Controller: ptr(true)}}
	}
	return s
}

func withOthersMetadata(s *corev1.Secret) *corev1.Secret {
	s.Labels["team"] = "a"
	s.Annotations["note"] = "kept"
	return s
}

func withoutLabels(s *corev1.Secret) *corev1.Secret {
	s.Labels = nil
	return s
}

// withTemplateOwned records in the Secret's managedFields that kafkalink set label k (by a
// template), as the API server does.
func withTemplateOwned(k string) func(*corev1.Secret) *corev1.Secret {
	return func(s *corev1.Secret) *corev1.Secret {
		s.ManagedFields = append(s.ManagedFields, metav1.ManagedFieldsEntry{Manager: controller.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:` + k + `":{}}}}`)})
		return s
	}
}

// cached is the Secret as the binding informer caches it (data replaced by its digest).
func cached(t *testing.T, s *corev1.Secret) *corev1.Secret {
	out, err := digestBindingSecret(s.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	return out.(*corev1.Secret)
}

func TestApplySecret(t *testing.T) {
	want := map[string][]byte{"bootstrap-servers": []byte("kafka:9093"), "type": []byte("kafka")}
	stale := map[string][]byte{"bootstrap-servers": []byte("old:9093"), "type": []byte("kafka")}
	handEdited := map[string][]byte{"bootstrap-servers": []byte("old:9093"), "type": []byte("kafka"), "extra": []byte("x")}
	cases := map[string]struct {
		conn       *kafkav1beta2.KafkaConnection
		live       *corev1.Secret // what the API server holds
		cache      bool           // whether the binding informer caches live
		wantReason string         // of the failure; "" for none
		wantWrites []string
		wantData   map[string][]byte // the live Secret's data after the call; nil when not checked
		wantEvents int
		// wantOthersKept: the label and annotation withOthersMetadata adds survive the write.
		wantOthersKept bool
		wantNoLabel    string // a label the write must have removed
	}{
		"a missing Secret is created": {
			conn:       newConnection(),
			wantWrites: []string{"create secrets apps"},
			wantData:   want,
		},
		"a Secret deleted by someone else is restored, with an event": {
			conn:       newConnection(withBinding),
			wantWrites: []string{"create secrets apps"},
			wantData:   want, wantEvents: 1,
		},
		"an up-to-date Secret is not written": {
			conn: newConnection(), live: newBindingSecret("conn-uid", want), cache: true,
		},
		"a stale Secret is updated, keeping labels and annotations others added": {
			conn: newConnection(), live: withOthersMetadata(newBindingSecret("conn-uid", stale)), cache: true,
			wantWrites: []string{"update secrets apps"},
			wantData:   want, wantOthersKept: true,
		},
		"entries added by hand are removed in the same update": {
			conn: newConnection(), live: newBindingSecret("conn-uid", handEdited), cache: true,
			wantWrites: []string{"update secrets apps"},
			wantData:   want,
		},
		"an uncached Secret this connection controls (its label removed) is read when the create fails, then updated": {
			conn: newConnection(), live: withoutLabels(newBindingSecret("conn-uid", stale)),
			wantWrites: []string{"create secrets apps", "update secrets apps"},
			wantData:   want,
		},
		"a template label added to the connection is written": {
			conn: newConnection(withTemplateLabel("team", "a")), live: newBindingSecret("conn-uid", want), cache: true,
			wantWrites: []string{"update secrets apps"},
			wantData:   want,
		},
		"a template label changed by hand is put back": {
			conn: newConnection(withTemplateLabel("team", "a")), live: withLabel(newBindingSecret("conn-uid", want), "team", "b"), cache: true,
			wantWrites: []string{"update secrets apps"},
			wantData:   want,
		},
		"a label removed from the template is removed, one another tool set stays": {
			conn: newConnection(withTemplateLabel("tier", "gold")),
			live: withTemplateOwned("team")(withLabel(withLabel(newBindingSecret("conn-uid", want), "team", "a"), "other", "b")), cache: true,
			wantWrites: []string{"update secrets apps"},
			wantData:   want, wantNoLabel: "team",
		},
		"another controller's label on the Secret is no reason to write": {
			conn: newConnection(), live: withLabel(newBindingSecret("conn-uid", want), "other", "b"), cache: true,
		},
		"a cached Secret another connection controls is not adopted": {
			conn: newConnection(), live: newBindingSecret("other-uid", stale), cache: true,
			wantReason: ReasonSecretNotOwned, wantData: stale,
		},
		"an uncached Secret of that name is not adopted (the create fails)": {
			conn: newConnection(), live: newBindingSecret("", stale),
			wantWrites: []string{"create secrets apps"},
			wantReason: ReasonSecretNotOwned, wantData: stale,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var live []runtime.Object
			var existing *corev1.Secret
			if tc.live != nil {
				live = append(live, tc.live)
				if tc.cache {
					existing = cached(t, tc.live)
				}
			}
			f := newWriteFixture(t, live...)
			meta, mf := binding.SecretMetadata(tc.conn, nil)
			if mf != nil {
				t.Fatal(mf)
			}
			failure, err := f.r.applySecret(context.Background(), tc.conn, existing, meta, want)
			if err != nil {
				t.Fatal(err)
			}
			if got := ""; failure != nil || tc.wantReason != "" {
				if failure != nil {
					got = failure.Reason
				}
				if got != tc.wantReason {
					t.Errorf("failure %+v, want reason %q", failure, tc.wantReason)
				}
			}
			if got := f.writes(); !slices.Equal(got, tc.wantWrites) {
				t.Errorf("writes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.wantWrites, "\n"))
			}
			if got := len(f.recorder.Events); got != tc.wantEvents {
				t.Errorf("%d events, want %d", got, tc.wantEvents)
			}
			if tc.wantData == nil {
				return
			}
			s, err := f.kube.CoreV1().Secrets("apps").Get(context.Background(), "app", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if dataDigest(s.Data) != dataDigest(tc.wantData) {
				t.Errorf("Secret data %q, want %q", s.Data, tc.wantData)
			}
			if tc.wantReason == "" && !upToDate(cached(t, s), meta, dataDigest(want)) || tc.wantReason == "" && !controlledBy(s, tc.conn) {
				t.Errorf("written Secret lacks the binding's type, labels or controller: %+v", s.ObjectMeta)
			}
			if _, ok := s.Annotations[wellknown.AnnotationCachedDataSHA256]; ok {
				t.Errorf("the cache's digest was written to the Secret: %v", s.Annotations)
			}
			if tc.wantOthersKept && (s.Labels["team"] != "a" || s.Annotations["note"] != "kept") {
				t.Errorf("labels or annotations others added were lost: %+v", s.ObjectMeta)
			}
			if _, ok := s.Labels[tc.wantNoLabel]; ok && tc.wantNoLabel != "" {
				t.Errorf("label %s of an earlier template was kept: %v", tc.wantNoLabel, s.Labels)
			}
			if tc.wantNoLabel != "" && s.Labels["other"] != "b" {
				t.Errorf("another tool's label was removed: %v", s.Labels)
			}
		})
	}
}

func TestWriteStatus(t *testing.T) {
	bound := func() kafkav1beta2.KafkaConnectionStatus {
		return kafkav1beta2.KafkaConnectionStatus{ObservedGeneration: 2, Binding: &kafkav1beta2.BindingReference{Name: "app"},
			Listener: "tls", BootstrapServers: "kafka:9093",
			Conditions: []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonBound, Message: "bound", ObservedGeneration: 2}}}
	}
	failed := kafkav1beta2.KafkaConnectionStatus{ObservedGeneration: 2,
		Conditions: []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: binding.ReasonKafkaNotFound, Message: "no Kafka", ObservedGeneration: 2}}}
	upToDate := newConnection(func(c *kafkav1beta2.KafkaConnection) {
		c.Status = bound()
		c.Status.Conditions[0].LastTransitionTime = metav1.NewTime(testNow.Add(-time.Hour))
	})
	cases := map[string]struct {
		conn          *kafkav1beta2.KafkaConnection
		want          kafkav1beta2.KafkaConnectionStatus
		failure       *binding.Failure
		wantWrite     bool
		wantEvents    []string
		wantTimeKept  bool
		wantListener  string
		wantCondition metav1.ConditionStatus
		wantOthers    []string // condition types of other writers, kept after Ready
	}{
		"an unchanged status is not written": {conn: upToDate, want: bound()},
		"a first bind is written without an event": {
			conn: newConnection(), want: bound(), wantWrite: true, wantListener: "tls", wantCondition: metav1.ConditionTrue,
		},
		"a failure is written with a Warning event": {
			conn: upToDate, want: failed, failure: &binding.Failure{Reason: binding.ReasonKafkaNotFound, Message: "no Kafka"},
			wantWrite: true, wantEvents: []string{"Warning KafkaNotFound no Kafka"}, wantCondition: metav1.ConditionFalse,
		},
		"a recovery is written with a Normal event": {
			conn: newConnection(withReady(metav1.ConditionFalse, binding.ReasonKafkaNotFound, "no Kafka")), want: bound(),
			wantWrite: true, wantEvents: []string{"Normal Bound bound"}, wantListener: "tls", wantCondition: metav1.ConditionTrue,
		},
		"another writer's condition is kept": {
			conn: newConnection(func(c *kafkav1beta2.KafkaConnection) {
				c.Status.Conditions = []metav1.Condition{{Type: "Audited", Status: metav1.ConditionTrue, Reason: "Checked"}}
			}), want: bound(),
			wantWrite: true, wantListener: "tls", wantCondition: metav1.ConditionTrue, wantOthers: []string{"Audited"},
		},
		"a new message keeps the transition time": {
			conn: upToDate, want: func() kafkav1beta2.KafkaConnectionStatus {
				st := bound()
				st.Conditions[0].Message = "bound again"
				return st
			}(),
			wantWrite: true, wantTimeKept: true, wantListener: "tls", wantCondition: metav1.ConditionTrue,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newWriteFixtureWith(t, []runtime.Object{tc.conn.DeepCopy()})
			if err := f.r.writeStatus(context.Background(), tc.conn, tc.want, tc.failure); err != nil {
				t.Fatal(err)
			}
			var wantWrites []string
			if tc.wantWrite {
				wantWrites = []string{"patch kafkaconnections/status apps/app application/merge-patch+json"}
			}
			if got := f.writes(); !slices.Equal(got, wantWrites) {
				t.Fatalf("writes %v, want %v", got, wantWrites)
			}
			var events []string
			for len(f.recorder.Events) > 0 {
				events = append(events, <-f.recorder.Events)
			}
			if !slices.Equal(events, tc.wantEvents) {
				t.Errorf("events %q, want %q", events, tc.wantEvents)
			}
			if !tc.wantWrite {
				return
			}
			var p clienttesting.PatchActionImpl
			for _, a := range f.kafkalink.Actions() {
				if pa, ok := a.(clienttesting.PatchActionImpl); ok {
					p = pa
				}
			}
			if p.PatchOptions.FieldManager != controller.FieldManager {
				t.Errorf("status patched by %q, want %s", p.PatchOptions.FieldManager, controller.FieldManager)
			}
			var precondition struct {
				Metadata map[string]any `json:"metadata"`
			}
			if err := json.Unmarshal(p.GetPatch(), &precondition); err != nil || len(precondition.Metadata) != 1 ||
				precondition.Metadata["resourceVersion"] != tc.conn.ResourceVersion {
				t.Errorf("patch %s: want the cached resourceVersion %q as its only metadata", p.GetPatch(), tc.conn.ResourceVersion)
			}
			got, err := f.kafkalink.KafkaV1beta2().KafkaConnections("apps").Get(context.Background(), "app", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sent := got
			if !sameStatus(&sent.Status, &tc.want) {
				t.Errorf("status after the patch %+v, want %+v", sent.Status, tc.want)
			}
			if sent.Status.Listener != tc.wantListener || len(sent.Status.Conditions) != 1+len(tc.wantOthers) || sent.Status.Conditions[0].Status != tc.wantCondition {
				t.Fatalf("written status %+v", sent.Status)
			}
			for i, c := range tc.wantOthers {
				if got := sent.Status.Conditions[1+i]; got.Type != c {
					t.Errorf("condition %d is %q, want another writer's %q kept", 1+i, got.Type, c)
				}
			}
			wantTime := testNow
			if tc.wantTimeKept {
				wantTime = testNow.Add(-time.Hour)
			}
			if got := sent.Status.Conditions[0].LastTransitionTime.Time; !got.Equal(wantTime) {
				t.Errorf("lastTransitionTime %v, want %v", got, wantTime)
			}
		})
	}
}

// TestDeleteBindingsRemovesOnlyThisConnectionsOtherSecrets: after a rename the old binding
// Secret is deleted (with its UID as precondition); the new one, another connection's and a
// foreign Secret stay.
func TestDeleteBindingsRemovesOnlyThisConnectionsOtherSecrets(t *testing.T) {
	named := func(name string, owner types.UID, uid types.UID) *corev1.Secret {
		s := newBindingSecret(owner, map[string][]byte{"type": []byte("kafka")})
		s.Name, s.UID = name, uid
		return s
	}
	old, current := named("old", "conn-uid", "old-uid"), named("app", "conn-uid", "app-uid")
	other, foreign := named("other", "other-uid", "other-secret-uid"), named("foreign", "", "foreign-uid")
	f := newWriteFixture(t, old, current, other, foreign)
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{indexBindingController: indexSecretByController})
	for _, s := range []*corev1.Secret{old, current, other, foreign} {
		if err := idx.Add(cached(t, s)); err != nil {
			t.Fatal(err)
		}
	}
	f.r.bindingIndex = idx
	if err := f.r.deleteBindings(context.Background(), newConnection(), "app", "renamed to app"); err != nil {
		t.Fatal(err)
	}
	if got, want := f.writes(), []string{"delete secrets apps"}; !slices.Equal(got, want) {
		t.Fatalf("writes %v, want %v", got, want)
	}
	for _, a := range f.kube.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok {
			if d.GetName() != "old" || d.GetDeleteOptions().Preconditions == nil || *d.GetDeleteOptions().Preconditions.UID != "old-uid" {
				t.Errorf("deleted %s with options %+v, want old with its UID as precondition", d.GetName(), d.GetDeleteOptions())
			}
		}
	}
	if len(f.recorder.Events) != 1 {
		t.Errorf("%d events, want one SecretDeleted", len(f.recorder.Events))
	}
}
