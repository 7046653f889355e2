package clientconfig

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// FuzzRender feeds arbitrary binding Secret entries to ParseBinding and every client's Render:
// nothing panics, the Go file always parses, and no value starts a property line of its own in
// the librdkafka and Java properties.
func FuzzRender(f *testing.F) {
	f.Add("a:1,b:2", "SASL_SSL", "SCRAM-SHA-512", "user", "pass", testCA, "", "")
	f.Add("a:1", "SSL", "", "", "", testCA, testCert, testKey)
	f.Add("a:1", "SASL_PLAINTEXT", "OAUTHBEARER", "", "", "", "", "")
	f.Add("a:1", "SASL_PLAINTEXT", "PLAIN", "u\nssl.ca.location=/etc/x", "p", "", "", "")
	f.Fuzz(func(t *testing.T, bootstrap, protocol, mechanism, username, password, ca, cert, key string) {
		data := secretData(map[string]string{
			"bootstrap.servers": bootstrap, "security.protocol": protocol, "sasl.mechanism": mechanism,
			"username": username, "password": password, "ssl.truststore.crt": ca, "ssl.keystore.crt": cert, "ssl.keystore.key": key,
			"sasl.oauthbearer.token.endpoint.url": username, "clientId": username, "clientSecret": password,
		})
		b, err := ParseBinding("ns/name", data)
		if err != nil {
			return
		}
		for _, client := range Clients {
			out, err := Render(client, b, "/config")
			if err != nil {
				t.Fatalf("%s: %v", client, err)
			}
			main := string(out.Files[0].Data)
			switch client {
			case ClientFranzGo:
				if _, err := parser.ParseFile(token.NewFileSet(), "kafkaclient.go", main, 0); err != nil {
					t.Fatalf("the franz-go file does not parse: %v", err)
				}
			case ClientKcat, ClientLibrdkafka:
				checkLines(t, main, librdkafkaLines(b))
			}
		}
	})
}

// librdkafkaLines is how many properties librdkafkaFile writes for a binding.
func librdkafkaLines(b *Binding) int {
	n := 2
	if b.TLS() {
		n++
	}
	if b.ClientCertificate() {
		n += 2
	}
	switch b.Mechanism {
	case "":
	case MechanismOAuthBearer:
		n += 5
		if b.Scope != "" {
			n++
		}
	default:
		n += 3
	}
	return n
}

// checkLines fails when the properties do not have exactly want property lines: a value broke
// out of its line, or one went missing.
func checkLines(t *testing.T, props string, want int) {
	t.Helper()
	n := 0
	for _, line := range strings.Split(props, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			n++
		}
	}
	if n != want {
		t.Fatalf("%d property lines, want %d:\n%s", n, want, props)
	}
}
