package gateway

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/proxy/config"
)

// listenerState is one gateway listener as read, and what attached routes add to it.
type listenerState struct {
	spec     kroxyliciousv1alpha1.Listener
	accepted *refProblem // nil when accepted
	resolved *refProblem // nil when every reference resolved
	// usable: accepted with at least one key pair, so the proxy serves it.
	usable    bool
	portName  string // the Service port name: the listener name, or port-<n> when that is no DNS label
	keyPairs  []config.KeyPair
	clientCAs []string
	options   map[string]string // frontendValidation TLS options
	// Written as routes attach: the SNI hosts held, the conflicts met and the routes attached.
	sni       []sniClaim
	conflicts []string
	attached  int32
}

// sniClaim is a virtual cluster a route holds on a listener; its hosts are routed there by SNI.
type sniClaim struct {
	route string
	vc    config.VirtualCluster
}

// readListeners reads the gateway's listeners in spec order: whether each is accepted (a unique
// name, the kafka-tls protocol, a free port, TLS termination with certificates), its Service
// port name, and the certificates and client CAs it presents, whose Secrets are mounted at once
// since they do not depend on routes. A listener is usable when it has at least one key pair.
func (t *translator) readListeners() {
	ports := map[int32]string{}
	portNames := map[string]bool{}
	fx := newEffects()
	for _, spec := range t.gw.Spec.Listeners {
		l := &listenerState{spec: spec}
		t.listeners = append(t.listeners, l)
		name := string(spec.Name)
		if _, dup := t.byName[name]; dup {
			l.accepted = &refProblem{reason: ReasonInvalid, message: fmt.Sprintf("listener name %q is used twice", name)}
			continue
		}
		t.byName[name] = l
		if t.checkListener(l, ports); l.accepted != nil {
			continue
		}
		port := int32(spec.Port)
		ports[port] = name
		// Service port names are DNS labels; a listener name that is not one is named by its port.
		l.portName = name
		if len(validation.IsDNS1123Label(name)) > 0 || portNames[name] {
			l.portName = fmt.Sprintf("port-%d", port)
		}
		portNames[l.portName] = true
		t.resolveListenerRefs(fx, l)
		l.usable = len(l.keyPairs) > 0
	}
	t.apply(fx)
}

// checkListener decides whether a listener is accepted, given the ports of the listeners before
// it, and reads its frontendValidation options.
func (t *translator) checkListener(l *listenerState, ports map[int32]string) {
	spec := l.spec
	port := int32(spec.Port)
	switch {
	case spec.Protocol != kroxyliciousv1alpha1.ProtocolKafkaTLS:
		l.accepted = &refProblem{reason: ReasonUnsupportedProtocol, message: fmt.Sprintf("protocol %q is not supported: use %s", spec.Protocol, kroxyliciousv1alpha1.ProtocolKafkaTLS)}
	case port < 1 || port > 65535:
		l.accepted = &refProblem{reason: ReasonPortUnavailable, message: fmt.Sprintf("port %d is out of range", port)}
	case port == t.managementPort:
		l.accepted = &refProblem{reason: ReasonPortUnavailable, message: fmt.Sprintf("port %d is the proxy's management port", port)}
	case ports[port] != "":
		l.accepted = &refProblem{reason: ReasonPortUnavailable, message: fmt.Sprintf("port %d is already used by listener %q", port, ports[port])}
	case spec.TLS == nil || len(spec.TLS.CertificateRefs) == 0:
		l.accepted = &refProblem{reason: ReasonUnsupportedValue, message: "tls.certificateRefs is required: listeners route by TLS server name"}
	case spec.TLS.Mode != nil && *spec.TLS.Mode != kroxyliciousv1alpha1.TLSModeTerminate:
		l.accepted = &refProblem{reason: ReasonUnsupportedValue, message: fmt.Sprintf("tls.mode %q is not supported: only Terminate", *spec.TLS.Mode)}
	}
	if l.accepted == nil && spec.TLS.FrontendValidation != nil {
		if _, err := config.ResolveTLSOptions(spec.TLS.FrontendValidation.Options); err != nil {
			l.accepted = &refProblem{reason: ReasonUnsupportedValue, message: fmt.Sprintf("frontendValidation.options: %v", err)}
		} else {
			l.options = spec.TLS.FrontendValidation.Options
		}
	}
}

// resolveListenerRefs resolves an accepted listener's certificate and client CA references into
// key pairs and CA files, mounted through fx, and sets its ResolvedRefs problem.
func (t *translator) resolveListenerRefs(fx *effects, l *listenerState) {
	name := string(l.spec.Name)
	from := gatewaymodel.From{Group: gatewaymodel.Group, Kind: gatewaymodel.KindGateway, Namespace: t.ns}
	var problems []*refProblem
	for _, ref := range l.spec.TLS.CertificateRefs {
		secret, p := t.secretRef(fx, ref, from, []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey}, ReasonInvalidCertificateRef, checkKeyPair)
		if p != nil {
			problems = append(problems, p.kindAs(ReasonInvalidCertificateRef))
			continue
		}
		dir := fx.mount(secret, ListenerSecretsDir+"/"+name+"/"+secret)
		l.keyPairs = append(l.keyPairs, config.KeyPair{CertificateFile: dir + "/" + corev1.TLSCertKey, PrivateKeyFile: dir + "/" + corev1.TLSPrivateKeyKey})
	}
	if fv := l.spec.TLS.FrontendValidation; fv != nil {
		for _, ref := range fv.CACertificateRefs {
			secret, p := t.secretRef(fx, ref, from, []string{"ca.crt"}, ReasonInvalidCACertificateRef, nil)
			if p != nil {
				problems = append(problems, p.kindAs(ReasonInvalidCACertificateRef))
				continue
			}
			dir := fx.mount(secret, ListenerSecretsDir+"/"+name+"/"+secret)
			l.clientCAs = append(l.clientCAs, dir+"/ca.crt")
		}
		// Without every client CA the listener would accept fewer clients than asked, or, with
		// none, every client: refuse to serve it rather than relax client authentication.
		if len(fv.CACertificateRefs) > 0 && len(l.clientCAs) < len(fv.CACertificateRefs) {
			l.keyPairs = nil
		}
	}
	l.resolved = joinProblems(problems)
}

// joinProblems makes one problem of several, or nil of none: every message, and the first
// reason, but RefNotPermitted over any other, as it needs someone else to act.
func joinProblems(problems []*refProblem) *refProblem {
	if len(problems) == 0 {
		return nil
	}
	p := problems[0]
	for _, q := range problems {
		if q.reason == ReasonRefNotPermitted {
			p = q
			break
		}
	}
	msgs := make([]string, 0, len(problems))
	notGranted := false
	for _, q := range problems {
		msgs = append(msgs, q.message)
		notGranted = notGranted || q.notGranted
	}
	return &refProblem{reason: p.reason, message: strings.Join(msgs, "; "), notGranted: notGranted}
}

// readClientCertificate resolves the gateway's backendTLS.clientCertificateRef, the client
// certificate the proxy presents to TLS backends.
func (t *translator) readClientCertificate() {
	if t.gw.Spec.BackendTLS == nil || t.gw.Spec.BackendTLS.ClientCertificateRef == nil {
		return
	}
	ref := *t.gw.Spec.BackendTLS.ClientCertificateRef
	from := gatewaymodel.From{Group: gatewaymodel.Group, Kind: gatewaymodel.KindGateway, Namespace: t.ns}
	fx := newEffects()
	secret, p := t.secretRef(fx, ref, from, []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey}, ReasonInvalidClientCertificateRef, checkKeyPair)
	if p != nil {
		t.clientCertProblem = p.kindAs(ReasonInvalidClientCertificateRef)
		return
	}
	dir := fx.mount(secret, BackendSecretsDir+"/"+secret)
	t.clientCert = &config.KeyPair{CertificateFile: dir + "/" + corev1.TLSCertKey, PrivateKeyFile: dir + "/" + corev1.TLSPrivateKeyKey}
	t.apply(fx)
}

// servedListeners are the listeners routes may select: the first of each name, in spec order.
func (t *translator) servedListeners() []*listenerState {
	var out []*listenerState
	for _, l := range t.listeners {
		if t.byName[string(l.spec.Name)] == l {
			out = append(out, l)
		}
	}
	return out
}
