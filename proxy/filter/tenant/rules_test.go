package tenant

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter"
)

// TestEveryKeyHasARule: every API key kmsg knows (those the proxy forwards) is in the table, and
// the table names no other. A new kmsg release with a new key fails here until it is placed.
func TestEveryKeyHasARule(t *testing.T) {
	for k := int16(0); k < maxKeyScan; k++ {
		_, ruled := rules[k]
		known := kmsg.RequestForKey(k) != nil
		switch {
		case known && !ruled:
			t.Errorf("%s (%d) is forwarded by the proxy but has no MultiTenant rule: rewrite it, or pass or refuse it with a reason", kmsg.NameForKey(k), k)
		case ruled && !known:
			t.Errorf("key %d is in the table but kmsg does not know it", k)
		case ruled && rules[k].why == "":
			t.Errorf("%s has no reason", kmsg.NameForKey(k))
		}
	}
}

// nameFields are the fields that hold a tenant's names in kmsg's requests and responses.
var nameFields = map[string]bool{
	"Topic": true, "Topics": true, "TopicNames": true, "SubscribedTopicNames": true, "SubscribedTopics": true,
	"Group": true, "Groups": true, "TransactionalID": true, "TransactionID": true, "TransactionalIDs": true,
	"CoordinatorKey": true, "CoordinatorKeys": true, "Key": true, "ResourceName": true,
}

// fill sets every name field of v (and of one element of every list in it) to name, and config
// resource types to topic, so that a rewrite rule that misses a field leaves it as it was.
func fill(v reflect.Value, name string) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), name)
	case reflect.Struct:
		for i := range v.NumField() {
			f, ft := v.Field(i), v.Type().Field(i)
			switch {
			case !ft.IsExported() || ft.Name == "SubscribedTopicRegex" || ft.Name == "TransactionalIDPattern" || ft.Name == "ErrorMessage":
			case nameFields[ft.Name] && f.Kind() == reflect.String:
				f.SetString(name)
			case nameFields[ft.Name] && f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.String:
				f.Set(reflect.ValueOf(&name))
			case nameFields[ft.Name] && f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
				f.Set(reflect.ValueOf([]string{name}))
			case ft.Type == reflect.TypeOf(kmsg.ConfigResourceType(0)):
				f.Set(reflect.ValueOf(kmsg.ConfigResourceTypeTopic))
			case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
				f.Set(reflect.MakeSlice(f.Type(), 1, 1))
				fill(f.Index(0), name)
			case f.Kind() == reflect.Struct || f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct:
				fill(f, name)
			}
		}
	}
}

// names lists the values of every name field in v, with their paths.
func names(v reflect.Value, path string, out map[string]string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			names(v.Elem(), path, out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f, ft := v.Field(i), v.Type().Field(i)
			p := path + "." + ft.Name
			switch {
			case !ft.IsExported():
			case nameFields[ft.Name] && f.Kind() == reflect.String:
				out[p] = f.String()
			case nameFields[ft.Name] && f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.String:
				if !f.IsNil() {
					out[p] = f.Elem().String()
				}
			case nameFields[ft.Name] && f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
				for j := range f.Len() {
					out[p] = f.Index(j).String()
				}
			default:
				names(f, p, out)
			}
		}
	case reflect.Slice:
		for j := range v.Len() {
			names(v.Index(j), path, out)
		}
	}
}

// testVersion is the version a key's rewrite is audited at: the highest the filter offers with
// names (Produce and Fetch name topics by id from v13).
func testVersion(key int16) int16 {
	v := kmsg.RequestForKey(key).MaxVersion()
	if r := rules[key]; r.capKind != 0 {
		v = min(v, r.maxVersion)
	}
	if key == kmsg.Produce.Int16() || key == kmsg.Fetch.Int16() {
		v = 12
	}
	return v
}

// TestRewriteAudit: for every key MultiTenant rewrites, a request with every name field set
// leaves the filter with every one prefixed, and a response with every name field prefixed
// leaves it with every one stripped. A rule that misses a field (or a field new in kmsg) fails.
func TestRewriteAudit(t *testing.T) {
	f, err := filter.New(MultiTenantType, []byte(`{"tenantPrefix":"t"}`), filter.Env{})
	if err != nil {
		t.Fatal(err)
	}
	m := f.(*multiTenant)
	for k, r := range rules {
		if action(k, m.n.kinds) != "rewrite" || k == kmsg.ApiVersions.Int16() {
			continue
		}
		name := kmsg.NameForKey(k)
		v := testVersion(k)
		req := kmsg.RequestForKey(k)
		req.SetVersion(v)
		fill(reflect.ValueOf(req), "x")
		x := &filter.Exchange{Key: k, Version: v, Request: req}
		if err := m.OnRequest(context.Background(), x); err != nil || x.Answered() != nil {
			t.Errorf("%s v%d: %v (answered %v)", name, v, err, x.Answered() != nil)
			continue
		}
		got := map[string]string{}
		names(reflect.ValueOf(req), name, got)
		for path, value := range got {
			if value != "t-x" && !strings.HasSuffix(path, "Version") {
				t.Errorf("%s request: %s is %q after the rewrite, want t-x (%s)", name, path, value, r.why)
			}
		}
		resp := req.ResponseKind()
		resp.SetVersion(v)
		fill(reflect.ValueOf(resp), "t-x")
		x.Response = resp
		if err := m.OnResponse(context.Background(), x); err != nil {
			t.Errorf("%s response: %v", name, err)
		}
		got = map[string]string{}
		names(reflect.ValueOf(resp), name, got)
		for path, value := range got {
			if value != "x" {
				t.Errorf("%s response: %s is %q after the rewrite, want x", name, path, value)
			}
		}
	}
}

// TestOtherTenantsHidden: listings lose every resource without the tenant's prefix.
func TestOtherTenantsHidden(t *testing.T) {
	n := namer{prefix: "a-", kinds: topics | groups | txns | cluster}
	a, b, internal := "a-orders", "b-orders", "__consumer_offsets"
	md := &kmsg.MetadataResponse{Version: 12, ClusterID: kmsg.StringPtr("upstream-id")}
	for _, name := range []*string{&a, &b, &internal} {
		md.Topics = append(md.Topics, kmsg.MetadataResponseTopic{Topic: name})
	}
	n.response(md, 0, func(up string) string { return clusterID(up, "a") })
	if len(md.Topics) != 1 || *md.Topics[0].Topic != "orders" {
		t.Errorf("metadata topics %v, want only orders", md.Topics)
	}
	if *md.ClusterID == "upstream-id" || *md.ClusterID != clusterID("upstream-id", "a") || clusterID("upstream-id", "a") == clusterID("upstream-id", "b") || len(*md.ClusterID) != 22 {
		t.Errorf("cluster id %q: want the tenant's own, 22 characters", *md.ClusterID)
	}
	lg := &kmsg.ListGroupsResponse{Groups: []kmsg.ListGroupsResponseGroup{{Group: "a-g"}, {Group: "b-g"}, {Group: "g"}}}
	n.response(lg, 0, nil)
	if len(lg.Groups) != 1 || lg.Groups[0].Group != "g" {
		t.Errorf("groups %v, want only g", lg.Groups)
	}
	lt := &kmsg.ListTransactionsResponse{TransactionStates: []kmsg.ListTransactionsResponseTransactionState{{TransactionalID: "b-tx"}, {TransactionalID: "a-tx"}}}
	n.response(lt, 0, nil)
	if len(lt.TransactionStates) != 1 || lt.TransactionStates[0].TransactionalID != "tx" {
		t.Errorf("transactions %v, want only tx", lt.TransactionStates)
	}
	for cursor, want := range map[string]*string{"a-x": kmsg.StringPtr("x"), "0-before": kmsg.StringPtr(""), "b-after": nil} {
		dtp := &kmsg.DescribeTopicPartitionsResponse{Topics: []kmsg.DescribeTopicPartitionsResponseTopic{{Topic: &b}}, NextCursor: &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: cursor, Partition: 3}}
		n.response(dtp, 0, nil)
		if len(dtp.Topics) != 0 || (want == nil) != (dtp.NextCursor == nil) || want != nil && dtp.NextCursor.Topic != *want {
			t.Errorf("cursor at %s: topics %v cursor %+v, want none and %v", cursor, dtp.Topics, dtp.NextCursor, want)
		}
	}
}

// TestApiVersionsOffered: refused keys are not offered, capped ones are lowered.
func TestApiVersionsOffered(t *testing.T) {
	resp := &kmsg.ApiVersionsResponse{}
	for k := int16(0); k < 100; k++ {
		if req := kmsg.RequestForKey(k); req != nil {
			resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MaxVersion: req.MaxVersion()})
		}
	}
	apiVersions(resp, topics|groups|txns|cluster)
	offered := map[int16]int16{}
	for _, k := range resp.ApiKeys {
		offered[k.ApiKey] = k.MaxVersion
	}
	for k, want := range map[int16]int16{kmsg.OffsetCommit.Int16(): 9, kmsg.OffsetFetch.Int16(): 9, kmsg.DeleteTopics.Int16(): 5, kmsg.ListTransactions.Int16(): 1, kmsg.Produce.Int16(): 13} {
		if offered[k] != want {
			t.Errorf("%s offered up to v%d, want v%d", kmsg.NameForKey(k), offered[k], want)
		}
	}
	for _, k := range []kmsg.Key{kmsg.CreateACLs, kmsg.ShareFetch, kmsg.ElectLeaders, kmsg.Envelope} {
		if _, ok := offered[k.Int16()]; ok {
			t.Errorf("%s offered", kmsg.NameForKey(k.Int16()))
		}
	}
	if _, ok := offered[kmsg.SASLAuthenticate.Int16()]; !ok {
		t.Error("SaslAuthenticate not offered")
	}
}
