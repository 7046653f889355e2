package clientconfig

import (
	"fmt"
	"strings"
)

// javaKeys, springKeys and quarkusKeys name an Apache Kafka client property in each
// framework's configuration.
func javaKeys(k string) string { return k }

func springKeys(k string) string {
	switch k {
	case "bootstrap.servers":
		return "spring.kafka.bootstrap-servers"
	case "security.protocol":
		return "spring.kafka.security.protocol"
	}
	return "spring.kafka.properties." + k
}

func quarkusKeys(k string) string { return "kafka." + k }

// Apache Kafka's login modules and OAuth callback handler (Kafka 3.4 and later).
const (
	plainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	oauthLoginModule       = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	oauthCallbackHandler   = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
	javaPEMStoreType       = "PEM"
	javaPKCS12StoreType    = "PKCS12"
	javaKeystoreByValueWhy = "# The key pair is given by value: Kafka's PEM ssl.keystore.location needs an encrypted key.\n"
)

// javaFile is Apache Kafka client properties, named by key for a framework. Stores are read
// from files; a PEM key pair is given by value, as Kafka reads an unencrypted PEM key only so.
func javaFile(name string, b *Binding, p func(string) string, key func(string) string) File {
	var s strings.Builder
	s.WriteString(header("#", b))
	line := func(k, v string) { fmt.Fprintf(&s, "%s=%s\n", key(k), propertiesValue(v)) }
	line("bootstrap.servers", strings.Join(b.BootstrapServers, ","))
	line("security.protocol", b.Protocol)
	if b.TLS() {
		if len(b.TruststoreP12) > 0 {
			line("ssl.truststore.type", javaPKCS12StoreType)
			line("ssl.truststore.location", p(FileTruststoreP12))
			line("ssl.truststore.password", b.TruststorePassword)
		} else {
			line("ssl.truststore.type", javaPEMStoreType)
			line("ssl.truststore.location", p(FileCA))
		}
	}
	if b.ClientCertificate() {
		if len(b.KeystoreP12) > 0 {
			line("ssl.keystore.type", javaPKCS12StoreType)
			line("ssl.keystore.location", p(FileKeystoreP12))
			line("ssl.keystore.password", b.KeystorePassword)
		} else {
			s.WriteString(javaKeystoreByValueWhy)
			line("ssl.keystore.type", javaPEMStoreType)
			line("ssl.keystore.certificate.chain", string(b.Cert))
			line("ssl.keystore.key", string(b.Key))
		}
	}
	if b.Mechanism != "" {
		line("sasl.mechanism", b.Mechanism)
		if b.Mechanism == MechanismOAuthBearer {
			line("sasl.login.callback.handler.class", oauthCallbackHandler)
			line("sasl.oauthbearer.token.endpoint.url", b.TokenEndpoint)
		}
		line("sasl.jaas.config", jaasConfig(b))
	}
	return File{Name: name, Data: []byte(s.String()), Secret: holdsSecret(b) || b.ClientCertificate() && len(b.KeystoreP12) == 0}
}

// jaasConfig is the sasl.jaas.config line of the binding's mechanism.
func jaasConfig(b *Binding) string {
	switch b.Mechanism {
	case MechanismPlain:
		return fmt.Sprintf(`%s required username="%s" password="%s";`, plainLoginModule, jaasEscape(b.Username), jaasEscape(b.Password))
	case MechanismOAuthBearer:
		jaas := fmt.Sprintf(`%s required clientId="%s" clientSecret="%s"`, oauthLoginModule, jaasEscape(b.ClientID), jaasEscape(b.ClientSecret))
		if b.Scope != "" {
			jaas += fmt.Sprintf(` scope="%s"`, jaasEscape(b.Scope))
		}
		return jaas + ";"
	}
	return fmt.Sprintf(`%s required username="%s" password="%s";`, scramLoginModule, jaasEscape(b.Username), jaasEscape(b.Password))
}

// jaasEscape escapes a value for a double-quoted JAAS option.
func jaasEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// propertiesValue escapes a value for a Java .properties file. A multi-line value (PEM) keeps
// its line breaks as \n, with each line continued on the next for reading.
func propertiesValue(v string) string {
	v = strings.TrimRight(v, "\n")
	escape := strings.NewReplacer(`\`, `\\`, "\r", `\r`, "\t", `\t`)
	lines := strings.Split(v, "\n")
	for i, l := range lines {
		lines[i] = escape.Replace(l)
		if i > 0 && strings.HasPrefix(lines[i], " ") {
			// A continued line's leading blanks are dropped by the reader; escape the first.
			lines[i] = `\` + lines[i]
		}
	}
	out := strings.Join(lines, "\\n\\\n")
	if strings.HasPrefix(out, " ") {
		out = `\` + out
	}
	return out
}
