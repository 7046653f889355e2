package server

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestProtocolLoggerThroughTheProxy: franz-go produces and consumes through a virtual cluster
// with ProtocolLogger at INFO for Produce, Fetch and Metadata: the log has their requests and
// responses with the virtual cluster, and never the record's value or key.
func TestProtocolLoggerThroughTheProxy(t *testing.T) {
	f := startFilteredProxy(t, Options{}, `  filters:
  - name: log
    type: ProtocolLogger
    config: {logLevel: INFO, apiKeyNames: [PRODUCE, FETCH, METADATA]}
`)
	opts, _ := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", f.pc.Port), f.pki.pool, "", nil)
	cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("logged"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const value, key = "value-do-not-log-7731", "key-do-not-log-9913"
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "logged", Key: []byte(key), Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := ""
	for got == "" && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = string(r.Value) })
	}
	if got != value {
		t.Fatalf("consumed %q", got)
	}
	for _, want := range [][]string{
		{`"apiKey"="Produce"`, `"direction"="request"`, `"virtualCluster"="a"`, `logged`},
		{`"apiKey"="Produce"`, `"direction"="response"`},
		{`"apiKey"="Fetch"`, `"direction"="response"`, `bytes>`},
		{`"apiKey"="Metadata"`, `"direction"="response"`},
	} {
		if !f.p.logs.waitFor(want...) {
			t.Errorf("no line with %q", want)
		}
	}
	logs := f.p.logs.String()
	for _, secret := range []string{value, key} {
		if strings.Contains(logs, secret) || strings.Contains(logs, base64.StdEncoding.EncodeToString([]byte(secret))) {
			t.Errorf("the log holds %q", secret)
		}
	}
}
