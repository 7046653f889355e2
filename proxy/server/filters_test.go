package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// validationFilter is a RecordValidation filter in Kroxylicious' shape: topic "orders" needs JSON
// objects with an id, other topics pass.
const validationFilter = `  filters:
  - name: validate
    type: RecordValidation
    config:
      rules:
      - topicNames: [orders]
        valueRule:
          syntacticallyCorrectJson: {}
          jsonSchema: {type: object, required: [id]}
`

// filteredProxy is a proxy with filters in front of kfake, as startFilteredProxy runs it.
type filteredProxy struct {
	p   *runningProxy
	pc  proxyConfig
	pki *testPKI
	dir string
	kc  *kfake.Cluster
}

// startValidatingProxy runs a proxy with the validation filter in front of kfake.
func startValidatingProxy(t *testing.T, opts Options) (*runningProxy, proxyConfig, *testPKI, string) {
	t.Helper()
	f := startFilteredProxy(t, opts, validationFilter)
	return f.p, f.pc, f.pki, f.dir
}

// startFilteredProxy runs a proxy whose one virtual cluster, a, has the filters (YAML of its
// filters field) in front of kfake.
func startFilteredProxy(t *testing.T, opts Options, filters string) filteredProxy {
	t.Helper()
	dir := t.TempDir()
	pki := newPKI(t)
	writeAtomic(t, dir+"/ca.crt", pki.pem)
	kc := fakeKafka(t, nil, "")
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf,
		Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}}}
	target := "  targetBootstrap: " + kc.ListenAddrs()[0] + "\n"
	path := dir + "/proxy.yaml"
	writeAtomic(t, path, []byte(strings.Replace(pc.yaml(), target, target+filters, 1)))
	opts.ConfigPath = path
	return filteredProxy{startProxyWith(t, opts), pc, pki, dir, kc}
}

// TestRecordValidationThroughTheProxy: franz-go produces through the proxy with the
// RecordValidation filter. A record that is not JSON, and one that misses the schema's id, are
// refused with INVALID_RECORD naming the record; a good record is written and read back; a topic
// without a rule passes anything.
func TestRecordValidationThroughTheProxy(t *testing.T) {
	p, pc, pki, _ := startValidatingProxy(t, Options{})
	opts, _ := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port), pki.pool, "", nil)
	cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.RecordRetries(1))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for value, want := range map[string]string{"not json": "not valid JSON", `{"name":"x"}`: "does not match the JSON Schema"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(value)}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
			t.Errorf("produce %q: %v, want INVALID_RECORD\n%s", value, err, p.logs)
		}
		// franz-go reports the code; the message naming the record is in the response.
		msg := produceErrorMessage(ctx, t, cl, "orders", value)
		if !strings.Contains(msg, "record 0 of orders-") || !strings.Contains(msg, want) {
			t.Errorf("produce %q: error message %q, want one naming record 0 and saying %q", value, msg, want)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(`{"id":1}`)}).FirstErr(); err != nil {
		t.Fatalf("a valid record: %v\n%s", err, p.logs)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "free-text", Value: []byte("anything")}).FirstErr(); err != nil {
		t.Fatalf("a topic without a rule: %v", err)
	}
	cons, err := kgo.NewClient(append(opts, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) == 0 && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != `{"id":1}` {
		t.Errorf("orders holds %q, want only the valid record", got)
	}
}

// TestRecordValidationWithKcat: kcat (librdkafka) through the proxy with the validation
// filter: a bad record is refused, a good one accepted.
func TestRecordValidationWithKcat(t *testing.T) {
	ns := netnsForKcat(t, []string{"a-bootstrap.kafka.test", "a-broker-0.kafka.test", "a-broker-1.kafka.test", "a-broker-2.kafka.test"})
	p, pc, _, dir := startValidatingProxy(t, Options{Listen: listenInNetns(ns)})
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	produce := func(value string) (string, error) {
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "kcat", "-b", fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port),
			"-X", "security.protocol=ssl", "-X", "ssl.ca.location="+dir+"/ca.crt", "-P", "-t", "orders")
		cmd.Stdin = strings.NewReader(value + "\n")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	out, err := produce("not json at all")
	// librdkafka's words for INVALID_RECORD.
	if err == nil || !strings.Contains(out, "failed to validate record") {
		t.Errorf("kcat produced a bad record: %v\n%s\nproxy:\n%s", err, out, p.logs)
	}
	if out, err := produce(`{"id": 7}`); err != nil {
		t.Errorf("kcat could not produce a good record: %v\n%s\nproxy:\n%s", err, out, p.logs)
	}
}

// produceErrorMessage produces one record to partition 0 with a raw Produce request and returns
// the partition's error message.
func produceErrorMessage(ctx context.Context, t *testing.T, cl *kgo.Client, topic, value string) string {
	t.Helper()
	if p := rawProduce(ctx, t, cl, topic, value); p.ErrorMessage != nil {
		return *p.ErrorMessage
	}
	return ""
}

// rawProduce sends one record to partition 0 in a Produce request of its own (no client
// retries) and returns the partition's answer. The client sends the highest version the proxy
// offers, v13, which names the topic by the id it looks up first (through the proxy, which so
// learns it too).
func rawProduce(ctx context.Context, t *testing.T, cl *kgo.Client, topic, value string) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	topics, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || topics[topic].Err != nil {
		t.Fatalf("the id of %s: %v %v", topic, err, topics[topic].Err)
	}
	b := &records.Batch{Header: kmsg.RecordBatch{Magic: 2, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1}, Records: []kmsg.Record{{Value: []byte(value)}}}
	raw, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, topics[topic].ID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}
