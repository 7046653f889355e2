package operator

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/controller"
)

// conditionSources feed kafkalink_object_conditions from the informer caches of every watched
// namespace: KafkaConnection's conditions, KafkaGateway's and its listeners', and KafkaRoute's
// per parent. Asking for the listers registers those informers before the factories start.
func conditionSources(infs []controller.Informers) []controller.ConditionSource {
	var conns []func() []controller.ObjectConditions
	var gws, routes []func() []controller.ObjectConditions
	for _, inf := range infs {
		cl := inf.KafkaLink.Kafka().V1beta2().KafkaConnections().Lister()
		gl := inf.KafkaLink.Kroxylicious().V1alpha1().KafkaGateways().Lister()
		rl := inf.KafkaLink.Kroxylicious().V1alpha1().KafkaRoutes().Lister()
		conns = append(conns, func() []controller.ObjectConditions {
			list, _ := cl.List(labels.Everything())
			// Sized once: at 20,000 connections a scrape otherwise allocated twice the list
			// in growing it.
			out := make([]controller.ObjectConditions, 0, len(list))
			for _, o := range list {
				out = append(out, controller.ObjectConditions{Namespace: o.Namespace, Conditions: [][]metav1.Condition{o.Status.Conditions}})
			}
			return out
		})
		gws = append(gws, func() (out []controller.ObjectConditions) {
			list, _ := gl.List(labels.Everything())
			for _, o := range list {
				out = append(out, controller.ObjectConditions{Namespace: o.Namespace, Conditions: gatewayConditions(o)})
			}
			return out
		})
		routes = append(routes, func() (out []controller.ObjectConditions) {
			list, _ := rl.List(labels.Everything())
			for _, o := range list {
				oc := controller.ObjectConditions{Namespace: o.Namespace}
				for _, p := range o.Status.Parents {
					oc.Conditions = append(oc.Conditions, p.Conditions)
				}
				out = append(out, oc)
			}
			return out
		})
	}
	return []controller.ConditionSource{
		{Kind: "KafkaConnection", List: concat(conns)},
		{Kind: "KafkaGateway", List: concat(gws)},
		{Kind: "KafkaRoute", List: concat(routes)},
	}
}

func gatewayConditions(g *kroxyliciousv1alpha1.KafkaGateway) [][]metav1.Condition {
	out := [][]metav1.Condition{g.Status.Conditions}
	for _, l := range g.Status.Listeners {
		out = append(out, l.Conditions)
	}
	return out
}

func concat(lists []func() []controller.ObjectConditions) func() []controller.ObjectConditions {
	return func() []controller.ObjectConditions {
		if len(lists) == 1 { // one watched namespace set: no copy
			return lists[0]()
		}
		var out []controller.ObjectConditions
		for _, l := range lists {
			out = append(out, l()...)
		}
		return out
	}
}
