package clientconfig

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Client names a Kafka client whose configuration Render writes.
type Client string

// The clients Render knows.
const (
	ClientKcat       Client = "kcat"
	ClientLibrdkafka Client = "librdkafka"
	ClientFranzGo    Client = "franz-go"
	ClientJava       Client = "java"
	ClientSpring     Client = "spring"
	ClientQuarkus    Client = "quarkus"
	ClientKafkaJS    Client = "kafkajs"
)

// Clients lists every Client, in the order help texts show them.
var Clients = []Client{ClientKcat, ClientLibrdkafka, ClientFranzGo, ClientJava, ClientSpring, ClientQuarkus, ClientKafkaJS}

// Names of the files Render writes beside the configuration.
const (
	FileCA             = "ca.crt"
	FileClientCert     = "client.crt"
	FileClientKey      = "client.key"
	FileTruststoreP12  = "truststore.p12"
	FileKeystoreP12    = "keystore.p12"
	FilePassword       = "sasl-password"
	FileOAuthSecret    = "oauth-client-secret"
	fileKcat           = "kcat.conf"
	fileLibrdkafka     = "librdkafka.properties"
	fileFranzGo        = "kafkaclient.go"
	fileJava           = "client.properties"
	fileApplicationCfg = "application.properties"
	fileKafkaJS        = "kafka-config.js"
)

// File is one file of a client's configuration.
type File struct {
	// Name is the file's name in the output folder.
	Name string
	// Data is its content.
	Data []byte
	// Secret files hold credentials or private keys: write them readable by the owner only.
	Secret bool
}

// Output is a client's configuration: the files, the main one first.
type Output struct {
	// Files are the files to write; Files[0] is the configuration itself.
	Files []File
	// Usage says in one line how the client takes the configuration.
	Usage string
}

// Render maps a binding to the client's configuration. dir is the folder the files will be in:
// the configuration names the other files by their path there.
func Render(client Client, b *Binding, dir string) (*Output, error) {
	p := func(name string) string { return filepath.Join(dir, name) }
	var out *Output
	switch client {
	case ClientKcat:
		out = &Output{Files: []File{librdkafkaFile(fileKcat, b, p)}, Usage: fmt.Sprintf("kcat -F %s -L", p(fileKcat))}
	case ClientLibrdkafka:
		out = &Output{Files: []File{librdkafkaFile(fileLibrdkafka, b, p)}, Usage: "pass every line as a librdkafka property (confluent-kafka-python, -go, -dotnet: the same names)"}
	case ClientFranzGo:
		out = franzGo(b, dir)
	case ClientJava:
		out = &Output{Files: []File{javaFile(fileJava, b, p, javaKeys)}, Usage: "new KafkaProducer<>(props) after props.load(...) of " + p(fileJava)}
	case ClientSpring:
		out = &Output{Files: []File{javaFile(fileApplicationCfg, b, p, springKeys)}, Usage: "spring.config.import=optional:file:" + p(fileApplicationCfg)}
	case ClientQuarkus:
		out = &Output{Files: []File{javaFile(fileApplicationCfg, b, p, quarkusKeys)}, Usage: "merge into src/main/resources/application.properties, or point quarkus.config.locations at " + p(fileApplicationCfg)}
	case ClientKafkaJS:
		out = kafkaJS(b)
	default:
		return nil, fmt.Errorf("unknown client %q: use one of %s", client, clientList())
	}
	out.Files = append(out.Files, material(client, b)...)
	return out, nil
}

func clientList() string {
	names := make([]string, len(Clients))
	for i, c := range Clients {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// javaClient reports whether the client is Apache Kafka's Java client, which reads PKCS12
// stores and PEM given by value.
func javaClient(c Client) bool {
	return slices.Contains([]Client{ClientJava, ClientSpring, ClientQuarkus}, c)
}

// material is the key material a client reads from files: PKCS12 stores for Java clients when
// the binding has them, PEM otherwise; and, for the code the snippets are, the secrets they
// read at run time instead of holding them in source.
func material(c Client, b *Binding) []File {
	var files []File
	if b.TLS() {
		if javaClient(c) && len(b.TruststoreP12) > 0 {
			files = append(files, File{Name: FileTruststoreP12, Data: b.TruststoreP12})
		} else {
			files = append(files, File{Name: FileCA, Data: b.CA})
		}
	}
	if b.ClientCertificate() {
		switch {
		case javaClient(c) && len(b.KeystoreP12) > 0:
			files = append(files, File{Name: FileKeystoreP12, Data: b.KeystoreP12, Secret: true})
		case !javaClient(c):
			files = append(files, File{Name: FileClientCert, Data: b.Cert}, File{Name: FileClientKey, Data: b.Key, Secret: true})
		}
	}
	if c == ClientFranzGo || c == ClientKafkaJS {
		switch b.Mechanism {
		case MechanismOAuthBearer:
			files = append(files, File{Name: FileOAuthSecret, Data: []byte(b.ClientSecret), Secret: true})
		case "":
		default:
			files = append(files, File{Name: FilePassword, Data: []byte(b.Password), Secret: true})
		}
	}
	return files
}

// header is the comment every configuration starts with.
func header(prefix string, b *Binding) string {
	return fmt.Sprintf("%s kafkalink binding of KafkaConnection %s, written by kubectl kafkalink config\n", prefix, b.Name)
}

// secret reports whether a configuration holds credentials in clear.
func holdsSecret(b *Binding) bool { return b.SASL() }

// librdkafkaFile is librdkafka's properties, which kcat -F reads as they are.
func librdkafkaFile(name string, b *Binding, p func(string) string) File {
	var s strings.Builder
	s.WriteString(header("#", b))
	line := func(k, v string) { fmt.Fprintf(&s, "%s=%s\n", k, v) }
	line("bootstrap.servers", strings.Join(b.BootstrapServers, ","))
	line("security.protocol", b.Protocol)
	if b.TLS() {
		line("ssl.ca.location", p(FileCA))
	}
	if b.ClientCertificate() {
		line("ssl.certificate.location", p(FileClientCert))
		line("ssl.key.location", p(FileClientKey))
	}
	switch b.Mechanism {
	case "":
	case MechanismOAuthBearer:
		line("sasl.mechanisms", b.Mechanism)
		line("sasl.oauthbearer.method", "oidc")
		line("sasl.oauthbearer.token.endpoint.url", b.TokenEndpoint)
		line("sasl.oauthbearer.client.id", b.ClientID)
		line("sasl.oauthbearer.client.secret", b.ClientSecret)
		if b.Scope != "" {
			line("sasl.oauthbearer.scope", b.Scope)
		}
	default:
		line("sasl.mechanisms", b.Mechanism)
		line("sasl.username", b.Username)
		line("sasl.password", b.Password)
	}
	return File{Name: name, Data: []byte(s.String()), Secret: holdsSecret(b)}
}
