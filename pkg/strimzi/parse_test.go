package strimzi

import (
	"errors"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

func mustObject(t testing.TB, doc string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatalf("test YAML: %v", err)
	}
	return obj
}

func TestParseKafka(t *testing.T) {
	tests := map[string]struct {
		doc  string
		want *Kafka
	}{
		"a Strimzi 1.x v1 Kafka with array listeners and status parses every field we read": {
			doc: `
apiVersion: kafka.strimzi.io/v1
kind: Kafka
metadata: {name: my-cluster, namespace: kafka, generation: 3}
spec:
  kafka:
    listeners:
    - {name: plain, port: 9092, type: internal, tls: false}
    - name: tls
      port: 9093
      type: internal
      tls: true
      authentication: {type: tls}
    - name: scram
      port: 9094
      type: cluster-ip
      tls: true
      authentication: {type: scram-sha-512}
    - name: ext
      port: 9095
      type: tlsroute
      tls: true
      authentication: {type: custom, sasl: true, listenerConfig: {x: y}}
status:
  observedGeneration: 3
  conditions:
  - {type: Ready, status: "True", lastTransitionTime: "2025-01-01T00:00:00Z"}
  listeners:
  - name: plain
    bootstrapServers: my-cluster-kafka-bootstrap.kafka.svc:9092
    addresses: [{host: my-cluster-kafka-bootstrap.kafka.svc, port: 9092}]
  - name: tls
    bootstrapServers: my-cluster-kafka-bootstrap.kafka.svc:9093
    addresses: [{host: my-cluster-kafka-bootstrap.kafka.svc, port: 9093}]
    certificates: ["-----BEGIN CERTIFICATE-----\n"]
`,
			want: &Kafka{
				APIVersion: "kafka.strimzi.io/v1", Namespace: "kafka", Name: "my-cluster", Generation: 3,
				ListenerForm: ListenerFormArray,
				Listeners: []Listener{
					{Name: "plain", Port: 9092, Type: ListenerInternal},
					{Name: "tls", Port: 9093, Type: ListenerInternal, TLS: true, Authentication: ListenerAuthTLS},
					{Name: "scram", Port: 9094, Type: ListenerClusterIP, TLS: true, Authentication: ListenerAuthSCRAMSHA512},
					{Name: "ext", Port: 9095, Type: ListenerTLSRoute, TLS: true, Authentication: ListenerAuthCustom},
				},
				Status: KafkaStatus{
					ObservedGeneration: 3,
					Conditions:         []Condition{{Type: "Ready", Status: "True"}},
					Listeners: []ListenerStatus{
						{Name: "plain", BootstrapServers: "my-cluster-kafka-bootstrap.kafka.svc:9092",
							Addresses: []ListenerAddress{{Host: "my-cluster-kafka-bootstrap.kafka.svc", Port: 9092}}},
						{Name: "tls", BootstrapServers: "my-cluster-kafka-bootstrap.kafka.svc:9093",
							Addresses:    []ListenerAddress{{Host: "my-cluster-kafka-bootstrap.kafka.svc", Port: 9093}},
							Certificates: []string{"-----BEGIN CERTIFICATE-----\n"}},
					},
				},
			},
		},
		"a v1beta2 Kafka with an oauth listener and status entries named by type parses": {
			doc: `
apiVersion: kafka.strimzi.io/v1beta2
kind: Kafka
metadata: {name: old, namespace: ns}
spec:
  kafka:
    listeners:
    - {name: oauth, port: 9092, type: internal, tls: true, authentication: {type: oauth, clientId: x, tokenEndpointUri: "https://sso.example.com/token", validIssuerUri: "https://sso.example.com"}}
    - {name: lb, port: 9094, type: loadbalancer, tls: true}
status:
  listeners:
  - {type: oauth, bootstrapServers: "a:9092"}
  - {type: lb, name: lb, bootstrapServers: "b:9094"}
`,
			want: &Kafka{
				APIVersion: "kafka.strimzi.io/v1beta2", Namespace: "ns", Name: "old",
				ListenerForm: ListenerFormArray,
				Listeners: []Listener{
					{Name: "oauth", Port: 9092, Type: ListenerInternal, TLS: true, Authentication: ListenerAuthOAuth,
						OAuth: &OAuthListener{TokenEndpointURI: "https://sso.example.com/token", ValidIssuerURI: "https://sso.example.com", OAuthBearer: true}},
					{Name: "lb", Port: 9094, Type: ListenerLoadBalancer, TLS: true},
				},
				Status: KafkaStatus{Listeners: []ListenerStatus{
					{Name: "oauth", BootstrapServers: "a:9092"},
					{Name: "lb", BootstrapServers: "b:9094"},
				}},
			},
		},
		"the listener proposal's first old-form example converts as the proposal says": {
			doc: `
apiVersion: kafka.strimzi.io/v1beta1
kind: Kafka
metadata: {name: my-cluster}
spec:
  kafka:
    listeners:
      plain:
        authentication:
          type: scram-sha-512
        networkPolicyPeers:
          - podSelector:
              matchLabels:
                app: kafka-plaintext-consumer
      tls:
        authentication:
          type: tls
      external:
        type: route
        authentication:
          type: tls
status:
  listeners:
  - type: plain
    addresses: [{host: my-cluster-kafka-bootstrap.my-namespace.svc, port: 9092}]
    bootstrapServers: my-cluster-kafka-bootstrap.my-namespace.svc:9092
  - type: tls
    addresses: [{host: my-cluster-kafka-bootstrap.my-namespace.svc, port: 9093}]
    bootstrapServers: my-cluster-kafka-bootstrap.my-namespace.svc:9093
`,
			want: &Kafka{
				APIVersion: "kafka.strimzi.io/v1beta1", Name: "my-cluster",
				ListenerForm: ListenerFormObject,
				Listeners: []Listener{
					{Name: "plain", Port: 9092, Type: ListenerInternal, Authentication: ListenerAuthSCRAMSHA512},
					{Name: "tls", Port: 9093, Type: ListenerInternal, TLS: true, Authentication: ListenerAuthTLS},
					{Name: "external", Port: 9094, Type: ListenerRoute, TLS: true, Authentication: ListenerAuthTLS},
				},
				Status: KafkaStatus{Listeners: []ListenerStatus{
					{Name: "plain", BootstrapServers: "my-cluster-kafka-bootstrap.my-namespace.svc:9092",
						Addresses: []ListenerAddress{{Host: "my-cluster-kafka-bootstrap.my-namespace.svc", Port: 9092}}},
					{Name: "tls", BootstrapServers: "my-cluster-kafka-bootstrap.my-namespace.svc:9093",
						Addresses: []ListenerAddress{{Host: "my-cluster-kafka-bootstrap.my-namespace.svc", Port: 9093}}},
				}},
			},
		},
		"the listener proposal's simple old form enables plain and tls without authentication": {
			doc: `
spec:
  kafka:
    listeners:
      plain: {}
      tls: {}
`,
			want: &Kafka{
				ListenerForm: ListenerFormObject,
				Listeners: []Listener{
					{Name: "plain", Port: 9092, Type: ListenerInternal},
					{Name: "tls", Port: 9093, Type: ListenerInternal, TLS: true},
				},
			},
		},
		"an old-form external nodeport listener with tls false and a null plain listener": {
			doc: `
spec:
  kafka:
    listeners:
      plain:
      external: {type: nodeport, tls: false}
`,
			want: &Kafka{
				ListenerForm: ListenerFormObject,
				Listeners:    []Listener{{Name: "external", Port: 9094, Type: ListenerNodePort}},
			},
		},
		"a Kafka without spec or status parses to an empty model": {
			doc:  `{kind: Kafka, metadata: {name: x}}`,
			want: &Kafka{Name: "x", ListenerForm: ListenerFormArray},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseKafka(mustObject(t, tc.doc))
			if err != nil {
				t.Fatalf("ParseKafka: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseKafka:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseKafkaAcceptsAPIMachineryNumbers(t *testing.T) {
	// The API machinery decodes integers as int64, encoding/json as float64; both must work.
	obj := map[string]any{
		"metadata": map[string]any{"name": "k", "generation": int64(7)},
		"spec": map[string]any{"kafka": map[string]any{"listeners": []any{
			map[string]any{"name": "a", "port": int64(9092), "type": "internal", "tls": false},
			map[string]any{"name": "b", "port": 9093, "type": "internal", "tls": true},
		}}},
		"status": map[string]any{"observedGeneration": int64(7), "listeners": []any{
			map[string]any{"name": "a", "addresses": []any{map[string]any{"host": "h", "port": int64(9092)}}},
		}},
	}
	got, err := ParseKafka(obj)
	if err != nil {
		t.Fatalf("ParseKafka: %v", err)
	}
	if got.Generation != 7 || got.Listeners[0].Port != 9092 || got.Listeners[1].Port != 9093 ||
		got.Status.Listeners[0].Addresses[0].Port != 9092 {
		t.Errorf("numbers misread: %+v", got)
	}
}

func TestParseKafkaErrors(t *testing.T) {
	tests := map[string]struct {
		doc   string
		field string
	}{
		"listeners that are a string are refused": {
			doc: `{spec: {kafka: {listeners: plain}}}`, field: "spec.kafka.listeners",
		},
		"a listener that is not an object is refused with its index": {
			doc: `{spec: {kafka: {listeners: [{name: a, type: internal, port: 9092, tls: false}, 3]}}}`, field: "spec.kafka.listeners[1]",
		},
		"a listener without a name is refused": {
			doc: `{spec: {kafka: {listeners: [{type: internal, port: 9092, tls: false}]}}}`, field: "spec.kafka.listeners[0].name",
		},
		"a listener without a type is refused": {
			doc: `{spec: {kafka: {listeners: [{name: a, port: 9092, tls: false}]}}}`, field: "spec.kafka.listeners[0].type",
		},
		"a tls flag that is a string is refused": {
			doc: `{spec: {kafka: {listeners: [{name: a, type: internal, port: 9092, tls: "yes"}]}}}`, field: "spec.kafka.listeners[0].tls",
		},
		"a fractional port is refused": {
			doc: `{spec: {kafka: {listeners: [{name: a, type: internal, port: 9092.5, tls: true}]}}}`, field: "spec.kafka.listeners[0].port",
		},
		"a port out of range is refused": {
			doc: `{spec: {kafka: {listeners: [{name: a, type: internal, port: 70000, tls: true}]}}}`, field: "spec.kafka.listeners[0].port",
		},
		"authentication without a type is refused": {
			doc: `{spec: {kafka: {listeners: [{name: a, type: internal, port: 9092, tls: true, authentication: {}}]}}}`, field: "spec.kafka.listeners[0].authentication.type",
		},
		"two listeners with one name are refused": {
			doc: `{spec: {kafka: {listeners: [{name: a, type: internal, port: 9092, tls: true}, {name: a, type: internal, port: 9093, tls: true}]}}}`, field: "spec.kafka.listeners[1].name",
		},
		"an unknown member of the old form is refused": {
			doc: `{spec: {kafka: {listeners: {plain: {}, secure: {}}}}}`, field: "spec.kafka.listeners.secure",
		},
		"an old-form external listener without a type is refused": {
			doc: `{spec: {kafka: {listeners: {external: {}}}}}`, field: "spec.kafka.listeners.external.type",
		},
		"an old-form listener that is a list is refused": {
			doc: `{spec: {kafka: {listeners: {tls: []}}}}`, field: "spec.kafka.listeners.tls",
		},
		"a status listener address port that is a string is refused": {
			doc: `{status: {listeners: [{name: a, addresses: [{host: h, port: "9092"}]}]}}`, field: "status.listeners[0].addresses[0].port",
		},
		"a status certificate that is not a string is refused": {
			doc: `{status: {listeners: [{name: a, certificates: [1]}]}}`, field: "status.listeners[0].certificates[0]",
		},
		"conditions that are an object are refused": {
			doc: `{status: {conditions: {type: Ready}}}`, field: "status.conditions",
		},
		"a spec that is a list is refused": {
			doc: `{spec: []}`, field: "spec",
		},
		"a generation that is a string is refused": {
			doc: `{metadata: {generation: "1"}}`, field: "metadata.generation",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseKafka(mustObject(t, tc.doc))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("ParseKafka error = %v, want a *FieldError", err)
			}
			if fe.Field != tc.field {
				t.Errorf("field = %q, want %q (error %q)", fe.Field, tc.field, err)
			}
		})
	}
}

func TestParseKafkaUser(t *testing.T) {
	tests := map[string]struct {
		doc       string
		want      *KafkaUser
		wantReady bool
	}{
		"a ready v1 SCRAM user": {
			doc: `
apiVersion: kafka.strimzi.io/v1
kind: KafkaUser
metadata: {name: my-user, namespace: kafka, generation: 2, labels: {strimzi.io/cluster: my-cluster}}
spec:
  authentication: {type: scram-sha-512, password: {valueFrom: {secretKeyRef: {name: p, key: k}}}}
  authorization: {type: simple, acls: []}
status:
  observedGeneration: 2
  conditions: [{type: Ready, status: "True"}]
  username: my-user
  secret: my-user
`,
			want: &KafkaUser{
				APIVersion: "kafka.strimzi.io/v1", Namespace: "kafka", Name: "my-user", Generation: 2,
				Authentication: UserAuthSCRAMSHA512,
				Status: KafkaUserStatus{ObservedGeneration: 2, Conditions: []Condition{{Type: "Ready", Status: "True"}},
					Username: "my-user", Secret: "my-user"},
			},
			wantReady: true,
		},
		"a v1beta2 TLS user whose status is older than its spec is not ready": {
			doc: `
apiVersion: kafka.strimzi.io/v1beta2
metadata: {name: u, generation: 3}
spec: {authentication: {type: tls}}
status: {observedGeneration: 2, conditions: [{type: Ready, status: "True"}], username: CN=u, secret: u}
`,
			want: &KafkaUser{
				APIVersion: "kafka.strimzi.io/v1beta2", Name: "u", Generation: 3, Authentication: UserAuthTLS,
				Status: KafkaUserStatus{ObservedGeneration: 2, Conditions: []Condition{{Type: "Ready", Status: "True"}},
					Username: "CN=u", Secret: "u"},
			},
		},
		"a tls-external user whose Ready condition is False is not ready": {
			doc: `{metadata: {name: x}, spec: {authentication: {type: tls-external}}, status: {conditions: [{type: Ready, status: "False", reason: Boom, message: m}]}}`,
			want: &KafkaUser{Name: "x", Authentication: UserAuthTLSExternal,
				Status: KafkaUserStatus{Conditions: []Condition{{Type: "Ready", Status: "False", Reason: "Boom", Message: "m"}}}},
		},
		"a user without authentication and without status": {
			doc:  `{metadata: {name: x}, spec: {authorization: {type: simple}}}`,
			want: &KafkaUser{Name: "x"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseKafkaUser(mustObject(t, tc.doc))
			if err != nil {
				t.Fatalf("ParseKafkaUser: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseKafkaUser:\n got %+v\nwant %+v", got, tc.want)
			}
			if got.Ready() != tc.wantReady {
				t.Errorf("Ready() = %v, want %v", got.Ready(), tc.wantReady)
			}
		})
	}
}

func TestParseKafkaUserErrors(t *testing.T) {
	tests := map[string]struct {
		doc   string
		field string
	}{
		"an authentication type that is a number is refused": {doc: `{spec: {authentication: {type: 1}}}`, field: "spec.authentication.type"},
		"authentication that is a string is refused":         {doc: `{spec: {authentication: tls}}`, field: "spec.authentication"},
		"a username that is an object is refused":            {doc: `{status: {username: {}}}`, field: "status.username"},
		"a condition that is a string is refused":            {doc: `{status: {conditions: [Ready]}}`, field: "status.conditions[0]"},
		"a condition status that is a boolean is refused":    {doc: `{status: {conditions: [{type: Ready, status: true}]}}`, field: "status.conditions[0].status"},
		"metadata that is a string is refused":               {doc: `{metadata: x}`, field: "metadata"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseKafkaUser(mustObject(t, tc.doc))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("ParseKafkaUser error = %v, want a *FieldError", err)
			}
			if fe.Field != tc.field {
				t.Errorf("field = %q, want %q (error %q)", fe.Field, tc.field, err)
			}
		})
	}
}

func TestSecretNameFallsBackToTheUserName(t *testing.T) {
	u := &KafkaUser{Name: "alice"}
	if got := u.SecretName(); got != "alice" {
		t.Errorf("SecretName() = %q, want alice", got)
	}
	u.Status.Secret = "alice-creds"
	if got := u.SecretName(); got != "alice-creds" {
		t.Errorf("SecretName() = %q, want alice-creds", got)
	}
	if got := ClusterCASecretName("my-cluster"); got != "my-cluster-cluster-ca-cert" {
		t.Errorf("ClusterCASecretName = %q", got)
	}
}
