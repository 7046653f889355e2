package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter/encryption"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
	"github.com/kafkalink/kafkalink/proxy/proxytest"
)

// versionsSeen records the highest version of each API key a kfake cluster was sent.
type versionsSeen struct {
	mu  sync.Mutex
	max map[int16]int16
}

func observeVersions(kc *kfake.Cluster) *versionsSeen {
	v := &versionsSeen{max: map[int16]int16{}}
	kc.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		v.mu.Lock()
		defer v.mu.Unlock()
		if cur, ok := v.max[req.Key()]; !ok || req.GetVersion() > cur {
			v.max[req.Key()] = req.GetVersion()
		}
		return nil, nil, false // observed, then handled by the cluster as usual
	})
	return v
}

func (v *versionsSeen) of(key kmsg.Key) (int16, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n, ok := v.max[key.Int16()]
	return n, ok
}

// TestRecordEncryptionByTopicID: through a virtual cluster with RecordEncryption, franz-go uses
// the highest versions kfake offers, which name topics by id only (Produce v13, Fetch v13+), and
// a share group (ShareFetch): the proxy offers them, the broker is sent them and stores only
// ciphertext, and both the consumer and the share-group consumer read the plaintext. A Produce
// v13 naming an id no metadata through the proxy named is answered UNKNOWN_TOPIC_ID and writes
// nothing, until the client asks the proxy for the topic's metadata.
func TestRecordEncryptionByTopicID(t *testing.T) {
	dir := t.TempDir()
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	writeAtomic(t, dir+"/KEK_secrets", []byte(base64.StdEncoding.EncodeToString(k)))
	writeAtomic(t, dir+"/KEK_hidden", k)
	filters := fmt.Sprintf("  filters:\n  - name: encrypt\n    type: RecordEncryption\n    config: {kms: KubernetesSecretKms, kmsConfig: {keyDir: %s}, selector: TemplateKekSelector, selectorConfig: {template: \"KEK_$(topicName)\"}}\n", dir)
	f := startFilteredProxy(t, Options{}, filters)
	seen := observeVersions(f.kc)
	direct := []kgo.Opt{kgo.SeedBrokers(f.kc.ListenAddrs()...)}
	opts, _ := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", f.pc.Port), f.pki.pool, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	checkOfferedVersions(ctx, t, opts)
	var want []string
	for i := range 5 {
		v := fmt.Sprintf("%s by id %d", needle, i)
		produceWith(ctx, t, opts, "secrets", v, false)
		want = append(want, v)
	}
	for _, r := range proxytest.StoredRecords(ctx, t, direct, "secrets") {
		if bytes.Contains(r.Value, []byte(needle)) || len(r.Headers) == 0 || r.Headers[len(r.Headers)-1].Key != encryption.HeaderKey {
			t.Errorf("the broker holds a record that is not encrypted: %q", r.Value)
		}
	}
	got := consumeAll(ctx, t, opts, "secrets", len(want))
	f.kc.SetGroupConfigs("shares", map[string]string{"share.auto.offset.reset": "earliest"})
	shared := shareConsumeAll(ctx, t, opts, "shares", "secrets", len(want))
	for _, w := range want {
		if !got[w] || !shared[w] {
			t.Errorf("%q: consumed %v, by the share group %v\n%s", w, got[w], shared[w], f.p.logs)
		}
	}
	for key, least := range map[kmsg.Key]int16{kmsg.Produce: 13, kmsg.Fetch: 13, kmsg.ShareFetch: 1} {
		if v, ok := seen.of(key); !ok || v < least {
			t.Errorf("the broker was sent %s up to v%d (sent: %v), want v%d or later", kmsg.NameForKey(key.Int16()), v, ok, least)
		}
	}
	produceByUnlearnedID(ctx, t, opts, direct)
}

// checkOfferedVersions asks the proxy for its ApiVersions: a filtered virtual cluster offers
// the Produce and Fetch versions that carry topic ids, and ShareFetch.
func checkOfferedVersions(ctx context.Context, t *testing.T, opts []kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	offered := map[int16]int16{}
	for _, k := range resp.ApiKeys {
		offered[k.ApiKey] = k.MaxVersion
	}
	for key, least := range map[kmsg.Key]int16{kmsg.Produce: 13, kmsg.Fetch: 13, kmsg.ShareFetch: 1} {
		if v, ok := offered[key.Int16()]; !ok || v < least {
			t.Errorf("the proxy offers %s up to v%d (offered: %v), want v%d or later", kmsg.NameForKey(key.Int16()), v, ok, least)
		}
	}
}

// shareConsumeAll reads n records of topic as a member of a share group, accepting them.
func shareConsumeAll(ctx context.Context, t *testing.T, opts []kgo.Opt, group, topic string, n int) map[string]bool {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]bool{}
	for len(got) < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("share fetch error: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[string(r.Value)] = true
			r.Ack(kgo.AckAccept)
		})
	}
	return got
}

// produceByUnlearnedID sends a Produce v13 through the proxy, its records in the clear, to the
// id of a topic with a KEK that was created at the broker directly, so that no metadata through
// the proxy named it: the proxy answers UNKNOWN_TOPIC_ID and the broker gets nothing. Once the
// client has asked the proxy for the topic's metadata, the same request is written, encrypted.
func produceByUnlearnedID(ctx context.Context, t *testing.T, opts, direct []kgo.Opt) {
	t.Helper()
	dcl, err := kgo.NewClient(direct...)
	if err != nil {
		t.Fatal(err)
	}
	defer dcl.Close()
	if _, err := kadm.NewClient(dcl).CreateTopic(ctx, 1, -1, nil, "hidden"); err != nil {
		t.Fatal(err)
	}
	topics, err := kadm.NewClient(dcl).ListTopics(ctx, "hidden")
	if err != nil || topics["hidden"].Err != nil {
		t.Fatalf("the id of hidden: %v %v", err, topics["hidden"].Err)
	}
	id, leader := topics["hidden"].ID, topics["hidden"].Partitions[0].Leader
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func() kmsg.ProduceResponseTopic {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(13)
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batchOf(t, needle+" by an unlearned id")
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
		req.Topics = []kmsg.ProduceRequestTopic{rt}
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err != nil || len(resp.Topics) != 1 {
			t.Fatalf("Produce v13: %v", err)
		}
		return resp.Topics[0]
	}
	if rt := produce(); rt.TopicID != id || rt.Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("a Produce v13 to an id the proxy has not learned: %v for id %x, want UNKNOWN_TOPIC_ID for %x", kerr.ErrorForCode(rt.Partitions[0].ErrorCode), rt.TopicID, id)
	}
	if n := len(proxytest.StoredRecords(ctx, t, direct, "hidden")); n != 0 {
		t.Fatalf("the broker holds %d records sent to an id the proxy had not learned", n)
	}
	if _, err := kadm.NewClient(cl).ListTopics(ctx, "hidden"); err != nil { // metadata through the proxy
		t.Fatal(err)
	}
	if rt := produce(); rt.Partitions[0].ErrorCode != 0 {
		t.Fatalf("after the metadata: %v", kerr.ErrorForCode(rt.Partitions[0].ErrorCode))
	}
	stored := proxytest.StoredRecords(ctx, t, direct, "hidden")
	if len(stored) != 1 || bytes.Contains(stored[0].Value, []byte(needle)) {
		t.Errorf("after the metadata the broker holds %d records of hidden, want one, encrypted", len(stored))
	}
}

// batchOf is one record batch of one value.
func batchOf(t *testing.T, value string) []byte {
	t.Helper()
	b := &records.Batch{Header: kmsg.RecordBatch{Magic: 2, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1}, Records: []kmsg.Record{{Value: []byte(value)}}}
	raw, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
