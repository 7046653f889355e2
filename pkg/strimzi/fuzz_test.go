package strimzi

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParse feeds arbitrary JSON documents, as a user could write them into a Kafka or KafkaUser,
// to both parsers: they may refuse them but must never panic.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"spec":{"kafka":{"listeners":[{"name":"a","port":9092,"type":"internal","tls":true,"authentication":{"type":"tls"}}]}}}`,
		`{"spec":{"kafka":{"listeners":{"plain":{},"tls":{"authentication":{"type":"tls"}},"external":{"type":"route","tls":false}}}}}`,
		`{"status":{"listeners":[{"type":"plain","bootstrapServers":"a:1","addresses":[{"host":"h","port":1}],"certificates":["x"]}]}}`,
		`{"spec":{"authentication":{"type":"scram-sha-512"}},"status":{"username":"u","secret":"s","conditions":[{"type":"Ready","status":"True"}],"observedGeneration":1e30}}`,
		`{"metadata":{"generation":-1.5},"spec":{"kafka":{"listeners":[null,1,"x",[]]}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if json.Unmarshal(data, &obj) != nil {
			return
		}
		if k, err := ParseKafka(obj); err == nil {
			for _, l := range k.Listeners {
				k.Listener(l.Name)
				k.ListenerStatus(l.Name)
			}
		}
		if u, err := ParseKafkaUser(obj); err == nil {
			u.Ready()
			u.SecretName()
		}
		// The same document through json.Number, as a decoder with UseNumber produces.
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var numObj map[string]any
		if dec.Decode(&numObj) == nil {
			_, _ = ParseKafka(numObj)
			_, _ = ParseKafkaUser(numObj)
		}
	})
}
