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
	"github.com/kafkalink/kafkalink/pkg/wellknown"
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
	return map[string]string{wellknown.LabelName: ProxyName, wellknown.LabelGateway: gateway}
}

// build renders what the attached routes and the listeners add up to, in four steps: the
// objects and the proxy configuration (rendering), the progress of the generated TLSRoutes, the
// gateway's addresses, and then, once, the gateway's conditions and the policies' status.
func (t *translator) build(res *Result) {
	cfg := t.proxyConfig()
	if err := cfg.Validate(); err != nil {
		// Every rule Validate enforces is checked above with a status of its own; reaching this
		// is a kafkalink bug, reported rather than written out for the proxy to refuse.
		t.holdInvalid(res, "the generated proxy configuration is invalid: "+err.Error())
		return
	}
	res.Config = cfg
	t.fipsFor, _ = cfg.NeedsFIPS()
	t.tlsParents, t.refusedParents = t.checkParents()
	yaml, err := cfg.Marshal()
	if err != nil {
		t.holdInvalid(res, "cannot write the proxy configuration: "+err.Error())
		return
	}
	// 1. Rendering: every object, with a problem for each name held by an object the gateway
	//    does not control, and for generated kinds the cluster does not serve.
	objs := &objectSet{foreign: t.foreign, objects: map[ObjectKey]*unstructured.Unstructured{}}
	dep := t.render(objs, res, cfg, yaml)
	// 2. TLSRoute progress: which generated TLSRoutes a Gateway API parent has not taken yet.
	tls := t.tlsRouteProgress(res)
	res.Objects = objs.sorted()
	// 3. Addresses: the load balancer addresses of the gateway's LoadBalancer Services.
	addresses, unassigned := t.addresses()
	// 4. Status, once: the gateway's conditions and listeners, then the policies'.
	pr := progress{problems: objs.problems, deploymentReady: t.deploymentAvailable(), unassigned: len(unassigned) > 0}
	if len(t.tlsRoutes) > 0 { // a parent no host needs a TLSRoute for is not used
		for _, why := range t.refusedParents {
			pr.problems = append(pr.problems, &refProblem{reason: ReasonParentTerminatesTLS, message: why})
		}
	}
	if len(tls.timedOut) > 0 {
		pr.problems = append(pr.problems, &refProblem{reason: ReasonTLSRouteNotAccepted, message: fmt.Sprintf("no Gateway API parent accepted TLSRoutes %s within %s", strings.Join(limit(tls.timedOut, maxListedNames), ", "), t.s.Env.TLSRouteTimeout)})
	}
	if !pr.deploymentReady {
		pr.waiting = append(pr.waiting, fmt.Sprintf("Deployment %s is not available yet", dep))
	}
	if len(unassigned) > 0 {
		pr.waiting = append(pr.waiting, fmt.Sprintf("LoadBalancer Services %s have no address yet", strings.Join(limit(unassigned, maxListedNames), ", ")))
	}
	if len(tls.pending) > 0 {
		pr.waiting = append(pr.waiting, fmt.Sprintf("waiting for a Gateway API parent to accept TLSRoutes %s", strings.Join(limit(tls.pending, maxListedNames), ", ")))
	}
	res.GatewayStatus = t.gatewayStatus(pr)
	res.GatewayStatus.Addresses = addresses
	t.policyStatus(res)
}

// holdInvalid holds a gateway whose translation failed at the last step, with the gateway's
// status saying why (policies keep theirs).
func (t *translator) holdInvalid(res *Result, message string) {
	res.Hold = true
	res.GatewayStatus = t.gatewayStatus(progress{problems: []*refProblem{{reason: ReasonInvalid, message: message}}})
}

// proxyConfig is the proxy configuration: the usable listeners and the accepted virtual clusters.
func (t *translator) proxyConfig() *config.Config {
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
	return cfg
}

// objectSet collects the desired objects; a name held by an object the gateway does not control
// is left out and becomes a problem.
type objectSet struct {
	foreign  map[ObjectKey]bool
	objects  map[ObjectKey]*unstructured.Unstructured
	problems []*refProblem
}

// add adds an object, unless an object the gateway does not control holds its name.
func (o *objectSet) add(kind, name string, obj *unstructured.Unstructured) {
	key := ObjectKey{kind, name}
	if o.foreign[key] {
		o.problems = append(o.problems, &refProblem{reason: ReasonNameInUse, message: fmt.Sprintf("%s %s exists and is not managed by this gateway", kind, name)})
		return
	}
	o.objects[key] = obj
}

// sorted lists the objects by kind, then name.
func (o *objectSet) sorted() []*unstructured.Unstructured {
	keys := make([]ObjectKey, 0, len(o.objects))
	for k := range o.objects {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Kind != keys[j].Kind {
			return keys[i].Kind < keys[j].Kind
		}
		return keys[i].Name < keys[j].Name
	})
	out := make([]*unstructured.Unstructured, 0, len(keys))
	for _, k := range keys {
		out = append(out, o.objects[k])
	}
	return out
}

// render adds every generated object to objs and sets the kinds that may be pruned; it returns
// the Deployment's name.
func (t *translator) render(objs *objectSet, res *Result, cfg *config.Config, yaml []byte) string {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: KindConfigMap},
		ObjectMeta: t.meta(ConfigMapName(t.gw.Name), ""),
		Data:       map[string]string{ConfigKey: string(yaml)},
	}
	objs.add(KindConfigMap, cm.Name, toUnstructured(cm))
	for _, name := range sortedKeys(t.copies) {
		c := t.copies[name]
		s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: KindSecret}, ObjectMeta: t.meta(name, ""), Type: c.Type, Data: c.Data}
		for k, v := range c.Annotations {
			s.Annotations[k] = v
		}
		objs.add(KindSecret, name, toUnstructured(s))
	}
	if s := t.brokerKeySecret(); s != nil {
		objs.add(KindSecret, s.Name, toUnstructured(s))
	}
	dep := t.deployment(cfg)
	objs.add(KindDeployment, dep.Name, toUnstructured(dep))
	if pdb := t.podDisruptionBudget(); pdb != nil {
		objs.add(KindPodDisruptionBudget, pdb.Name, toUnstructured(pdb))
	}
	for _, name := range sortedKeys(t.svcs) {
		svc := t.service(t.svcs[name])
		if live := t.services[types.NamespacedName{Namespace: t.ns, Name: name}]; live != nil && t.controls(live) && ClusterIPFormChanges(live, svc) {
			res.RecreateServices = append(res.RecreateServices, name)
		}
		objs.add(KindService, name, toUnstructured(svc))
	}
	res.PruneKinds = []string{KindConfigMap, KindDeployment, KindPodDisruptionBudget, KindSecret, KindService}
	if len(t.osRoutes) > 0 && !t.s.Env.OpenShiftRoutes {
		objs.problems = append(objs.problems, &refProblem{reason: ReasonOpenShiftRoutesUnavailable, message: fmt.Sprintf("%d hostnames are under an ingress domain, but this cluster does not serve route.openshift.io/v1 Routes", len(t.osRoutes))})
	}
	if t.s.Env.OpenShiftRoutes {
		res.PruneKinds = append(res.PruneKinds, KindRoute)
		for _, name := range sortedKeys(t.osRoutes) {
			objs.add(KindRoute, name, t.openShiftRoute(t.osRoutes[name]))
		}
	}
	if len(t.tlsRoutes) > 0 && !t.s.Env.TLSRoutes {
		objs.problems = append(objs.problems, &refProblem{reason: ReasonTLSRoutesUnavailable, message: fmt.Sprintf("%d hosts need Gateway API TLSRoutes, but this cluster does not serve gateway.networking.k8s.io/v1 TLSRoute", len(t.tlsRoutes))})
	}
	if t.s.Env.TLSRoutes {
		res.PruneKinds = append(res.PruneKinds, KindTLSRoute)
		for _, name := range sortedKeys(t.tlsRoutes) {
			objs.add(KindTLSRoute, name, t.tlsRoute(t.tlsRoutes[name]))
		}
	}
	return dep.Name
}

// service renders one generated Service.
func (t *translator) service(d *desiredService) *corev1.Service {
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: KindService},
		ObjectMeta: t.meta(d.name, d.route),
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: SelectorLabels(t.gw.Name)},
	}
	if d.lb {
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	}
	if !d.lb && !d.exposedOutside && t.headless(d.route) {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	}
	t.decorateService(svc, d.route)
	for _, pn := range sortedKeys(d.ports) {
		port := d.ports[pn]
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: pn, Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(port)})
	}
	sort.Slice(svc.Spec.Ports, func(i, j int) bool { return svc.Spec.Ports[i].Port < svc.Spec.Ports[j].Port })
	return svc
}

// ClusterIPFormChanges reports whether a live Service must be deleted and created again to
// become desired: Kubernetes refuses to change spec.clusterIP between None (headless) and an
// address. A live Service without a cluster IP yet (or an ExternalName one) changes in place.
func ClusterIPFormChanges(live, desired *corev1.Service) bool {
	if live.Spec.ClusterIP == "" {
		return false
	}
	return (live.Spec.ClusterIP == corev1.ClusterIPNone) != (desired.Spec.ClusterIP == corev1.ClusterIPNone)
}

// controls reports whether the gateway is the controller of obj (foreign objects are never
// deleted or recreated).
func (t *translator) controls(obj metav1.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && t.gw.UID != "" && ref.UID == t.gw.UID
}

// tlsProgress names the generated TLSRoutes no Gateway API parent has taken: pending ones
// within the timeout, timed-out ones past it.
type tlsProgress struct {
	pending, timedOut []string
}

// tlsRouteProgress follows the generated TLSRoutes: a TLSRoute without a parent in its status
// is pending until Env.TLSRouteTimeout after its creation (a requeue is asked for then), and
// timed out after.
func (t *translator) tlsRouteProgress(res *Result) tlsProgress {
	var pr tlsProgress
	if !t.s.Env.TLSRoutes {
		return pr
	}
	observed := map[string]bool{}
	created := map[string]time.Time{}
	for _, o := range t.s.TLSRoutes {
		if o != nil && o.Namespace == t.ns {
			observed[o.Name] = len(o.Status.Parents) > 0
			created[o.Name] = o.CreationTimestamp.Time
		}
	}
	for _, name := range sortedKeys(t.tlsRoutes) {
		if observed[name] {
			continue
		}
		since, ok := created[name]
		if !ok {
			since = t.s.Env.Now
		}
		waited := t.s.Env.Now.Sub(since)
		if timeout := t.s.Env.TLSRouteTimeout; timeout > 0 && waited >= timeout {
			pr.timedOut = append(pr.timedOut, name)
		} else {
			pr.pending = append(pr.pending, name)
			if timeout > 0 {
				requeueAfter(res, timeout-waited)
			}
		}
	}
	return pr
}

// addresses are the gateway's addresses, from the load balancer status of its LoadBalancer
// Services (sorted, each once, at most maxAddresses), and the Services that have none yet.
func (t *translator) addresses() (addresses []kroxyliciousv1alpha1.GatewayStatusAddress, unassigned []string) {
	seen := map[string]bool{}
	for _, name := range sortedKeys(t.svcs) {
		if !t.svcs[name].lb {
			continue
		}
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
	return limitTo(addresses, maxAddresses), unassigned
}

// limit lists at most n names, and how many more there are.
func limit(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(append([]string(nil), list[:n]...), fmt.Sprintf("and %d more", len(list)-n))
}

// deploymentAvailable reports whether the proxy Deployment reports Available (never with no replicas).
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
	m.Labels[wellknown.LabelManagedBy] = wellknown.LabelManagedByValue
	m.Labels[wellknown.LabelGateway] = t.gw.Name
	m.Labels[wellknown.LabelInstance] = t.gw.Name
	if route != "" && len(validation.IsValidLabelValue(route)) == 0 {
		m.Labels[wellknown.LabelRoute] = route
	}
	return m
}

// deployment renders the proxy Deployment: the configuration and every mounted Secret as
// volumes, probes on the management port, and a locked-down pod.
func (t *translator) deployment(cfg *config.Config) *appsv1.Deployment {
	name := DeploymentName(t.gw.Name)
	podMeta := t.meta("", "")
	podMeta.Name, podMeta.Namespace = "", ""
	for k, v := range SelectorLabels(t.gw.Name) {
		podMeta.Labels[k] = v
	}
	podMeta.Annotations[wellknown.AnnotationRestartChecksum] = t.restartChecksum(cfg)
	if t.metrics {
		podMeta.Annotations[wellknown.AnnotationPrometheusScrape] = "true"
		podMeta.Annotations[wellknown.AnnotationPrometheusPort] = strconv.Itoa(int(t.managementPort))
		podMeta.Annotations[wellknown.AnnotationPrometheusPath] = "/metrics"
	}
	volumes, mounts := t.volumes()

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
						Env:            proxyEnv(cfg),
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
	t.decorateDeployment(dep, runsFilters(cfg), cfg.Limits.FilterMemoryBytes)
	return dep
}

// volumes are the proxy pod's volumes and mounts: the configuration, and each mounted Secret once,
// read-only.
func (t *translator) volumes() ([]corev1.Volume, []corev1.VolumeMount) {
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
	for _, dir := range sortedKeys(t.cmMounts) {
		cm := t.cmMounts[dir]
		sum := sha256.Sum256([]byte(cm))
		vol := "configmap-" + hex.EncodeToString(sum[:])[:12]
		volumes = append(volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: cm}, DefaultMode: ptr.To[int32](0o440),
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: vol, MountPath: dir, ReadOnly: true})
	}
	sort.Slice(volumes, func(i, j int) bool { return volumes[i].Name < volumes[j].Name })
	return volumes, mounts
}

// proxyEnv is the proxy container's environment: GODEBUG=fips140=on when some TLS options
// exclude ChaCha20-Poly1305 from TLS 1.3 (config.TLSParams.FIPS), which Go enforces only in FIPS
// 140-3 mode, for the whole process. GOMEMLIMIT, from the memory limit, comes with the resources
// (memoryDefaults).
func proxyEnv(cfg *config.Config) []corev1.EnvVar {
	if _, ok := cfg.NeedsFIPS(); !ok {
		return nil
	}
	return []corev1.EnvVar{{Name: "GODEBUG", Value: "fips140=on"}}
}

// runsFilters reports whether a virtual cluster of the configuration runs KafkaFilters.
func runsFilters(cfg *config.Config) bool {
	for _, vc := range cfg.VirtualClusters {
		if len(vc.Filters) > 0 {
			return true
		}
	}
	return false
}

// restartChecksum covers what the proxy reads only at start: the management port and metrics
// switch, filter configuration and the UID and resourceVersion of the Secrets and ConfigMaps filters read. Listener certificates, trust
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
		ConfigMaps map[string]string `json:"configMaps,omitempty"`
	}{Management: cfg.Management, Secrets: map[string]string{}, ConfigMaps: map[string]string{}}
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
	for name := range t.filterCM {
		if cm := t.configMaps[types.NamespacedName{Namespace: t.ns, Name: name}]; cm != nil {
			in.ConfigMaps[name] = string(cm.UID) + "/" + cm.ResourceVersion
		}
	}
	b, _ := json.Marshal(in) // maps marshal with sorted keys, so the sum is stable
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// openShiftRoute renders a passthrough OpenShift Route for one host.
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

// tlsRoute renders a Gateway API TLSRoute for one host, under the parameters' parentRefs.
func (t *translator) tlsRoute(r *desiredRoute) *unstructured.Unstructured {
	m := t.meta(r.name, r.route)
	parents := []any{}
	for _, p := range t.tlsParents {
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

// metaMap is object metadata in unstructured form.
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

// prune deletes nil values and empty maps, and reports whether m is left empty.
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

// sortedKeys are a map's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
