package binding

// Reasons a KafkaConnection is not Ready. They are condition reasons (CamelCase) that the binding
// controller puts in the Ready condition with the Failure's message. The ones marked "set by the
// controller" are never returned by this package but belong to the same set, so they are listed
// here once.
const (
	// ReasonKafkaNotFound: the Kafka the connection names does not exist (ChooseListener returns
	// it for a nil Kafka).
	ReasonKafkaNotFound = "KafkaNotFound"
	// ReasonKafkaInvalid: the Kafka exists but cannot be read (strimzi.ParseKafka failed); set by
	// the controller with the parse error as message.
	ReasonKafkaInvalid = "KafkaInvalid"
	// ReasonListenerNotFound: the connection names a listener the Kafka does not have.
	ReasonListenerNotFound = "ListenerNotFound"
	// ReasonListenerIncompatible: the named listener exists but cannot serve the connection's user
	// (or lack of one): its authentication does not match, or kafkalink cannot bind it (custom, oauth).
	ReasonListenerIncompatible = "ListenerIncompatible"
	// ReasonNoCompatibleListener: no listener is named and none of the Kafka's listeners fits.
	ReasonNoCompatibleListener = "NoCompatibleListener"
	// ReasonNoInternalListener: no listener is named, no in-cluster listener (internal,
	// cluster-ip) fits, and one reached from outside the cluster would; the connection opts in to
	// those with spec.allowExternalListener or names one in spec.kafka.listener.name.
	ReasonNoInternalListener = "NoInternalListener"
	// ReasonBootstrapNotReady: the chosen listener has no bootstrapServers (nor addresses) in the
	// Kafka status yet; Strimzi fills them in once the listener is up.
	ReasonBootstrapNotReady = "BootstrapNotReady"
	// ReasonUserNotFound: the KafkaUser the connection names does not exist; set by the controller.
	ReasonUserNotFound = "UserNotFound"
	// ReasonUserInvalid: the KafkaUser cannot be read (strimzi.ParseKafkaUser failed); set by the
	// controller.
	ReasonUserInvalid = "UserInvalid"
	// ReasonUserAuthenticationUnsupported: the KafkaUser has no spec.authentication, or one that
	// kafkalink cannot bind (only scram-sha-512, tls and tls-external carry credentials).
	ReasonUserAuthenticationUnsupported = "UserAuthenticationUnsupported"
	// ReasonUserNotReady: Strimzi has not reconciled the KafkaUser's current spec (Ready is not
	// True, or status.observedGeneration is behind metadata.generation).
	ReasonUserNotReady = "UserNotReady"
	// ReasonUserSecretMissing: the KafkaUser's credentials Secret does not exist.
	ReasonUserSecretMissing = "UserSecretMissing"
	// ReasonUserCredentialsMissing: the user Secret exists but lacks an entry the user's
	// authentication needs (password for SCRAM, user.crt and user.key for tls).
	ReasonUserCredentialsMissing = "UserCredentialsMissing"
	// ReasonCACertificateMissing: the listener uses TLS and the <cluster>-cluster-ca-cert Secret
	// does not exist or has no ca.crt.
	ReasonCACertificateMissing = "CACertificateMissing"
	// ReasonOAuthCredentialsMissing: the spec.oauth Secret is missing or lacks clientId or clientSecret.
	ReasonOAuthCredentialsMissing = "OAuthCredentialsMissing"
	// ReasonOAuthTokenEndpointUnknown: neither the oauth listener nor the connection gives a token endpoint.
	ReasonOAuthTokenEndpointUnknown = "OAuthTokenEndpointUnknown"
	// ReasonGatewayCertificateUnresolved: a tlsroute listener with tls: false ends TLS at a Gateway
	// whose listener certificate kafkalink cannot find (no parentRefs, a missing Gateway or
	// listener, a listener that does not terminate TLS, a missing Secret).
	ReasonGatewayCertificateUnresolved = "GatewayCertificateUnresolved"
	// ReasonCertificateNotPEM: an entry that must hold PEM certificates holds none; the message
	// names the Secret (or Kafka status) and the entry.
	ReasonCertificateNotPEM = "CertificateNotPEM"
	// ReasonCertificateInvalid: an entry holds a PEM CERTIFICATE block that is not a parsable X.509
	// certificate; the message names the entry.
	ReasonCertificateInvalid = "CertificateInvalid"
	// ReasonPrivateKeyInvalid: user.key is not an unencrypted PEM private key (PKCS#8, PKCS#1 or
	// SEC 1), or it does not match user.crt.
	ReasonPrivateKeyInvalid = "PrivateKeyInvalid"
	// ReasonStoreFormatUnknown: spec.storeFormats holds a value other than PEM, PKCS12 and JKS.
	ReasonStoreFormatUnknown = "StoreFormatUnknown"
	// ReasonStoreEncodingFailed: the PKCS12 or JKS encoder refused the material (not expected once
	// the inputs parsed; reported rather than hidden).
	ReasonStoreEncodingFailed = "StoreEncodingFailed"
	// ReasonStrimziNotInstalled: the cluster serves neither kafka.strimzi.io/v1 nor v1beta2 Kafka;
	// set by the controller.
	ReasonStrimziNotInstalled = "StrimziNotInstalled"
	// ReasonRefNotPermitted: a cross-namespace reference has no ReferenceGrant allowing it; set by
	// the controller, which then copies no credentials.
	ReasonRefNotPermitted = "RefNotPermitted"
	// ReasonStretchAddressUnknown: the Kafka is a stretch cluster and the chosen in-cluster
	// listener's bootstrap Service is neither exported (ServiceExport) nor in node pools with
	// Submariner cluster ids, so no address reaches it from every member cluster.
	ReasonStretchAddressUnknown = "StretchAddressUnknown"
	// ReasonReadForbidden: the API server answered 403 to a read the binding needs (a list or
	// watch of Kafkas, KafkaUsers or Secrets, or a get of a Secret); the message names the
	// resource, the verb and the operator's identity as the API server reported them. Set by the
	// controller, which checks again every ReadDeniedRecheck.
	ReasonReadForbidden = "ReadForbidden"
	// ReasonReadUnauthorized: as ReadForbidden for a 401: the operator's credentials (token,
	// certificate) were not accepted at all, such as an expired token.
	ReasonReadUnauthorized = "ReadUnauthorized"
	// ReasonTargetsUnavailable: a member cluster target cannot be reached or written; set by the
	// controller, per target in status.targets.
	ReasonTargetsUnavailable = "TargetsUnavailable"
)

// Failure says why a binding cannot be built: a reason from the list above and a message for
// people. It is a value to put in a condition, not an error to retry: the inputs must change
// before the result can.
type Failure struct {
	Reason  string
	Message string
}

// Error lets a Failure be logged or wrapped like an error.
func (f *Failure) Error() string { return f.Reason + ": " + f.Message }

// fail is a Failure of a reason and message.
func fail(reason, message string) *Failure { return &Failure{Reason: reason, Message: message} }
