package strimzi

import "fmt"

// GatewayParentRef is one configuration.parentRefs entry of a tlsroute listener, with Gateway
// API's ParentReference fields. Group and Kind default to gateway.networking.k8s.io and Gateway,
// Namespace to the Kafka's.
type GatewayParentRef struct {
	Group, Kind, Namespace, Name, SectionName string
}

// Gateway API's group and the Gateway kind, the defaults of a parent reference.
const (
	GatewayAPIGroup = "gateway.networking.k8s.io"
	KindGateway     = "Gateway"
)

// TerminatesAtGateway reports a tlsroute listener without TLS: clients still speak TLS, which
// ends at the Gateway, and the Gateway listener's certificate is what they must trust.
func (l Listener) TerminatesAtGateway() bool { return l.Type == ListenerTLSRoute && !l.TLS }

// EncryptedToClients reports whether clients connect with TLS: TLS listeners, and tlsroute
// listeners whose TLS ends at the Gateway.
func (l Listener) EncryptedToClients() bool { return l.TLS || l.TerminatesAtGateway() }

// parseParentRefs reads a listener's configuration.parentRefs.
func parseParentRefs(m map[string]any, path string) ([]GatewayParentRef, error) {
	conf, err := optMap(m, "configuration", path+".configuration")
	if err != nil {
		return nil, err
	}
	items, err := optSlice(conf, "parentRefs", path+".configuration.parentRefs")
	if err != nil {
		return nil, err
	}
	var out []GatewayParentRef
	for i, item := range items {
		p := fmt.Sprintf("%s.configuration.parentRefs[%d]", path, i)
		ref, ok := item.(map[string]any)
		if !ok {
			return nil, fieldErr(p, "must be an object, got %s", describe(item))
		}
		r := GatewayParentRef{Group: GatewayAPIGroup, Kind: KindGateway}
		for key, into := range map[string]*string{"group": &r.Group, "kind": &r.Kind, "namespace": &r.Namespace, "name": &r.Name, "sectionName": &r.SectionName} {
			v, err := optString(ref, key, p+"."+key)
			if err != nil {
				return nil, err
			}
			if v != "" {
				*into = v
			}
		}
		out = append(out, r)
	}
	return out, nil
}
