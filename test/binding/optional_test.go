package binding_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/kafkalink/kafkalink/test/framework"
)

// recoveryLimit bounds how long the operator may take to pick up a CRD installed after it
// started: the optional-API retry policy caps discovery checks at 20 s.
const recoveryLimit = 60 * time.Second

// waitReady waits for /readyz: with optional APIs missing, the operator must still become ready.
func (h *harness) waitReady() {
	h.t.Helper()
	if err := framework.WaitHTTP200(h.ctx, h.health+"/readyz", 30*time.Second); err != nil {
		h.t.Fatalf("%v\n%s", err, h.op.Log())
	}
}

// waitReasonWithin is waitReason bounded by limit, returning the condition message.
func (h *harness) waitReasonWithin(ns, name, reason string, limit time.Duration) string {
	h.t.Helper()
	var last, message string
	err := wait.PollUntilContextTimeout(h.ctx, 100*time.Millisecond, limit, true, func(context.Context) (bool, error) {
		c, err := h.kl.KafkaV1beta2().KafkaConnections(ns).Get(h.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == "Ready" {
				last = cond.Reason + ": " + cond.Message
				if cond.Reason == reason && cond.ObservedGeneration == c.Generation {
					message = cond.Message
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		h.t.Fatalf("KafkaConnection %s/%s did not reach %s within %s (last: %s)\n%s", ns, name, reason, limit, last, h.op.Log())
	}
	return message
}

// TestStrimziWithoutGatewayAPI: a cluster with Strimzi and no Gateway API CRDs. Same-namespace
// connections bind at once, a cross-namespace one says the ReferenceGrant API is missing, and once
// the Gateway API CRDs and a ReferenceGrant exist it binds, with no operator restart.
func TestStrimziWithoutGatewayAPI(t *testing.T) {
	h := newHarnessWith(t, framework.Options{WithoutGatewayAPI: true}, realOperator)
	h.startOperator("operator")
	h.waitReady()

	kafkaNS, appNS := h.namespace("kafka"), h.namespace("apps")
	h.setKafka(appNS, "local", []listener{plain}, nil)
	h.createConnection(connection(appNS, "same", "local", "", "", ""))
	h.waitReasonWithin(appNS, "same", "Bound", 20*time.Second)

	h.setKafka(kafkaNS, "shared", []listener{scram}, nil)
	h.setClusterCA(kafkaNS, "shared", h.clusterCA.CertPEM)
	h.setUser(kafkaNS, "bob", "shared", "scram-sha-512", false, scramSecret("bobs-password"))
	conn := connection(appNS, "cross", "shared", "bob", kafkaNS, "")
	conn.Spec.Kafka.Namespace = kafkaNS
	h.createConnection(conn)
	msg := h.waitReasonWithin(appNS, "cross", "RefNotPermitted", 20*time.Second)
	if !strings.Contains(msg, "ReferenceGrant API (gateway.networking.k8s.io ReferenceGrant) is not installed") {
		t.Errorf("the RefNotPermitted message does not say the ReferenceGrant API is missing: %q", msg)
	}

	files, err := framework.GatewayAPICRDFiles()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cp.InstallCRDFiles(h.ctx, files...); err != nil {
		t.Fatal(err)
	}
	gw, err := gatewayclient.NewForConfig(h.cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h.createGrant(gw, kafkaNS, "allow-apps", appNS, "kafka.strimzi.io", "KafkaUser")
	h.waitReasonWithin(appNS, "cross", "Bound", recoveryLimit)
	t.Logf("bound %s after the ReferenceGrant CRD and grant were created", time.Since(start).Round(time.Second))
	h.waitSecret(appNS, "cross", "bob's credentials", func(d map[string][]byte) bool { return string(d["password"]) == "bobs-password" })
	if strings.Contains(h.op.Log(), "Unable to sync caches") {
		t.Errorf("the operator waited for a cache it could not sync:\n%s", h.op.Log())
	}
}

const noOptionalGateway = `
apiVersion: v1
kind: Service
metadata: {name: backend, namespace: gw}
spec: {ports: [{port: 9093}]}
---
apiVersion: v1
kind: Secret
metadata: {name: cert, namespace: gw}
stringData: {tls.crt: CERT, tls.key: KEY}
---
kind: KafkaGateway
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: gw, namespace: gw}
spec:
  listeners:
    - {name: one, port: 9092, protocol: kroxylicious.io/kafka-tls, tls: {certificateRefs: [{name: cert}]}}
---
kind: KafkaRoute
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: inside, namespace: gw}
spec:
  parentRefs:
    - name: gw
      brokers: [{advertisedBrokerIds: [0, 1]}]
      hostnames: ["in-%.svc.cluster.local"]
      rules: [{name: r, backendRefs: [{name: backend, port: 9093}]}]
`

// TestNoOptionalAPIs: a cluster with kafkalink's CRDs only. The operator is ready, a gateway with
// an in-cluster route is accepted and gets its Services, connections report StrimziNotInstalled,
// and installing Strimzi afterwards binds them with no restart.
func TestNoOptionalAPIs(t *testing.T) {
	h := newHarnessWith(t, framework.Options{StrimziVersion: "none", WithoutGatewayAPI: true}, realOperator)
	h.startOperator("operator")
	h.waitReady()

	h.namespace("gw")
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(file, []byte(noOptionalGateway), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := h.cp.Kubectl("apply", "-f", file); err != nil {
		t.Fatal(out, err)
	}
	h.poll("the KafkaGateway to be Accepted with Programmed reported and its bootstrap Service created", func() (bool, error) {
		g, err := h.kl.KroxyliciousV1alpha1().KafkaGateways("gw").Get(h.ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		accepted, programmed := false, false
		for _, c := range g.Status.Conditions {
			accepted = accepted || (c.Type == "Accepted" && c.Status == metav1.ConditionTrue)
			programmed = programmed || (c.Type == "Programmed" && c.ObservedGeneration == g.Generation)
		}
		if !accepted || !programmed {
			return false, nil
		}
		_, err = h.kube.CoreV1().Services("gw").Get(h.ctx, "in-bootstrap", metav1.GetOptions{})
		return err == nil, nil
	})
	h.poll("the KafkaRoute to be Accepted", func() (bool, error) {
		r, err := h.kl.KroxyliciousV1alpha1().KafkaRoutes("gw").Get(h.ctx, "inside", metav1.GetOptions{})
		if err != nil || len(r.Status.Parents) == 0 {
			return false, nil
		}
		for _, c := range r.Status.Parents[0].Conditions {
			if c.Type == "Accepted" {
				return c.Status == metav1.ConditionTrue, nil
			}
		}
		return false, nil
	})

	ns := h.namespace("apps")
	h.createConnection(connection(ns, "app", "my-cluster", "", "", ""))
	h.waitReasonWithin(ns, "app", "StrimziNotInstalled", 20*time.Second)

	if err := h.cp.InstallCRDFiles(h.ctx, strimziCRDs(t, "1.2.0")...); err != nil {
		t.Fatal(err)
	}
	h.waitReasonWithin(ns, "app", "KafkaNotFound", recoveryLimit)
	h.setKafka(ns, "my-cluster", []listener{plain}, nil)
	h.waitReasonWithin(ns, "app", "Bound", 20*time.Second)
}
