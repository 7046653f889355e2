package sasltermination

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/sasltermination/termtest"
)

// chainRoundTrip passes requests through one connection's chain, as the relay does.
func chainRoundTrip(b testing.TB, c *filter.Conn) termtest.RoundTrip {
	return func(req kmsg.Request) (kmsg.Response, error) {
		resp, err := send(b, c, req)
		if err == nil && resp == nil {
			err = fmt.Errorf("%s was forwarded", kmsg.NameForKey(req.Key()))
		}
		return resp, err
	}
}

// BenchmarkScramSHA512Handshake is the proxy's CPU for one SCRAM-SHA-512 authentication of a
// new connection (ApiVersions, SaslHandshake, two SaslAuthenticate rounds through the chain),
// on one core: handshakes/s is the rate one core sustains, TLS and TCP aside. The client salts
// its password once, so its share is a few HMACs.
func BenchmarkScramSHA512Handshake(b *testing.B) {
	store := storeFile(b, map[string]string{"alice": "alice-pw"})
	chain := newChain(b, Type, scramConfig(store, ""))
	client := &termtest.ScramClient{User: "alice", Pass: "alice-pw"}
	if err := termtest.Handshake(chainRoundTrip(b, chain.ForConnection()), client); err != nil { // salts the password
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		c := chain.ForConnection()
		if err := termtest.Handshake(chainRoundTrip(b, c), client); err != nil {
			b.Fatal(err)
		}
		if c.Subject().User != "alice" {
			b.Fatalf("subject %+v", c.Subject())
		}
		c.End()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "handshakes/s")
}
