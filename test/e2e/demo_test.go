package e2e_test

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/pkg/gateway"
)

// demo turns TestDemo on: `make demo` builds this package's test binary and runs it with -demo.
var demo = flag.Bool("demo", false, "run the interactive demo: set everything up, show it, and wait for Ctrl-C")

// demoOnce runs the demo's steps and exits instead of waiting for Ctrl-C (`make demo DEMO_ONCE=1`),
// so a test can run the demo as a user would, in a fresh clone.
var demoOnce = flag.Bool("demo-once", false, "run the demo's steps, print the same lines, and exit instead of waiting for Ctrl-C")

// TestDemo is `make demo`: the flagship scenario set up on a local control plane and shown to a
// person, left running until Ctrl-C. It shares every step with TestEndToEnd, so the demo cannot
// drift from what the tests prove.
func TestDemo(t *testing.T) {
	if !*demo && !*demoOnce {
		t.Skip("the interactive demo runs with -demo (make demo) or -demo-once (make demo DEMO_ONCE=1)")
	}
	say := func(format string, args ...any) { fmt.Printf("\n==> "+format+"\n", args...) }
	say("starting the local control plane, the kafkalink operator and the local kubelet (the first run builds them)")
	e := newEnv(t)
	now := time.Now().Add(-time.Hour)
	clusterCA := bindingtest.NewCA(t, "my-cluster cluster-ca v0", now)
	gatewayCA := bindingtest.NewCA(t, "apps issuer", now)
	say("starting a demo Kafka: kfake, three brokers, TLS and SCRAM-SHA-512, behind a Strimzi-shaped Kafka")
	k := startKafka(t, clusterCA)
	e.kafka = k
	const password = "demo-Pa55word"
	k.setPassword(t, userName, password)
	listenPort, mgmtPort := freePort(t), freePort(t)
	for _, ns := range []string{nsKafka, nsApps} {
		if _, err := e.kube.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.setClusterCA(clusterCA.CertPEM)
	e.setSecret(strimziSecret(userName, scramUserSecret(password)))
	e.createStrimziObjects(k.bootstrap())
	e.setSecret(gatewayCertSecret(t, gatewayCA))
	objects := fmt.Sprintf(objectsYAML, backendService, k.port0(t), mgmtPort, listenPort)
	say("applying the gateway, the route, the backend TLS policy and two KafkaConnections:\n%s", objects)
	e.apply(objects)
	e.waitBound(directConn)
	fmt.Print(e.kubectl("get", "kafkalink", "-A"))

	data := e.bindingData(directConn, "its entries", func(d map[string][]byte) bool { return len(d) > 0 })
	say("the binding Secret apps/%s (type servicebinding.io/kafka), as an application sees it:", directConn)
	printEntries(data)

	pod, _ := e.runner.Pod(nsApps, gateway.DeploymentName(gatewayName))
	say("the proxy runs as pid %d (log %s); its Deployment reports Available", pod.PID, pod.LogPath)
	e.waitBound(routeConn)
	routeData := e.bindingData(routeConn, "its entries", func(d map[string][]byte) bool { return len(d) > 0 })
	say("the binding Secret apps/%s, for the same cluster through the gateway (KafkaConnection naming the KafkaRoute):", routeConn)
	printEntries(routeData)
	dir := bindingtest.Project(t, routeData)
	brokers := metadataBrokers(t, proxiedClientOpts(t, dir, nil))
	say("a client bootstrapping through the proxy at %s is told these brokers:\n    %s\n  (kfake itself listens on %s)",
		routeData["bootstrap.servers"], strings.Join(brokers, "\n    "), k.bootstrap())
	bindingtest.ProduceConsume(t, proxiedClientOpts(t, dir, nil), topic, "hello through kafkalink")
	say("produced and consumed a record through the proxy")

	kubectl := filepath.Join(e.cp.BinDir, "kubectl")
	fmt.Printf(`
kafkalink is running. In another terminal:

  export KUBECONFIG=%s
  %s get kafkalink -A
  %s -n apps get secret %s -o yaml
`, e.cp.Kubeconfig, kubectl, kubectl, directConn)
	if *demoOnce {
		say("stopping (-demo-once)")
		return
	}
	fmt.Print("\nPress Ctrl-C to stop everything.\n")
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)
	<-interrupted
	say("stopping")
}

// printEntries prints a binding's entries, text as text and binary stores by size.
func printEntries(data map[string][]byte) {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := data[k]
		switch {
		case !utf8.Valid(v):
			fmt.Printf("  %-24s <%d bytes, binary>\n", k, len(v))
		case strings.Contains(string(v), "\n"):
			fmt.Printf("  %-24s <%d lines of PEM>\n", k, strings.Count(string(v), "\n"))
		case strings.Contains(k, "password") || strings.Contains(k, "jaas"):
			fmt.Printf("  %-24s <%d characters, secret>\n", k, len(v))
		default:
			fmt.Printf("  %-24s %s\n", k, v)
		}
	}
}
