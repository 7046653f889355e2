package gateway

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
	"github.com/kafkalink/kafkalink/proxy/config"
)

// brokerIdentity hash: broker host names that do not reveal node ids (config.BrokerNames). The
// key is the gateway's own, random, kept in a Secret the gateway generates and mounts into the
// proxy; the operator reads it to name the per-broker Services, Routes and TLSRoutes the same
// way the proxy names brokers to clients.

// BrokerIdentitySecretName is the Secret holding a gateway's hash mapping key.
func BrokerIdentitySecretName(gateway string) string { return gateway + "-broker-identity" }

// BrokerIdentityKey is the key of the hash mapping key in its Secret.
const BrokerIdentityKey = "key"

// BrokerIdentityDir is where the proxy finds the key Secret.
const BrokerIdentityDir = SecretsRoot + "/broker-identity"

// brokerMapping is a parentRef's broker identity mapping: identity unless its brokers say hash.
// Its brokers entries must agree, as one parentRef's brokers are one set of hosts.
func brokerMapping(pr kroxyliciousv1alpha1.KafkaRouteParentReference) (string, *refProblem) {
	mapping := ""
	for _, b := range pr.Brokers {
		m := kroxyliciousv1alpha1.BrokerIdentityMappingIdentity
		if b.BrokerIdentityMapping != nil {
			m = *b.BrokerIdentityMapping
		}
		if m != kroxyliciousv1alpha1.BrokerIdentityMappingIdentity && m != kroxyliciousv1alpha1.BrokerIdentityMappingHash {
			return "", &refProblem{reason: ReasonUnsupportedValue, message: fmt.Sprintf("brokerIdentityMapping %q is not supported: %q or %q", m, kroxyliciousv1alpha1.BrokerIdentityMappingIdentity, kroxyliciousv1alpha1.BrokerIdentityMappingHash)}
		}
		if mapping != "" && m != mapping {
			return "", &refProblem{reason: ReasonUnsupportedValue, message: fmt.Sprintf("the brokers of one parentRef give two brokerIdentityMappings, %q and %q: give one", mapping, m)}
		}
		mapping = m
	}
	if mapping == "" {
		mapping = kroxyliciousv1alpha1.BrokerIdentityMappingIdentity
	}
	return mapping, nil
}

// brokerKey is the gateway's hash mapping key: the one its Secret holds, else the fresh one the
// controller offers (Environment.FreshBrokerKey), which the generated Secret then keeps. A
// Secret of that name the gateway did not generate is not read; the generated one clashes with
// it (NameInUse).
func (t *translator) brokerKey() ([]byte, *refProblem) {
	name := BrokerIdentitySecretName(t.gw.Name)
	if s := t.secrets[types.NamespacedName{Namespace: t.ns, Name: name}]; s != nil && s.Labels[wellknown.LabelGateway] == t.gw.Name {
		if key := secretValue(s, BrokerIdentityKey); len(key) == config.BrokerKeySize {
			return key, nil
		}
	}
	if len(t.s.Env.FreshBrokerKey) != config.BrokerKeySize {
		return nil, &refProblem{reason: ReasonPending, message: fmt.Sprintf("waiting for the broker identity key (Secret %s)", name)}
	}
	return t.s.Env.FreshBrokerKey, nil
}

// hashHosts names the brokers of a parentRef's hosts by the hash mapping, checking that the
// longer names still fit a DNS label and name (identity names are checked by ResolveHost).
func (t *translator) hashHosts(hosts []gatewaymodel.Host) *refProblem {
	key, p := t.brokerKey()
	if p != nil {
		return p
	}
	for i := range hosts {
		names, err := config.NewBrokerNames(&config.VirtualCluster{BrokerPattern: hosts[i].BrokerPattern}, key)
		if err != nil {
			return &refProblem{reason: ReasonInvalid, message: err.Error()}
		}
		hosts[i].Names = names
		vc := config.VirtualCluster{Name: "check", Listener: "check", BootstrapHost: hosts[i].Bootstrap, BrokerPattern: hosts[i].BrokerPattern, TargetBootstrap: "check:1",
			BrokerIdentity: &config.BrokerIdentity{Mapping: config.BrokerIdentityMappingHash, KeyFile: "check"}}
		if err := config.ValidateVirtualClusterHosts(&vc); err != nil {
			return &refProblem{reason: ReasonUnsupportedValue, message: fmt.Sprintf("hostname %s with brokerIdentityMapping hash: %v (a hashed broker name is %d characters where the node id was)", hosts[i].Pattern, err, config.BrokerTokenLength)}
		}
	}
	t.needBrokerKey = true
	return nil
}

// brokerIdentity is the proxy's setting for hashed hosts: the key file in the mounted Secret.
func brokerIdentity(h gatewaymodel.Host) *config.BrokerIdentity {
	if h.Names == nil || !h.Names.Hashed() {
		return nil
	}
	return &config.BrokerIdentity{Mapping: config.BrokerIdentityMappingHash, KeyFile: BrokerIdentityDir + "/" + BrokerIdentityKey}
}

// brokerKeySecret is the generated Secret of the hash mapping key, when a route uses it.
func (t *translator) brokerKeySecret() *corev1.Secret {
	if !t.needBrokerKey {
		return nil
	}
	key, p := t.brokerKey()
	if p != nil {
		return nil
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: KindSecret},
		ObjectMeta: t.meta(BrokerIdentitySecretName(t.gw.Name), ""),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{BrokerIdentityKey: key},
	}
}
