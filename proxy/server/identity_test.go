package server

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestEntityIsolationWithSaslTermination: the subject SaslTermination sets (the SCRAM user) is the
// one EntityIsolation names a client's groups after: alice's group g is alice-g at the broker,
// and she sees it as g.
func TestEntityIsolationWithSaslTermination(t *testing.T) {
	tp := startTerminatingProxy(t, `  - name: isolate
    type: EntityIsolation
    config: {entityTypes: [GROUP_ID], mapper: PrincipalEntityNameMapperService}
`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := tp.client(t, "alice", "alice-secret", kgo.DefaultProduceTopic("shared"), kgo.ConsumeTopics("shared"), kgo.ConsumerGroup("g"))
	if err := cl.ProduceSync(ctx, kgo.StringRecord("one")).FirstErr(); err != nil {
		t.Fatalf("produce: %v\n%s", err, tp.p.logs)
	}
	if fs := cl.PollRecords(ctx, 1); fs.Err() != nil || len(fs.Records()) != 1 {
		t.Fatalf("consume: %v, %d records", fs.Err(), len(fs.Records()))
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	if groups, err := kadm.NewClient(cl).ListGroups(ctx); err != nil || !slices.Equal(groups.Groups(), []string{"g"}) {
		t.Errorf("alice lists groups %v (%v), want g", groups.Groups(), err)
	}
	direct, err := kgo.NewClient(kgo.SeedBrokers(tp.kc.ListenAddrs()...), kgo.SASL(scram.Auth{User: "proxy", Pass: "proxy-secret"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	groups, err := kadm.NewClient(direct).ListGroups(ctx)
	if err != nil || !slices.Equal(groups.Groups(), []string{"alice-g"}) {
		t.Errorf("the broker holds groups %v (%v), want alice-g", groups.Groups(), err)
	}
}
