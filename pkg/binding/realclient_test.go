package binding_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// These tests prove the binding Secret is enough for real clients: a kfake cluster of three
// brokers serves TLS with a certificate signed by the CA in a fake Strimzi CA Secret, the Secret
// is assembled with the package's functions and projected as files (as a Service Binding
// runtime does), and franz-go and kcat connect using nothing but those files.

const topic = "orders"

// fixture is one kfake cluster with the Strimzi-shaped objects that describe it.
type fixture struct {
	cluster  *kfake.Cluster
	kafka    *strimzi.Kafka
	caSecret *binding.SecretData
	clientCA *binding.TestCA // signs mTLS users
}

// newFixture starts kfake with TLS and either SCRAM-SHA-512 (user set) or client certificates
// (clientCA set). The broker certificate is signed by the CA that Strimzi would be renewing away
// from: ca.crt holds the new CA, ca-<date>.crt the old one, so trusting ca.crt alone fails.
func newFixture(t *testing.T, listener string, scramUser, scramPassword string, mtls bool) *fixture {
	t.Helper()
	now := time.Now().Add(-time.Hour) // certificates valid from a little before the test
	oldCA := binding.NewTestCA(t, "cluster-ca v0", now)
	newCA := binding.NewTestCA(t, "cluster-ca v1", now.Add(time.Minute))
	_, _, brokerPair := oldCA.Issue(t, "my-cluster-kafka-brokers", []string{"127.0.0.1", "localhost"}, false, false)

	serverTLS := &tls.Config{Certificates: []tls.Certificate{brokerPair}, MinVersion: tls.VersionTLS12}
	f := &fixture{caSecret: &binding.SecretData{Name: "my-cluster-cluster-ca-cert", Data: map[string][]byte{
		"ca.crt": newCA.CertPEM, "ca-2025-01-01T00-00-00Z.crt": oldCA.CertPEM, "ca.password": []byte("Zq1nX0pL2aVb"),
	}}}
	opts := []kfake.Opt{kfake.NumBrokers(3), kfake.SeedTopics(3, topic), kfake.TLS(serverTLS)}
	auth := "scram-sha-512"
	if mtls {
		auth = "tls"
		f.clientCA = binding.NewTestCA(t, "clients-ca v0", now)
		pool := x509.NewCertPool()
		pool.AddCert(f.clientCA.Cert)
		serverTLS.ClientAuth = tls.RequireAndVerifyClientCert
		serverTLS.ClientCAs = pool
	} else {
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", scramUser, scramPassword))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	f.cluster = c

	// The Kafka as Strimzi 1.x would show it, parsed the way the controller parses it.
	kafka, err := strimzi.ParseKafka(map[string]any{
		"apiVersion": "kafka.strimzi.io/v1", "kind": "Kafka",
		"metadata": map[string]any{"name": "my-cluster", "namespace": "kafka"},
		"spec": map[string]any{"kafka": map[string]any{"listeners": []any{
			map[string]any{"name": "plain", "port": int64(9092), "type": "internal", "tls": false},
			map[string]any{"name": listener, "port": int64(9093), "type": "internal", "tls": true,
				"authentication": map[string]any{"type": auth}},
		}}},
		"status": map[string]any{"listeners": []any{
			map[string]any{"name": "plain", "bootstrapServers": "unused:9092"},
			map[string]any{"name": listener, "bootstrapServers": strings.Join(c.ListenAddrs(), ",")},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.kafka = kafka
	return f
}

func readyUser(t *testing.T, name, auth string) *strimzi.KafkaUser {
	t.Helper()
	u, err := strimzi.ParseKafkaUser(map[string]any{
		"apiVersion": "kafka.strimzi.io/v1", "kind": "KafkaUser",
		"metadata": map[string]any{"name": name, "namespace": "kafka", "generation": int64(1)},
		"spec":     map[string]any{"authentication": map[string]any{"type": auth}},
		"status": map[string]any{"observedGeneration": int64(1), "username": name, "secret": name,
			"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func project(t *testing.T, data map[string][]byte) string { return bindingtest.Project(t, data) }

// bindingFiles reads a projected binding the way an application would.
type bindingFiles struct {
	t   *testing.T
	dir string
}

func (b bindingFiles) must(key string) string { return bindingtest.Files{T: b.t, Dir: b.dir}.Must(key) }

const (
	fromPEM    = bindingtest.FromPEM
	fromPKCS12 = bindingtest.FromPKCS12
)

func clientOpts(t *testing.T, dir string, format bindingtest.KeystoreFormat) []kgo.Opt {
	return bindingtest.ClientOpts(t, dir, format)
}

func produceConsume(t *testing.T, opts []kgo.Opt, value string) {
	t.Helper()
	bindingtest.ProduceConsume(t, opts, topic, value)
}

func TestFranzGoFromBindingFilesSCRAMOverSASLSSL(t *testing.T) {
	f := newFixture(t, "scram", "my-user", "s3cr3t-Pa55", false)
	res, fail := binding.Build(binding.Input{
		Kafka: f.kafka, User: readyUser(t, "my-user", "scram-sha-512"), CASecret: f.caSecret,
		UserSecret: &binding.SecretData{Name: "my-user", Data: map[string][]byte{"password": []byte("s3cr3t-Pa55")}},
	})
	if fail != nil {
		t.Fatal(fail)
	}
	if res.Choice.SecurityProtocol != binding.ProtocolSASLSSL {
		t.Fatalf("security protocol %s, want SASL_SSL", res.Choice.SecurityProtocol)
	}
	dir := project(t, res.Data)
	t.Run("PEM truststore", func(t *testing.T) { produceConsume(t, clientOpts(t, dir, fromPEM), "scram-pem") })
	t.Run("PKCS12 truststore", func(t *testing.T) { produceConsume(t, clientOpts(t, dir, fromPKCS12), "scram-p12") })
	t.Run("the broker really checks the password", func(t *testing.T) {
		wrong := map[string][]byte{}
		for k, v := range res.Data {
			wrong[k] = v
		}
		wrong["password"] = []byte("not-the-password")
		// A seed broker's Request does not retry, so one authentication attempt decides. kfake
		// closes the connection on a failed SCRAM exchange instead of answering an error code.
		metadata := func(dir string) error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cl, err := kgo.NewClient(clientOpts(t, dir, fromPEM)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			_, err = cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
			return err
		}
		if err := metadata(dir); err != nil {
			t.Fatalf("the right password: %v", err)
		}
		if err := metadata(project(t, wrong)); err == nil {
			t.Fatal("a wrong password was accepted")
		}
	})
}

func mtlsBinding(t *testing.T, f *fixture) map[string][]byte {
	t.Helper()
	certPEM, keyPEM, _ := f.clientCA.Issue(t, "my-mtls-user", nil, true, true)
	res, fail := binding.Build(binding.Input{
		Kafka: f.kafka, User: readyUser(t, "my-mtls-user", "tls"), CASecret: f.caSecret,
		UserSecret: &binding.SecretData{Name: "my-mtls-user", Data: map[string][]byte{
			"user.crt": certPEM, "user.key": keyPEM, "user.password": []byte("uS3rPassw0rd"), "ca.crt": f.clientCA.CertPEM,
		}},
	})
	if fail != nil {
		t.Fatal(fail)
	}
	if res.Choice.SecurityProtocol != binding.ProtocolSSL {
		t.Fatalf("security protocol %s, want SSL", res.Choice.SecurityProtocol)
	}
	return res.Data
}

func TestFranzGoFromBindingFilesMTLSOverSSL(t *testing.T) {
	f := newFixture(t, "tls", "", "", true)
	dir := project(t, mtlsBinding(t, f))
	t.Run("PEM keystore", func(t *testing.T) { produceConsume(t, clientOpts(t, dir, fromPEM), "mtls-pem") })
	t.Run("PKCS12 keystore", func(t *testing.T) { produceConsume(t, clientOpts(t, dir, fromPKCS12), "mtls-p12") })
	t.Run("the broker really requires the client certificate", func(t *testing.T) {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(mustRead(t, filepath.Join(dir, "ssl.truststore.crt")))
		conn, err := tls.Dial("tcp", f.cluster.ListenAddrs()[0], &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
		if err == nil {
			defer conn.Close()
			// With TLS 1.3 the server refuses a missing certificate after the client's handshake
			// ends, so the refusal arrives on the first read. The deadline only guards a hang.
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			_, err = conn.Read(make([]byte, 1))
		}
		if err == nil || strings.Contains(err.Error(), "timeout") {
			t.Fatalf("a client without a certificate got %v, want a TLS refusal", err)
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// allowSASLHandshakeV0 widens SaslHandshake to v0..v1 in kfake's ApiVersions answers: librdkafka
// (kcat) wants v0 listed and otherwise reports "SASL Handshake not supported by broker". The
// answer is kfake's own, captured once through an authenticated client, with that one change.
func allowSASLHandshakeV0(t *testing.T, c *kfake.Cluster, opts []kgo.Opt) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	keys := append([]kmsg.ApiVersionsResponseApiKey(nil), resp.ApiKeys...)
	for i := range keys {
		if keys[i].ApiKey == int16(kmsg.SASLHandshake) {
			keys[i].MinVersion = 0
		}
	}
	c.ControlKey(int16(kmsg.ApiVersions), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.ApiVersionsRequest)
		if r.Version > resp.Version {
			return nil, nil, false // let kfake answer UNSUPPORTED_VERSION as a broker does
		}
		out := r.ResponseKind().(*kmsg.ApiVersionsResponse)
		out.ApiKeys = keys
		return out, nil, true
	})
}

// kcat runs Debian's kcat with -X options read from the binding files.
func kcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

func kcatProduceConsume(t *testing.T, x []string, value string) {
	t.Helper()
	kcat(t, value+"\n", append(x, "-P", "-t", topic, "-p", "0")...)
	// -o beginning -c N -e: read from the start and stop after the records or at the end.
	got := kcat(t, "", append(x, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q")...)
	if !strings.Contains(got, value) {
		t.Fatalf("kcat consumed %q, want %q among it", got, value)
	}
}

func requireKcat(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat is not installed (apt-get install -y kcat); CI must install it")
	}
}

func TestKcatFromBindingFiles(t *testing.T) {
	requireKcat(t)
	t.Run("SCRAM over SASL_SSL", func(t *testing.T) {
		f := newFixture(t, "scram", "my-user", "s3cr3t-Pa55", false)
		res, fail := binding.Build(binding.Input{
			Kafka: f.kafka, User: readyUser(t, "my-user", "scram-sha-512"), CASecret: f.caSecret,
			UserSecret:   &binding.SecretData{Name: "my-user", Data: map[string][]byte{"password": []byte("s3cr3t-Pa55")}},
			StoreFormats: []string{binding.FormatPEM},
		})
		if fail != nil {
			t.Fatal(fail)
		}
		dir := project(t, res.Data)
		allowSASLHandshakeV0(t, f.cluster, clientOpts(t, dir, fromPEM))
		b := bindingFiles{t, dir}
		x := []string{
			"-b", b.must("bootstrap.servers"),
			"-X", "security.protocol=" + b.must("security.protocol"),
			"-X", "ssl.ca.location=" + filepath.Join(dir, "ssl.truststore.crt"),
			"-X", "sasl.mechanisms=" + b.must("sasl.mechanism"),
			"-X", "sasl.username=" + b.must("username"),
			"-X", "sasl.password=" + b.must("password"),
		}
		kcatProduceConsume(t, x, "kcat-scram")
	})
	t.Run("mTLS over SSL with the PEM keystore", func(t *testing.T) {
		f := newFixture(t, "tls", "", "", true)
		dir := project(t, mtlsBinding(t, f))
		b := bindingFiles{t, dir}
		x := []string{
			"-b", b.must("bootstrap.servers"),
			"-X", "security.protocol=" + b.must("security.protocol"),
			"-X", "ssl.ca.location=" + filepath.Join(dir, "ssl.truststore.crt"),
			"-X", "ssl.certificate.location=" + filepath.Join(dir, "ssl.keystore.crt"),
			"-X", "ssl.key.location=" + filepath.Join(dir, "ssl.keystore.key"),
		}
		kcatProduceConsume(t, x, "kcat-mtls-pem")
	})
	t.Run("mTLS over SSL with the PKCS12 keystore", func(t *testing.T) {
		f := newFixture(t, "tls", "", "", true)
		dir := project(t, mtlsBinding(t, f))
		b := bindingFiles{t, dir}
		x := []string{
			"-b", b.must("bootstrap.servers"),
			"-X", "security.protocol=" + b.must("security.protocol"),
			"-X", "ssl.ca.location=" + filepath.Join(dir, "ssl.truststore.crt"),
			"-X", "ssl.keystore.location=" + filepath.Join(dir, "ssl.keystore.p12"),
			"-X", "ssl.keystore.password=" + b.must("ssl.keystore.password"),
		}
		kcatProduceConsume(t, x, "kcat-mtls-p12")
	})
}

// TestTrustingCACrtAloneFailsDuringRenewal shows why every certificate of the CA Secret is
// copied: the brokers still use a certificate of the old CA, which only ca-<date>.crt holds.
func TestTrustingCACrtAloneFailsDuringRenewal(t *testing.T) {
	f := newFixture(t, "tls", "", "", true)
	newOnly := x509.NewCertPool()
	newOnly.AppendCertsFromPEM(f.caSecret.Data["ca.crt"])
	conn, err := tls.Dial("tcp", f.cluster.ListenAddrs()[0], &tls.Config{RootCAs: newOnly, MinVersion: tls.VersionTLS12})
	if err == nil {
		conn.Close()
		t.Fatal("a client trusting only ca.crt reached a broker whose certificate the old CA signed")
	}
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("want an unknown-authority error, got %v", err)
	}
}
