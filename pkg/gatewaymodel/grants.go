package gatewaymodel

import (
	"fmt"
	"strconv"
	"strings"

	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// ReferenceGrantAPI names the ReferenceGrant API in messages.
const ReferenceGrantAPI = "the ReferenceGrant API (gateway.networking.k8s.io ReferenceGrant)"

// GrantAPIMissing completes the message of a cross-namespace reference that no ReferenceGrant
// allows, while the ReferenceGrant API is not served: no ReferenceGrant can exist yet.
const GrantAPIMissing = "; " + ReferenceGrantAPI + " is not installed: install Gateway API's ReferenceGrant CRD to allow cross-namespace references"

// From is the referring side of a reference, as a ReferenceGrant's spec.from names it.
type From struct {
	// Group and Kind of the referrer, such as kroxylicious.io KafkaRoute.
	Group, Kind string
	// Namespace of the referrer.
	Namespace string
}

// To is the object referred to, as a ReferenceGrant's spec.to names it (plus its namespace,
// where the grant must be).
type To struct {
	// Group and Kind of the object, such as "" Secret.
	Group, Kind string
	// Namespace and Name of the object.
	Namespace, Name string
}

// Granted reports whether from may refer to to: within one namespace always, across namespaces
// when a ReferenceGrant in to's namespace lists from's group, kind and namespace in spec.from
// and to's group and kind, with no name or to's name, in spec.to. grants may hold grants of any
// namespace; those of other namespaces are ignored.
func Granted(grants []*gatewayv1beta1.ReferenceGrant, from From, to To) bool {
	if from.Namespace == to.Namespace {
		return true
	}
	for _, g := range grants {
		if g != nil && g.Namespace == to.Namespace && grantFrom(g, from) && grantTo(g, to) {
			return true
		}
	}
	return false
}

// grantFrom reports whether a grant's spec.from lists from.
func grantFrom(g *gatewayv1beta1.ReferenceGrant, from From) bool {
	for _, f := range g.Spec.From {
		if string(f.Group) == from.Group && string(f.Kind) == from.Kind && string(f.Namespace) == from.Namespace {
			return true
		}
	}
	return false
}

// grantTo reports whether a grant's spec.to covers to.
func grantTo(g *gatewayv1beta1.ReferenceGrant, to To) bool {
	for _, t := range g.Spec.To {
		// An unset name grants every object of the kind (the API refuses an empty one; it is
		// read as unset all the same).
		if string(t.Group) == to.Group && string(t.Kind) == to.Kind && (t.Name == nil || *t.Name == "" || string(*t.Name) == to.Name) {
			return true
		}
	}
	return false
}

// GrantYAML is the ReferenceGrant that lets from refer to to, as YAML a user can apply: in to's
// namespace, granting from's group, kind and namespace access to that one object. Its name says
// who it is for, so a second grant for another referrer does not replace it.
func GrantYAML(from From, to To) string {
	// The target's name is part of the grant's: two routes of a namespace whose backends differ
	// get two grants, so applying the second as written does not replace the first.
	name := strings.ToLower(from.Kind) + "s-from-" + from.Namespace
	if to.Name != "" {
		name += "-to-" + strings.ToLower(to.Name)
	}
	if len(name) > 253 {
		name = strings.TrimRight(name[:253], "-.")
	}
	return fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata:
  name: %s
  namespace: %s
spec:
  from:
  - group: %s
    kind: %s
    namespace: %s
  to:
  - group: %s
    kind: %s
    name: %s
`, name, to.Namespace, strconv.Quote(from.Group), from.Kind, from.Namespace, strconv.Quote(to.Group), to.Kind, to.Name)
}

// GrantHint completes the message of a reference no ReferenceGrant allows with the grant to
// create (GrantYAML).
func GrantHint(from From, to To) string {
	return "; to allow it, create this ReferenceGrant:\n" + GrantYAML(from, to)
}
