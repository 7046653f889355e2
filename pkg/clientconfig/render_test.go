package clientconfig

import (
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current code")

const (
	testCA   = "-----BEGIN CERTIFICATE-----\nMIIBcluster\nCA==\n-----END CERTIFICATE-----\n"
	testCert = "-----BEGIN CERTIFICATE-----\nMIIBclient\n-----END CERTIFICATE-----\n"
	testKey  = "-----BEGIN PRIVATE KEY-----\nMIIEkey\n-----END PRIVATE KEY-----\n"
)

// bindings are binding Secrets of every protocol and mechanism, as the binding controller
// writes them (aliases left out: the mapping reads the dotted names only).
var bindings = map[string]map[string]string{
	"plaintext": {
		"bootstrap.servers": "my-cluster-kafka-bootstrap.kafka.svc:9092", "security.protocol": "PLAINTEXT",
	},
	"ssl": {
		"bootstrap.servers": "my-cluster-kafka-bootstrap.kafka.svc:9093", "security.protocol": "SSL",
		"ssl.truststore.crt": testCA,
	},
	"sasl-ssl-scram": {
		"bootstrap.servers": "bootstrap.kafka.example.com:9092,broker-0.kafka.example.com:9092", "security.protocol": "SASL_SSL",
		"ssl.truststore.crt": testCA, "sasl.mechanism": "SCRAM-SHA-512", "username": "barista", "password": `pa"ss\word`,
		"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="barista" password="pa\"ss\\word";`,
	},
	"sasl-ssl-plain": {
		"bootstrap.servers": "bootstrap.kafka.example.com:9092", "security.protocol": "SASL_SSL",
		"ssl.truststore.crt": testCA, "sasl.mechanism": "PLAIN", "username": "barista", "password": "secret",
	},
	"sasl-plaintext-scram-256": {
		"bootstrap.servers": "my-cluster-kafka-bootstrap.kafka.svc:9094", "security.protocol": "SASL_PLAINTEXT",
		"sasl.mechanism": "SCRAM-SHA-256", "username": "barista", "password": "secret",
	},
	"mtls": {
		"bootstrap.servers": "my-cluster-kafka-bootstrap.kafka.svc:9093", "security.protocol": "SSL",
		"ssl.truststore.crt": testCA, "ssl.keystore.crt": testCert, "ssl.keystore.key": testKey,
	},
	"mtls-pkcs12": {
		"bootstrap.servers": "my-cluster-kafka-bootstrap.kafka.svc:9093", "security.protocol": "SSL",
		"ssl.truststore.crt": testCA, "ssl.keystore.crt": testCert, "ssl.keystore.key": testKey,
		"ssl.truststore.p12": "P12-TRUST", "ssl.truststore.password": "trustpass",
		"ssl.keystore.p12": "P12-KEY", "ssl.keystore.password": "keypass",
	},
	"oauthbearer": {
		"bootstrap.servers": "my-cluster-kafka-bootstrap.kafka.svc:9093", "security.protocol": "SASL_SSL",
		"ssl.truststore.crt": testCA, "sasl.mechanism": "OAUTHBEARER",
		"sasl.oauthbearer.token.endpoint.url": "https://sso.example.com/realms/kafka/protocol/openid-connect/token",
		"clientId":                            "orders-app", "clientSecret": "s3cret", "scope": "kafka",
	},
}

func secretData(m map[string]string) map[string][]byte {
	data := map[string][]byte{}
	for k, v := range m {
		data[k] = []byte(v)
	}
	return data
}

// TestGoldenRender pins every client's configuration for every protocol in
// testdata/<client>/<protocol>.golden: the files in order, then the usage line.
func TestGoldenRender(t *testing.T) {
	for protocol, data := range bindings {
		b, err := ParseBinding("team-a/barista", secretData(data))
		if err != nil {
			t.Fatalf("%s: %v", protocol, err)
		}
		for _, client := range Clients {
			t.Run(string(client)+"/"+protocol, func(t *testing.T) {
				out, err := Render(client, b, "/config")
				if err != nil {
					t.Fatal(err)
				}
				if client == ClientFranzGo {
					if _, err := parser.ParseFile(token.NewFileSet(), "kafkaclient.go", out.Files[0].Data, parser.AllErrors); err != nil {
						t.Fatalf("the franz-go file does not parse: %v", err)
					}
				}
				compareGolden(t, filepath.Join("testdata", string(client), protocol+".golden"), dump(out))
			})
		}
	}
}

// dump is an Output as one text: each file under a header saying its name and mode.
func dump(out *Output) string {
	var s strings.Builder
	for _, f := range out.Files {
		mode := "0644"
		if f.Secret {
			mode = "0600"
		}
		fmt.Fprintf(&s, "==> %s (%s) <==\n%s", f.Name, mode, f.Data)
		if !strings.HasSuffix(string(f.Data), "\n") {
			s.WriteString("\n")
		}
	}
	fmt.Fprintf(&s, "==> usage <==\n%s\n", out.Usage)
	return s.String()
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestParseBindingRefuses(t *testing.T) {
	tests := map[string]struct {
		data map[string]string
		want string
	}{
		"a binding without bootstrap servers": {
			data: map[string]string{"security.protocol": "PLAINTEXT"}, want: "no bootstrap.servers",
		},
		"an unknown protocol": {
			data: map[string]string{"bootstrap.servers": "a:1", "security.protocol": "TLS"}, want: `"TLS" is not one of`,
		},
		"TLS without a CA": {
			data: map[string]string{"bootstrap.servers": "a:1", "security.protocol": "SSL"}, want: "has no ssl.truststore.crt",
		},
		"a certificate without its key": {
			data: map[string]string{"bootstrap.servers": "a:1", "security.protocol": "SSL", "ssl.truststore.crt": testCA, "ssl.keystore.crt": testCert},
			want: "without the other",
		},
		"SASL without a mechanism": {
			data: map[string]string{"bootstrap.servers": "a:1", "security.protocol": "SASL_PLAINTEXT"}, want: "no sasl.mechanism",
		},
		"SCRAM without a password": {
			data: map[string]string{"bootstrap.servers": "a:1", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512", "username": "u"},
			want: "needs username and password",
		},
		"a username with a line break, which would add a property": {
			data: map[string]string{"bootstrap.servers": "a:1", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "username": "u\nssl.ca.location=/x", "password": "p"},
			want: "username holds a line break",
		},
		"GSSAPI": {
			data: map[string]string{"bootstrap.servers": "a:1", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"},
			want: `"GSSAPI" is not one of`,
		},
		"OAUTHBEARER without a client": {
			data: map[string]string{"bootstrap.servers": "a:1", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"},
			want: "needs sasl.oauthbearer.token.endpoint.url",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseBinding("ns/c", secretData(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestRenderUnknownClient(t *testing.T) {
	b, err := ParseBinding("ns/c", secretData(bindings["plaintext"]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Render("rdkafka-ruby", b, "."); err == nil || !strings.Contains(err.Error(), "kcat, librdkafka") {
		t.Fatalf("got %v, want the list of clients", err)
	}
}

func TestPropertiesValue(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"a plain value stays as it is":           {"a=b:c", "a=b:c"},
		"a backslash is escaped":                 {`a\b`, `a\\b`},
		"a leading blank is kept":                {" a", `\ a`},
		"PEM lines are joined by escaped breaks": {"-----BEGIN X-----\nAB\n-----END X-----\n", "-----BEGIN X-----\\n\\\nAB\\n\\\n-----END X-----"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := propertiesValue(tt.in); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
