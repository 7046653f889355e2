package binding_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kafkav1beta2ac "github.com/kafkalink/kafkalink/generated/applyconfiguration/kafka/v1beta2"
	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	kafkalinkinformers "github.com/kafkalink/kafkalink/generated/informers/externalversions"
	"github.com/kafkalink/kafkalink/internal/procstat"
	"github.com/kafkalink/kafkalink/test/framework"
)

// BenchmarkWriteForms measures the kube-apiserver CPU each form of a binding write costs: the
// binding Secret created and then changed (as at first bind and at a CA renewal), and a
// KafkaConnection's status changed, by server-side apply, by apply with a smaller body, by
// create/update with resourceVersion preconditions, and by merge patch. Informers watch what is
// written, as the operator's do, so the watch fan-out is in the figures. Run it with
//
//	go test -run '^$' -bench WriteForms -benchtime 1x -timeout 30m ./test/binding/
//
// WRITE_FORMS_N changes the writes per form (2,000 by default), WRITE_FORMS_ROUNDS runs the
// forms that many times, interleaved, and prints the lowest and the median (on a busy host the
// CPU per request wanders), WRITE_FORMS_ONLY (a regular expression) runs only the forms it
// matches. WRITE_FORMS_PROFILE, a regular
// expression, profiles kube-apiserver's CPU for the first 5 s of the writes of each form whose
// name it matches (give it enough writes to last that long) and prints the profile's top.
func BenchmarkWriteForms(b *testing.B) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("WRITE_FORMS_N")); err == nil && v > 0 {
		n = v
	}
	for range b.N {
		benchWriteForms(b, n)
	}
}

// writeForm is one way to write: it runs write(i) for objects 0..n-1 of its own namespace.
type writeForm struct {
	name  string
	setup func(w *formWriter, i int) error // not measured
	write func(w *formWriter, i int) error
}

type formWriter struct {
	ctx  context.Context
	kube kubernetes.Interface
	kl   kafkalinkclient.Interface
	ns   string
	data map[string][]byte // about the size of a binding Secret with PEM and PKCS12
	rv   []string          // resourceVersions of the objects, for the update forms
	// floor installs the schemaless custom resource of floorForms, once per control plane.
	floor func() (dynamic.Interface, error)
}

func benchWriteForms(b *testing.B, n int) {
	ctx := context.Background()
	cp, err := framework.Start(ctx, framework.Options{StrimziVersion: "1.2.0", WithoutControllerManager: true})
	must(b, err)
	defer cp.Stop()
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS = -1
	kube, err := kubernetes.NewForConfig(cfg)
	must(b, err)
	kl, err := kafkalinkclient.NewForConfig(cfg)
	must(b, err)
	// Informers on everything, as the operator has: each write is sent to one watcher.
	stop := make(chan struct{})
	defer close(stop)
	kf := informers.NewSharedInformerFactory(kube, 0)
	_ = kf.Core().V1().Secrets().Informer()
	klf := kafkalinkinformers.NewSharedInformerFactory(kl, 0)
	_ = klf.Kafka().V1beta2().KafkaConnections().Informer()
	kf.Start(stop)
	klf.Start(stop)

	forms := append(writeForms(), floorForms()...)
	floor := installFloor(cp, stop)
	if expr := os.Getenv("WRITE_FORMS_ONLY"); expr != "" {
		forms = slices.DeleteFunc(forms, func(f writeForm) bool { return !regexp.MustCompile(expr).MatchString(f.name) })
	}
	rounds := 1
	if v, err := strconv.Atoi(os.Getenv("WRITE_FORMS_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	// Rounds interleave the forms, so a busy spell of the host weighs on all of them alike.
	perWrite := make([][]float64, len(forms))
	for r := range rounds {
		for fi, form := range forms {
			perWrite[fi] = append(perWrite[fi], runForm(b, cp, form, fmt.Sprintf("form-%d-%d", r, fi), n, kube, kl, floor))
		}
	}
	fmt.Printf("kube-apiserver CPU per write, %d writes per form by 16 workers (informers watching), %d rounds (load average %s):\n",
		n, rounds, loadAverage())
	fmt.Println("| write | apiserver ms per write, lowest | median | each round |")
	fmt.Println("|---|---|---|---|")
	for fi, form := range forms {
		sorted := slices.Sorted(slices.Values(perWrite[fi]))
		each := make([]string, len(perWrite[fi]))
		for i, v := range perWrite[fi] {
			each[i] = fmt.Sprintf("%.2f", v)
		}
		fmt.Printf("| %s | %.2f | %.2f | %s |\n", form.name, sorted[0], sorted[len(sorted)/2], strings.Join(each, " "))
	}
}

// runForm writes n objects of a form in namespace ns and returns kube-apiserver's CPU ms per write.
func runForm(b *testing.B, cp *framework.ControlPlane, form writeForm, ns string, n int, kube kubernetes.Interface, kl kafkalinkclient.Interface,
	floor func() (dynamic.Interface, error)) float64 {
	ctx := context.Background()
	w := &formWriter{ctx: ctx, kube: kube, kl: kl, ns: ns, data: bindingSizedData(b), rv: make([]string, n), floor: floor}
	must(b, createNamespaceWith(ctx, kube, w.ns))
	if form.setup != nil {
		parallel(b, n, 16, func(i int) error { return form.setup(w, i) })
	}
	profiled := profileForm(b, cp, form.name)
	api0, etcd0 := procstat.CPU(cp.PID("kube-apiserver")), procstat.CPU(cp.PID("etcd"))
	start := time.Now()
	parallel(b, n, 16, func(i int) error { return form.write(w, i) })
	took := time.Since(start)
	api, etcd := procstat.CPU(cp.PID("kube-apiserver"))-api0, procstat.CPU(cp.PID("etcd"))-etcd0
	fmt.Printf("  %s: kube-apiserver %.2f ms per write, etcd %.2f, %.0f writes/s\n", form.name, ms(api)/float64(n), ms(etcd)/float64(n), float64(n)/took.Seconds())
	profiled()
	return ms(api) / float64(n)
}

// loadAverage is the host's 1-minute load average, from /proc/loadavg.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}

// profileForm profiles kube-apiserver for 5 s from now when WRITE_FORMS_PROFILE matches the
// form's name; the returned function waits for the profile and prints its top.
func profileForm(b *testing.B, cp *framework.ControlPlane, name string) (print func()) {
	expr := os.Getenv("WRITE_FORMS_PROFILE")
	if expr == "" || !regexp.MustCompile(expr).MatchString(name) {
		return func() {}
	}
	done := make(chan string, 1)
	go func() {
		file, err := saveAPIServerProfile(cp, 5*time.Second)
		if err != nil {
			b.Logf("kube-apiserver CPU profile: %v", err)
		}
		done <- file
	}()
	return func() {
		if file := <-done; file != "" {
			printAPIServerTop(b, file, name)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func createNamespaceWith(ctx context.Context, kube kubernetes.Interface, name string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

// bindingSizedData is random data the size of a binding Secret with a SCRAM user, PEM and PKCS12
// truststores (about 5 KiB), so each form writes as many bytes as the operator does.
func bindingSizedData(b *testing.B) map[string][]byte {
	sizes := map[string]int{"bootstrap.servers": 60, "security.protocol": 14, "sasl.mechanism": 13, "username": 10,
		"password": 32, "sasl.jaas.config": 140, "ssl.truststore.crt": 1200, "ssl.truststore.p12": 1400,
		"ssl.truststore.password": 32, "ssl.truststore.type": 6, "client.properties": 1500}
	data := map[string][]byte{}
	for k, size := range sizes {
		v := make([]byte, size)
		_, err := rand.Read(v)
		must(b, err)
		data[k] = v
	}
	return data
}

func (w *formWriter) name(i int) string { return fmt.Sprintf("app-%05d", i) }

// changed is the data with one entry changed, as a CA renewal changes the truststores.
func (w *formWriter) changed(i int) map[string][]byte {
	d := make(map[string][]byte, len(w.data))
	for k, v := range w.data {
		d[k] = v
	}
	d["ssl.truststore.crt"] = append([]byte("renewed "+strconv.Itoa(i)), w.data["ssl.truststore.crt"]...)
	return d
}

func (w *formWriter) owner() metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: "kafkalink.io/v1beta2", Kind: "KafkaConnection", Name: "owner",
		UID: "6a1d1a2e-0000-4000-8000-000000000001", Controller: &yes, BlockOwnerDeletion: &yes}
}

func (w *formWriter) secret(i int, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: w.name(i), Namespace: w.ns, ResourceVersion: w.rv[i],
			Labels:          map[string]string{"kafkalink.io/binding": "true", "app.kubernetes.io/managed-by": "kafkalink"},
			OwnerReferences: []metav1.OwnerReference{w.owner()}},
		Type: "kafkalink.io/binding", Data: data,
	}
}

func (w *formWriter) applyFull(i int, data map[string][]byte) error {
	o := w.owner()
	ac := corev1ac.Secret(w.name(i), w.ns).WithType("kafkalink.io/binding").
		WithLabels(map[string]string{"kafkalink.io/binding": "true", "app.kubernetes.io/managed-by": "kafkalink"}).
		WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion(o.APIVersion).WithKind(o.Kind).WithName(o.Name).
			WithUID(o.UID).WithController(true).WithBlockOwnerDeletion(true)).
		WithData(data)
	_, err := w.kube.CoreV1().Secrets(w.ns).Apply(w.ctx, ac, metav1.ApplyOptions{FieldManager: "kafkalink", Force: true})
	return err
}

func (w *formWriter) applyData(i int, data map[string][]byte) error {
	// A manager of its own: under the same one, the fields left out would be removed.
	ac := corev1ac.Secret(w.name(i), w.ns).WithData(data)
	_, err := w.kube.CoreV1().Secrets(w.ns).Apply(w.ctx, ac, metav1.ApplyOptions{FieldManager: "kafkalink-data", Force: true})
	return err
}

func (w *formWriter) create(i int) error {
	s, err := w.kube.CoreV1().Secrets(w.ns).Create(w.ctx, w.secret(i, w.data), metav1.CreateOptions{FieldManager: "kafkalink"})
	if err == nil {
		w.rv[i] = s.ResourceVersion
	}
	return err
}

func (w *formWriter) connection(i int) error {
	c, err := w.kl.KafkaV1beta2().KafkaConnections(w.ns).Create(w.ctx, connection(w.ns, w.name(i), "big", "user", "", ""), metav1.CreateOptions{})
	if err == nil {
		w.rv[i] = c.ResourceVersion
	}
	return err
}

// status is a Ready status of the shape the operator writes.
func (w *formWriter) status(i int) kafkav1beta2.KafkaConnectionStatus {
	return kafkav1beta2.KafkaConnectionStatus{ObservedGeneration: 1, Listener: "scram", BootstrapServers: "big-kafka-bootstrap.bench.svc:9093",
		Binding: &kafkav1beta2.BindingReference{Name: w.name(i)},
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Bound",
			Message: `Secret ` + w.name(i) + ` binds listener "scram" (SASL_SSL)`, LastTransitionTime: metav1.Now()}}}
}

func writeForms() []writeForm {
	return []writeForm{
		{name: "Secret: server-side apply, today's fields, create", write: func(w *formWriter, i int) error { return w.applyFull(i, w.data) }},
		{name: "Secret: server-side apply, today's fields, change", setup: func(w *formWriter, i int) error { return w.applyFull(i, w.data) },
			write: func(w *formWriter, i int) error { return w.applyFull(i, w.changed(i)) }},
		{name: "Secret: server-side apply, data only, change", setup: func(w *formWriter, i int) error { return w.applyFull(i, w.data) },
			write: func(w *formWriter, i int) error { return w.applyData(i, w.changed(i)) }},
		{name: "Secret: create", write: func(w *formWriter, i int) error { return w.create(i) }},
		{name: "Secret: update with resourceVersion, change", setup: func(w *formWriter, i int) error { return w.create(i) },
			write: func(w *formWriter, i int) error {
				_, err := w.kube.CoreV1().Secrets(w.ns).Update(w.ctx, w.secret(i, w.changed(i)), metav1.UpdateOptions{FieldManager: "kafkalink"})
				return err
			}},
		{name: "Secret: merge patch of data, change", setup: func(w *formWriter, i int) error { return w.create(i) },
			write: func(w *formWriter, i int) error {
				patch, _ := json.Marshal(map[string]any{"data": w.changed(i)})
				_, err := w.kube.CoreV1().Secrets(w.ns).Patch(w.ctx, w.name(i), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kafkalink"})
				return err
			}},
		{name: "status: server-side apply", setup: (*formWriter).connection, write: func(w *formWriter, i int) error {
			st := w.status(i)
			c := st.Conditions[0]
			ac := kafkav1beta2ac.KafkaConnection(w.name(i), w.ns).WithStatus(kafkav1beta2ac.KafkaConnectionStatus().
				WithObservedGeneration(1).WithListener(st.Listener).WithBootstrapServers(st.BootstrapServers).
				WithBinding(kafkav1beta2ac.BindingReference().WithName(w.name(i))).
				WithConditions(metav1ac.Condition().WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).
					WithMessage(c.Message).WithObservedGeneration(1).WithLastTransitionTime(c.LastTransitionTime)))
			_, err := w.kl.KafkaV1beta2().KafkaConnections(w.ns).ApplyStatus(w.ctx, ac, metav1.ApplyOptions{FieldManager: "kafkalink", Force: true})
			return err
		}},
		{name: "status: update with resourceVersion", setup: (*formWriter).connection, write: func(w *formWriter, i int) error {
			c := connection(w.ns, w.name(i), "big", "user", "", "")
			c.ResourceVersion, c.Status = w.rv[i], w.status(i)
			_, err := w.kl.KafkaV1beta2().KafkaConnections(w.ns).UpdateStatus(w.ctx, c, metav1.UpdateOptions{FieldManager: "kafkalink"})
			return err
		}},
		{name: "status: update with resourceVersion, metadata and status only", setup: (*formWriter).connection, write: func(w *formWriter, i int) error {
			// The status subresource takes only the status from the object sent: the spec need not go.
			c := &kafkav1beta2.KafkaConnection{ObjectMeta: metav1.ObjectMeta{Name: w.name(i), Namespace: w.ns, ResourceVersion: w.rv[i]}, Status: w.status(i)}
			_, err := w.kl.KafkaV1beta2().KafkaConnections(w.ns).UpdateStatus(w.ctx, c, metav1.UpdateOptions{FieldManager: "kafkalink"})
			return err
		}},
		{name: "status: update with resourceVersion, Ready condition only, no message", setup: (*formWriter).connection, write: func(w *formWriter, i int) error {
			st := w.status(i)
			c := &kafkav1beta2.KafkaConnection{ObjectMeta: metav1.ObjectMeta{Name: w.name(i), Namespace: w.ns, ResourceVersion: w.rv[i]},
				Status: kafkav1beta2.KafkaConnectionStatus{Conditions: st.Conditions}}
			c.Status.Conditions[0].Message = ""
			_, err := w.kl.KafkaV1beta2().KafkaConnections(w.ns).UpdateStatus(w.ctx, c, metav1.UpdateOptions{FieldManager: "kafkalink"})
			return err
		}},
		{name: "status: merge patch with resourceVersion (the operator's since issue 30)", setup: (*formWriter).connection, write: func(w *formWriter, i int) error {
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": w.rv[i]}, "status": w.status(i)})
			_, err := w.kl.KafkaV1beta2().KafkaConnections(w.ns).Patch(w.ctx, w.name(i), types.MergePatchType, patch,
				metav1.PatchOptions{FieldManager: "kafkalink"}, "status")
			return err
		}},
		{name: "status: merge patch", setup: (*formWriter).connection, write: func(w *formWriter, i int) error {
			patch, _ := json.Marshal(map[string]any{"status": w.status(i)})
			_, err := w.kl.KafkaV1beta2().KafkaConnections(w.ns).Patch(w.ctx, w.name(i), types.MergePatchType, patch,
				metav1.PatchOptions{FieldManager: "kafkalink"}, "status")
			return err
		}},
	}
}
