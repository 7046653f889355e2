package gateway_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const headlessGatewayYAML = `
kind: KafkaGatewayParameters
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: gw, namespace: %[1]s}
spec:
  services: {inClusterType: %[2]s}
---
kind: KafkaGateway
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: gw, namespace: %[1]s}
spec:
  infrastructure:
    parametersRef: {group: kroxylicious.io, kind: KafkaGatewayParameters, name: gw}
  listeners:
    - {name: one, port: 9092, protocol: kroxylicious.io/kafka-tls, tls: {certificateRefs: [{name: cert}]}}
`

// TestHeadlessInClusterServices: services.inClusterType: Headless gives the in-cluster hosts
// headless Services (no cluster IP taken) that select the proxy pods on the port they listen
// on, which the proxy advertises, so that cluster DNS answers each host with the pods' own
// addresses (kube-controller-manager's EndpointSlices, which CoreDNS reads, are checked). A
// LoadBalancer route of the same gateway is unaffected. Switching an existing gateway to
// ClusterIP and back deletes and recreates the Services, which Kubernetes does not change in
// place, and converges.
func TestHeadlessInClusterServices(t *testing.T) {
	ctx := context.Background()
	ns := "headless"
	namespace(t, ns)
	apply(t, fmt.Sprintf(backendYAML, ns)+"---"+fmt.Sprintf(headlessGatewayYAML, ns, "Headless"))
	apply(t, fmt.Sprintf(routeYAML, ns, "inside", "gw", "in-%.svc.cluster.local"))
	apply(t, fmt.Sprintf(routeYAML, ns, "outside", "gw", "out-%.example.com"))
	inCluster := []string{"in-bootstrap", "in-broker-0", "in-broker-1"}
	waitServiceForms(t, ns, map[string]string{"in-bootstrap": "headless", "in-broker-0": "headless", "in-broker-1": "headless", "outside": "LoadBalancer"})
	pod := markPodReadyWithIP(t, ns, "gw", "10.244.7.9")
	for _, name := range inCluster {
		svc, err := kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkHeadlessService(t, svc, pod)
		waitHeadlessEndpoints(t, ns, name, "10.244.7.9", 9092)
	}
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "gw-proxy-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The advertised port is the listener's (the proxy's own) when no advertisedPort is set.
	if cfg := cm.Data["proxy-config.yaml"]; strings.Contains(cfg, "advertisedPort") {
		t.Errorf("in-cluster virtual clusters advertise another port than the one the proxy listens on:\n%s", cfg)
	}

	uids := serviceUIDs(t, ns, inCluster)
	apply(t, fmt.Sprintf(headlessGatewayYAML, ns, "ClusterIP"))
	waitServiceForms(t, ns, map[string]string{"in-bootstrap": "ClusterIP", "in-broker-0": "ClusterIP", "in-broker-1": "ClusterIP", "outside": "LoadBalancer"})
	for name, uid := range serviceUIDs(t, ns, inCluster) {
		if uid == uids[name] {
			t.Errorf("Service %s was not created again", name)
		}
	}
	waitEvent(t, ns, "gw", "Recreated")
	apply(t, fmt.Sprintf(headlessGatewayYAML, ns, "Headless"))
	waitServiceForms(t, ns, map[string]string{"in-bootstrap": "headless", "in-broker-0": "headless", "in-broker-1": "headless", "outside": "LoadBalancer"})
	waitGatewayCondition(t, op, ns, "gw", "Accepted", metav1.ConditionTrue, "Accepted")
	waitRouteCondition(t, op, ns, "inside", "Accepted", metav1.ConditionTrue, "Accepted")
}

// serviceForm is "headless", "ClusterIP" (with an address) or the Service type.
func serviceForm(s *corev1.Service) string {
	switch {
	case s.Spec.Type != corev1.ServiceTypeClusterIP:
		return string(s.Spec.Type)
	case s.Spec.ClusterIP == corev1.ClusterIPNone:
		return "headless"
	case s.Spec.ClusterIP != "":
		return "ClusterIP"
	default:
		return "no address"
	}
}

func waitServiceForms(t *testing.T, ns string, want map[string]string) {
	t.Helper()
	poll(t, op, fmt.Sprintf("Services to be %v", want), func() (bool, error) {
		list, err := kube.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "kafkalink.io/gateway=gw"})
		if err != nil {
			return false, err
		}
		got := map[string]string{}
		for i := range list.Items {
			if list.Items[i].DeletionTimestamp == nil {
				got[list.Items[i].Name] = serviceForm(&list.Items[i])
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return false, fmt.Errorf("got %v", got)
		}
		return true, nil
	})
}

// checkHeadlessService checks what cluster DNS and clients depend on: no cluster IP, the proxy
// pods selected, and the port the pods listen on (a headless Service maps no ports).
func checkHeadlessService(t *testing.T, svc *corev1.Service, pod *corev1.Pod) {
	t.Helper()
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.ClusterIPs) != 1 || svc.Spec.ClusterIPs[0] != corev1.ClusterIPNone {
		t.Errorf("%s: clusterIP %q clusterIPs %v, want None", svc.Name, svc.Spec.ClusterIP, svc.Spec.ClusterIPs)
	}
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("%s: selector %v does not select the proxy pod (labels %v)", svc.Name, svc.Spec.Selector, pod.Labels)
		}
	}
	if len(svc.Spec.Selector) == 0 {
		t.Errorf("%s has no selector", svc.Name)
	}
	listening := map[int32]bool{}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			listening[p.ContainerPort] = true
		}
	}
	if len(svc.Spec.Ports) != 1 {
		t.Fatalf("%s: ports %v, want the listener's one", svc.Name, svc.Spec.Ports)
	}
	if p := svc.Spec.Ports[0]; p.Port != 9092 || p.TargetPort.IntVal != 9092 || !listening[9092] || p.Name == "" {
		t.Errorf("%s: port %+v; the proxy container listens on %v", svc.Name, p, listening)
	}
	if svc.Spec.PublishNotReadyAddresses {
		t.Errorf("%s publishes proxy pods that are not ready", svc.Name)
	}
}

// markPodReadyWithIP plays the kubelet for one proxy pod, with a pod IP, so that
// kube-controller-manager puts it in the Services' EndpointSlices.
func markPodReadyWithIP(t *testing.T, ns, gateway, ip string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	// The EndpointSlice controller skips pods on no known node.
	node := "headless-test-node"
	if _, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var out *corev1.Pod
	poll(t, op, "a proxy pod to be created, bound and marked ready", func() (bool, error) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "kafkalink.io/gateway=" + gateway})
		if err != nil || len(pods.Items) == 0 {
			return false, err
		}
		p := &pods.Items[0]
		if p.Spec.NodeName == "" {
			binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
			if err := kube.CoreV1().Pods(ns).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
				return false, err
			}
			if p, err = kube.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{}); err != nil {
				return false, err
			}
		}
		now := metav1.Now()
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
		out, err = kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err == nil, err
	})
	return out
}

// waitHeadlessEndpoints waits for the Service's EndpointSlice to be marked headless and to hold
// the pod's address, ready, on port: what CoreDNS answers the host with.
func waitHeadlessEndpoints(t *testing.T, ns, service, ip string, port int32) {
	t.Helper()
	poll(t, op, "EndpointSlice of "+service+" with "+ip, func() (bool, error) {
		slices, err := kube.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, s := range slices.Items {
			_, headless := s.Labels[corev1.IsHeadlessService]
			for _, e := range s.Endpoints {
				ready := e.Conditions.Ready != nil && *e.Conditions.Ready
				for _, p := range s.Ports {
					if p.Port != nil {
						seen = append(seen, fmt.Sprintf("%v:%d ready=%v headless=%v", e.Addresses, *p.Port, ready, headless))
						if headless && ready && *p.Port == port && len(e.Addresses) == 1 && e.Addresses[0] == ip {
							return true, nil
						}
					}
				}
			}
		}
		sort.Strings(seen)
		return false, fmt.Errorf("endpoints %v", seen)
	})
}

func serviceUIDs(t *testing.T, ns string, names []string) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for _, name := range names {
		svc, err := kube.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = svc.UID
	}
	return out
}
