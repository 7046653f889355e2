package binding

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// The binding Secret's type and fixed values (Service Binding spec, "kafka" type).
const (
	SecretType      = "servicebinding.io/kafka"
	BindingType     = "kafka"
	ProviderStrimzi = "strimzi"
	// SASLMechanismSCRAMSHA512 is the only SASL mechanism of the users kafkalink binds.
	SASLMechanismSCRAMSHA512 = "SCRAM-SHA-512"
)

// Entries of the binding Secret. The dotted names are the Kafka client properties the Strimzi
// KafkaConnection proposal lists; the aliases are the names real binding libraries read
// (Spring Cloud Bindings, Quarkus, .NET and Node service-binding libraries).
const (
	KeyType                 = "type"
	KeyProvider             = "provider"
	KeyBootstrapServers     = "bootstrap.servers"
	KeySecurityProtocol     = "security.protocol"
	KeyTruststoreCRT        = "ssl.truststore.crt"
	KeyTruststoreP12        = "ssl.truststore.p12"
	KeyTruststoreJKS        = "ssl.truststore.jks"
	KeyTruststorePassword   = "ssl.truststore.password"
	KeyUsername             = "username"
	KeyPassword             = "password"
	KeySASLJAASConfig       = "sasl.jaas.config"
	KeySASLMechanism        = "sasl.mechanism"
	KeyKeystoreCRT          = "ssl.keystore.crt"
	KeyKeystoreKey          = "ssl.keystore.key"
	KeyKeystoreP12          = "ssl.keystore.p12"
	KeyKeystoreJKS          = "ssl.keystore.jks"
	KeyKeystorePassword     = "ssl.keystore.password"
	AliasBootstrapServers   = "bootstrap-servers"
	AliasBootstrapServersCC = "bootstrapServers"
	AliasSecurityProtocol   = "securityProtocol"
	AliasSASLMechanism      = "saslMechanism"
	AliasUser               = "user"
)

// Store formats, the values of a KafkaConnection's spec.storeFormats.
const (
	// FormatPEM: ssl.truststore.crt, ssl.keystore.crt and ssl.keystore.key. PEM entries are text
	// and always written, whatever the formats say.
	FormatPEM = "PEM"
	// FormatPKCS12: ssl.truststore.p12 and ssl.keystore.p12 with their passwords (binary).
	FormatPKCS12 = "PKCS12"
	// FormatJKS: ssl.truststore.jks and ssl.keystore.jks with their passwords (binary).
	FormatJKS = "JKS"
)

// DefaultStoreFormats is the proposal's behaviour, used when a connection sets no formats.
// Spring Cloud Bindings (2.0.2+) and Quarkus read every entry as UTF-8 text and need [PEM].
func DefaultStoreFormats() []string { return []string{FormatPEM, FormatPKCS12} }

// SecretData is a Secret that exists: its name (for messages) and its data.
type SecretData struct {
	Name string
	Data map[string][]byte
}

// SecretInput is everything the binding Secret is assembled from.
type SecretInput struct {
	// Choice is the listener from ChooseListener.
	Choice Choice
	// CASecret is <cluster>-cluster-ca-cert; nil when it does not exist. Read only for TLS listeners.
	CASecret *SecretData
	// GatewayTrust is, by listener name, the trust of tlsroute listeners with tls: false.
	GatewayTrust map[string]GatewayTrust
	// User is the parsed KafkaUser; nil when the connection names none.
	User *strimzi.KafkaUser
	// OAuth is the connection's OAuth client; nil when it asks for none.
	OAuth *OAuthCredentials
	// UserSecret is the user's credentials Secret (User.SecretName()); nil when it does not exist.
	// tls-external users need none.
	UserSecret *SecretData
	// Provider is the value of the provider entry; empty means "strimzi".
	Provider string
	// StoreFormats is spec.storeFormats; empty means DefaultStoreFormats.
	StoreFormats []string
	// Cache, when set, memoizes PKCS12 and JKS stores across calls; see StoreCache.
	Cache *StoreCache
}

type storeFormats struct{ pkcs12, jks bool }

// parseStoreFormats reads spec.storeFormats (DefaultStoreFormats when empty).
func parseStoreFormats(in []string) (storeFormats, *Failure) {
	if len(in) == 0 {
		in = DefaultStoreFormats()
	}
	var f storeFormats
	for _, s := range in {
		switch s {
		case FormatPEM:
		case FormatPKCS12:
			f.pkcs12 = true
		case FormatJKS:
			f.jks = true
		default:
			return f, fail(ReasonStoreFormatUnknown, fmt.Sprintf("store format %q is not one of PEM, PKCS12, JKS", s))
		}
	}
	return f, nil
}

// AssembleSecret builds the data of the binding Secret. It is pure and stable: the same input
// gives byte-identical data, so an unchanged connection never rewrites its Secret.
//
// What it writes:
//   - always: type, provider, bootstrap.servers, security.protocol and their aliases;
//   - TLS listeners: ssl.truststore.crt with every certificate of the cluster CA Secret (ca.crt
//     and any other *.crt, such as the old CA during a renewal) and of the listener's status,
//     de-duplicated, ca.crt first; with PKCS12 or JKS also the stores and ssl.truststore.password;
//   - scram-sha-512 users: username, password, sasl.jaas.config, sasl.mechanism and the aliases
//     user and saslMechanism;
//   - tls users: ssl.keystore.crt and ssl.keystore.key (PKCS#8); with PKCS12 or JKS also the
//     stores and ssl.keystore.password;
//   - tls-external users: no credentials at all. Strimzi does not hold their key (the
//     application brings its own certificate), so the binding carries the truststore and
//     addresses only and the application adds its keystore itself.
//
// The PKCS12 truststore is Strimzi's ca.p12 when that holds exactly the wanted certificates under
// ca.password and is cheap to decode; otherwise it is built from the PEM. The other stores are
// always built from the PEM (see keystoreP12 for why user.p12 is not reused). Built stores use the
// source's password (ca.password, user.password) or, when the source has none, a derived one.
func AssembleSecret(in SecretInput) (map[string][]byte, *Failure) {
	formats, f := parseStoreFormats(in.StoreFormats)
	if f != nil {
		return nil, f
	}
	l := in.Choice.Listener
	if in.User != nil {
		if f := checkUserAuthentication(in.User); f != nil {
			return nil, f
		}
	}
	if why := misfit(l, in.User, in.OAuth); why != "" {
		return nil, fail(ReasonListenerIncompatible, fmt.Sprintf("listener %q cannot serve %s: %s", l.Name, describePrincipal(in.User, in.OAuth), why))
	}
	if in.Choice.BootstrapServers == "" {
		return nil, fail(ReasonBootstrapNotReady, fmt.Sprintf("listener %q has no bootstrap address yet", l.Name))
	}
	if in.User != nil && !in.User.Ready() {
		return nil, fail(ReasonUserNotReady, fmt.Sprintf("KafkaUser %s is not ready yet%s", userRef(in.User), userNotReadyDetail(in.User)))
	}

	data := map[string][]byte{}
	set := func(v string, keys ...string) {
		for _, k := range keys {
			data[k] = []byte(v)
		}
	}
	provider := in.Provider
	if provider == "" {
		provider = ProviderStrimzi
	}
	set(BindingType, KeyType)
	set(provider, KeyProvider)
	set(in.Choice.BootstrapServers, KeyBootstrapServers, AliasBootstrapServers, AliasBootstrapServersCC)
	protocol := in.Choice.SecurityProtocol
	if protocol == "" {
		protocol = SecurityProtocol(l)
	}
	set(protocol, KeySecurityProtocol, AliasSecurityProtocol)

	switch {
	case l.TLS:
		if f := addTruststore(data, in.CASecret, in.Choice.Status, formats, in.Cache); f != nil {
			return nil, f
		}
	case l.TerminatesAtGateway():
		gt := in.GatewayTrust[l.Name]
		if gt.Secret == nil {
			return nil, fail(ReasonGatewayCertificateUnresolved, fmt.Sprintf("listener %q is a tlsroute listener with tls: false, whose TLS ends at the Gateway, and kafkalink cannot find the Gateway listener's certificate to trust: %s", l.Name, gt.Problem))
		}
		if f := addTruststore(data, gt.Secret, strimzi.ListenerStatus{}, formats, in.Cache); f != nil {
			return nil, f
		}
	}
	if in.OAuth != nil {
		if f := addOAuth(data, l, in.OAuth); f != nil {
			return nil, f
		}
		return data, nil
	}
	if in.User == nil {
		return data, nil
	}
	switch in.User.Authentication {
	case strimzi.UserAuthSCRAMSHA512:
		if f := addSCRAM(data, in.User, in.UserSecret); f != nil {
			return nil, f
		}
	case strimzi.UserAuthTLS:
		if f := addKeystore(data, in.User, in.UserSecret, formats, in.Cache); f != nil {
			return nil, f
		}
	case strimzi.UserAuthTLSExternal:
		// Nothing to copy: see the doc comment.
	}
	return data, nil
}

// userNotReadyDetail says why a KafkaUser is not ready yet, when Strimzi's status tells.
func userNotReadyDetail(u *strimzi.KafkaUser) string {
	if u.Status.ObservedGeneration != 0 && u.Status.ObservedGeneration < u.Generation {
		return fmt.Sprintf(" (Strimzi has seen generation %d of %d)", u.Status.ObservedGeneration, u.Generation)
	}
	if c, ok := strimzi.FindCondition(u.Status.Conditions, strimzi.ConditionReady); ok {
		if c.Message != "" {
			return fmt.Sprintf(" (Ready is %s: %s: %s)", c.Status, c.Reason, c.Message)
		}
		return fmt.Sprintf(" (Ready is %s)", c.Status)
	}
	return " (no Ready condition)"
}

// addTruststore adds the CA certificates clients trust, from every CA entry of the CA Secret
// (strimzi.CACertEntries), in PEM and the asked store formats.
func addTruststore(data map[string][]byte, ca *SecretData, st strimzi.ListenerStatus, formats storeFormats, cache *StoreCache) *Failure {
	if ca == nil {
		return fail(ReasonCACertificateMissing, "the cluster CA certificate Secret does not exist")
	}
	if len(ca.Data[caCertEntry]) == 0 {
		return fail(ReasonCACertificateMissing, fmt.Sprintf("Secret %s has no %s", ca.Name, caCertEntry))
	}
	var certs []*x509.Certificate
	seen := map[string]bool{}
	for _, entry := range strimzi.CACertEntries(slices.Collect(maps.Keys(ca.Data))) {
		parsed, f := cache.certificates(ca.Data[entry], func() string { return fmt.Sprintf("entry %s of Secret %s", entry, ca.Name) })
		if f != nil {
			return f
		}
		certs = appendUnique(certs, seen, parsed...)
	}
	for i, s := range st.Certificates {
		parsed, f := cache.certificates([]byte(s), func() string {
			return fmt.Sprintf("status.listeners[%s].certificates[%d] of the Kafka", st.Name, i)
		})
		if f != nil {
			return f
		}
		certs = appendUnique(certs, seen, parsed...)
	}
	data[KeyTruststoreCRT] = encodeCertsPEM(certs)
	if !formats.pkcs12 && !formats.jks {
		return nil
	}
	password := string(ca.Data[caPasswordEntry])
	if password == "" {
		password = derivedTruststorePassword(certs)
	}
	data[KeyTruststorePassword] = []byte(password)
	key := cacheKey("truststore", formats, password, ca.Data[caP12Entry], certs...)
	if cache.get(key, data) {
		return nil
	}
	if formats.pkcs12 {
		p12, f := truststoreP12(certs, password, ca.Data[caP12Entry])
		if f != nil {
			return f
		}
		data[KeyTruststoreP12] = p12
	}
	if formats.jks {
		jks, f := truststoreJKS(certs, password)
		if f != nil {
			return f
		}
		data[KeyTruststoreJKS] = jks
	}
	cache.put(key, data, KeyTruststoreP12, KeyTruststoreJKS)
	return nil
}

// addSCRAM adds a scram-sha-512 user's credentials.
func addSCRAM(data map[string][]byte, u *strimzi.KafkaUser, s *SecretData) *Failure {
	if s == nil {
		return fail(ReasonUserSecretMissing, fmt.Sprintf("Secret %s of KafkaUser %s does not exist", u.SecretName(), userRef(u)))
	}
	password := string(s.Data[userSCRAMPassword])
	if password == "" {
		return fail(ReasonUserCredentialsMissing, fmt.Sprintf("Secret %s of KafkaUser %s has no %s", s.Name, userRef(u), userSCRAMPassword))
	}
	// Strimzi's SCRAM user name is the KafkaUser's name when the status does not say otherwise.
	username := u.Status.Username
	if username == "" {
		username = u.Name
	}
	data[KeyUsername] = []byte(username)
	data[AliasUser] = []byte(username)
	data[KeyPassword] = []byte(password)
	data[KeySASLMechanism] = []byte(SASLMechanismSCRAMSHA512)
	data[AliasSASLMechanism] = []byte(SASLMechanismSCRAMSHA512)
	data[KeySASLJAASConfig] = []byte(fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`,
		jaasEscape(username), jaasEscape(password)))
	return nil
}

// jaasEscaper quotes a value for a JAAS configuration string, whose parser reads backslash
// escapes inside double quotes. One for the process: a Replacer builds a 17 KB table on first
// use, which per call was 9% of what the operator allocated binding 5,000 connections.
var jaasEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

func jaasEscape(s string) string { return jaasEscaper.Replace(s) }

// addKeystore adds a tls user's certificate and key, in PEM and the asked store formats.
func addKeystore(data map[string][]byte, u *strimzi.KafkaUser, s *SecretData, formats storeFormats, cache *StoreCache) *Failure {
	if s == nil {
		return fail(ReasonUserSecretMissing, fmt.Sprintf("Secret %s of KafkaUser %s does not exist", u.SecretName(), userRef(u)))
	}
	for _, e := range []string{userCertEntry, userKeyEntry} {
		if len(s.Data[e]) == 0 {
			return fail(ReasonUserCredentialsMissing, fmt.Sprintf("Secret %s of KafkaUser %s has no %s", s.Name, userRef(u), e))
		}
	}
	chain, f := parseCertificates(s.Data[userCertEntry], fmt.Sprintf("entry %s of Secret %s", userCertEntry, s.Name))
	if f != nil {
		return f
	}
	key, f := parsePrivateKey(s.Data[userKeyEntry], fmt.Sprintf("entry %s of Secret %s", userKeyEntry, s.Name))
	if f != nil {
		return f
	}
	if !publicKeyMatches(chain[0], key) {
		return fail(ReasonPrivateKeyInvalid, fmt.Sprintf("entry %s of Secret %s does not match the certificate in %s", userKeyEntry, s.Name, userCertEntry))
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fail(ReasonPrivateKeyInvalid, fmt.Sprintf("entry %s of Secret %s cannot be written as PKCS#8: %v", userKeyEntry, s.Name, err))
	}
	data[KeyKeystoreCRT] = encodeCertsPEM(chain)
	// PKCS#8 because Kafka's own PEM keystore (ssl.keystore.type=PEM) reads nothing else.
	data[KeyKeystoreKey] = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if !formats.pkcs12 && !formats.jks {
		return nil
	}
	password := string(s.Data[userPasswordEntry])
	if password == "" {
		password = derivedKeystorePassword(keyDER)
	}
	data[KeyKeystorePassword] = []byte(password)
	ck := cacheKey("keystore", formats, password, keyDER, chain...)
	if cache.get(ck, data) {
		return nil
	}
	if formats.pkcs12 {
		p12, f := keystoreP12(key, keyDER, chain, password)
		if f != nil {
			return f
		}
		data[KeyKeystoreP12] = p12
	}
	if formats.jks {
		jks, f := keystoreJKS(keyDER, chain, password)
		if f != nil {
			return f
		}
		data[KeyKeystoreJKS] = jks
	}
	cache.put(ck, data, KeyKeystoreP12, KeyKeystoreJKS)
	return nil
}

// Input is everything a KafkaConnection's binding is computed from, as the controller gathers it
// from its listers.
type Input struct {
	// Kafka is the parsed Kafka; nil when it does not exist.
	Kafka *strimzi.Kafka
	// RequestedListener is spec.kafka.listener.name, empty when unset.
	RequestedListener string
	// CurrentListener is status.listener, preferred to keep the binding where it is.
	CurrentListener string
	// AllowExternalListener is spec.allowExternalListener.
	AllowExternalListener bool
	// User is the parsed KafkaUser; nil when the connection names none.
	User *strimzi.KafkaUser
	// OAuth is the connection's OAuth client; nil when it asks for none.
	OAuth *OAuthCredentials
	// UserSecret is the user's credentials Secret; nil when it does not exist.
	UserSecret *SecretData
	// CASecret is the Kafka's <cluster>-cluster-ca-cert Secret; nil when it does not exist.
	CASecret *SecretData
	// GatewayTrust is, by listener name, the trust of tlsroute listeners with tls: false.
	GatewayTrust map[string]GatewayTrust
	// Provider is the provider entry; empty means "strimzi".
	Provider string
	// StoreFormats is spec.storeFormats; empty means DefaultStoreFormats.
	StoreFormats []string
	// Cache, when set, memoizes PKCS12 and JKS stores across calls; see StoreCache.
	Cache *StoreCache
	// Stretch is read when the Kafka is a stretch cluster (Kafka.Stretch).
	Stretch StretchInput
}

// Result is a computed binding: the listener chosen and the Secret data.
type Result struct {
	Choice Choice
	Data   map[string][]byte
	// Stretch is how a stretch Kafka's bootstrap servers were chosen; nil for other Kafkas.
	Stretch *Stretch
}

// Build chooses the listener and assembles the Secret: ChooseListener then AssembleSecret.
func Build(in Input) (Result, *Failure) {
	choice, f := ChooseListener(ListenerInput{
		Kafka:         in.Kafka,
		Requested:     in.RequestedListener,
		Current:       in.CurrentListener,
		User:          in.User,
		OAuth:         in.OAuth,
		AllowExternal: in.AllowExternalListener,
	})
	if f != nil {
		return Result{}, f
	}
	var stretch *Stretch
	if in.Kafka.Stretch {
		if choice, stretch, f = StretchBootstrap(choice, in.Stretch); f != nil {
			return Result{Choice: choice}, f
		}
	}
	data, f := AssembleSecret(SecretInput{
		Choice:       choice,
		CASecret:     in.CASecret,
		GatewayTrust: in.GatewayTrust,
		User:         in.User,
		OAuth:        in.OAuth,
		UserSecret:   in.UserSecret,
		Provider:     in.Provider,
		StoreFormats: in.StoreFormats,
		Cache:        in.Cache,
	})
	if f != nil {
		return Result{Choice: choice, Stretch: stretch}, f
	}
	return Result{Choice: choice, Data: data, Stretch: stretch}, nil
}

// cacheKey digests everything a set of stores is built from.
func cacheKey(kind string, formats storeFormats, password string, source []byte, certs ...*x509.Certificate) [32]byte {
	parts := [][]byte{{boolByte(formats.pkcs12), boolByte(formats.jks)}, []byte(password), source}
	for _, c := range certs {
		parts = append(parts, c.Raw)
	}
	return digest("kafkalink store cache "+kind, parts...)
}

// boolByte is a bool as one byte of a cache key.
func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}
