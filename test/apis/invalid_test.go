package apis_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// A valid object of each kind, which the cases below break in exactly one place.
const (
	validGateway = `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGateway
metadata: {name: gw}
spec:
  listeners:
  - name: my-listener
    port: 9092
    protocol: kroxylicious.io/kafka-tls
    tls:
      certificateRefs: [{kind: Secret, name: my-cert}]
`
	validRoute = `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaRoute
metadata: {name: route}
spec:
  parentRefs:
  - name: gw
    sectionName: my-listener
    brokers: [{advertisedBrokerIds: [0, 1, 2]}]
    hostnames: [my-cluster-%.example.com]
    rules:
    - name: my-rule
      filters: [{name: encryption}]
      backendRefs: [{kind: Service, name: my-cluster, port: 9093}]
`
)

// hugeRoute is a route of one parentRef with hostnames hostnames and lists brokers lists of
// perList consecutive broker ids each.
func hugeRoute(hostnames, lists, perList int) string {
	var b strings.Builder
	b.WriteString("apiVersion: kroxylicious.io/v1alpha1\nkind: KafkaRoute\nmetadata: {name: huge}\nspec:\n  parentRefs:\n  - name: gw\n    brokers:\n")
	for l := range lists {
		b.WriteString("    - advertisedBrokerIds: [")
		for i := range perList {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprint(&b, l*perList+i)
		}
		b.WriteString("]\n")
	}
	b.WriteString("    hostnames:\n")
	for h := range hostnames {
		fmt.Fprintf(&b, "    - c%02d-%%.example.com\n", h)
	}
	b.WriteString("    rules: [{name: r, backendRefs: [{kind: Service, name: my-cluster, port: 9093}]}]\n")
	return b.String()
}

func TestInvalidObjectsAreRefusedNamingTheField(t *testing.T) {
	ensureNamespaces(t, "invalid")
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		yaml string
		// wantField and wantMessage must both appear in the API server's refusal.
		wantField, wantMessage string
	}{
		"a gateway without listeners": {
			yaml:      "apiVersion: kroxylicious.io/v1alpha1\nkind: KafkaGateway\nmetadata: {name: gw}\nspec: {listeners: []}\n",
			wantField: "spec.listeners", wantMessage: "should have at least 1 items",
		},
		"a gateway with two listeners of one name": {
			yaml: validGateway + `  - name: my-listener
    port: 9093
    protocol: kroxylicious.io/kafka-tls
    tls:
      certificateRefs: [{name: other}]
`,
			wantField: "spec.listeners[1]", wantMessage: "Duplicate value",
		},
		"a listener tls mode other than Terminate": {
			yaml:      strings.Replace(validGateway, "    tls:\n", "    tls:\n      mode: Passthrough\n", 1),
			wantField: "spec.listeners[0].tls.mode", wantMessage: `supported values: "Terminate"`,
		},
		"a listener without tls": {
			yaml:      strings.Replace(validGateway, "    tls:\n      certificateRefs: [{kind: Secret, name: my-cert}]\n", "", 1),
			wantField: "spec.listeners[0]", wantMessage: "tls is required",
		},
		"a listener without certificates": {
			yaml:      strings.Replace(validGateway, "[{kind: Secret, name: my-cert}]", "[]", 1),
			wantField: "spec.listeners[0].tls.certificateRefs", wantMessage: "should have at least 1 items",
		},
		"a certificateRef of another kind": {
			yaml:      strings.Replace(validGateway, "kind: Secret", "kind: ConfigMap", 1),
			wantField: "spec.listeners[0].tls.certificateRefs[0]", wantMessage: "kind must be Secret",
		},
		"a certificateRef of another group": {
			yaml:      strings.Replace(validGateway, "kind: Secret,", "group: cert-manager.io, kind: Secret,", 1),
			wantField: "spec.listeners[0].tls.certificateRefs[0]", wantMessage: "group must be the empty string",
		},
		"a certificateRef without a name": {
			yaml:      strings.Replace(validGateway, "name: my-cert", `name: ""`, 1),
			wantField: "spec.listeners[0].tls.certificateRefs[0].name", wantMessage: "should be at least 1 chars long",
		},
		"a listener without a port": {
			yaml:      strings.Replace(validGateway, "    port: 9092\n", "", 1),
			wantField: "spec.listeners[0].port", wantMessage: "Required value",
		},
		"a listener without a name": {
			yaml:      strings.Replace(validGateway, "  - name: my-listener\n    port", "  - port", 1),
			wantField: "spec.listeners[0].name", wantMessage: "Required value",
		},
		"a hostname with '*'": {
			yaml:      strings.Replace(validRoute, "my-cluster-%.example.com", "'*.example.com'", 1),
			wantField: "spec.parentRefs[0].hostnames[0]", wantMessage: "must not contain '*'",
		},
		"a hostname with '%' outside the first label": {
			yaml:      strings.Replace(validRoute, "my-cluster-%.example.com", "my-cluster.%.example.com", 1),
			wantField: "spec.parentRefs[0].hostnames[0]", wantMessage: "'%' in its first label",
		},
		"a hostname with '%' and no prefix": {
			yaml:      strings.Replace(validRoute, "my-cluster-%.example.com", "'%.example.com'", 1),
			wantField: "spec.parentRefs[0].hostnames[0]", wantMessage: "needs a prefix before '%'",
		},
		"a hostname with two '%'": {
			yaml:      strings.Replace(validRoute, "my-cluster-%.example.com", "my-%-cluster-%.example.com", 1),
			wantField: "spec.parentRefs[0].hostnames[0]", wantMessage: "exactly one '%'",
		},
		"a hostname without '%'": {
			yaml:      strings.Replace(validRoute, "my-cluster-%.example.com", "my-cluster.example.com", 1),
			wantField: "spec.parentRefs[0].hostnames[0]", wantMessage: "'%' in its first label",
		},
		"a route parent of another kind": {
			yaml:      strings.Replace(validRoute, "  - name: gw\n", "  - name: gw\n    kind: Gateway\n", 1),
			wantField: "spec.parentRefs[0]", wantMessage: "kind must be KafkaGateway",
		},
		"a route filter of another kind": {
			yaml:      strings.Replace(validRoute, "[{name: encryption}]", "[{kind: Filter, name: encryption}]", 1),
			wantField: "spec.parentRefs[0].rules[0].filters[0]", wantMessage: "kind must be KafkaFilter",
		},
		"a route backend of another kind": {
			yaml:      strings.Replace(validRoute, "kind: Service, name: my-cluster", "kind: Deployment, name: my-cluster", 1),
			wantField: "spec.parentRefs[0].rules[0].backendRefs[0]", wantMessage: "a backendRef is a core Service",
		},
		"a route backend of kind Kafka in the core group": {
			yaml:      strings.Replace(validRoute, "kind: Service, name: my-cluster", "kind: Kafka, name: my-cluster", 1),
			wantField: "spec.parentRefs[0].rules[0].backendRefs[0]", wantMessage: "or a Strimzi Kafka (group kafka.strimzi.io, kind Kafka)",
		},
		"a route with a Service backend and no brokers": {
			yaml:      strings.Replace(validRoute, "    brokers: [{advertisedBrokerIds: [0, 1, 2]}]\n", "", 1),
			wantField: "spec.parentRefs[0]", wantMessage: "brokers is required unless the backend is a Strimzi Kafka",
		},
		"a route rule without a name": {
			yaml:      strings.Replace(validRoute, "    - name: my-rule\n      filters", "    - filters", 1),
			wantField: "spec.parentRefs[0].rules[0].name", wantMessage: "Required value",
		},
		"the 105 KB route of 16 hostnames x 16,384 broker ids": {
			yaml: hugeRoute(16, 16, 1024), wantField: "spec.parentRefs[0].brokers[0].advertisedBrokerIds", wantMessage: "must have at most 256 items",
		},
		"a parentRef of more than 256 broker ids over its brokers lists": {
			yaml: hugeRoute(1, 2, 200), wantField: "spec.parentRefs[0]", wantMessage: "brokers list more than 256 broker ids in all",
		},
		"a route of more than 1024 hosts": {
			yaml: hugeRoute(5, 1, 250), wantField: "spec", wantMessage: "the route asks for more than 1024 hosts",
		},
		"a route backend without a name": {
			yaml:      strings.Replace(validRoute, "name: my-cluster, ", "", 1),
			wantField: "spec.parentRefs[0].rules[0].backendRefs[0].name", wantMessage: "Required value",
		},
		"a filter without a type": {
			yaml: `
apiVersion: filter.kroxylicious.io/v1alpha1
kind: KafkaFilter
metadata: {name: f}
spec:
  config: {kms: Foo}
`,
			wantField: "spec.type", wantMessage: "Required value",
		},
		"a filter with both config and configTemplate": {
			yaml: `
apiVersion: filter.kroxylicious.io/v1alpha1
kind: KafkaFilter
metadata: {name: f}
spec:
  type: RecordEncryption
  config: {kms: Foo}
  configTemplate: {kms: Bar}
`,
			wantField: "spec", wantMessage: "config and configTemplate are the same field",
		},
		"a backend TLS policy targeting something other than a Service": {
			yaml: `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaBackendTLSPolicy
metadata: {name: p}
spec:
  targetRefs: [{kind: Pod, name: kafka}]
  validation: {hostname: kafka.example.com}
`,
			wantField: "spec.targetRefs[0]", wantMessage: "kind must be Service",
		},
		"an unknown TLS option": {
			yaml: `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaBackendTLSPolicy
metadata: {name: p}
spec:
  targetRefs: [{kind: Service, name: kafka}]
  validation: {hostname: kafka.example.com}
  options: {kroxylicious.io/enabled-protocol: TLSv1.3}
`,
			wantField: "spec.options", wantMessage: "unknown TLS option",
		},
		"parameters whose two port spellings disagree": {
			yaml: `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGatewayParameters
metadata: {name: p}
spec:
  port: 8080
  management: {port: 9090}
`,
			wantField: "spec", wantMessage: "port and management.port disagree",
		},
		"parameters with an unknown proxy log format": {
			yaml: `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGatewayParameters
metadata: {name: p}
spec:
  logging: {format: xml}
`,
			wantField: "spec.logging.format", wantMessage: "supported values",
		},
		"parameters with a proxy verbosity over 10": {
			yaml: `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGatewayParameters
metadata: {name: p}
spec:
  logging: {verbosity: 11}
`,
			wantField: "spec.logging.verbosity", wantMessage: "less than or equal to 10",
		},
		"parameters with resource claims": {
			yaml: `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGatewayParameters
metadata: {name: p}
spec:
  resources: {claims: [{name: gpu}]}
`,
			wantField: "spec.resources", wantMessage: "resources.claims is not supported",
		},
		"parameters with a source range that is no CIDR": {
			yaml: `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGatewayParameters
metadata: {name: p}
spec:
  services:
    routes: [{route: partners, loadBalancerSourceRanges: [everyone]}]
`,
			wantField: "spec.services.routes[0].loadBalancerSourceRanges[0]", wantMessage: "should match",
		},
		"parameters with an unknown externalTrafficPolicy": {
			yaml: `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGatewayParameters
metadata: {name: p}
spec:
  services: {externalTrafficPolicy: Nearest}
`,
			wantField: "spec.services.externalTrafficPolicy", wantMessage: "supported values",
		},
		"a connection to something other than a Kafka": {
			yaml: `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: KafkaTopic, name: my-cluster}
`,
			wantField: "spec.kafka", wantMessage: "kind must be Kafka or KafkaRoute",
		},
		"a connection to a KafkaRoute with a Strimzi apiVersion": {
			yaml: `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: KafkaRoute, name: my-route}
`,
			wantField: "spec.kafka", wantMessage: "a KafkaRoute's apiVersion must be kroxylicious.io/v1alpha1",
		},
		"a connection to a Kafka with a route hostname": {
			yaml: `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1, kind: Kafka, name: my-cluster, hostname: x-%.example.com}
`,
			wantField: "spec.kafka", wantMessage: "hostname and caSecret apply to a KafkaRoute only",
		},
		"a connection without a cluster name": {
			yaml: `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: Kafka}
`,
			wantField: "spec.kafka.name", wantMessage: "Required value",
		},
		"a connection with an unknown store format": {
			yaml: `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: Kafka, name: my-cluster}
  storeFormats: [PEM, JCEKS]
`,
			wantField: "spec.storeFormats[1]", wantMessage: "supported values",
		},
		"a binding Secret name that is not a DNS subdomain": {
			yaml: `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: Kafka, name: my-cluster}
  secretName: My_Secret
`,
			wantField: "spec.secretName", wantMessage: "should match",
		},
		"a binding Secret name over 253 characters": {
			yaml: `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: Kafka, name: my-cluster}
  secretName: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
`,
			wantField: "spec.secretName", wantMessage: "Too long",
		},
		"a binding Secret label key that is not a qualified name": {
			yaml: `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: Kafka, name: my-cluster}
  template: {secret: {metadata: {labels: {'team/a/b': x}}}}
`,
			wantField: "spec.template.secret.metadata", wantMessage: "label keys must be qualified names",
		},
		"a binding Secret label key with a name over 63 characters": {
			yaml: `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: Kafka, name: my-cluster}
  template: {secret: {metadata: {labels: {'example.com/nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn': x}}}}
`,
			wantField: "spec.template.secret.metadata", wantMessage: "label keys must be qualified names",
		},
		"a binding Secret label value with a space": {
			yaml: `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: Kafka, name: my-cluster}
  template: {secret: {metadata: {labels: {team: 'a b'}}}}
`,
			wantField: "spec.template.secret.metadata.labels.team", wantMessage: "should match",
		},
		"a binding Secret label that is kafkalink's own": {
			yaml: `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: Kafka, name: my-cluster}
  template: {secret: {metadata: {labels: {app.kubernetes.io/managed-by: me}}}}
`,
			wantField: "spec.template.secret.metadata", wantMessage: "kafkalink's own",
		},
		"a binding Secret annotation that is kafkalink's own": {
			yaml: `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: Kafka, name: my-cluster}
  template: {secret: {metadata: {annotations: {kafkalink.io/applied-hash: x}}}}
`,
			wantField: "spec.template.secret.metadata", wantMessage: "kafkalink's own",
		},
		"a binding Secret annotation value over 4096 characters": {
			yaml: `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: Kafka, name: my-cluster}
  template: {secret: {metadata: {annotations: {a: vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv}}}}
`,
			wantField: "spec.template.secret.metadata.annotations.a", wantMessage: "Too long",
		},
		"a binding Secret with 33 labels": {
			yaml: `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: Kafka, name: my-cluster}
  template: {secret: {metadata: {labels: {l0: v, l1: v, l2: v, l3: v, l4: v, l5: v, l6: v, l7: v, l8: v, l9: v, l10: v, l11: v, l12: v, l13: v, l14: v, l15: v, l16: v, l17: v, l18: v, l19: v, l20: v, l21: v, l22: v, l23: v, l24: v, l25: v, l26: v, l27: v, l28: v, l29: v, l30: v, l31: v, l32: v}}}}
`,
			wantField: "spec.template.secret.metadata.labels", wantMessage: "must have at most 32 items",
		},
		"an external listener allowed for a KafkaRoute": {
			yaml: `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kroxylicious.io/v1alpha1, kind: KafkaRoute, name: my-route}
  allowExternalListener: true
`,
			wantField: "spec", wantMessage: "allowExternalListener applies to a Kafka only",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.yaml), &obj.Object); err != nil {
				t.Fatalf("bad test YAML: %v", err)
			}
			gvk := obj.GroupVersionKind()
			resource := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"}
			switch gvk.Kind {
			case "KafkaGatewayParameters":
				resource.Resource = "kafkagatewayparameters"
			case "KafkaBackendTLSPolicy":
				resource.Resource = "kafkabackendtlspolicies"
			}
			_, err := dyn.Resource(resource).Namespace("invalid").Create(context.Background(), obj, metav1.CreateOptions{FieldValidation: "Strict"})
			if err == nil {
				t.Fatalf("the API server accepted it")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.wantField) || !strings.Contains(msg, tc.wantMessage) {
				t.Fatalf("refusal does not name %q with %q:\n%s", tc.wantField, tc.wantMessage, msg)
			}
		})
	}
}
