package operator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	"github.com/kafkalink/kafkalink/internal/monitoringpack"
	"github.com/kafkalink/kafkalink/test/framework"
)

// TestOperatorExposesEveryMetricOfTheMonitoringPack runs the real operator binary with
// --logging-format=json, gives it a KafkaConnection that cannot become Ready, and finds on its
// /metrics every operator metric that manifests/monitoring's rules name (read from the rule
// file), with the connection counted in kafkalink_object_conditions. Its log is JSON, a line each.
func TestOperatorExposesEveryMetricOfTheMonitoringPack(t *testing.T) {
	if testing.Short() {
		t.Skip("control-plane test")
	}
	packDir, err := monitoringpack.Dir()
	if err != nil {
		t.Fatal(err)
	}
	names, err := monitoringpack.Metrics(packDir)
	if err != nil {
		t.Fatal(err)
	}
	var operatorNames []string
	for _, n := range names {
		if !strings.HasPrefix(n, monitoringpack.ProxyPrefix) {
			operatorNames = append(operatorNames, n)
		}
	}
	if len(operatorNames) == 0 {
		t.Fatal("the pack names no operator metric")
	}

	ctx := context.Background()
	cp, binary := startWithOperatorBinary(t, framework.Options{})
	kubeconfig := operatorKubeconfig(t, cp)
	const ns = "apps"
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kl, err := kafkalinkclient.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	conn := &kafkav1beta2.KafkaConnection{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns},
		Spec:       kafkav1beta2.KafkaConnectionSpec{Kafka: kafkav1beta2.KafkaReference{APIVersion: "kafka.strimzi.io/v1beta2", Kind: "Kafka", Name: "missing"}},
	}
	if _, err := kl.KafkaV1beta2().KafkaConnections(ns).Create(ctx, conn, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	health, metricsAddr := framework.FreeAddress(), framework.FreeAddress()
	p, err := framework.StartProcess(t.TempDir(), "operator", binary,
		"--kubeconfig="+kubeconfig, "--health-address="+health, "--metrics-address="+metricsAddr,
		"--leader-elect=false", "--logging-format=json", "-v=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(10 * time.Second) })
	if err := framework.WaitHTTP200(ctx, "http://"+health+"/readyz", 30*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, p.Log())
	}

	notReady := `kafkalink_object_conditions{condition="Ready",kind="KafkaConnection",object_namespace="apps",reason="KafkaNotFound",status="False"} 1`
	var exposition string
	var missing []string
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		exposition = get(t, "http://"+metricsAddr+"/metrics")
		missing = monitoringpack.Missing(exposition, operatorNames)
		return len(missing) == 0 && strings.Contains(exposition, notReady), nil
	}); err != nil {
		t.Fatalf("the operator does not expose %v (which the monitoring pack uses) or lacks %s:\n%s\n%s", missing, notReady, exposition, p.Log())
	}
	for _, want := range []string{`kafkalink_reconcile_errors_total{controller="kafkaconnection",reason="other"}`} {
		if !strings.Contains(exposition, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	lines := strings.Split(strings.TrimSpace(p.Log()), "\n")
	sawStart := false
	for _, l := range lines {
		var entry map[string]any
		if err := json.Unmarshal([]byte(l), &entry); err != nil {
			t.Errorf("log line is not JSON (--logging-format=json): %q", l)
			continue
		}
		if entry["msg"] == "Starting" && entry["version"] != nil {
			sawStart = true
		}
	}
	if !sawStart {
		t.Errorf("no JSON start line with the version:\n%s", p.Log())
	}
}
