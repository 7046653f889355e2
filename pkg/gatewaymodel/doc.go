// Package gatewaymodel holds the facts about the gateway model (KafkaGateway, KafkaRoute,
// KafkaGatewayParameters and the references between them) that more than one package needs:
// the gateway translator (pkg/gateway), the binding core (pkg/binding) and their controllers.
// Each fact is here once, so the translator and a binding cannot disagree about it.
//
// It imports only the API types and apimachinery (and proxy/config for the hostname
// convention the proxy itself applies), never a controller or the translator.
//
// Map:
//   - names.go: the groups and kinds (derived from the API schemes), the controller name and
//     the Accepted condition type that route status carries;
//   - refs.go: namespace defaulting of references, "this parentRef names a KafkaGateway" (the
//     parent gateways of a route), "the parametersRef is a KafkaGatewayParameters", and a
//     listener's certificate references;
//   - grants.go: the one ReferenceGrant matcher, Granted, over typed From and To;
//   - hostnames.go: how a KafkaRoute hostname becomes a bootstrap host, broker hosts, an
//     exposure and Service names (ResolveHost, Host.BootstrapServiceName, Host.BrokerServiceName);
//   - ports.go: the port clients are advertised for a hostname (AdvertisedPort).
package gatewaymodel
