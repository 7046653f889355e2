package gateway

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

// visible reports whether the snapshot can hold objects of namespace ns.
func (t *translator) visible(ns string) bool {
	return t.s.Env.VisibleNamespaces == nil || slices.Contains(t.s.Env.VisibleNamespaces, ns)
}

// granted reports whether a ReferenceGrant of the snapshot lets from refer to to (always within
// one namespace).
func (t *translator) granted(from gatewaymodel.From, to gatewaymodel.To) bool {
	return gatewaymodel.Granted(t.s.ReferenceGrants, from, to)
}

// notGranted is the problem of a reference from into another namespace that no ReferenceGrant
// allows; the message ends with the ReferenceGrant to create.
func notGranted(message string, from gatewaymodel.From, to gatewaymodel.To) *refProblem {
	return &refProblem{reason: ReasonRefNotPermitted, message: message + gatewaymodel.GrantHint(from, to), notGranted: true}
}

// refProblem is why something is not accepted or does not resolve: a condition reason and a
// message. Every problem carries its reason from where it is found; status never guesses it
// from the message.
type refProblem struct {
	reason, message string
	// notGranted is set when the problem is, or includes, a reference into another namespace
	// that no ReferenceGrant allows: while the ReferenceGrant API is not served, the condition
	// says so (noted).
	notGranted bool
}

// noted is the problem as its condition states it: a RefNotPermitted problem that includes a
// reference no ReferenceGrant allows ends with gatewaymodel.GrantAPIMissing while the
// ReferenceGrant API is not served, as then no ReferenceGrant can exist yet. nil stays nil.
func (t *translator) noted(p *refProblem) *refProblem {
	if p == nil || !p.notGranted || p.reason != ReasonRefNotPermitted || t.s.Env.ReferenceGrants {
		return p
	}
	return &refProblem{reason: p.reason, message: p.message + gatewaymodel.GrantAPIMissing, notGranted: true}
}

// Error is the problem's message.
func (p *refProblem) Error() string { return p.message }

// kindAs gives a wrong-kind problem the reason of the reference it was found on (a listener's
// certificateRefs report InvalidCertificateRef, as Gateway API asks), and any other as it is.
func (p *refProblem) kindAs(reason string) *refProblem {
	if p.reason != ReasonInvalidKind {
		return p
	}
	return &refProblem{reason: reason, message: p.message, notGranted: p.notGranted}
}

// effects are the Secret mounts, Secret copies and filter Secrets that resolving references
// needs. They are collected apart from the translator and applied only when what needed them is
// accepted (apply), so a refused parentRef adds nothing to the Deployment.
type effects struct {
	mounts       map[string]string // mount path -> Secret name in the gateway's namespace
	copies       []copyRequest
	filterSecret map[string]bool
	cmMounts     map[string]string // mount path -> ConfigMap name (filters' ${configmap:…})
	filterCM     map[string]bool
}

type copyRequest struct {
	secret *corev1.Secret
	keys   []string
}

// newEffects is an empty set of effects.
func newEffects() *effects {
	return &effects{mounts: map[string]string{}, filterSecret: map[string]bool{}, cmMounts: map[string]string{}, filterCM: map[string]bool{}}
}

// mount records that Secret secret (in the gateway's namespace) is mounted at dir, and returns dir.
func (fx *effects) mount(secret, dir string) string {
	fx.mounts[dir] = secret
	return dir
}

// apply adds effects to the translator's output.
func (t *translator) apply(fx *effects) {
	for dir, secret := range fx.mounts {
		t.mounts[dir] = secret
	}
	for _, c := range fx.copies {
		t.copySecret(c.secret, c.keys)
	}
	for name := range fx.filterSecret {
		t.filterSecret[name] = true
	}
	for dir, cm := range fx.cmMounts {
		t.cmMounts[dir] = cm
	}
	for name := range fx.filterCM {
		t.filterCM[name] = true
	}
}

// secretRef resolves a Secret reference of a referrer that must hold keys, and returns the name
// of the Secret to mount in the gateway's namespace: the Secret itself, or, across namespaces
// (allowed by a ReferenceGrant), a copy of just those keys, recorded in fx, because a pod can
// mount Secrets of its own namespace only. missingReason is the reason for a missing Secret or
// key, or a Secret check refuses.
func (t *translator) secretRef(fx *effects, ref kroxyliciousv1alpha1.SecretObjectReference, from gatewaymodel.From, keys []string, missingReason string, check func(*corev1.Secret) error) (string, *refProblem) {
	if !gatewaymodel.IsSecretRef(ref) {
		return "", &refProblem{reason: ReasonInvalidKind, message: fmt.Sprintf("certificate reference %q must be a core Secret", ref.Name)}
	}
	ns := gatewaymodel.RefNamespace(ref.Namespace, from.Namespace)
	name := string(ref.Name)
	if ns != from.Namespace {
		if !t.visible(ns) {
			return "", &refProblem{reason: ReasonRefNotPermitted, message: fmt.Sprintf("Secret %s/%s is in a namespace the operator does not watch", ns, name)}
		}
		if to := (gatewaymodel.To{Group: gatewaymodel.CoreGroup, Kind: gatewaymodel.KindSecret, Namespace: ns, Name: name}); !t.granted(from, to) {
			return "", notGranted(fmt.Sprintf("Secret %s/%s is in another namespace and no ReferenceGrant there allows %s from namespace %s to refer to it", ns, name, from.Kind, from.Namespace), from, to)
		}
	}
	secret := t.secrets[types.NamespacedName{Namespace: ns, Name: name}]
	if secret == nil {
		return "", &refProblem{reason: missingReason, message: fmt.Sprintf("Secret %s/%s not found", ns, name)}
	}
	var missing []string
	for _, k := range keys {
		if _, ok := secret.Data[k]; !ok {
			if _, ok := secret.StringData[k]; !ok {
				missing = append(missing, k)
			}
		}
	}
	if len(missing) > 0 {
		return "", &refProblem{reason: missingReason, message: fmt.Sprintf("Secret %s/%s has no %s", ns, name, strings.Join(missing, ", "))}
	}
	if check != nil {
		if err := check(secret); err != nil {
			return "", &refProblem{reason: missingReason, message: fmt.Sprintf("Secret %s/%s: %v", ns, name, err)}
		}
	}
	if ns == t.ns {
		return name, nil
	}
	fx.copies = append(fx.copies, copyRequest{secret, keys})
	return copyName(t.gw.Name, secret), nil
}

// copyName is the name of the copy of a Secret of another namespace in the gateway's namespace.
func copyName(gateway string, secret *corev1.Secret) string {
	sum := sha256.Sum256([]byte(secret.Namespace + "/" + secret.Name))
	return gateway + "-ref-" + hex.EncodeToString(sum[:])[:10]
}

// copySecret records a copy of keys of a Secret from another namespace and returns its name.
func (t *translator) copySecret(secret *corev1.Secret, keys []string) string {
	name := copyName(t.gw.Name, secret)
	c := t.copies[name]
	if c == nil {
		c = &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}
		c.Name = name
		c.Annotations = map[string]string{wellknown.AnnotationCopiedFrom: secret.Namespace + "/" + secret.Name}
		t.copies[name] = c
	}
	for _, k := range keys {
		if v, ok := secret.Data[k]; ok {
			c.Data[k] = v
		} else {
			c.Data[k] = []byte(secret.StringData[k])
		}
	}
	return name
}

// secretValue is a key of a Secret, from Data or, in objects not read from the API, StringData.
func secretValue(s *corev1.Secret, key string) []byte {
	if v, ok := s.Data[key]; ok {
		return v
	}
	return []byte(s.StringData[key])
}

// checkKeyPair refuses a Secret whose tls.crt and tls.key are not a PEM certificate chain and the
// private key that matches it: the proxy would refuse the file or serve nothing.
func checkKeyPair(s *corev1.Secret) error {
	if _, err := tls.X509KeyPair(secretValue(s, corev1.TLSCertKey), secretValue(s, corev1.TLSPrivateKeyKey)); err != nil {
		return fmt.Errorf("tls.crt and tls.key are not a PEM certificate and its private key: %w", err)
	}
	return nil
}

// permittedCopies names the Secret copies the gateway's and the policies' references still
// allow: the Secret exists, is visible, and is in the referrer's namespace or granted to it.
func (t *translator) permittedCopies() map[string]bool {
	keep := map[string]bool{}
	add := func(ref kroxyliciousv1alpha1.SecretObjectReference, fromKind, fromNS string) {
		if !gatewaymodel.IsSecretRef(ref) {
			return
		}
		ns := gatewaymodel.RefNamespace(ref.Namespace, fromNS)
		name := string(ref.Name)
		if ns == t.ns || !t.visible(ns) || !t.granted(gatewaymodel.From{Group: gatewaymodel.Group, Kind: fromKind, Namespace: fromNS}, gatewaymodel.To{Group: gatewaymodel.CoreGroup, Kind: gatewaymodel.KindSecret, Namespace: ns, Name: name}) {
			return
		}
		if secret := t.secrets[types.NamespacedName{Namespace: ns, Name: name}]; secret != nil {
			keep[copyName(t.gw.Name, secret)] = true
		}
	}
	for _, ref := range gatewaymodel.GatewaySecretRefs(t.gw) {
		add(ref, gatewaymodel.KindGateway, t.ns)
	}
	for _, p := range t.s.Policies {
		if p == nil {
			continue
		}
		for _, ref := range p.Spec.Validation.CACertificateRefs {
			add(ref, gatewaymodel.KindPolicy, p.Namespace)
		}
	}
	for name := range t.kafkaCACopies() {
		keep[name] = true
	}
	// The hash mapping's key outlives a hold: a new key would rename every hashed broker.
	if s := t.secrets[types.NamespacedName{Namespace: t.ns, Name: BrokerIdentitySecretName(t.gw.Name)}]; s != nil && s.Labels[wellknown.LabelGateway] == t.gw.Name {
		keep[s.Name] = true
	}
	for _, route := range t.s.Routes {
		if route == nil || route.Namespace != t.ns {
			continue
		}
		for _, pr := range route.Spec.ParentRefs {
			for _, rule := range pr.Rules {
				if dc := rule.DiscoveryCredential; dc != nil && t.refersTo(pr) {
					add(dc.SecretRef, gatewaymodel.KindRoute, route.Namespace)
				}
			}
		}
	}
	return keep
}
