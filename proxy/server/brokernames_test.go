package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/kafkalink/kafkalink/proxy/config"
)

// With brokerIdentity hash, a client through the proxy sees broker host names that do not
// reveal node ids, produces and consumes through them, and the decimal names are refused.
// A proxy started again from the same key gives the same names.
func TestHashedBrokerNamesThroughKfake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "")
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	key := bytes.Repeat([]byte{42}, config.BrokerKeySize)
	writeAtomic(t, dir+"/broker.key", key)
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf,
		Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0],
			FiltersYAML: fmt.Sprintf("  brokerIdentity:\n    mapping: hash\n    keyFile: %s/broker.key\n", dir)}}}
	path := writeConfig(t, dir, pc)
	p := startProxy(t, path)
	opts, dials := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port), pki.pool, "", nil)
	brokers := produceConsume(t, ctx, opts, "orders", 50)

	names, err := config.NewBrokerNames(&config.VirtualCluster{BrokerPattern: "a-broker-$(nodeId).kafka.test"}, key)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for id := int32(0); id < 3; id++ {
		want = append(want, fmt.Sprintf("%s:%d", names.Host(id), pc.Port))
	}
	sort.Strings(brokers)
	sort.Strings(want)
	if fmt.Sprint(brokers) != fmt.Sprint(want) {
		t.Errorf("metadata lists %v, want the hashed names %v", brokers, want)
	}
	hashed := regexp.MustCompile(`^a-broker-[a-z2-7]{26}\.kafka\.test$`)
	for _, addr := range append(brokers, dials.all()...) {
		host, _, _ := net.SplitHostPort(addr)
		if host != "a-bootstrap.kafka.test" && !hashed.MatchString(host) {
			t.Errorf("the client saw %s, which is not a hashed broker name", addr)
		}
	}
	if refusedSNI(t, pc.Port, "a-broker-0.kafka.test", pki) == nil {
		t.Error("the decimal broker name a-broker-0.kafka.test is served")
	}
	if err := refusedSNI(t, pc.Port, names.Host(1), pki); err != nil {
		t.Errorf("the hashed name of broker 1 is refused: %v", err)
	}

	// A new process, the same key: the same names.
	p.stop()
	startProxy(t, path)
	opts, _ = clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port), pki.pool, "", nil)
	again := produceConsume(t, ctx, opts, "orders2", 10)
	sort.Strings(again)
	if fmt.Sprint(again) != fmt.Sprint(want) {
		t.Errorf("after a restart metadata lists %v, want %v", again, want)
	}
}

// refusedSNI completes a TLS handshake to the proxy with host as SNI and sends an ApiVersions
// request: nil when the proxy answers it, else why not.
func refusedSNI(t *testing.T, port int, host string, pki *testPKI) error {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{ServerName: host, RootCAs: pki.pool})
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	// ApiVersions v0, correlation id 1, client id "t".
	req := []byte{0, 0, 0, 11, 0, 18, 0, 0, 0, 0, 0, 1, 0, 1, 't'}
	if _, err := conn.Write(req); err != nil {
		return err
	}
	var size [4]byte
	if _, err := conn.Read(size[:]); err != nil {
		return fmt.Errorf("no answer: %w", err)
	}
	return nil
}
