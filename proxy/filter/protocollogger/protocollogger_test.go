package protocollogger

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
	"github.com/kafkalink/kafkalink/proxy/kafka"
)

func TestConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		config string
		keys   []int16
		level  string
		err    string
	}{
		"Kafka's names":                 {config: `{"apiKeyNames":["METADATA","FIND_COORDINATOR"]}`, keys: []int16{3, 10}, level: "DEBUG"},
		"any case and separators":       {config: `{"apiKeyNames":["find-coordinator","SaslAuthenticate"],"logLevel":"info"}`, keys: []int16{10, 36}, level: "INFO"},
		"a name twice is one key":       {config: `{"apiKeyNames":["PRODUCE","produce"]}`, keys: []int16{0}, level: "DEBUG"},
		"an unknown name":               {config: `{"apiKeyNames":["METADATAS"]}`, err: `unknown API key name "METADATAS"`},
		"an unknown level":              {config: `{"logLevel":"LOUD"}`, err: `logLevel "LOUD"`},
		"maxLineBytes below its bounds": {config: `{"maxLineBytes":10}`, err: "maxLineBytes 10 is outside 256..1048576"},
		"an unknown field":              {config: `{"apiKeys":["PRODUCE"]}`, err: "unknown field"},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := filter.New(Type, []byte(tc.config), filter.Env{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			l := f.(*protocolLogger)
			if !equal(l.keys, tc.keys) || l.level != tc.level {
				t.Errorf("keys %v level %s, want %v %s", l.keys, l.level, tc.keys, tc.level)
			}
		})
	}
	f, err := filter.New(Type, []byte(`{}`), filter.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.(*protocolLogger).keys); n < 70 {
		t.Errorf("no apiKeyNames: %d keys, want every key kmsg knows", n)
	}
}

func equal(a, b []int16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// captured is a chain with the filter whose log lines are kept.
type captured struct {
	c     *filter.Chain
	mu    sync.Mutex
	lines []string
}

func newCaptured(t *testing.T, cfg string) *captured {
	t.Helper()
	cp := &captured{}
	logger := funcr.New(func(prefix, args string) {
		cp.mu.Lock()
		cp.lines = append(cp.lines, prefix+" "+args)
		cp.mu.Unlock()
	}, funcr.Options{Verbosity: 4})
	c, err := filter.NewChain(klog.NewContext(context.Background(), logger), "team-a", []config.Filter{{Name: "log", Type: Type, Config: []byte(cfg)}})
	if err != nil {
		t.Fatal(err)
	}
	cp.c = c
	return cp
}

func (cp *captured) text() string {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return strings.Join(cp.lines, "\n")
}

func frame(req kmsg.Request, corr int32) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("client-1")).AppendRequest(nil, req, corr)
}

func responseFrame(resp kmsg.Response, corr int32) []byte {
	b := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(b[4:], uint32(corr))
	if resp.IsFlexible() {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func recordBatch(t *testing.T, value string) []byte {
	t.Helper()
	b := &records.Batch{Header: kmsg.RecordBatch{Magic: 2, FirstTimestamp: 1}, Records: []kmsg.Record{{Value: []byte(value), Key: []byte("key-" + value)}}}
	raw, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// mustNotSee fails when a secret, or its base64 or hex form, is in the log.
func mustNotSee(t *testing.T, log string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for _, form := range []string{s, base64.StdEncoding.EncodeToString([]byte(s))} {
			if strings.Contains(log, form) {
				t.Errorf("the log holds %q:\n%s", form, log)
			}
		}
	}
}

// TestNeverLogsSecrets: a SASL PLAIN password, produced and fetched record values and keys,
// and secret config values never reach the log; the lines name the API, the virtual cluster and
// the direction, and what is not secret (topics, config names) is there.
func TestNeverLogsSecrets(t *testing.T) {
	cp := newCaptured(t, `{"logLevel":"DEBUG"}`)
	conn := cp.c.ForConnection()

	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 2
	auth.SASLAuthBytes = []byte("\x00alice\x00hunter2-password")
	run(t, conn, frame(auth, 1), &kmsg.SASLAuthenticateResponse{Version: 2, SASLAuthBytes: []byte("server-final-hunter2")})

	prod := kmsg.NewPtrProduceRequest()
	prod.Version = 9
	prod.Acks = -1
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "orders"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = recordBatch(t, "card-4111111111111111")
	pt.Partitions = append(pt.Partitions, pp)
	prod.Topics = append(prod.Topics, pt)
	run(t, conn, frame(prod, 2), &kmsg.ProduceResponse{Version: 9})

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 12
	fr := kmsg.NewFetchResponse()
	fr.Version = 12
	ft := kmsg.NewFetchResponseTopic()
	ft.Topic = "orders"
	fp := kmsg.NewFetchResponseTopicPartition()
	fp.RecordBatches = recordBatch(t, "card-5500000000000004")
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	run(t, conn, frame(fetch, 3), &fr)

	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	alter.Version = 1
	ar := kmsg.NewIncrementalAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
	for name, value := range map[string]string{"listener.name.tls.ssl.key.password": "keystore-pw-1", "sasl.jaas.config": "jaas-pw-2", "log.retention.ms": "86400000"} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = name, kmsg.StringPtr(value)
		ar.Configs = append(ar.Configs, c)
	}
	alter.Resources = append(alter.Resources, ar)
	describe := kmsg.NewDescribeConfigsResponse()
	describe.Version = 4
	dr := kmsg.NewDescribeConfigsResponseResource()
	dc := kmsg.NewDescribeConfigsResponseResourceConfig()
	dc.Name, dc.Value, dc.IsSensitive = "custom.thing", kmsg.StringPtr("sensitive-value-3"), true
	syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	syn.Name, syn.Value = "custom.thing", kmsg.StringPtr("sensitive-value-3")
	dc.ConfigSynonyms = append(dc.ConfigSynonyms, syn)
	dr.Configs = append(dr.Configs, dc)
	describe.Resources = append(describe.Resources, dr)
	run(t, conn, frame(alter, 4), &kmsg.IncrementalAlterConfigsResponse{Version: 1})
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dreq.Version = 4
	run(t, conn, frame(dreq, 5), &describe)

	log := cp.text()
	mustNotSee(t, log, "hunter2", "card-4111111111111111", "card-5500000000000004", "key-card", "keystore-pw-1", "jaas-pw-2", "sensitive-value-3")
	for _, want := range [][]string{
		{`"apiKey"="SASLAuthenticate"`, `"payloadWithheld"="credential-bearing API"`, `"direction"="request"`},
		{`"apiKey"="SASLAuthenticate"`, `"payloadWithheld"`, `"direction"="response"`},
		{`"apiKey"="Produce"`, `"virtualCluster"="team-a"`, `orders`, `bytes>`, `"clientId"="client-1"`},
		{`"apiKey"="Fetch"`, `"direction"="response"`, `orders`},
		{`"apiKey"="IncrementalAlterConfigs"`, `log.retention.ms`, `86400000`, `sasl.jaas.config`},
		{`"apiKey"="DescribeConfigs"`, `custom.thing`},
	} {
		if !hasLine(log, want...) {
			t.Errorf("no line with %q:\n%s", want, log)
		}
	}
}

func hasLine(log string, parts ...string) bool {
next:
	for _, l := range strings.Split(log, "\n") {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		return true
	}
	return false
}

// run passes a request frame and a response through the chain's connection.
func run(t *testing.T, conn *filter.Conn, req []byte, resp kmsg.Response) {
	t.Helper()
	forward, answer, state, err := conn.Request(req)
	if err != nil || answer != nil || forward == nil {
		t.Fatalf("request: %v (answered %v)", err, answer != nil)
	}
	key := int16(binary.BigEndian.Uint16(req[4:]))
	version := int16(binary.BigEndian.Uint16(req[6:]))
	corr := int32(binary.BigEndian.Uint32(req[8:]))
	resp.SetVersion(version)
	if _, err := conn.Response(key, version, responseFrame(resp, corr), state); err != nil {
		t.Fatalf("response: %v", err)
	}
}

// TestLineBounded: a Metadata response of 20,000 topics is logged cut at maxLineBytes, and a
// key not chosen is not logged at all.
func TestLineBounded(t *testing.T) {
	cp := newCaptured(t, `{"apiKeyNames":["METADATA"],"maxLineBytes":1024}`)
	conn := cp.c.ForConnection()
	md := kmsg.NewMetadataResponse()
	md.Version = 12
	for i := range 20000 {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr("topic-" + strings.Repeat("x", i%50))
		md.Topics = append(md.Topics, mt)
	}
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	run(t, conn, frame(req, 1), &md)
	run(t, conn, frame(kmsg.NewPtrFindCoordinatorRequest(), 2), &kmsg.FindCoordinatorResponse{})
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if len(cp.lines) != 2 {
		t.Fatalf("%d lines, want the Metadata request and response:\n%s", len(cp.lines), strings.Join(cp.lines, "\n"))
	}
	for _, l := range cp.lines {
		if len(l) > 1024+512 {
			t.Errorf("a line of %d bytes, over maxLineBytes and the line's other fields", len(l))
		}
	}
	if !strings.Contains(cp.lines[1], "cut at maxLineBytes") {
		t.Errorf("the response's line does not say it was cut: %s", cp.lines[1])
	}
}

// A level the logger's verbosity hides logs nothing.
func TestLevelHidden(t *testing.T) {
	cp := newCaptured(t, `{"logLevel":"TRACE"}`) // verbosity 5; the logger shows up to 4
	run(t, cp.c.ForConnection(), frame(kmsg.NewPtrFindCoordinatorRequest(), 1), &kmsg.FindCoordinatorResponse{})
	if cp.text() != "" {
		t.Errorf("TRACE logged at verbosity 4:\n%s", cp.text())
	}
}

// FuzzFormat: any Metadata or DescribeConfigs response kmsg decodes formats within the bound,
// without panicking.
func FuzzFormat(f *testing.F) {
	md := kmsg.NewMetadataResponse()
	md.Version = 12
	md.Topics = append(md.Topics, kmsg.NewMetadataResponseTopic())
	f.Add(int16(12), md.AppendTo(nil), true)
	f.Add(int16(4), []byte{0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff}, false)
	f.Add(int16(0), []byte{}, true)
	f.Fuzz(func(t *testing.T, version int16, body []byte, metadata bool) {
		var resp kmsg.Response = kmsg.NewPtrDescribeConfigsResponse()
		if metadata {
			resp = kmsg.NewPtrMetadataResponse()
		}
		if version < 0 || version > resp.MaxVersion() || len(body) > 1<<16 {
			return
		}
		resp.SetVersion(version)
		if kafka.DecodeBounded(body, resp.ReadFrom) != nil { // kmsg's tag loops are bounded there
			return
		}
		if s := format(resp, 512); len(s) > 512+len("…(cut at maxLineBytes)") {
			t.Errorf("formatted to %d bytes", len(s))
		}
	})
}
