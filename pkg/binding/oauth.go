package binding

import (
	"fmt"

	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// OAuth: a KafkaConnection's spec.oauth binds a Strimzi oauth listener with OAUTHBEARER, the
// client getting tokens from the token endpoint with client credentials (the client-credentials
// grant), as Apache Kafka's own OAuthBearerLoginCallbackHandler does.

// OAuthCredentials is a connection's OAuth client, as the controller gathers it.
type OAuthCredentials struct {
	// SecretName is the client credentials Secret, for messages.
	SecretName string
	// ClientID and ClientSecret are its clientId and clientSecret entries; empty when missing.
	ClientID, ClientSecret string
	// TokenEndpointURI is spec.oauth.tokenEndpointUri, which wins over the listener's.
	TokenEndpointURI string
	// Scope is spec.oauth.scope.
	Scope string
}

// Keys of an OAuth client credentials Secret.
const (
	OAuthClientIDKey     = "clientId"
	OAuthClientSecretKey = "clientSecret"
)

// Entries an OAuth binding adds beyond the common ones: Apache Kafka client properties (Java
// clients read them as they are; Spring Boot's configtree and Quarkus' binding source pass them
// through), and the plain values for clients that are not Java (franz-go, librdkafka).
const (
	SASLMechanismOAuthBearer      = "OAUTHBEARER"
	KeyOAuthTokenEndpoint         = "sasl.oauthbearer.token.endpoint.url"
	KeyLoginCallbackHandler       = "sasl.login.callback.handler.class"
	KeyOAuthClientID              = "clientId"
	KeyOAuthClientSecret          = "clientSecret"
	KeyOAuthScope                 = "scope"
	AliasOAuthTokenEndpoint       = "tokenEndpointUri"
	oauthBearerLoginModule        = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	oauthBearerLoginCallbackClass = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
)

// oauthMisfit says why a listener cannot serve a connection, when either of them is about OAuth.
func oauthMisfit(l strimzi.Listener, o *OAuthCredentials) string {
	switch {
	case l.Authentication != strimzi.ListenerAuthOAuth:
		return fmt.Sprintf("the connection asks for OAuth and the listener uses %s", authName(l.Authentication))
	case o == nil:
		return "it requires oauth authentication and the connection has no spec.oauth client"
	case l.OAuth != nil && !l.OAuth.OAuthBearer:
		return "it has enableOauthBearer: false (OAuth over PLAIN only), which kafkalink does not bind"
	}
	return ""
}

func authName(a strimzi.ListenerAuthentication) string {
	if a == strimzi.ListenerAuthNone {
		return "no authentication"
	}
	return string(a) + " authentication"
}

// addOAuth adds the OAUTHBEARER entries: the token endpoint (the connection's, else the
// listener's), the JAAS line and callback handler Apache Kafka clients need, and the client
// credentials.
func addOAuth(data map[string][]byte, l strimzi.Listener, o *OAuthCredentials) *Failure {
	if o.ClientID == "" || o.ClientSecret == "" {
		return fail(ReasonOAuthCredentialsMissing, fmt.Sprintf("Secret %s needs non-empty %s and %s", o.SecretName, OAuthClientIDKey, OAuthClientSecretKey))
	}
	endpoint := o.TokenEndpointURI
	if endpoint == "" && l.OAuth != nil {
		endpoint = l.OAuth.TokenEndpointURI
	}
	if endpoint == "" {
		return fail(ReasonOAuthTokenEndpointUnknown, fmt.Sprintf("listener %q has no authentication.tokenEndpointUri, and the connection sets no spec.oauth.tokenEndpointUri", l.Name))
	}
	jaas := fmt.Sprintf(`%s required clientId="%s" clientSecret="%s"`, oauthBearerLoginModule, jaasEscape(o.ClientID), jaasEscape(o.ClientSecret))
	if o.Scope != "" {
		jaas += fmt.Sprintf(` scope="%s"`, jaasEscape(o.Scope))
		data[KeyOAuthScope] = []byte(o.Scope)
	}
	for k, v := range map[string]string{
		KeySASLMechanism: SASLMechanismOAuthBearer, AliasSASLMechanism: SASLMechanismOAuthBearer,
		KeyOAuthTokenEndpoint: endpoint, AliasOAuthTokenEndpoint: endpoint,
		KeyLoginCallbackHandler: oauthBearerLoginCallbackClass, KeySASLJAASConfig: jaas + ";",
		KeyOAuthClientID: o.ClientID, KeyOAuthClientSecret: o.ClientSecret,
	} {
		data[k] = []byte(v)
	}
	return nil
}
