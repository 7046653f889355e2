// Package gateway translates the gateway model (KafkaGateway, KafkaGatewayParameters,
// KafkaRoute, KafkaBackendTLSPolicy, KafkaFilter and the Secrets, Services and ReferenceGrants
// they name) into the objects that run and expose a kafkalink-proxy: a Deployment, a ConfigMap
// with the proxy configuration, Services, OpenShift Routes and Gateway API TLSRoutes, together
// with Gateway-API-shaped status for the gateway, its routes and policies.
//
// Translate is pure: a Snapshot in, a Result out, no clients, no clock reads (the snapshot
// carries the time), deterministic output (everything sorted). Bad user data becomes status,
// never a panic or an error. The facts it shares with pkg/binding and the controllers (which
// parentRef names a KafkaGateway, ReferenceGrants, how a hostname resolves and which port is
// advertised) are in pkg/gatewaymodel.
//
// Map, in the order Translate runs:
//   - types.go: the exported contract: Snapshot, Environment, Result, paths, condition types
//     and reasons (the labels and annotations are in pkg/wellknown);
//   - translate.go: Translate as a list of steps, the translator's state (input, parameters,
//     listeners, output), hold, and the status limits;
//   - parameters.go: readParameters (KafkaGatewayParameters or defaults, limits, ingress
//     domains) and checkMetadata (what the operator's flags do not allow);
//   - listeners.go: readListeners (which listeners are accepted, their certificates and client
//     CAs) and readClientCertificate; servedListeners;
//   - attach.go: attachRoutes and attach, one parentRef at a time, in named steps:
//     selectListeners (listener selection), brokerIDs, hosts, resolveRefs, plan (where a
//     hostname becomes Service names, with gatewaymodel.Host), checkPlan, checkClaims, commit;
//   - backends.go: resolveRefs: the backend Service, the KafkaFilters (filter) and the
//     KafkaBackendTLSPolicy (upstreamTLS, evaluatePolicy), and the CA entries of trust Secrets;
//   - refs.go: Secret references (secretRef), copies of Secrets of other namespaces, and the
//     effects (mounts, copies, filter Secrets) that are applied only when what needs them is
//     accepted;
//   - filters.go: KafkaFilter Secret placeholders (SubstituteFilterSecrets);
//   - build.go: build: the proxy configuration, the rendered objects (ConfigMap, Secret copies,
//     Deployment, Services, Routes, TLSRoutes), TLSRoute progress and addresses;
//   - status.go: the gateway's status (gatewayStatus, listenerStatus, gatewayConditions computed
//     once) and the policies' ancestor status.
package gateway
