package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// aclRules: alice (her certificate's DN) may do anything with the orders-* topics and read
// her own groups; nobody else may do anything with topics or groups.
const aclRules = `// rules.acl
from io.kroxylicious.filter.authorization import TopicResource as Topic, GroupResource as Group;
deny User with name = "CN=alice" to * Topic with name = "orders-secret";
allow User with name = "CN=alice" to * Topic with name like "orders-*";
allow User with name = "CN=alice" to READ Group with name like "alice-*";
otherwise deny;
`

// authzProxy runs a proxy with mTLS and the Authorization filter in front of kfake (no SASL:
// the broker allows everything, so every refusal comes from the proxy), with the topics made
// directly on kfake.
type authzProxy struct {
	pc   proxyConfig
	pki  *testPKI
	p    *runningProxy
	seed string
}

func startAuthzProxy(t *testing.T, topics ...string) authzProxy {
	t.Helper()
	dir := t.TempDir()
	pki := newPKI(t)
	writeAtomic(t, dir+"/ca.crt", pki.pem)
	writeAtomic(t, dir+"/rules.acl", []byte(aclRules))
	kc := fakeKafka(t, nil, "")
	direct, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(direct).CreateTopics(ctx, 3, 1, nil, topics...); err != nil {
		t.Fatal(err)
	}
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, ClientCAFile: dir + "/ca.crt",
		Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0], FiltersYAML: fmt.Sprintf(`  filters:
  - name: acl
    type: Authorization
    config:
      authorizer: AclAuthorizerService
      authorizerConfig:
        aclFile: %s/rules.acl
`, dir)}}}
	p := startProxy(t, writeConfig(t, dir, pc))
	return authzProxy{pc: pc, pki: pki, p: p, seed: fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port)}
}

// client is a franz-go client of the proxy presenting a certificate for cn.
func (a authzProxy) client(t *testing.T, cn string, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts, _ := clientOpts(a.seed, a.pki.pool, "", a.pki.issue(t, cn, nil, nil, time.Now().Add(time.Hour)))
	cl, err := kgo.NewClient(append(append(opts, kgo.RecordRetries(2), kgo.RequestRetries(2)), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestAuthorizationThroughTheProxy: an mTLS client's DN is its subject; with the ACL file alice
// produces to orders-* and not to payments (TOPIC_AUTHORIZATION_FAILED per partition), sees
// only her topics in Metadata and kadm's ListTopics, consumes in her group, and gets
// GROUP_AUTHORIZATION_FAILED for a group she may not read; bob sees no topic at all.
func TestAuthorizationThroughTheProxy(t *testing.T) {
	a := startAuthzProxy(t, "orders-1", "orders-2", "orders-secret", "payments")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alice := a.client(t, "alice")

	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "orders-1", Value: []byte("o1")}).FirstErr(); err != nil {
		t.Fatalf("alice produces to orders-1: %v\n%s", err, a.p.logs)
	}
	for _, topic := range []string{"payments", "orders-secret"} {
		if err := alice.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("alice produces to %s: %v, want TOPIC_AUTHORIZATION_FAILED", topic, err)
		}
	}
	// The per-partition error, from a Produce naming an allowed and a denied topic at once.
	// Produce v12 names topics (v13 names them by id, and alice cannot learn payments' id).
	assertProduceCodes(ctx, t, a.client(t, "alice", kgo.MaxVersions(kversion.V4_0_0())))

	topics, err := kadm.NewClient(alice).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := topics.Names(); !slices.Equal(got, []string{"orders-1", "orders-2"}) {
		t.Errorf("alice lists %v, want [orders-1 orders-2]", got)
	}
	if _, err := kadm.NewClient(alice).Metadata(ctx, "payments", "orders-2"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("kadm metadata naming payments: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	mreq := kmsg.NewPtrMetadataRequest()
	for _, n := range []string{"payments", "orders-2"} {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(n)
		mreq.Topics = append(mreq.Topics, mt)
	}
	md, err := mreq.RequestWith(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	mcodes := map[string]int16{}
	for _, mt := range md.Topics {
		mcodes[*mt.Topic] = mt.ErrorCode
		if *mt.Topic == "payments" && len(mt.Partitions) > 0 {
			t.Errorf("payments' partitions shown: %v", mt.Partitions)
		}
	}
	if len(mcodes) != 2 || mcodes["payments"] != kerr.TopicAuthorizationFailed.Code || mcodes["orders-2"] != 0 {
		t.Errorf("metadata naming payments and orders-2: %v", mcodes)
	}

	bobTopics, err := kadm.NewClient(a.client(t, "bob")).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(bobTopics) != 0 {
		t.Errorf("bob lists %v", bobTopics.Names())
	}

	consumer := a.client(t, "alice", kgo.ConsumerGroup("alice-readers"), kgo.ConsumeTopics("orders-1"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) == 0 && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, []string{"o1"}) {
		t.Errorf("alice's group consumed %v", got)
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Errorf("alice commits in her group: %v", err)
	}

	for _, group := range []string{"payments-readers"} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorKeys = group, []string{group}
		fc, err := req.RequestWith(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		code := fc.ErrorCode
		if len(fc.Coordinators) > 0 {
			code = fc.Coordinators[0].ErrorCode
		}
		if code != kerr.GroupAuthorizationFailed.Code {
			t.Errorf("FindCoordinator %s: %v, want GROUP_AUTHORIZATION_FAILED", group, kerr.ErrorForCode(code))
		}
		offsets, err := kadm.NewClient(alice).FetchOffsets(ctx, group)
		if !errors.Is(err, kerr.GroupAuthorizationFailed) && !errors.Is(offsets.Error(), kerr.GroupAuthorizationFailed) {
			t.Errorf("FetchOffsets %s: %v / %v, want GROUP_AUTHORIZATION_FAILED", group, err, offsets.Error())
		}
	}
	if a.p.logs.contains("authorization:") {
		t.Errorf("a connection was closed by the filter:\n%s", a.p.logs)
	}
}

// assertProduceCodes sends one Produce naming orders-2 and payments: orders-2's partition is
// written, payments' gets TOPIC_AUTHORIZATION_FAILED.
func assertProduceCodes(ctx context.Context, t *testing.T, cl *kgo.Client) {
	t.Helper()
	batch, err := (&records.Batch{Header: kmsg.RecordBatch{Magic: 2}, Records: []kmsg.Record{{Value: []byte("both")}}}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	for _, topic := range []string{"orders-2", "payments"} {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batch}}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			codes[rt.Topic] = p.ErrorCode
		}
	}
	if codes["orders-2"] != 0 && codes["orders-2"] != kerr.NotLeaderForPartition.Code || codes["payments"] != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("one Produce to orders-2 and payments: %v", codes)
	}
}

// TestAuthorizationAnonymousIsDenied: without client certificates a connection is anonymous,
// which no rule matches (not even `like "*"`), as in Kroxylicious: it may not produce to a topic
// every named user may, and lists no topic.
func TestAuthorizationAnonymousIsDenied(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, dir+"/rules.acl", []byte(`from io.kroxylicious.filter.authorization import TopicResource as Topic;
allow User with name like "*" to * Topic with name like "orders-*";
otherwise deny;
`))
	f := startFilteredProxy(t, Options{}, fmt.Sprintf(`  filters:
  - {name: acl, type: io.kroxylicious.filter.authorization.Authorization, config: {authorizer: AclAuthorizerService, authorizerConfig: {aclFile: %s/rules.acl}}}
`, dir))
	opts, _ := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", f.pc.Port), f.pki.pool, "", nil)
	cl, err := kgo.NewClient(append(opts, kgo.RecordRetries(2), kgo.RequestRetries(2))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	created, err := kadm.NewClient(cl).CreateTopics(ctx, 1, 1, nil, "orders-1")
	if err != nil || !errors.Is(created["orders-1"].Err, kerr.TopicAuthorizationFailed) {
		t.Errorf("anonymous creates orders-1: %v %v, want TOPIC_AUTHORIZATION_FAILED", err, created["orders-1"].Err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders-1", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("anonymous produces: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}
