package gateway

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	filterv1alpha1 "github.com/kafkalink/kafkalink/apis/filter/v1alpha1"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
	"github.com/kafkalink/kafkalink/proxy/config"
)

// Limits on what one translation writes into status, so a gateway or route of many entries
// cannot push an object past what the API server stores. The schema has the same maximums.
const (
	// maxListenerStatuses bounds status.listeners of a gateway.
	maxListenerStatuses = 64
	// maxRouteParentStatuses bounds the parent entries one gateway writes into a route's status.
	maxRouteParentStatuses = 32
	// maxAddresses bounds status.addresses of a gateway.
	maxAddresses = 16
	// maxListedNames is how many names a status message lists before "and N more".
	maxListedNames = 5
)

// translator holds one Translate call: its input, the parameters it read, the listeners, and the
// output accumulating as routes attach. Every field is written by one step of Translate.
type translator struct {
	// Input: the snapshot and indexes of it, read-only once newTranslator returns.
	s          *Snapshot
	gw         *kroxyliciousv1alpha1.KafkaGateway
	ns         string // the gateway's namespace, where everything is generated
	gen        int64  // the gateway's generation, for its conditions
	services   map[types.NamespacedName]*corev1.Service
	secrets    map[types.NamespacedName]*corev1.Secret
	configMaps map[types.NamespacedName]*corev1.ConfigMap // ConfigMaps filters name, with data
	kafkas     map[types.NamespacedName]*strimzi.Kafka
	filters    map[string]*filterv1alpha1.KafkaFilter // KafkaFilters of the gateway's namespace
	foreign    map[ObjectKey]bool                     // names held by objects the gateway does not control

	// Parameters: the KafkaGatewayParameters (or defaults) and what the operator's flags allow;
	// written by readParameters and checkMetadata.
	replicas       int32
	managementPort int32
	metrics        bool
	ingressDomains []string // allowed ingress domains: hostnames under them become OpenShift Routes
	parentRefs     []kroxyliciousv1alpha1.GatewayParentReference
	// tlsParents are the parentRefs generated TLSRoutes name: parentRefs without those whose
	// listener terminates TLS, which refusedParents describes (checkParents).
	tlsParents     []kroxyliciousv1alpha1.GatewayParentReference
	refusedParents []string
	limits         config.Limits
	// notAllowed lists what the operator's flags keep the gateway from using, for its status;
	// deniedDomains are the ingress domains among them.
	notAllowed    []string
	deniedDomains []string

	// Listeners in spec order; byName holds the first listener of each name (a duplicate is
	// listed but refused). clientCert is the backend client certificate, or clientCertProblem
	// why it is missing. Written by readListeners and readClientCertificate.
	listeners         []*listenerState
	byName            map[string]*listenerState
	clientCert        *config.KeyPair
	clientCertProblem *refProblem

	// Output: what accepted parentRefs (and the listeners) add, written through apply and commit.
	mounts       map[string]string         // mount path -> Secret name in the gateway's namespace
	copies       map[string]*corev1.Secret // copies of Secrets of other namespaces, by name
	filterSecret map[string]bool           // Secrets mounted for filters, part of the restart checksum
	cmMounts     map[string]string         // mount path -> ConfigMap name (filters' ${configmap:…})
	filterCM     map[string]bool           // ConfigMaps mounted for filters, part of the restart checksum
	vcs          []config.VirtualCluster
	claims       map[ObjectKey]string // generated object -> owner identity
	claimRoute   map[ObjectKey]string // generated object -> route that claimed it
	svcs         map[string]*desiredService
	osRoutes     map[string]*desiredRoute
	tlsRoutes    map[string]*desiredRoute
	// policies are every KafkaBackendTLSPolicy with what this gateway found out about it.
	policies map[types.NamespacedName]*policyState
	// needBrokerKey is set when an attached parentRef names its brokers by the hash mapping:
	// the key Secret is generated (brokerKeySecret).
	needBrokerKey bool
	// fipsFor names what puts the proxy in FIPS 140-3 mode (config.Config.NeedsFIPS), if anything.
	fipsFor string
}

type desiredService struct {
	name  string
	lb    bool
	route string
	ports map[string]int32 // port name -> port
	// exposedOutside: a host of the Service is exposed through an OpenShift Route or TLSRoute,
	// whose routers and implementations are not asked to accept a headless Service.
	exposedOutside bool
}

type desiredRoute struct {
	name     string
	route    string
	host     string
	service  string
	port     int32
	listener string
}

// Translate turns a snapshot into desired objects, the proxy configuration and status.
func Translate(s *Snapshot) *Result {
	res := &Result{
		RouteParents:    map[string][]kroxyliciousv1alpha1.RouteParentStatus{},
		PolicyAncestors: map[types.NamespacedName]*kroxyliciousv1alpha1.PolicyAncestorStatus{},
	}
	if s == nil || s.Gateway == nil {
		res.Hold = true
		return res
	}
	t := newTranslator(s)
	// 1. The gateway as a whole: a name that cannot label generated objects, or parameters that
	//    cannot be applied, hold it (generated objects stay as they are; status says why).
	if p := t.checkName(); p != nil {
		t.hold(res, p)
		return res
	}
	if p := t.readParameters(); p != nil {
		t.hold(res, p)
		return res
	}
	// 2. What the operator's flags keep the gateway from using (reported, not applied).
	t.checkMetadata()
	// 3. Listeners and the backend client certificate: accepted or not, with their Secrets.
	t.readListeners()
	t.readClientCertificate()
	// 4. Routes, oldest first: each parentRef is accepted whole or adds nothing (attach.go).
	t.attachRoutes(res)
	// 5. Objects, the proxy configuration, addresses and the gateway's and policies' status (build.go).
	t.build(res)
	return res
}

// newTranslator indexes the snapshot.
func newTranslator(s *Snapshot) *translator {
	t := &translator{
		s: s, gw: s.Gateway, ns: s.Gateway.Namespace, gen: s.Gateway.Generation,
		services: map[types.NamespacedName]*corev1.Service{}, secrets: map[types.NamespacedName]*corev1.Secret{},
		filters: map[string]*filterv1alpha1.KafkaFilter{}, foreign: map[ObjectKey]bool{},
		byName: map[string]*listenerState{}, mounts: map[string]string{}, copies: map[string]*corev1.Secret{},
		filterSecret: map[string]bool{}, cmMounts: map[string]string{}, filterCM: map[string]bool{},
		configMaps: map[types.NamespacedName]*corev1.ConfigMap{}, claims: map[ObjectKey]string{}, claimRoute: map[ObjectKey]string{},
		svcs: map[string]*desiredService{}, osRoutes: map[string]*desiredRoute{}, tlsRoutes: map[string]*desiredRoute{},
		policies: map[types.NamespacedName]*policyState{},
	}
	for _, o := range s.Services {
		if o != nil {
			t.services[types.NamespacedName{Namespace: o.Namespace, Name: o.Name}] = o
		}
	}
	for _, o := range s.Secrets {
		if o != nil {
			t.secrets[types.NamespacedName{Namespace: o.Namespace, Name: o.Name}] = o
		}
	}
	for _, o := range s.ConfigMaps {
		if o != nil {
			t.configMaps[types.NamespacedName{Namespace: o.Namespace, Name: o.Name}] = o
		}
	}
	t.kafkas = map[types.NamespacedName]*strimzi.Kafka{}
	for _, k := range s.Kafkas {
		if k != nil {
			t.kafkas[types.NamespacedName{Namespace: k.Namespace, Name: k.Name}] = k
		}
	}
	for _, o := range s.Filters {
		if o != nil && o.Namespace == t.ns {
			t.filters[o.Name] = o
		}
	}
	for _, k := range s.Foreign {
		t.foreign[k] = true
	}
	for _, p := range s.Policies {
		if p != nil {
			t.policies[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = &policyState{policy: p}
		}
	}
	return t
}

// checkName refuses a gateway name that cannot be a label value: every generated object carries
// it in a label, whose values are 63 characters at most.
func (t *translator) checkName() *refProblem {
	if errs := validation.IsValidLabelValue(t.gw.Name); len(errs) > 0 {
		return &refProblem{reason: ReasonInvalid, message: fmt.Sprintf("the gateway name must be at most 63 characters, because generated objects are labelled with it: %s", strings.Join(errs, "; "))}
	}
	return nil
}

// hold reports a gateway that cannot be translated; generated objects stay as they are.
func (t *translator) hold(res *Result, p *refProblem) {
	res.Hold = true
	res.GatewayStatus.Conditions = []metav1.Condition{
		Condition(ConditionAccepted, false, p.reason, p.message, t.gen),
		Condition(ConditionProgrammed, false, ReasonInvalid, "the gateway is not accepted: "+p.message, t.gen),
	}
	res.GatewayStatus.Conditions = append(res.GatewayStatus.Conditions, readyCondition(res.GatewayStatus.Conditions[0], res.GatewayStatus.Conditions[1], t.gen))
	for _, l := range t.gw.Spec.Listeners {
		res.GatewayStatus.Listeners = append(res.GatewayStatus.Listeners, kroxyliciousv1alpha1.ListenerStatus{
			Name:           l.Name,
			SupportedKinds: supportedKinds(),
			Conditions: []metav1.Condition{
				Condition(ConditionAccepted, false, ReasonInvalid, "the gateway is not accepted", t.gen),
				Condition(ConditionProgrammed, false, ReasonInvalid, "the gateway is not accepted", t.gen),
			},
		})
	}
	res.GatewayStatus.Listeners = limitTo(res.GatewayStatus.Listeners, maxListenerStatuses)
	// Routes keep whatever status they had: nothing about them was decided.
	res.RouteParents = nil
	res.PolicyAncestors = nil
	res.KeepCopies = t.permittedCopies()
}

// limitTo cuts a status list to at most n entries.
func limitTo[T any](list []T, n int) []T {
	if len(list) > n {
		return list[:n]
	}
	return list
}

// requeueAfter keeps the earliest positive delay.
func requeueAfter(res *Result, d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if res.RequeueAfter == 0 || d < res.RequeueAfter {
		res.RequeueAfter = d
	}
}
