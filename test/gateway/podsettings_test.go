package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// quotaYAML is a namespace quota that, like many production namespaces, requires every pod to
// declare cpu and memory requests and limits: pods without them are refused at admission.
const quotaYAML = `
apiVersion: v1
kind: ResourceQuota
metadata: {name: compute, namespace: %[1]s}
spec:
  hard: {requests.cpu: "4", requests.memory: 4Gi, limits.cpu: "8", limits.memory: 8Gi, pods: "10"}
`

const productionParamsYAML = `
kind: KafkaGatewayParameters
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: params, namespace: %[1]s}
spec:
  replicas: %[2]d
  pod:
    labels: {example.com/cost-centre: "42"}
    imagePullSecrets: [{name: registry-credentials}]
    tolerations: [{key: dedicated, operator: Equal, value: kafka, effect: NoSchedule}]
  resources:
    requests: {cpu: 200m, memory: 256Mi}
    limits: {cpu: "1", memory: 512Mi}
  logging: {verbosity: 2}
  services:
    loadBalancerSourceRanges: [10.0.0.0/8]
    annotations: {example.com/lb: internal}
`

const productionGatewayYAML = `
kind: KafkaGateway
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: gw, namespace: %[1]s}
spec:
  infrastructure:
    parametersRef: {group: kroxylicious.io, kind: KafkaGatewayParameters, name: params}
  listeners:
    - {name: one, port: 9092, protocol: kroxylicious.io/kafka-tls, tls: {certificateRefs: [{name: cert}]}}
`

// TestProductionPodSettings: a gateway in a namespace whose ResourceQuota requires requests and
// limits reaches Programmed; its pods carry the pull secret, the resources and the extra label;
// a PodDisruptionBudget exists while replicas >= 2 and goes at 1. Server-side apply keeps what
// users add to the budget and to a Service, and the drift guard puts back what kafkalink owns.
func TestProductionPodSettings(t *testing.T) {
	ctx := context.Background()
	ns := "quota"
	namespace(t, ns)
	apply(t, fmt.Sprintf(quotaYAML, ns))
	poll(t, op, "the quota controller to compute the quota's usage", func() (bool, error) {
		q, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, "compute", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return q.Status.Hard != nil, nil
	})
	apply(t, fmt.Sprintf(backendYAML, ns)+"---"+fmt.Sprintf(productionParamsYAML, ns, 3)+"---"+fmt.Sprintf(productionGatewayYAML, ns))
	apply(t, fmt.Sprintf(routeYAML, ns, "inside", "gw", "in-%.svc.cluster.local"))
	apply(t, fmt.Sprintf(routeYAML, ns, "outside", "gw", "out-%.example.com"))

	markReplicasReady(t, ns, "gw", 3)
	assignAddress(t, op, ns, "outside", "192.0.2.10")
	waitGatewayCondition(t, op, ns, "gw", "Programmed", metav1.ConditionTrue, "Programmed")

	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "kafkalink.io/gateway=gw"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Fatalf("got %d proxy pods, want 3", len(pods.Items))
	}
	wantRequests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	wantLimits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")}
	for _, p := range pods.Items {
		if len(p.Spec.ImagePullSecrets) != 1 || p.Spec.ImagePullSecrets[0].Name != "registry-credentials" {
			t.Errorf("pod %s: imagePullSecrets %v, want registry-credentials", p.Name, p.Spec.ImagePullSecrets)
		}
		if p.Labels["example.com/cost-centre"] != "42" {
			t.Errorf("pod %s: labels %v lack example.com/cost-centre", p.Name, p.Labels)
		}
		c := p.Spec.Containers[0]
		if !sameResources(c.Resources.Requests, wantRequests) || !sameResources(c.Resources.Limits, wantLimits) {
			t.Errorf("pod %s: resources %v, want requests %v limits %v", p.Name, c.Resources, wantRequests, wantLimits)
		}
		if !containsString(c.Args, "-v=2") {
			t.Errorf("pod %s: args %v lack -v=2", p.Name, c.Args)
		}
	}
	pdb := waitPDB(t, ns, "gw", true)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("maxUnavailable %v, want 1", pdb.Spec.MaxUnavailable)
	}
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
		t.Errorf("unhealthyPodEvictionPolicy %v, want AlwaysAllow", p)
	}
	if got := pdb.Spec.Selector.MatchLabels; got["kafkalink.io/gateway"] != "gw" || got["app.kubernetes.io/name"] != "kafkalink-proxy" {
		t.Errorf("selector %v does not select the proxy pods", got)
	}
	svc, err := kube.CoreV1().Services(ns).Get(ctx, "outside", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(svc.Spec.LoadBalancerSourceRanges, ",") != "10.0.0.0/8" || svc.Annotations["example.com/lb"] != "internal" {
		t.Errorf("LoadBalancer Service: sourceRanges %v, annotations %v", svc.Spec.LoadBalancerSourceRanges, svc.Annotations)
	}

	// Hand edits: an annotation of the user's own is kept; kafkalink's fields are put back.
	settle(t)
	kubectl(t, "annotate", "pdb", "-n", ns, "gw", "team.example.com/contact=bob")
	kubectl(t, "patch", "pdb", "-n", ns, "gw", "--type=merge", "-p", `{"spec":{"maxUnavailable":3}}`)
	kubectl(t, "annotate", "service", "-n", ns, "outside", "team.example.com/contact=bob")
	kubectl(t, "patch", "service", "-n", ns, "outside", "--type=merge", "-p", `{"spec":{"loadBalancerSourceRanges":["0.0.0.0/0"]}}`)
	poll(t, op, "the budget and the Service to be restored with the user's annotations kept", func() (bool, error) {
		p, err := kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s, err := kube.CoreV1().Services(ns).Get(ctx, "outside", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Annotations["team.example.com/contact"] != "bob" || s.Annotations["team.example.com/contact"] != "bob" {
			return false, fmt.Errorf("a user's annotation was removed: budget %v, Service %v", p.Annotations, s.Annotations)
		}
		if p.Spec.MaxUnavailable.IntValue() != 1 || strings.Join(s.Spec.LoadBalancerSourceRanges, ",") != "10.0.0.0/8" {
			return false, fmt.Errorf("not restored yet: maxUnavailable %v, sourceRanges %v", p.Spec.MaxUnavailable, s.Spec.LoadBalancerSourceRanges)
		}
		return true, nil
	})
	waitEvent(t, ns, "gw", "Restored")

	// One replica: the budget goes; two again: it comes back.
	apply(t, fmt.Sprintf(productionParamsYAML, ns, 1))
	waitPDB(t, ns, "gw", false)
	apply(t, fmt.Sprintf(productionParamsYAML, ns, 2))
	waitPDB(t, ns, "gw", true)
	settle(t)
}

// markReplicasReady plays the kubelet for all n pods of the gateway's Deployment, waiting until
// the ReplicaSet controller (and quota admission) let n exist.
func markReplicasReady(t *testing.T, ns, gateway string, n int) {
	t.Helper()
	ctx := context.Background()
	poll(t, op, fmt.Sprintf("%d proxy pods to be created and marked ready", n), func() (bool, error) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "kafkalink.io/gateway=" + gateway})
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp != nil {
				continue
			}
			if p.Status.Phase != corev1.PodRunning {
				now := metav1.Now()
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{
					{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
					{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				}
				if _, err := kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
					return false, err
				}
			}
			ready++
		}
		if ready < n {
			return false, fmt.Errorf("%d of %d pods exist", ready, n)
		}
		return true, nil
	})
}

func waitPDB(t *testing.T, ns, name string, exists bool) *policyv1.PodDisruptionBudget {
	t.Helper()
	var out *policyv1.PodDisruptionBudget
	poll(t, op, fmt.Sprintf("PodDisruptionBudget %s/%s exists=%v", ns, name, exists), func() (bool, error) {
		p, err := kube.PolicyV1().PodDisruptionBudgets(ns).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return !exists, nil
		}
		if err != nil {
			return false, err
		}
		out = p
		return exists && p.DeletionTimestamp == nil, nil
	})
	return out
}

func waitEvent(t *testing.T, ns, object, reason string) {
	t.Helper()
	poll(t, op, "a "+reason+" event", func() (bool, error) {
		events, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == reason && e.InvolvedObject.Name == object {
				return true, nil
			}
		}
		return false, nil
	})
}

func sameResources(got, want corev1.ResourceList) bool {
	if len(got) != len(want) {
		return false
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || g.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
