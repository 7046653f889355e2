package e2e_test

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/proxy/filter/encryption"
	"github.com/kafkalink/kafkalink/proxy/proxytest"
)

// encryptionYAML is the seed's KafkaFilter example with real kms values (a KEK per topic in the
// Secret keks), attached to the route's rule.
const encryptionYAML = `
kind: KafkaFilter
apiVersion: filter.kroxylicious.io/v1alpha1
metadata: {name: encryption, namespace: apps}
spec:
  type: io.kroxylicious.filter.encryption.RecordEncryption
  config:
    kms: KubernetesSecretKms
    kmsConfig:
      keyDir: $(secretDir:keks)
    selector: TemplateKekSelector
    selectorConfig:
      template: "KEK_$(topicName)"
---
kind: KafkaRoute
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: my-cluster, namespace: apps}
spec:
  parentRefs:
  - name: my-gateway
    hostnames: [my-cluster-%%.apps.svc.cluster.local]
    rules:
    - name: all
      filters: [{group: filter.kroxylicious.io, kind: KafkaFilter, name: encryption}]
      backendRefs: [{group: kafka.strimzi.io, kind: Kafka, namespace: kafka, name: my-cluster, port: %[1]d}]
`

// stepRecordEncryption attaches the encryption filter to the route of TestKafkaBackendFollowsNodePools:
// the route stays Accepted with its references resolved, and records produced through the
// deployed proxy are stored encrypted in the brokers and read back in the clear through it.
func (e *env) stepRecordEncryption(kafkaPort int, clusterCA *bindingtest.CA, opts []kgo.Opt) {
	e.step("the seed's KafkaFilter encrypts records through the deployed proxy", func(t *testing.T) {
		kek := make([]byte, 32)
		_, _ = rand.Read(kek)
		e.setSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "keks", Namespace: nsApps},
			Data: map[string][]byte{"KEK_" + topic: kek}})
		e.apply(fmt.Sprintf(encryptionYAML, kafkaPort))
		e.waitRouteResolved()
		direct := directAdminOpts(kafkaPort, clusterCA)
		// The proxy serves the filter once its pod has the new configuration and the Secret:
		// until then a record is stored as sent. Each try uses a value of its own.
		try := 0
		var sealed string
		e.eventually("records to be stored encrypted", func() (bool, string) {
			try++
			sealed = fmt.Sprintf("sealed-through-the-proxy-%d", try)
			bindingtest.ProduceConsume(t, opts, topic, sealed)
			for _, r := range proxytest.StoredRecords(e.ctx, t, direct, topic) {
				if bytes.Contains(r.Value, []byte(sealed)) {
					return false, "stored in the clear: " + sealed
				}
			}
			return true, ""
		})
		stored := proxytest.StoredRecords(e.ctx, t, direct, topic)
		encrypted := 0
		for _, r := range stored {
			if bytes.Contains(r.Value, []byte(sealed)) {
				t.Errorf("the broker holds %q in the clear", sealed)
			}
			for _, h := range r.Headers {
				if h.Key == encryption.HeaderKey {
					encrypted++
				}
			}
		}
		if encrypted == 0 {
			t.Errorf("none of the %d stored records of %s is encrypted", len(stored), topic)
		}
		t.Logf("%d of %d stored records of %s encrypted; %q read back through the proxy", encrypted, len(stored), topic, sealed)
	})
}

// directAdminOpts is a client of the brokers themselves (not the proxy), as the SCRAM admin.
func directAdminOpts(kafkaPort int, clusterCA *bindingtest.CA) []kgo.Opt {
	roots := x509.NewCertPool()
	roots.AddCert(clusterCA.Cert)
	// One certificate covers every broker's pod name.
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, ServerName: brokerPod(0)}
	return []kgo.Opt{
		kgo.SeedBrokers(net.JoinHostPort(brokerIP(0), strconv.Itoa(kafkaPort))),
		kgo.DialTLSConfig(cfg),
		kgo.SASL(scram.Auth{User: adminUser, Pass: adminPassword}.AsSha512Mechanism()),
	}
}
