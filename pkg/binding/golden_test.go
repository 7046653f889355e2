package binding

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"sigs.k8s.io/yaml"
	pkcs12 "software.sslmate.com/src/go-pkcs12"

	"github.com/kafkalink/kafkalink/internal/golden"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

func parseKafkaYAML(t testing.TB, doc string) *strimzi.Kafka {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatalf("test Kafka YAML: %v", err)
	}
	k, err := strimzi.ParseKafka(obj)
	if err != nil {
		t.Fatalf("ParseKafka: %v", err)
	}
	return k
}

func parseUserYAML(t testing.TB, doc string) *strimzi.KafkaUser {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatalf("test KafkaUser YAML: %v", err)
	}
	u, err := strimzi.ParseKafkaUser(obj)
	if err != nil {
		t.Fatalf("ParseKafkaUser: %v", err)
	}
	return u
}

// A v1 Kafka with one listener of each kind kafkalink binds, all with status.
const kafkaV1 = `
apiVersion: kafka.strimzi.io/v1
kind: Kafka
metadata: {name: my-cluster, namespace: kafka}
spec:
  kafka:
    listeners:
    - {name: plain, port: 9092, type: internal, tls: false}
    - {name: tls, port: 9093, type: internal, tls: true}
    - {name: scram, port: 9094, type: cluster-ip, tls: true, authentication: {type: scram-sha-512}}
    - {name: mtls, port: 9095, type: internal, tls: true, authentication: {type: tls}}
    - {name: route, port: 9096, type: route, tls: true, authentication: {type: tls}}
status:
  listeners:
  - {name: plain, bootstrapServers: "my-cluster-kafka-bootstrap.kafka.svc:9092"}
  - {name: tls, bootstrapServers: "my-cluster-kafka-bootstrap.kafka.svc:9093"}
  - {name: scram, bootstrapServers: "my-cluster-kafka-scram-bootstrap.kafka.svc:9094"}
  - {name: mtls, bootstrapServers: "my-cluster-kafka-bootstrap.kafka.svc:9095"}
  - {name: route, bootstrapServers: "my-cluster-kafka-route-bootstrap-kafka.apps.example.com:443"}
`

// kafkaV1's SCRAM listener on a stretch Kafka (Strimzi's stretch cluster proposal).
const stretchKafka = `
apiVersion: kafka.strimzi.io/v1
kind: Kafka
metadata: {name: my-cluster, namespace: kafka, annotations: {strimzi.io/stretch-mode: enabled}}
spec:
  kafka:
    listeners:
    - {name: scram, port: 9094, type: internal, tls: true, authentication: {type: scram-sha-512}}
status:
  listeners:
  - {name: scram, bootstrapServers: "my-cluster-kafka-bootstrap.kafka.svc:9094"}
`

// The Strimzi listener proposal's old object form, with the status of those releases (by type).
const kafkaOldForm = `
apiVersion: kafka.strimzi.io/v1beta1
kind: Kafka
metadata: {name: my-cluster, namespace: my-namespace}
spec:
  kafka:
    listeners:
      plain:
        authentication:
          type: scram-sha-512
      tls:
        authentication:
          type: tls
      external:
        type: route
        authentication:
          type: tls
status:
  listeners:
  - type: plain
    addresses: [{host: my-cluster-kafka-bootstrap.my-namespace.svc, port: 9092}]
    bootstrapServers: my-cluster-kafka-bootstrap.my-namespace.svc:9092
  - type: tls
    addresses: [{host: my-cluster-kafka-bootstrap.my-namespace.svc, port: 9093}]
    bootstrapServers: my-cluster-kafka-bootstrap.my-namespace.svc:9093
  - type: external
    addresses: [{host: my-cluster-kafka-bootstrap-my-namespace.apps.example.com, port: 443}]
`

const scramUser = `
apiVersion: kafka.strimzi.io/v1
kind: KafkaUser
metadata: {name: my-user, namespace: kafka, generation: 1}
spec: {authentication: {type: scram-sha-512}}
status: {observedGeneration: 1, conditions: [{type: Ready, status: "True"}], username: my-user, secret: my-user}
`

const tlsUser = `
apiVersion: kafka.strimzi.io/v1
kind: KafkaUser
metadata: {name: my-mtls-user, namespace: kafka, generation: 1}
spec: {authentication: {type: tls}}
status: {observedGeneration: 1, conditions: [{type: Ready, status: "True"}], username: CN=my-mtls-user, secret: my-mtls-user}
`

const tlsExternalUser = `
apiVersion: kafka.strimzi.io/v1
kind: KafkaUser
metadata: {name: my-ext-user, namespace: kafka, generation: 1}
spec: {authentication: {type: tls-external}}
status: {observedGeneration: 1, conditions: [{type: Ready, status: "True"}], username: CN=my-ext-user}
`

func (p *pki) caSecret() *SecretData {
	return &SecretData{Name: "my-cluster-cluster-ca-cert", Data: map[string][]byte{
		"ca.crt": p.clusterCA, "ca.p12": p.clusterCAP12, "ca.password": p.clusterCAPassword,
	}}
}

func (p *pki) renewalCASecret() *SecretData {
	s := p.caSecret()
	s.Data["ca-2025-07-01T00-00-00Z.crt"] = p.clusterCAOld
	return s
}

func (p *pki) scramSecret() *SecretData {
	return &SecretData{Name: "my-user", Data: map[string][]byte{
		"password":         []byte("generatedpassword"),
		"sasl.jaas.config": []byte(`org.apache.kafka.common.security.scram.ScramLoginModule required username="my-user" password="generatedpassword";`),
	}}
}

func (p *pki) tlsSecret() *SecretData {
	return &SecretData{Name: "my-mtls-user", Data: map[string][]byte{
		"ca.crt": p.clusterCA, "user.crt": p.userCert, "user.key": p.userKey,
		"user.p12": p.userP12, "user.password": p.userPassword,
	}}
}

func TestGoldenBindingSecrets(t *testing.T) {
	p := loadPKI(t)
	tests := map[string]struct {
		golden string
		in     Input
	}{
		"a SCRAM user binds over SASL_SSL with Strimzi's own truststore reused": {
			golden: "scram-sasl-ssl",
			in: Input{Kafka: parseKafkaYAML(t, kafkaV1), User: parseUserYAML(t, scramUser),
				UserSecret: p.scramSecret(), CASecret: p.caSecret()},
		},
		"an mTLS user binds over SSL with PKCS12 and JKS stores": {
			golden: "mtls-ssl",
			in: Input{Kafka: parseKafkaYAML(t, kafkaV1), User: parseUserYAML(t, tlsUser),
				UserSecret: p.tlsSecret(), CASecret: p.caSecret(), StoreFormats: []string{FormatPEM, FormatPKCS12, FormatJKS}},
		},
		"a connection without a user that names the plain listener binds over PLAINTEXT without the CA": {
			golden: "no-user-plaintext",
			in:     Input{Kafka: parseKafkaYAML(t, kafkaV1), RequestedListener: "plain"},
		},
		"a connection without a user prefers the TLS listener and binds over SSL": {
			golden: "no-user-ssl",
			in:     Input{Kafka: parseKafkaYAML(t, kafkaV1), CASecret: p.caSecret()},
		},
		"a tls-external user gets the truststore and no keystore": {
			golden: "tls-external",
			in: Input{Kafka: parseKafkaYAML(t, kafkaV1), User: parseUserYAML(t, tlsExternalUser),
				CASecret: p.caSecret(), StoreFormats: []string{FormatPEM, FormatPKCS12, FormatJKS}},
		},
		"a SCRAM user on the seed's old listener form binds the plain listener over SASL_PLAINTEXT": {
			golden: "old-form-scram",
			in: Input{Kafka: parseKafkaYAML(t, kafkaOldForm), User: parseUserYAML(t, scramUser),
				UserSecret: p.scramSecret(), CASecret: p.caSecret()},
		},
		"an mTLS user on the seed's old listener form binds the internal tls listener": {
			golden: "old-form-mtls",
			in: Input{Kafka: parseKafkaYAML(t, kafkaOldForm), User: parseUserYAML(t, tlsUser),
				UserSecret: p.tlsSecret(), CASecret: p.caSecret()},
		},
		"during a CA renewal both certificates are in PEM, PKCS12 and JKS": {
			golden: "ca-renewal",
			in: Input{Kafka: parseKafkaYAML(t, kafkaV1), User: parseUserYAML(t, scramUser),
				UserSecret: p.scramSecret(), CASecret: p.renewalCASecret(), StoreFormats: []string{FormatPEM, FormatPKCS12, FormatJKS}},
		},
		"PEM-only formats write text entries only, for Spring Cloud Bindings and Quarkus": {
			golden: "pem-only-mtls",
			in: Input{Kafka: parseKafkaYAML(t, kafkaV1), User: parseUserYAML(t, tlsUser),
				UserSecret: p.tlsSecret(), CASecret: p.renewalCASecret(), StoreFormats: []string{FormatPEM}},
		},
		"a stretch Kafka without a ServiceExport gets one Submariner address per member cluster": {
			golden: "stretch-per-cluster",
			in: Input{Kafka: parseKafkaYAML(t, stretchKafka), User: parseUserYAML(t, scramUser),
				UserSecret: p.scramSecret(), CASecret: p.caSecret(), StoreFormats: []string{FormatPEM},
				Stretch: StretchInput{ClusterIDs: []string{"cluster1", "cluster2"}}},
		},
		"a CA Secret without ca.p12 and ca.password gets a derived password": {
			golden: "no-source-stores",
			in: Input{Kafka: parseKafkaYAML(t, kafkaV1), User: parseUserYAML(t, tlsUser),
				UserSecret:   &SecretData{Name: "my-mtls-user", Data: map[string][]byte{"user.crt": p.userCert, "user.key": p.userKey}},
				CASecret:     &SecretData{Name: "my-cluster-cluster-ca-cert", Data: map[string][]byte{"ca.crt": p.clusterCA}},
				StoreFormats: []string{FormatPEM, FormatPKCS12, FormatJKS}},
		},
	}
	names := make([]string, 0, len(tests))
	for name := range tests {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		tc := tests[name]
		t.Run(name, func(t *testing.T) {
			res, f := Build(tc.in)
			if f != nil {
				t.Fatalf("Build failed: %v", f)
			}
			got := renderResult(t, name, res)
			golden.Check(t, filepath.Join("testdata", tc.golden+".golden"), got)
		})
	}
}

// renderResult prints a result for review: text entries as they are, binary stores as their size,
// digest and decoded content, so the golden file pins their bytes and shows what they hold.
func renderResult(t testing.TB, name string, res Result) []byte {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\nlistener: %s\nbootstrapServers: %s\nsecurityProtocol: %s\n",
		name, res.Choice.Listener.Name, res.Choice.BootstrapServers, res.Choice.SecurityProtocol)
	if res.Stretch != nil {
		fmt.Fprintf(&b, "stretch: %s %v\n", res.Stretch.Addressing, res.Stretch.Clusters)
	}
	b.WriteString("data:\n")
	keys := make([]string, 0, len(res.Data))
	for k := range res.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := res.Data[k]
		switch k {
		case KeyTruststoreP12, KeyTruststoreJKS, KeyKeystoreP12, KeyKeystoreJKS:
			fmt.Fprintf(&b, "  %s: <binary, %d bytes, sha256 %x>\n", k, len(v), sha256.Sum256(v))
			for _, line := range describeStore(t, k, v, res.Data) {
				fmt.Fprintf(&b, "    # %s\n", line)
			}
		default:
			s := string(v)
			if strings.Contains(s, "\n") {
				fmt.Fprintf(&b, "  %s: |\n", k)
				for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
					fmt.Fprintf(&b, "    %s\n", line)
				}
			} else {
				fmt.Fprintf(&b, "  %s: %q\n", k, s)
			}
		}
	}
	return []byte(b.String())
}

// describeStore decodes a store with the password from the same Secret and lists its entries; a
// store that does not decode fails the test.
func describeStore(t testing.TB, key string, v []byte, data map[string][]byte) []string {
	t.Helper()
	var out []string
	switch key {
	case KeyTruststoreP12:
		certs, err := pkcs12.DecodeTrustStore(v, string(data[KeyTruststorePassword]))
		if err != nil {
			t.Fatalf("%s does not decode: %v", key, err)
		}
		for _, c := range certs {
			out = append(out, "trusted "+c.Subject.String())
		}
	case KeyKeystoreP12:
		_, leaf, cas, err := pkcs12.DecodeChain(v, string(data[KeyKeystorePassword]))
		if err != nil {
			t.Fatalf("%s does not decode: %v", key, err)
		}
		out = append(out, "key for "+leaf.Subject.String())
		for _, c := range cas {
			out = append(out, "chain "+c.Subject.String())
		}
	case KeyTruststoreJKS, KeyKeystoreJKS:
		pw := data[KeyTruststorePassword]
		if key == KeyKeystoreJKS {
			pw = data[KeyKeystorePassword]
		}
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(v), pw); err != nil {
			t.Fatalf("%s does not decode: %v", key, err)
		}
		aliases := ks.Aliases()
		sort.Strings(aliases)
		for _, a := range aliases {
			if ks.IsPrivateKeyEntry(a) {
				e, err := ks.GetPrivateKeyEntry(a, pw)
				if err != nil {
					t.Fatalf("%s entry %s: %v", key, a, err)
				}
				out = append(out, fmt.Sprintf("%s: private key, %d certificates", a, len(e.CertificateChain)))
				continue
			}
			e, err := ks.GetTrustedCertificateEntry(a)
			if err != nil {
				t.Fatalf("%s entry %s: %v", key, a, err)
			}
			c, err := x509.ParseCertificate(e.Certificate.Content)
			if err != nil {
				t.Fatalf("%s entry %s: %v", key, a, err)
			}
			out = append(out, fmt.Sprintf("%s: trusted %s", a, c.Subject.String()))
		}
	}
	return out
}
