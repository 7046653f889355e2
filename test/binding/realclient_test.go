package binding_test

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
)

// realClient binds a connection to a kfake cluster that serves TLS and SCRAM-SHA-512 with a
// broker certificate of the old cluster CA while ca.crt already holds the new one (a CA renewal
// in progress), then configures franz-go from nothing but the Secret the operator wrote.
func (h *harness) realClient(t *testing.T) {
	h.t = t
	now := time.Now().Add(-time.Hour)
	oldCA := bindingtest.NewCA(t, "real cluster-ca v0", now)
	newCA := bindingtest.NewCA(t, "real cluster-ca v1", now.Add(time.Minute))
	_, _, brokerPair := oldCA.Issue(t, "real-kafka-brokers", []string{"127.0.0.1", "localhost"}, false, false)
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(1, "orders"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{brokerPair}, MinVersion: tls.VersionTLS12}),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "erin", "erins-password"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ns := h.namespace("realclient")
	h.setKafka(ns, "real", []listener{scram}, nil)
	// Point the listener's status at kfake, as Strimzi reports its bootstrap Service.
	h.setKafkaBootstrap(ns, "real", "scram", strings.Join(c.ListenAddrs(), ","))
	h.setClusterCA(ns, "real", newCA.CertPEM, oldCA.CertPEM)
	h.setUser(ns, "erin", "real", "scram-sha-512", false, scramSecret("erins-password"))
	h.createConnection(connection(ns, "app", "real", "erin", "", ""))
	h.waitReason(ns, "app", "Bound")
	data := h.waitSecret(ns, "app", "kfake's addresses", func(d map[string][]byte) bool {
		return string(d["bootstrap.servers"]) == strings.Join(c.ListenAddrs(), ",")
	})
	dir := bindingtest.Project(t, data)
	bindingtest.ProduceConsume(t, bindingtest.ClientOpts(t, dir, bindingtest.FromPEM), "orders", "from-pem")
	bindingtest.ProduceConsume(t, bindingtest.ClientOpts(t, dir, bindingtest.FromPKCS12), "orders", "from-pkcs12")
}
