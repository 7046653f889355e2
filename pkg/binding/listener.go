package binding

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// Kafka security.protocol values.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// ListenerInput is what the listener choice reads.
type ListenerInput struct {
	// Kafka is the parsed Kafka; nil when it does not exist.
	Kafka *strimzi.Kafka
	// Requested is spec.kafka.listener.name; empty lets kafkalink choose.
	Requested string
	// Current is the listener in the connection's status, preferred among the fitting ones so the
	// binding does not move between equally good listeners.
	Current string
	// User is the parsed KafkaUser; nil when the connection names no user.
	User *strimzi.KafkaUser
	// OAuth is the connection's OAuth client; nil when it asks for none.
	OAuth *OAuthCredentials
	// AllowExternal is spec.allowExternalListener: without it an automatic choice takes only
	// in-cluster listeners (the Strimzi proposal's step 8).
	AllowExternal bool
}

// Choice is the listener a connection uses.
type Choice struct {
	Listener strimzi.Listener
	// Status is the listener's entry in the Kafka status.
	Status strimzi.ListenerStatus
	// BootstrapServers is the comma-separated host:port list clients start from.
	BootstrapServers string
	// SecurityProtocol is the Kafka client security.protocol the listener needs.
	SecurityProtocol string
}

// ChooseListener picks the listener for a connection, deterministically:
//  1. the requested listener, refused with ListenerNotFound or ListenerIncompatible if it is
//     missing or cannot serve the user;
//  2. otherwise among the listeners that fit the user: the current one, then internal and
//     cluster-ip listeners, then TLS ones, then by name. Listeners reached from outside the
//     cluster are candidates only with AllowExternal; when only such listeners fit, the choice
//     fails with NoInternalListener, naming them and the fields that opt in.
//
// A listener fits when its authentication matches the user's: no user needs a listener without
// authentication, a scram-sha-512 user a scram-sha-512 listener, a tls or tls-external user a
// listener with TLS and tls authentication. custom and oauth listeners never fit. The choice fails
// with BootstrapNotReady when the Kafka status has no address for the chosen listener yet.
func ChooseListener(in ListenerInput) (Choice, *Failure) {
	if in.Kafka == nil {
		return Choice{}, fail(ReasonKafkaNotFound, "the Kafka does not exist")
	}
	k := in.Kafka
	if in.User != nil {
		if f := checkUserAuthentication(in.User); f != nil {
			return Choice{}, f
		}
	}
	var chosen strimzi.Listener
	if in.Requested != "" {
		l, ok := k.Listener(in.Requested)
		if !ok {
			return Choice{}, fail(ReasonListenerNotFound, fmt.Sprintf("Kafka %s has no listener %q (it has %s)",
				kafkaRef(k), in.Requested, listenerNames(k.Listeners)))
		}
		if why := misfit(l, in.User, in.OAuth); why != "" {
			return Choice{}, fail(ReasonListenerIncompatible, fmt.Sprintf("listener %q of Kafka %s cannot serve %s: %s",
				l.Name, kafkaRef(k), describePrincipal(in.User, in.OAuth), why))
		}
		chosen = l
	} else {
		var misfits []string
		var candidates []strimzi.Listener
		for _, l := range k.Listeners {
			if why := misfit(l, in.User, in.OAuth); why != "" {
				misfits = append(misfits, fmt.Sprintf("%s (%s)", l.Name, why))
				continue
			}
			candidates = append(candidates, l)
		}
		if len(candidates) == 0 {
			msg := fmt.Sprintf("Kafka %s has no listeners", kafkaRef(k))
			if len(misfits) > 0 {
				msg = fmt.Sprintf("no listener of Kafka %s can serve %s: %s", kafkaRef(k), describePrincipal(in.User, in.OAuth), strings.Join(misfits, "; "))
			}
			return Choice{}, fail(ReasonNoCompatibleListener, msg)
		}
		if !in.AllowExternal {
			var f *Failure
			if candidates, f = inClusterOnly(k, candidates, misfits, in); f != nil {
				return Choice{}, f
			}
		}
		sort.SliceStable(candidates, func(i, j int) bool { return preferred(candidates[i], candidates[j], in.Current) })
		chosen = candidates[0]
	}
	st, _ := k.ListenerStatus(chosen.Name)
	bootstrap := bootstrapServers(st)
	if bootstrap == "" {
		return Choice{}, fail(ReasonBootstrapNotReady, fmt.Sprintf("Kafka %s reports no bootstrap address for listener %q yet",
			kafkaRef(k), chosen.Name))
	}
	return Choice{
		Listener:         chosen,
		Status:           st,
		BootstrapServers: bootstrap,
		SecurityProtocol: SecurityProtocol(chosen),
	}, nil
}

// inClusterOnly keeps the in-cluster listeners among the fitting ones; when none is left it fails
// with NoInternalListener, saying which external listeners would fit and how to opt in.
func inClusterOnly(k *strimzi.Kafka, fitting []strimzi.Listener, misfits []string, in ListenerInput) ([]strimzi.Listener, *Failure) {
	var inCluster []strimzi.Listener
	var external []string
	for _, l := range fitting {
		if l.Type.InCluster() {
			inCluster = append(inCluster, l)
		} else {
			external = append(external, fmt.Sprintf("%s (%s)", l.Name, l.Type))
		}
	}
	if len(inCluster) > 0 {
		return inCluster, nil
	}
	msg := fmt.Sprintf("Kafka %s has no in-cluster listener (type internal or cluster-ip) that can serve %s", kafkaRef(k), describePrincipal(in.User, in.OAuth))
	if len(misfits) > 0 {
		msg += " (" + strings.Join(misfits, "; ") + ")"
	}
	msg += fmt.Sprintf("; %s would, from outside the cluster: name one in spec.kafka.listener.name, or set spec.allowExternalListener: true to let kafkalink choose it",
		strings.Join(external, ", "))
	return nil, fail(ReasonNoInternalListener, msg)
}

// preferred orders fitting listeners: the current one, in-cluster types, TLS, then name.
func preferred(a, b strimzi.Listener, current string) bool {
	if (a.Name == current) != (b.Name == current) {
		return a.Name == current
	}
	if a.Type.InCluster() != b.Type.InCluster() {
		return a.Type.InCluster()
	}
	if a.TLS != b.TLS {
		return a.TLS
	}
	return a.Name < b.Name
}

// SecurityProtocol is the Kafka client security.protocol for a listener: TLS or not, SASL or not.
// Only scram-sha-512 listeners use SASL among the ones kafkalink binds.
func SecurityProtocol(l strimzi.Listener) string {
	sasl := l.Authentication == strimzi.ListenerAuthSCRAMSHA512 || l.Authentication == strimzi.ListenerAuthOAuth
	tls := l.EncryptedToClients()
	switch {
	case tls && sasl:
		return ProtocolSASLSSL
	case tls:
		return ProtocolSSL
	case sasl:
		return ProtocolSASLPlaintext
	default:
		return ProtocolPlaintext
	}
}

// checkUserAuthentication refuses users kafkalink cannot bind at all, whatever the listener.
func checkUserAuthentication(u *strimzi.KafkaUser) *Failure {
	switch u.Authentication {
	case strimzi.UserAuthSCRAMSHA512, strimzi.UserAuthTLS, strimzi.UserAuthTLSExternal:
		return nil
	case strimzi.UserAuthNone:
		return fail(ReasonUserAuthenticationUnsupported, fmt.Sprintf(
			"KafkaUser %s has no spec.authentication, so it has no credentials to bind (use scram-sha-512, tls or tls-external)", userRef(u)))
	default:
		return fail(ReasonUserAuthenticationUnsupported, fmt.Sprintf(
			"KafkaUser %s uses authentication %q, which kafkalink cannot bind (use scram-sha-512, tls or tls-external)", userRef(u), u.Authentication))
	}
}

// misfit says why a listener cannot serve a user, or "" when it can.
func misfit(l strimzi.Listener, u *strimzi.KafkaUser, o *OAuthCredentials) string {
	if o != nil || l.Authentication == strimzi.ListenerAuthOAuth {
		return oauthMisfit(l, o)
	}
	switch l.Authentication {
	case strimzi.ListenerAuthNone:
		if u != nil {
			return "it has no authentication, so the user's credentials would not be used"
		}
		return ""
	case strimzi.ListenerAuthSCRAMSHA512:
		if u == nil {
			return "it requires scram-sha-512 authentication and no KafkaUser is named"
		}
		if u.Authentication != strimzi.UserAuthSCRAMSHA512 {
			return fmt.Sprintf("it requires scram-sha-512 authentication and the user uses %s", u.Authentication)
		}
		return ""
	case strimzi.ListenerAuthTLS:
		if !l.TLS {
			return "it uses tls authentication without TLS"
		}
		if u == nil {
			return "it requires tls client authentication and no KafkaUser is named"
		}
		if u.Authentication != strimzi.UserAuthTLS && u.Authentication != strimzi.UserAuthTLSExternal {
			return fmt.Sprintf("it requires tls client authentication and the user uses %s", u.Authentication)
		}
		return ""
	case strimzi.ListenerAuthCustom:
		return fmt.Sprintf("it uses %s authentication, which kafkalink cannot bind", l.Authentication)
	default:
		return fmt.Sprintf("it uses authentication %q, which kafkalink does not know", l.Authentication)
	}
}

// bootstrapServers reads the listener's bootstrap list (strimzi.ListenerStatus.Bootstrap).
func bootstrapServers(st strimzi.ListenerStatus) string { return st.Bootstrap() }

// listenerNames lists listeners for a message.
func listenerNames(ls []strimzi.Listener) string {
	if len(ls) == 0 {
		return "no listeners"
	}
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = strconv.Quote(l.Name)
	}
	return strings.Join(names, ", ")
}

// kafkaRef is namespace/name of a Kafka, for messages.
func kafkaRef(k *strimzi.Kafka) string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// userRef is namespace/name of a KafkaUser, for messages.
func userRef(u *strimzi.KafkaUser) string {
	if u.Namespace == "" {
		return u.Name
	}
	return u.Namespace + "/" + u.Name
}

// describeUser names a KafkaUser and how it authenticates, for messages.
func describePrincipal(u *strimzi.KafkaUser, o *OAuthCredentials) string {
	switch {
	case o != nil:
		return fmt.Sprintf("the OAuth client of Secret %s", o.SecretName)
	case u == nil:
		return "a connection without a KafkaUser"
	}
	return fmt.Sprintf("KafkaUser %s (%s)", userRef(u), u.Authentication)
}
