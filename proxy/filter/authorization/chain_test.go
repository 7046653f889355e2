package authorization

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/kafka"
)

const ordersRules = `from io.kroxylicious.filter.authorization import TopicResource as Topic, GroupResource as Group;
deny User with name = "CN=alice" to * Topic with name = "orders-secret";
allow User with name = "CN=alice" to * Topic with name like "orders-*";
allow User with name = "CN=alice" to READ Group with name like "alice-*";
otherwise deny;
`

// connFor is a connection of a chain with the Authorization filter of rules, as user.
func connFor(t testing.TB, rules, user string) *filter.Conn {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rules.acl")
	if err := os.WriteFile(path, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := filter.NewChain(context.Background(), "vc", []config.Filter{{Name: "authz", Type: Type,
		Config: []byte(`{"authorizer":"AclAuthorizerService","authorizerConfig":{"aclFile":"` + path + `"}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	conn := c.ForConnection()
	conn.SetSubject(filter.Subject{User: user, Mechanism: "TLS"})
	return conn
}

func frameOf(req kmsg.Request, version int16) []byte {
	req.SetVersion(version)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, 42)
}

func responseFrame(resp kmsg.Response, version int16) []byte {
	resp.SetVersion(version)
	b := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(b[4:], 42)
	if resp.IsFlexible() {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func readResponse(t *testing.T, resp kmsg.Response, version int16, frame []byte) {
	t.Helper()
	resp.SetVersion(version)
	body := frame[8:]
	if resp.IsFlexible() {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
}

func produceOf(topics ...string) *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.Acks = -1
	for _, topic := range topics {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: []byte("raw records")}, {Partition: 1}}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// TestProducePartlyDenied: the allowed topics are forwarded, the denied ones answered per
// partition with TOPIC_AUTHORIZATION_FAILED in the merged response.
func TestProducePartlyDenied(t *testing.T) {
	conn := connFor(t, ordersRules, "CN=alice")
	forward, answer, state, err := conn.Request(frameOf(produceOf("orders-1", "payments", "orders-secret"), 9))
	if err != nil || answer != nil || state == nil {
		t.Fatalf("forward %v answer %v state %v err %v", forward != nil, answer != nil, state, err)
	}
	fwd := kmsg.NewPtrProduceRequest()
	fwd.SetVersion(9)
	if err := fwd.ReadFrom(forward[15+len("test"):]); err != nil {
		t.Fatal(err)
	}
	if len(fwd.Topics) != 1 || fwd.Topics[0].Topic != "orders-1" {
		t.Fatalf("forwarded %+v", fwd.Topics)
	}
	broker := kmsg.NewPtrProduceResponse()
	broker.Topics = []kmsg.ProduceResponseTopic{{Topic: "orders-1", Partitions: []kmsg.ProduceResponseTopicPartition{{Partition: 0}, {Partition: 1}}}}
	out, err := conn.Response(0, 9, responseFrame(broker, 9), state)
	if err != nil {
		t.Fatal(err)
	}
	got := kmsg.NewPtrProduceResponse()
	readResponse(t, got, 9, out)
	codes := map[string][]int16{}
	for _, tp := range got.Topics {
		for _, p := range tp.Partitions {
			codes[tp.Topic] = append(codes[tp.Topic], p.ErrorCode)
		}
	}
	denied := kerr.TopicAuthorizationFailed.Code
	if !slices.Equal(codes["orders-1"], []int16{0, 0}) || !slices.Equal(codes["payments"], []int16{denied, denied}) || !slices.Equal(codes["orders-secret"], []int16{denied, denied}) {
		t.Errorf("codes %v", codes)
	}
}

// TestProduceAllowedPassesAsRead: a Produce allowed whole is forwarded as the very frame read,
// and its response is relayed without the filters (kafka.ResponseUnfiltered).
func TestProduceAllowedPassesAsRead(t *testing.T) {
	conn := connFor(t, ordersRules, "CN=alice")
	frame := frameOf(produceOf("orders-1", "orders-2"), 9)
	forward, answer, state, err := conn.Request(frame)
	if err != nil || answer != nil || state != kafka.ResponseUnfiltered || &forward[0] != &frame[0] {
		t.Fatalf("answer %v state %v err %v same frame %v", answer != nil, state, err, &forward[0] == &frame[0])
	}
}

// TestProduceWhollyDeniedIsAnswered: nothing allowed, the proxy answers; the anonymous subject
// is denied even by rules for every user.
func TestProduceWhollyDeniedIsAnswered(t *testing.T) {
	for user, rules := range map[string]string{"CN=alice": ordersRules, "": strings.Replace(ordersRules, `name = "CN=alice" to * Topic with name like`, `name like "*" to * Topic with name like`, 1)} {
		conn := connFor(t, rules, user)
		forward, answer, _, err := conn.Request(frameOf(produceOf("payments"), 9))
		if user == "" {
			forward, answer, _, err = conn.Request(frameOf(produceOf("orders-1"), 9))
		}
		if err != nil || forward != nil || answer == nil {
			t.Fatalf("%q: forward %v answer %v err %v", user, forward != nil, answer != nil, err)
		}
		got := kmsg.NewPtrProduceResponse()
		readResponse(t, got, 9, answer)
		if len(got.Topics) != 1 || got.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("%q: %+v", user, got.Topics)
		}
	}
}

// TestResponseFiltering: Metadata of every topic, ListGroups and a Fetch lose what the
// subject may not see.
func TestResponseFiltering(t *testing.T) {
	conn := connFor(t, ordersRules, "CN=alice")
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = nil
	_, _, state, err := conn.Request(frameOf(md, 12))
	if err != nil || state == nil {
		t.Fatal(err, state)
	}
	broker := kmsg.NewPtrMetadataResponse()
	for _, n := range []string{"orders-1", "payments", "orders-secret", "orders-2"} {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(n)
		broker.Topics = append(broker.Topics, mt)
	}
	out, err := conn.Response(3, 12, responseFrame(broker, 12), state)
	if err != nil {
		t.Fatal(err)
	}
	got := kmsg.NewPtrMetadataResponse()
	readResponse(t, got, 12, out)
	var names []string
	for _, mt := range got.Topics {
		names = append(names, *mt.Topic)
	}
	if !slices.Equal(names, []string{"orders-1", "orders-2"}) {
		t.Errorf("metadata lists %v", names)
	}

	lg := kmsg.NewPtrListGroupsRequest()
	_, _, state, err = conn.Request(frameOf(lg, 5))
	if err != nil || state == nil {
		t.Fatal(err, state)
	}
	groups := kmsg.NewPtrListGroupsResponse()
	groups.Groups = []kmsg.ListGroupsResponseGroup{{Group: "alice-1"}, {Group: "bob-1"}}
	out, err = conn.Response(16, 5, responseFrame(groups, 5), state)
	if err != nil {
		t.Fatal(err)
	}
	gotGroups := kmsg.NewPtrListGroupsResponse()
	readResponse(t, gotGroups, 5, out)
	if len(gotGroups.Groups) != 1 || gotGroups.Groups[0].Group != "alice-1" {
		t.Errorf("groups %+v", gotGroups.Groups)
	}
}

// TestApiVersionsKeepsEnforcedKeys: refused keys leave ApiVersions, id-only versions are not
// offered.
func TestApiVersionsKeepsEnforcedKeys(t *testing.T) {
	conn := connFor(t, ordersRules, "CN=alice")
	_, _, state, err := conn.Request(frameOf(kmsg.NewPtrApiVersionsRequest(), 3))
	if err != nil {
		t.Fatal(err)
	}
	broker := kmsg.NewPtrApiVersionsResponse()
	for _, k := range []kmsg.Key{kmsg.Produce, kmsg.ShareFetch, kmsg.OffsetCommit} {
		broker.ApiKeys = append(broker.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k.Int16(), MaxVersion: 10})
	}
	b := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(b[4:], 42)
	broker.SetVersion(3)
	b = broker.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	out, err := conn.Response(18, 3, b, state)
	if err != nil {
		t.Fatal(err)
	}
	got := kmsg.NewPtrApiVersionsResponse()
	got.SetVersion(3)
	if err := got.ReadFrom(out[8:]); err != nil {
		t.Fatal(err)
	}
	want := []kmsg.ApiVersionsResponseApiKey{{ApiKey: 0, MaxVersion: 10}, {ApiKey: kmsg.OffsetCommit.Int16(), MaxVersion: 9}}
	if len(got.ApiKeys) != 2 || got.ApiKeys[0].ApiKey != want[0].ApiKey || got.ApiKeys[1].MaxVersion != 9 {
		t.Errorf("keys %+v", got.ApiKeys)
	}
}

// TestBuildErrors: the config names the field, and a rules file that does not parse fails Build
// with its line and column.
func TestBuildErrors(t *testing.T) {
	files := map[string][]byte{"/r.acl": []byte("from io.kroxylicious.filter.authorization import TopicResource as Topic;\nallow User with name = \"a\" to FLY Topic with name *;\notherwise deny;")}
	read := func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return b, nil
		}
		return nil, os.ErrNotExist
	}
	for cfg, want := range map[string]string{
		`{"authorizer":"AclAuthorizerService","authorizerConfig":{"aclFile":"/r.acl"}}`:                                         "authorizerConfig.aclFile: /r.acl:2:31: FLY is not an operation of TopicResource",
		`{"authorizer":"Opa","authorizerConfig":{"aclFile":"/r.acl"}}`:                                                          `authorizer: "Opa" is not implemented`,
		`{"authorizer":"AclAuthorizerService","authorizerConfig":{}}`:                                                           "authorizerConfig.aclFile: required",
		`{"authorizer":"AclAuthorizerService","authorizerConfig":{"aclFile":"/missing"}}`:                                       "authorizerConfig.aclFile: file does not exist",
		`{"authorizer":"AclAuthorizerService","authorizerConfig":{"aclFile":"/r.acl","extra":1}}`:                               `unknown field "extra"`,
		`{"authorizer":"io.kroxylicious.authorizer.provider.acl.AclAuthorizerService","authorizerConfig":{"aclFile":"/r.acl"}}`: "FLY",
	} {
		err := filter.Check(Type, []byte(cfg), filter.Env{ReadFile: read})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
	}
}

// BenchmarkProduceAllowed is the filter's cost on a Produce of six 150 KiB partitions that it
// allows whole (decoded with kmsg, checked, forwarded as read).
func BenchmarkProduceAllowed(b *testing.B) {
	rules := "from io.kroxylicious.filter.authorization import TopicResource as Topic;\n"
	for i := range 99 {
		rules += `allow User with name = "CN=u` + string(rune('a'+i%26)) + `" to READ Topic with name like "x-*";` + "\n"
	}
	rules += `allow User with name = "CN=alice" to * Topic with name like "orders-*";` + "\notherwise deny;\n"
	conn := connFor(b, rules, "CN=alice")
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "orders-1"
	for p := range int32(6) {
		rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p, Records: make([]byte, 150<<10)})
	}
	req.Topics = append(req.Topics, rt)
	frame := frameOf(req, 9)
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, _, state, err := conn.Request(frame); err != nil || state != kafka.ResponseUnfiltered {
			b.Fatal(err)
		}
	}
}

// TestUnknownKeyClosesTheConnection: a key the filter cannot decide on is not forwarded.
func TestUnknownKeyClosesTheConnection(t *testing.T) {
	conn := connFor(t, ordersRules, "CN=alice")
	frame := frameOf(kmsg.NewPtrMetadataRequest(), 1)
	binary.BigEndian.PutUint16(frame[4:], 120) // no such key
	if fwd, answer, _, err := conn.Request(frame); err == nil || fwd != nil || answer != nil {
		t.Fatalf("key 120: forwarded %v, answered %v, err %v", fwd != nil, answer != nil, err)
	}
}

// TestMetadataDoesNotAutoCreateWithoutCreate: a subject that may describe but not create a topic
// does not have it auto-created, and gets TOPIC_AUTHORIZATION_FAILED for it.
func TestMetadataDoesNotAutoCreateWithoutCreate(t *testing.T) {
	conn := connFor(t, `from io.kroxylicious.filter.authorization import TopicResource as Topic;
allow User with name = "CN=alice" to DESCRIBE Topic with name like "new-*";
allow User with name = "CN=alice" to * Topic with name like "mine-*";
otherwise deny;`, "CN=alice")
	for topic, create := range map[string]bool{"new-1": false, "mine-1": true} {
		md := kmsg.NewPtrMetadataRequest()
		md.AllowAutoTopicCreation = true
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
		forward, _, state, err := conn.Request(frameOf(md, 12))
		if err != nil {
			t.Fatal(err)
		}
		fwd := kmsg.NewPtrMetadataRequest()
		fwd.SetVersion(12)
		if err := fwd.ReadFrom(forward[19:]); err != nil {
			t.Fatal(err)
		}
		if fwd.AllowAutoTopicCreation != create {
			t.Errorf("%s: forwarded with auto-creation %v", topic, fwd.AllowAutoTopicCreation)
		}
		broker := kmsg.NewPtrMetadataResponse()
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic, mt.ErrorCode = kmsg.StringPtr(topic), kerr.UnknownTopicOrPartition.Code
		broker.Topics = append(broker.Topics, mt)
		out, err := conn.Response(3, 12, responseFrame(broker, 12), state)
		if err != nil {
			t.Fatal(err)
		}
		got := kmsg.NewPtrMetadataResponse()
		readResponse(t, got, 12, out)
		want := kerr.UnknownTopicOrPartition.Code
		if !create {
			want = kerr.TopicAuthorizationFailed.Code
		}
		if len(got.Topics) != 1 || got.Topics[0].ErrorCode != want {
			t.Errorf("%s: %+v", topic, got.Topics)
		}
	}
}
