package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/proxy/config"
)

// Kinds the translator generates, the values of ObjectKey.Kind and Result.PruneKinds.
const (
	KindDeployment = "Deployment"
	KindConfigMap  = "ConfigMap"
	KindService    = "Service"
	KindSecret     = "Secret"
	KindRoute      = "Route"
	KindTLSRoute   = "TLSRoute"
)

// DeploymentName and ConfigMapName name the gateway's proxy Deployment and its ConfigMap.
func DeploymentName(gateway string) string { return gateway }

// ConfigMapName is the name of the ConfigMap holding the proxy configuration.
func ConfigMapName(gateway string) string { return gateway + "-proxy-config" }

// SelectorLabels are the labels of the proxy pods that Services select.
func SelectorLabels(gateway string) map[string]string {
	return map[string]string{LabelName: ProxyName, LabelGateway: gateway}
}

func (t *translator) build(res *Result) {
	var gatewayProblems []string
	objects := map[ObjectKey]*unstructured.Unstructured{}
	add := func(kind, name string, obj *unstructured.Unstructured) {
		key := ObjectKey{kind, name}
		if t.foreign[key] {
			gatewayProblems = append(gatewayProblems, fmt.Sprintf("%s %s exists and is not managed by this gateway", kind, name))
			return
		}
		objects[key] = obj
	}

	// The proxy configuration.
	cfg := &config.Config{Version: config.Version, Management: config.Management{Port: t.managementPort, Metrics: t.metrics}, Limits: t.limits}
	for _, l := range t.listeners {
		if l.accepted != nil || !l.usable || t.byName[string(l.spec.Name)] != l {
			continue
		}
		cfg.Listeners = append(cfg.Listeners, config.Listener{
			Name: string(l.spec.Name), Port: int32(l.spec.Port), KeyPairs: l.keyPairs, ClientCAFiles: l.clientCAs, Options: l.options,
		})
	}
	sort.Slice(t.vcs, func(i, j int) bool { return t.vcs[i].Name < t.vcs[j].Name })
	cfg.VirtualClusters = t.vcs
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		// Every rule Validate enforces is checked above with a status of its own; reaching this
		// is a kafkalink bug, reported rather than written out for the proxy to refuse.
		res.Hold = true
		res.GatewayStatus = t.gatewayStatus(res, []string{"the generated proxy configuration is invalid: " + err.Error()}, false)
		return
	}
	res.Config = cfg
	yaml, err := cfg.Marshal()
	if err != nil {
		res.Hold = true
		res.GatewayStatus = t.gatewayStatus(res, []string{"cannot write the proxy configuration: " + err.Error()}, false)
		return
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: KindConfigMap},
		ObjectMeta: t.meta(ConfigMapName(t.gw.Name), ""),
		Data:       map[string]string{ConfigKey: string(yaml)},
	}
	add(KindConfigMap, cm.Name, toUnstructured(cm))

	for _, name := range sortedKeys(t.copies) {
		c := t.copies[name]
		s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: KindSecret}, ObjectMeta: t.meta(name, ""), Type: c.Type, Data: c.Data}
		for k, v := range c.Annotations {
			s.Annotations[k] = v
		}
		add(KindSecret, name, toUnstructured(s))
	}

	dep := t.deployment(cfg)
	add(KindDeployment, dep.Name, toUnstructured(dep))
	if pdb := t.podDisruptionBudget(); pdb != nil {
		add(KindPodDisruptionBudget, pdb.Name, toUnstructured(pdb))
	}

	var lbNames []string
	for _, name := range sortedKeys(t.svcs) {
		d := t.svcs[name]
		svc := &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: KindService},
			ObjectMeta: t.meta(name, d.route),
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: SelectorLabels(t.gw.Name)},
		}
		if d.lb {
			svc.Spec.Type = corev1.ServiceTypeLoadBalancer
			lbNames = append(lbNames, name)
		}
		t.decorateService(svc, d.route)
		for _, pn := range sortedKeys(d.ports) {
			port := d.ports[pn]
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: pn, Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(port)})
		}
		sort.Slice(svc.Spec.Ports, func(i, j int) bool { return svc.Spec.Ports[i].Port < svc.Spec.Ports[j].Port })
		add(KindService, name, toUnstructured(svc))
	}

	res.PruneKinds = []string{KindConfigMap, KindDeployment, KindPodDisruptionBudget, KindSecret, KindService}
	if len(t.osRoutes) > 0 && !t.s.Env.OpenShiftRoutes {
		gatewayProblems = append(gatewayProblems, fmt.Sprintf("%d hostnames are under an ingress domain, but this cluster does not serve route.openshift.io/v1 Routes", len(t.osRoutes)))
	}
	if t.s.Env.OpenShiftRoutes {
		res.PruneKinds = append(res.PruneKinds, KindRoute)
		for _, name := range sortedKeys(t.osRoutes) {
			add(KindRoute, name, t.openShiftRoute(t.osRoutes[name]))
		}
	}
	var tlsPending, tlsTimedOut []string
	if len(t.tlsRoutes) > 0 && !t.s.Env.TLSRoutes {
		gatewayProblems = append(gatewayProblems, fmt.Sprintf("%d hosts need Gateway API TLSRoutes, but this cluster does not serve gateway.networking.k8s.io/v1 TLSRoute", len(t.tlsRoutes)))
	}
	if t.s.Env.TLSRoutes {
		res.PruneKinds = append(res.PruneKinds, KindTLSRoute)
		observed := map[string]bool{}
		created := map[string]time.Time{}
		for _, o := range t.s.TLSRoutes {
			if o != nil && o.Namespace == t.ns {
				observed[o.Name] = len(o.Status.Parents) > 0
				created[o.Name] = o.CreationTimestamp.Time
			}
		}
		for _, name := range sortedKeys(t.tlsRoutes) {
			add(KindTLSRoute, name, t.tlsRoute(t.tlsRoutes[name]))
			if observed[name] {
				continue
			}
			since, ok := created[name]
			if !ok {
				since = t.s.Env.Now
			}
			waited := t.s.Env.Now.Sub(since)
			if timeout := t.s.Env.TLSRouteTimeout; timeout > 0 && waited >= timeout {
				tlsTimedOut = append(tlsTimedOut, name)
			} else {
				tlsPending = append(tlsPending, name)
				if timeout > 0 {
					requeueAfter(res, timeout-waited)
				}
			}
		}
	}

	keys := make([]ObjectKey, 0, len(objects))
	for k := range objects {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Kind != keys[j].Kind {
			return keys[i].Kind < keys[j].Kind
		}
		return keys[i].Name < keys[j].Name
	})
	for _, k := range keys {
		res.Objects = append(res.Objects, objects[k])
	}

	// Programmed: errors first, then what the gateway is waiting for.
	if len(tlsTimedOut) > 0 {
		gatewayProblems = append(gatewayProblems, fmt.Sprintf("no Gateway API parent accepted TLSRoutes %s within %s", strings.Join(limit(tlsTimedOut, 5), ", "), t.s.Env.TLSRouteTimeout))
	}
	var waiting []string
	deploymentReady := t.deploymentAvailable()
	if !deploymentReady {
		waiting = append(waiting, fmt.Sprintf("Deployment %s is not available yet", dep.Name))
	}
	var addresses []kroxyliciousv1alpha1.GatewayStatusAddress
	seen := map[string]bool{}
	var unassigned []string
	for _, name := range lbNames {
		svc := t.services[types.NamespacedName{Namespace: t.ns, Name: name}]
		if svc == nil || len(svc.Status.LoadBalancer.Ingress) == 0 {
			unassigned = append(unassigned, name)
			continue
		}
		for _, in := range svc.Status.LoadBalancer.Ingress {
			typ, value := "IPAddress", in.IP
			if value == "" {
				typ, value = "Hostname", in.Hostname
			}
			if value == "" || seen[typ+value] {
				continue
			}
			seen[typ+value] = true
			addresses = append(addresses, kroxyliciousv1alpha1.GatewayStatusAddress{Type: ptr.To(typ), Value: value})
		}
	}
	sort.Slice(addresses, func(i, j int) bool { return addresses[i].Value < addresses[j].Value })
	if len(addresses) > 16 {
		addresses = addresses[:16]
	}
	if len(unassigned) > 0 {
		waiting = append(waiting, fmt.Sprintf("LoadBalancer Services %s have no address yet", strings.Join(limit(unassigned, 5), ", ")))
	}
	if len(tlsPending) > 0 {
		waiting = append(waiting, fmt.Sprintf("waiting for a Gateway API parent to accept TLSRoutes %s", strings.Join(limit(tlsPending, 5), ", ")))
	}
	st := t.gatewayStatus(res, gatewayProblems, deploymentReady)
	st.Addresses = addresses
	if len(gatewayProblems) == 0 && len(waiting) > 0 {
		reason := ReasonPending
		if !deploymentReady {
			reason = ReasonDeploymentNotAvailable
		} else if len(unassigned) > 0 {
			reason = ReasonAddressNotAssigned
		}
		setCondition(&st.Conditions, Condition(ConditionProgrammed, false, reason, strings.Join(waiting, "; "), t.gen))
	}
	if len(gatewayProblems) > 0 {
		reason := ReasonInvalid
		switch {
		case len(tlsTimedOut) > 0:
			reason = ReasonTLSRouteNotAccepted
		case len(t.osRoutes) > 0 && !t.s.Env.OpenShiftRoutes:
			reason = ReasonOpenShiftRoutesUnavailable
		case len(t.tlsRoutes) > 0 && !t.s.Env.TLSRoutes:
			reason = ReasonTLSRoutesUnavailable
		case strings.Contains(gatewayProblems[0], "not managed by this gateway"):
			reason = ReasonNameInUse
		}
		setCondition(&st.Conditions, Condition(ConditionProgrammed, false, reason, strings.Join(gatewayProblems, "; "), t.gen))
	}
	res.GatewayStatus = st
	t.policyStatus(res)
}

func limit(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(append([]string(nil), list[:n]...), fmt.Sprintf("and %d more", len(list)-n))
}

func setCondition(conds *[]metav1.Condition, c metav1.Condition) {
	for i := range *conds {
		if (*conds)[i].Type == c.Type {
			(*conds)[i] = c
			return
		}
	}
	*conds = append(*conds, c)
}

func (t *translator) deploymentAvailable() bool {
	d := t.s.Deployment
	if d == nil || t.replicas == 0 {
		return false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// gatewayStatus builds the gateway's conditions and listener status. Programmed is True here
// unless there are problems or the proxy is not available; build refines it.
func (t *translator) gatewayStatus(res *Result, problems []string, deploymentReady bool) kroxyliciousv1alpha1.KafkaGatewayStatus {
	var st kroxyliciousv1alpha1.KafkaGatewayStatus
	var notAccepted []string
	valid := 0
	for _, l := range t.listeners {
		ls := kroxyliciousv1alpha1.ListenerStatus{Name: l.spec.Name, SupportedKinds: supportedKinds(), AttachedRoutes: l.attached}
		if l.accepted != nil {
			notAccepted = append(notAccepted, fmt.Sprintf("listener %q: %s", l.spec.Name, l.accepted.message))
			ls.Conditions = append(ls.Conditions, Condition(ConditionAccepted, false, l.accepted.reason, l.accepted.message, t.gen))
		} else {
			valid++
			ls.Conditions = append(ls.Conditions, Condition(ConditionAccepted, true, ReasonAccepted, "listener accepted", t.gen))
		}
		if l.resolved != nil {
			ls.Conditions = append(ls.Conditions, Condition(ConditionResolvedRefs, false, l.resolved.reason, l.resolved.message, t.gen))
		} else {
			ls.Conditions = append(ls.Conditions, Condition(ConditionResolvedRefs, true, ReasonResolvedRefs, "every certificate reference resolved", t.gen))
		}
		if len(l.conflicts) > 0 {
			ls.Conditions = append(ls.Conditions, Condition(ConditionConflicted, true, ReasonHostnameConflict, strings.Join(limit(l.conflicts, 5), "; "), t.gen))
		} else {
			ls.Conditions = append(ls.Conditions, Condition(ConditionConflicted, false, ReasonNoConflicts, "no conflicts", t.gen))
		}
		switch {
		case l.accepted != nil:
			ls.Conditions = append(ls.Conditions, Condition(ConditionProgrammed, false, ReasonInvalid, "the listener is not accepted", t.gen))
		case !l.usable:
			ls.Conditions = append(ls.Conditions, Condition(ConditionProgrammed, false, ReasonInvalid, "the listener has no usable certificate", t.gen))
		case !deploymentReady:
			ls.Conditions = append(ls.Conditions, Condition(ConditionProgrammed, false, ReasonPending, "waiting for the proxy Deployment to be available", t.gen))
		default:
			ls.Conditions = append(ls.Conditions, Condition(ConditionProgrammed, true, ReasonProgrammed, "the proxy serves the listener", t.gen))
		}
		st.Listeners = append(st.Listeners, ls)
	}
	if len(st.Listeners) > 64 {
		st.Listeners = st.Listeners[:64]
	}
	switch {
	case len(notAccepted) == 0 && len(t.notAllowed) > 0:
		st.Conditions = append(st.Conditions, Condition(ConditionAccepted, true, ReasonNotAllowedByOperator, "the gateway is accepted; not applied, as the operator does not allow them: "+strings.Join(t.notAllowed, "; "), t.gen))
	case len(notAccepted) == 0:
		st.Conditions = append(st.Conditions, Condition(ConditionAccepted, true, ReasonAccepted, "the gateway is accepted", t.gen))
	case valid > 0:
		st.Conditions = append(st.Conditions, Condition(ConditionAccepted, true, ReasonListenersNotValid, strings.Join(notAccepted, "; "), t.gen))
	default:
		st.Conditions = append(st.Conditions, Condition(ConditionAccepted, false, ReasonListenersNotValid, strings.Join(notAccepted, "; "), t.gen))
	}
	if len(problems) > 0 {
		st.Conditions = append(st.Conditions, Condition(ConditionProgrammed, false, ReasonInvalid, strings.Join(problems, "; "), t.gen))
	} else if valid == 0 {
		st.Conditions = append(st.Conditions, Condition(ConditionProgrammed, false, ReasonInvalid, "no listener is accepted", t.gen))
	} else {
		st.Conditions = append(st.Conditions, Condition(ConditionProgrammed, true, ReasonProgrammed, "the proxy is available", t.gen))
	}
	if t.gw.Spec.BackendTLS != nil && t.gw.Spec.BackendTLS.ClientCertificateRef != nil {
		if p := t.clientCertOK; p != nil {
			st.Conditions = append(st.Conditions, Condition(ConditionResolvedRefs, false, p.reason, "backendTLS.clientCertificateRef: "+p.message, t.gen))
		} else {
			st.Conditions = append(st.Conditions, Condition(ConditionResolvedRefs, true, ReasonResolvedRefs, "every reference resolved", t.gen))
		}
	}
	return st
}

func (t *translator) policyStatus(res *Result) {
	for key, ps := range t.policies {
		if !ps.used {
			res.PolicyAncestors[key] = nil
			continue
		}
		gen := ps.policy.Generation
		ns := kroxyliciousv1alpha1.Namespace(t.ns)
		entry := &kroxyliciousv1alpha1.PolicyAncestorStatus{
			AncestorRef: kroxyliciousv1alpha1.ParentReference{
				Group: ptr.To(kroxyliciousGroup), Kind: ptr.To(kindGateway), Namespace: &ns, Name: kroxyliciousv1alpha1.ObjectName(t.gw.Name),
			},
			ControllerName: ControllerName,
		}
		if ps.accepted != nil {
			entry.Conditions = append(entry.Conditions, Condition(ConditionAccepted, false, ps.accepted.reason, ps.accepted.message, gen))
		} else {
			entry.Conditions = append(entry.Conditions, Condition(ConditionAccepted, true, ReasonAccepted, "the policy applies to backends of this gateway", gen))
		}
		if ps.resolved != nil {
			entry.Conditions = append(entry.Conditions, Condition(ConditionResolvedRefs, false, ps.resolved.reason, ps.resolved.message, gen))
		} else {
			entry.Conditions = append(entry.Conditions, Condition(ConditionResolvedRefs, true, ReasonResolvedRefs, "every CA certificate reference resolved", gen))
		}
		res.PolicyAncestors[key] = entry
	}
}

// meta is the metadata of a generated object: the gateway's infrastructure labels and
// annotations, then kafkalink's labels, which win.
func (t *translator) meta(name, route string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: t.ns, Labels: map[string]string{}, Annotations: map[string]string{}}
	if inf := t.gw.Spec.Infrastructure; inf != nil {
		for k, v := range inf.Labels {
			if t.metadataAllowed(k) {
				m.Labels[k] = v
			}
		}
		for k, v := range inf.Annotations {
			if t.metadataAllowed(k) {
				m.Annotations[k] = v
			}
		}
	}
	m.Labels[LabelManagedBy] = ManagedByValue
	m.Labels[LabelGateway] = t.gw.Name
	m.Labels[LabelInstance] = t.gw.Name
	if route != "" && len(validation.IsValidLabelValue(route)) == 0 {
		m.Labels[LabelRoute] = route
	}
	return m
}

func (t *translator) deployment(cfg *config.Config) *appsv1.Deployment {
	name := DeploymentName(t.gw.Name)
	podMeta := t.meta("", "")
	podMeta.Name, podMeta.Namespace = "", ""
	for k, v := range SelectorLabels(t.gw.Name) {
		podMeta.Labels[k] = v
	}
	podMeta.Annotations[AnnotationRestartChecksum] = t.restartChecksum(cfg)
	if t.metrics {
		podMeta.Annotations["prometheus.io/scrape"] = "true"
		podMeta.Annotations["prometheus.io/port"] = strconv.Itoa(int(t.managementPort))
		podMeta.Annotations["prometheus.io/path"] = "/metrics"
	}
	volumes := []corev1.Volume{{
		Name: "config",
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(t.gw.Name)},
		}},
	}}
	mounts := []corev1.VolumeMount{{Name: "config", MountPath: ConfigDir, ReadOnly: true}}
	secretVolumes := map[string]string{}
	for _, dir := range sortedKeys(t.mounts) {
		secret := t.mounts[dir]
		vol, ok := secretVolumes[secret]
		if !ok {
			sum := sha256.Sum256([]byte(secret))
			vol = "secret-" + hex.EncodeToString(sum[:])[:12]
			secretVolumes[secret] = vol
			volumes = append(volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: secret, DefaultMode: ptr.To[int32](0o440),
			}}})
		}
		mounts = append(mounts, corev1.VolumeMount{Name: vol, MountPath: dir, ReadOnly: true})
	}
	sort.Slice(volumes, func(i, j int) bool { return volumes[i].Name < volumes[j].Name })

	var ports []corev1.ContainerPort
	for _, l := range cfg.Listeners {
		ports = append(ports, corev1.ContainerPort{ContainerPort: l.Port, Protocol: corev1.ProtocolTCP})
	}
	ports = append(ports, corev1.ContainerPort{Name: "management", ContainerPort: t.managementPort, Protocol: corev1.ProtocolTCP})
	probe := func(path string, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("management")}},
			PeriodSeconds:    10,
			TimeoutSeconds:   2,
			FailureThreshold: failures,
		}
	}
	drain := int64(config.DefaultDrainTimeout/time.Second) + 10
	dep := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: KindDeployment},
		ObjectMeta: t.meta(name, ""),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(t.replicas),
			Selector: &metav1.LabelSelector{MatchLabels: SelectorLabels(t.gw.Name)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: podMeta,
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken:  ptr.To(false), // the proxy never talks to the API server
					TerminationGracePeriodSeconds: &drain,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](65532),
						RunAsGroup:     ptr.To[int64](65532),
						FSGroup:        ptr.To[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:           "proxy",
						Image:          t.s.Env.ProxyImage,
						Args:           []string{"--config=" + ConfigFile},
						Ports:          ports,
						LivenessProbe:  probe("/livez", 3),
						ReadinessProbe: probe("/readyz", 1),
						VolumeMounts:   mounts,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							RunAsNonRoot:             ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
					Volumes: volumes,
				},
			},
		},
	}
	t.decorateDeployment(dep)
	return dep
}

// restartChecksum covers what the proxy reads only at start: the management port and metrics
// switch, filter configuration and the UID and resourceVersion of the Secrets filters read. Listener certificates, trust
// anchors and virtual clusters reload from disk, so they are left out and never roll the pods.
func (t *translator) restartChecksum(cfg *config.Config) string {
	type filterInput struct {
		VirtualCluster string          `json:"vc"`
		Filters        []config.Filter `json:"filters"`
	}
	// Filter Secrets enter by identity and version, not by value: the annotation is readable by
	// anyone who can read the Deployment, and a hash of secret material would let them test
	// guesses of it. A new resourceVersion (any change) or UID (recreated) rolls the pods.
	in := struct {
		Management config.Management `json:"management"`
		Filters    []filterInput     `json:"filters,omitempty"`
		Secrets    map[string]string `json:"secrets,omitempty"`
	}{Management: cfg.Management, Secrets: map[string]string{}}
	for _, vc := range cfg.VirtualClusters {
		if len(vc.Filters) > 0 {
			in.Filters = append(in.Filters, filterInput{vc.Name, vc.Filters})
		}
	}
	for name := range t.filterSecret {
		if s := t.secrets[types.NamespacedName{Namespace: t.ns, Name: name}]; s != nil {
			in.Secrets[name] = string(s.UID) + "/" + s.ResourceVersion
		}
	}
	b, _ := json.Marshal(in) // maps marshal with sorted keys, so the sum is stable
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (t *translator) openShiftRoute(r *desiredRoute) *unstructured.Unstructured {
	m := t.meta(r.name, r.route)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": OpenShiftRouteGVK.GroupVersion().String(),
		"kind":       OpenShiftRouteGVK.Kind,
		"metadata":   metaMap(m),
		"spec": map[string]any{
			"host":           r.host,
			"to":             map[string]any{"kind": KindService, "name": r.service, "weight": int64(100)},
			"port":           map[string]any{"targetPort": int64(r.port)},
			"tls":            map[string]any{"termination": "passthrough", "insecureEdgeTerminationPolicy": "None"},
			"wildcardPolicy": "None",
		},
	}}
	return u
}

func (t *translator) tlsRoute(r *desiredRoute) *unstructured.Unstructured {
	m := t.meta(r.name, r.route)
	var parents []any
	for _, p := range t.parentRefs {
		ref := map[string]any{"name": string(p.Name)}
		ref["group"] = "gateway.networking.k8s.io"
		if p.Group != nil {
			ref["group"] = *p.Group
		}
		ref["kind"] = "Gateway"
		if p.Kind != nil {
			ref["kind"] = *p.Kind
		}
		if p.Namespace != nil {
			ref["namespace"] = string(*p.Namespace)
		}
		if p.SectionName != nil {
			ref["sectionName"] = string(*p.SectionName)
		}
		if p.Port != nil {
			ref["port"] = int64(*p.Port)
		}
		parents = append(parents, ref)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": TLSRouteGVK.GroupVersion().String(),
		"kind":       TLSRouteGVK.Kind,
		"metadata":   metaMap(m),
		"spec": map[string]any{
			"parentRefs": parents,
			"hostnames":  []any{r.host},
			"rules": []any{map[string]any{
				"backendRefs": []any{map[string]any{"name": r.service, "port": int64(r.port)}},
			}},
		},
	}}
}

func metaMap(m metav1.ObjectMeta) map[string]any {
	out := map[string]any{"name": m.Name, "namespace": m.Namespace}
	if len(m.Labels) > 0 {
		labels := map[string]any{}
		for k, v := range m.Labels {
			labels[k] = v
		}
		out["labels"] = labels
	}
	if len(m.Annotations) > 0 {
		ann := map[string]any{}
		for k, v := range m.Annotations {
			ann[k] = v
		}
		out["annotations"] = ann
	}
	return out
}

// toUnstructured converts a typed object and drops what is empty (null creation timestamps,
// empty status), so the applied object holds only fields kafkalink means to own.
func toUnstructured(obj runtime.Object) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		// The typed objects built here always convert; keep the error visible if that changes.
		return &unstructured.Unstructured{Object: map[string]any{"error": err.Error()}}
	}
	delete(m, "status")
	prune(m)
	return &unstructured.Unstructured{Object: m}
}

func prune(m map[string]any) bool {
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			if prune(t) {
				delete(m, k)
			}
		case []any:
			for _, e := range t {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
		}
	}
	return len(m) == 0
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
