package binding

import (
	"testing"
)

// BenchmarkBuild measures one binding computation, the CPU work a reconcile of one
// KafkaConnection costs besides API calls (the operator benchmark multiplies it by 5,000).
func BenchmarkBuild(b *testing.B) {
	p := loadPKI(b)
	k := parseKafkaYAML(b, kafkaV1)
	inputs := map[string]Input{
		"SCRAM, default formats, Strimzi's ca.p12 reused": {Kafka: k, User: parseUserYAML(b, scramUser), UserSecret: p.scramSecret(), CASecret: p.caSecret()},
		"SCRAM, PEM only": {Kafka: k, User: parseUserYAML(b, scramUser), UserSecret: p.scramSecret(), CASecret: p.caSecret(),
			StoreFormats: []string{FormatPEM}},
		"mTLS during a renewal, PEM PKCS12 JKS": {Kafka: k, User: parseUserYAML(b, tlsUser), UserSecret: p.tlsSecret(), CASecret: p.renewalCASecret(),
			StoreFormats: []string{FormatPEM, FormatPKCS12, FormatJKS}},
	}
	all := map[string]Input{}
	for name, in := range inputs {
		all[name] = in
		in.Cache = NewStoreCache(16)
		all[name+", cached"] = in
	}
	inputs = all
	for name, in := range inputs {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, f := Build(in); f != nil {
					b.Fatal(f)
				}
			}
		})
	}
}
