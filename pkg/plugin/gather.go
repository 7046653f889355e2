package plugin

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

// Clients are the API clients the commands read with.
type Clients struct {
	// Core and Discovery rather than a whole clientset: the plugin reads Secrets, Services and
	// Pods only, and every other API group would weigh on the binary users download.
	Core      corev1client.CoreV1Interface
	Discovery discovery.DiscoveryInterface
	Kafkalink kafkalinkclient.Interface
	Dynamic   dynamic.Interface
	// strimziVersion is the served kafka.strimzi.io version, found on first use.
	strimziVersion string
}

// strimziGroup is Strimzi's API group; Strimzi 1.x serves v1, older releases v1beta2.
const strimziGroup = "kafka.strimzi.io"

// strimzi returns the GroupVersionResource of a Strimzi resource in the served version, or why
// there is none.
func (c *Clients) strimzi(resource string) (schema.GroupVersionResource, error) {
	if c.strimziVersion == "" {
		for _, v := range []string{"v1", "v1beta2"} {
			list, err := c.Discovery.ServerResourcesForGroupVersion(strimziGroup + "/" + v)
			if err != nil {
				continue
			}
			for _, r := range list.APIResources {
				if r.Name == "kafkas" {
					c.strimziVersion = v
				}
			}
			if c.strimziVersion != "" {
				break
			}
		}
	}
	if c.strimziVersion == "" {
		return schema.GroupVersionResource{}, fmt.Errorf("the cluster serves no %s Kafka (Strimzi is not installed)", strimziGroup)
	}
	return schema.GroupVersionResource{Group: strimziGroup, Version: c.strimziVersion, Resource: resource}, nil
}

// GatherConnection reads a KafkaConnection and what its tree shows.
func (c *Clients) GatherConnection(ctx context.Context, conn *kafkav1beta2.KafkaConnection) (ConnectionWorld, error) {
	w := ConnectionWorld{Connection: conn, Unreadable: map[string]string{}}
	ref := conn.Spec.Kafka
	ns := namespaceOr(ref.Namespace, conn.Namespace)
	var err error
	if ref.Kind == kafkav1beta2.KindKafkaRoute {
		w.Route, err = c.Kafkalink.KroxyliciousV1alpha1().KafkaRoutes(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err = absentIsNil(err); err != nil {
			w.Unreadable["KafkaRoute"] = err.Error()
		}
		if w.Route != nil && w.Route.Name == "" {
			w.Route = nil
		}
	} else {
		w.Kafka = c.getStrimzi(ctx, &w, "Kafka", "kafkas", ns, ref.Name)
	}
	if u := conn.Spec.User; u != nil {
		w.User = c.getStrimzi(ctx, &w, "KafkaUser", "kafkausers", namespaceOr(u.Namespace, conn.Namespace), u.Name)
	}
	if b := conn.Status.Binding; b != nil && b.Name != "" {
		s, err := c.Core.Secrets(conn.Namespace).Get(ctx, b.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			w.Secret = s
		case !apierrors.IsNotFound(err):
			return w, err
		}
	}
	return w, nil
}

// getStrimzi reads a Strimzi object; nil when it does not exist, with the reason in
// w.Unreadable when it cannot be read.
func (c *Clients) getStrimzi(ctx context.Context, w *ConnectionWorld, kind, resource, ns, name string) *unstructured.Unstructured {
	gvr, err := c.strimzi(resource)
	if err != nil {
		w.Unreadable[kind] = err.Error()
		return nil
	}
	u, err := c.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			w.Unreadable[kind] = err.Error()
		}
		return nil
	}
	return u
}

func absentIsNil(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// GatherGateway reads what a KafkaGateway's tree shows.
func (c *Clients) GatherGateway(ctx context.Context, g *kroxyliciousv1alpha1.KafkaGateway) (GatewayWorld, error) {
	w := GatewayWorld{Gateway: g}
	routes, err := c.Kafkalink.KroxyliciousV1alpha1().KafkaRoutes(g.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return w, err
	}
	for i := range routes.Items {
		w.Routes = append(w.Routes, &routes.Items[i])
	}
	sortRoutes(w.Routes)
	selector := metav1.ListOptions{LabelSelector: wellknown.LabelGateway + "=" + g.Name}
	services, err := c.Core.Services(g.Namespace).List(ctx, selector)
	if err != nil {
		return w, err
	}
	w.Services = services.Items
	sort.Slice(w.Services, func(i, j int) bool { return w.Services[i].Name < w.Services[j].Name })
	pods, err := c.Core.Pods(g.Namespace).List(ctx, selector)
	if err != nil {
		return w, err
	}
	w.Pods = proxyPods(pods.Items)
	return w, nil
}

// proxyPods are the running proxy pods by name: a pod being deleted is no longer the gateway's.
func proxyPods(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
