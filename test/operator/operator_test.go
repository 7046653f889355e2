// Package operator_test runs the real kafkalink-operator binary against the local control plane
// under the RBAC in manifests/: readiness, the leader Lease, metrics, and shutdown.
package operator_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kafkalink/kafkalink/test/framework"
)

func TestOperatorLeadsReportsReadyAndStopsCleanly(t *testing.T) {
	ctx := context.Background()
	cp, binary := startWithOperatorBinary(t, framework.Options{})
	kubeconfig := operatorKubeconfig(t, cp)
	dir := t.TempDir()
	start := func(name string) (*framework.Process, string, string) {
		health, metrics := framework.FreeAddress(), framework.FreeAddress()
		p, err := framework.StartProcess(dir, name, binary,
			"--kubeconfig="+kubeconfig, "--health-address="+health, "--metrics-address="+metrics,
			"--leader-election-namespace="+framework.OperatorNamespace,
			"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s",
			"--leader-election-retry-period=500ms", "--v=2")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Stop(10 * time.Second) })
		return p, "http://" + health, "http://" + metrics
	}
	leaseHolder := func() string {
		lease, err := cp.Client.CoordinationV1().Leases(framework.OperatorNamespace).Get(ctx, "kafkalink-operator", metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}

	first, firstHealth, firstMetrics := start("first")
	if err := framework.WaitHTTP200(ctx, firstHealth+"/readyz", 30*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, first.Log())
	}
	if err := framework.WaitHTTP200(ctx, firstHealth+"/healthz", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var holder string
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		holder = leaseHolder()
		return holder != "", nil
	}); err != nil {
		t.Fatalf("no Lease holder: %v\n%s", err, first.Log())
	}
	metrics := get(t, firstMetrics+"/metrics")
	for _, want := range []string{"go_goroutines", "process_cpu_seconds_total", `workqueue_depth{name="gateway"}`, `workqueue_adds_total{name="kafkaconnection"}`, `kafkalink_reconcile_panics_total{controller="gateway"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	second, secondHealth, _ := start("second")
	if err := framework.WaitHTTP200(ctx, secondHealth+"/readyz", 30*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, second.Log())
	}
	time.Sleep(2 * time.Second) // several retry periods: a standby must not take the Lease
	if got := leaseHolder(); got != holder {
		t.Fatalf("the standby took the Lease from %q: holder is now %q", holder, got)
	}
	if !strings.Contains(second.Log(), "another replica leads") {
		t.Errorf("the standby does not say it is waiting:\n%s", second.Log())
	}

	if err := first.Stop(15 * time.Second); err != nil {
		t.Fatalf("first operator did not exit cleanly on SIGTERM: %v\n%s", err, first.Log())
	}
	if !strings.Contains(first.Log(), "Shut down cleanly") {
		t.Errorf("first operator's log lacks the clean shutdown line:\n%s", first.Log())
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		h := leaseHolder()
		return h != "" && h != holder, nil
	}); err != nil {
		t.Fatalf("the standby did not take over after the leader stopped: %v\n%s", err, second.Log())
	}
	if err := second.Stop(15 * time.Second); err != nil {
		t.Fatalf("second operator did not exit cleanly: %v", err)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}
