package gateway_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// BenchmarkServiceWriteForms measures the control plane's CPU per generated Service for two
// ways of writing a new one, 16 at a time as the gateway controller writes them: server-side
// apply (what the controller does: a JSON body the API server reads as YAML, then merges field
// ownership) and a plain create. Batches of each alternate, so the host's load falls on both.
// The API server's CPU per Service is what bounds a gateway of 11,000 Services on 2 cores
// (docs/scale.md, "Gateway").
//
//	go test -count=1 -run '^$' -bench BenchmarkServiceWriteForms -benchtime=1x ./test/gateway/
func BenchmarkServiceWriteForms(b *testing.B) {
	const batch, rounds, inFlight = 250, 4, 16
	ctx := context.Background()
	if err := op.p.Stop(15 * time.Second); err != nil { // its Service informer would add to the count
		b.Fatal(err)
	}
	ns := "bench-write-forms"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	dynamicClient, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	service := func(name string) *corev1.Service {
		return &corev1.Service{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
				Labels:      map[string]string{"kafkalink.io/gateway": "gw", "app.kubernetes.io/name": "kafkalink-proxy"},
				Annotations: map[string]string{"kafkalink.io/applied-hash": "0123456789abcdef0123456789abcdef"}},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"kafkalink.io/gateway": "gw", "app.kubernetes.io/name": "kafkalink-proxy"},
				Ports:    []corev1.ServicePort{{Name: "one", Port: 9092}},
			},
		}
	}
	forms := map[string]func(ctx context.Context, name string) error{
		"server-side apply": func(ctx context.Context, name string) error {
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(service(name))
			if err != nil {
				return err
			}
			u := &unstructured.Unstructured{Object: obj}
			_, err = dynamicClient.Resource(schema.GroupVersionResource{Version: "v1", Resource: "services"}).Namespace(ns).
				Apply(ctx, name, u, metav1.ApplyOptions{FieldManager: "kafkalink", Force: true})
			return err
		},
		"create": func(ctx context.Context, name string) error {
			_, err := typed.CoreV1().Services(ns).Create(ctx, service(name), metav1.CreateOptions{FieldManager: "kafkalink"})
			return err
		},
	}
	order := []string{"server-side apply", "create"}
	spent := map[string]cpuSeconds{}
	n := 0
	for round := range rounds {
		for _, form := range order {
			before := controlPlaneCPU()
			names := make(chan string)
			var wg sync.WaitGroup
			errs := make(chan error, inFlight)
			for range inFlight {
				wg.Go(func() {
					for name := range names {
						if err := forms[form](ctx, name); err != nil {
							select {
							case errs <- err:
							default:
							}
						}
					}
				})
			}
			for i := range batch {
				names <- fmt.Sprintf("s%d-%d", round, n+i)
			}
			close(names)
			wg.Wait()
			n += batch
			select {
			case err := <-errs:
				b.Fatal(err)
			default:
			}
			used := controlPlaneCPU().minus(before)
			if spent[form] == nil {
				spent[form] = cpuSeconds{}
			}
			for k, v := range used {
				spent[form][k] += v
			}
		}
	}
	total := float64(batch * rounds)
	for _, form := range order {
		for _, name := range cpuNames {
			fmt.Printf("  new Service by %-18s %-42s %6.2f ms CPU per Service\n", form, name, 1000*spent[form][name]/total)
		}
		b.ReportMetric(1000*spent[form]["kube-apiserver"]/total, "apiserver-ms/service-"+map[string]string{"server-side apply": "apply", "create": "create"}[form])
	}
	fmt.Printf("  load average at the end: %s\n", loadAverage())
}
