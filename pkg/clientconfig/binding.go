// Package clientconfig turns a KafkaConnection's binding Secret into the configuration a Kafka
// client takes: librdkafka and kcat properties, Apache Kafka client properties (plain Java,
// Spring Boot, Quarkus), and code for franz-go and kafkajs, each with the key material as files.
// It is pure: the caller reads the Secret and writes the files. docs/apps.md describes the same
// mapping for applications that mount the Secret.
package clientconfig

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kafkalink/kafkalink/pkg/binding"
)

// Security protocols, the values of the binding's security.protocol.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// SASL mechanisms the configurations below can express.
const (
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = binding.SASLMechanismSCRAMSHA512
	MechanismOAuthBearer = binding.SASLMechanismOAuthBearer
)

// Binding is what a binding Secret says, read once so that every client's mapping starts from
// the same facts.
type Binding struct {
	// Name is namespace/name of the KafkaConnection, for comments.
	Name string
	// BootstrapServers are the host:port pairs of bootstrap.servers.
	BootstrapServers []string
	// Protocol is security.protocol.
	Protocol string
	// Mechanism is sasl.mechanism; empty without SASL.
	Mechanism string
	// Username and Password are the SASL PLAIN or SCRAM credentials.
	Username, Password string
	// JAASConfig is sasl.jaas.config as the binding wrote it, for Java clients.
	JAASConfig string
	// CA is ssl.truststore.crt (PEM); nil without TLS.
	CA []byte
	// Cert and Key are ssl.keystore.crt and ssl.keystore.key (PEM): a tls user's key pair.
	Cert, Key []byte
	// TruststoreP12, KeystoreP12 and their passwords are the PKCS12 stores, when storeFormats
	// asked for them.
	TruststoreP12, KeystoreP12           []byte
	TruststorePassword, KeystorePassword string
	// OAuth client credentials and token endpoint of an OAUTHBEARER binding.
	TokenEndpoint, ClientID, ClientSecret, Scope string
}

// TLS reports whether the protocol uses TLS.
func (b *Binding) TLS() bool { return strings.HasSuffix(b.Protocol, ProtocolSSL) }

// SASL reports whether the protocol uses SASL.
func (b *Binding) SASL() bool { return strings.HasPrefix(b.Protocol, "SASL_") }

// ClientCertificate reports whether the binding holds a client key pair (mutual TLS).
func (b *Binding) ClientCertificate() bool { return len(b.Cert) > 0 && len(b.Key) > 0 }

// ParseBinding reads a binding Secret's data. It refuses what no client could use: no
// bootstrap servers, an unknown protocol or mechanism, TLS without a CA, SASL without the
// credentials its mechanism needs.
func ParseBinding(name string, data map[string][]byte) (*Binding, error) {
	s := func(k string) string { return strings.TrimSpace(string(data[k])) }
	b := &Binding{
		Name: name, Protocol: s(binding.KeySecurityProtocol), Mechanism: s(binding.KeySASLMechanism),
		Username: s(binding.KeyUsername), Password: s(binding.KeyPassword), JAASConfig: s(binding.KeySASLJAASConfig),
		CA: data[binding.KeyTruststoreCRT], Cert: data[binding.KeyKeystoreCRT], Key: data[binding.KeyKeystoreKey],
		TruststoreP12: data[binding.KeyTruststoreP12], KeystoreP12: data[binding.KeyKeystoreP12],
		TruststorePassword: s(binding.KeyTruststorePassword), KeystorePassword: s(binding.KeyKeystorePassword),
		TokenEndpoint: s(binding.KeyOAuthTokenEndpoint), ClientID: s(binding.KeyOAuthClientID),
		ClientSecret: s(binding.KeyOAuthClientSecret), Scope: s(binding.KeyOAuthScope),
	}
	for _, server := range strings.Split(s(binding.KeyBootstrapServers), ",") {
		if server = strings.TrimSpace(server); server != "" {
			b.BootstrapServers = append(b.BootstrapServers, server)
		}
	}
	if len(b.BootstrapServers) == 0 {
		return nil, fmt.Errorf("the binding has no %s", binding.KeyBootstrapServers)
	}
	if err := b.check(); err != nil {
		return nil, err
	}
	return b, nil
}

// check refuses a binding whose protocol and credentials do not fit together, or whose
// one-line values hold a line break, which would end a property early and start another.
func (b *Binding) check() error {
	for name, v := range map[string]string{
		binding.KeySecurityProtocol: b.Protocol, binding.KeySASLMechanism: b.Mechanism, binding.KeyUsername: b.Username,
		binding.KeyPassword: b.Password, binding.KeyTruststorePassword: b.TruststorePassword,
		binding.KeyKeystorePassword: b.KeystorePassword, binding.KeyOAuthTokenEndpoint: b.TokenEndpoint,
		binding.KeyOAuthClientID: b.ClientID, binding.KeyOAuthClientSecret: b.ClientSecret, binding.KeyOAuthScope: b.Scope,
		binding.KeyBootstrapServers: strings.Join(b.BootstrapServers, ","),
	} {
		if strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("%s holds a line break", name)
		}
	}
	switch b.Protocol {
	case ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL:
	default:
		return fmt.Errorf("%s %q is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", binding.KeySecurityProtocol, b.Protocol)
	}
	if b.TLS() && len(b.CA) == 0 {
		return fmt.Errorf("%s is %s and the binding has no %s", binding.KeySecurityProtocol, b.Protocol, binding.KeyTruststoreCRT)
	}
	if (len(b.Cert) == 0) != (len(b.Key) == 0) {
		return fmt.Errorf("the binding has one of %s and %s without the other", binding.KeyKeystoreCRT, binding.KeyKeystoreKey)
	}
	if !b.SASL() {
		b.Mechanism = ""
		return nil
	}
	switch b.Mechanism {
	case MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512:
		if b.Username == "" || b.Password == "" {
			return fmt.Errorf("%s %s needs %s and %s", binding.KeySASLMechanism, b.Mechanism, binding.KeyUsername, binding.KeyPassword)
		}
	case MechanismOAuthBearer:
		if b.TokenEndpoint == "" || b.ClientID == "" || b.ClientSecret == "" {
			return fmt.Errorf("%s %s needs %s, %s and %s", binding.KeySASLMechanism, b.Mechanism, binding.KeyOAuthTokenEndpoint, binding.KeyOAuthClientID, binding.KeyOAuthClientSecret)
		}
	case "":
		return errors.New("security.protocol uses SASL and the binding has no sasl.mechanism")
	default:
		return fmt.Errorf("%s %q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER", binding.KeySASLMechanism, b.Mechanism)
	}
	return nil
}
