package server

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

const multiTenantFilter = `  filters:
  - name: tenant
    type: MultiTenant
    config: {}
`

// tenants is a proxy with two virtual clusters, a and b, each with MultiTenant, in front of one
// kfake.
type tenants struct {
	p   *runningProxy
	pc  proxyConfig
	pki *testPKI
	kc  *kfake.Cluster
}

func startTenants(t *testing.T, filters string) tenants {
	t.Helper()
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "")
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	writeAtomic(t, dir+"/ca.crt", pki.pem)
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, ClientCAFile: dir + "/ca.crt"}
	for _, name := range []string{"a", "b"} {
		pc.Clusters = append(pc.Clusters, testCluster{Name: name, Prefix: name, Target: kc.ListenAddrs()[0], FiltersYAML: filters})
	}
	return tenants{startProxy(t, writeConfig(t, dir, pc)), pc, pki, kc}
}

// client is a franz-go client of virtual cluster vc, with a client certificate of cn.
func (ts tenants) client(t *testing.T, vc, cn string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cert := ts.pki.issue(t, cn, nil, nil, time.Now().Add(time.Hour))
	base, _ := clientOpts(fmt.Sprintf("%s-bootstrap.kafka.test:%d", vc, ts.pc.Port), ts.pki.pool, "", cert)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// pollValues polls until it has n records or the context ends.
func pollValues(ctx context.Context, cl *kgo.Client, n int) []string {
	var got []string
	for len(got) < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	sort.Strings(got)
	return got
}

// TestTwoTenantsOneKafka: tenants a and b each create orders, produce, consume with group g and
// produce in a transaction with id tx, through their virtual clusters with MultiTenant. The broker
// holds a-orders and b-orders, groups a-g and b-g, transactions a-tx and b-tx; each tenant's admin
// calls show only its own, without the prefix; each sees a cluster id of its own.
func TestTwoTenantsOneKafka(t *testing.T) {
	ts := startTenants(t, multiTenantFilter)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clusterIDs := map[string]string{}
	for _, tenant := range []string{"a", "b"} {
		adm := kadm.NewClient(ts.client(t, tenant, "admin-"+tenant))
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
			t.Fatalf("%s creates orders: %v\n%s", tenant, err, ts.p.logs)
		}
		prod := ts.client(t, tenant, "app-"+tenant, kgo.DefaultProduceTopic("orders"))
		for i := range 3 {
			if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-record-%d", tenant, i))).FirstErr(); err != nil {
				t.Fatalf("%s produces: %v", tenant, err)
			}
		}
		tx := ts.client(t, tenant, "tx-"+tenant, kgo.DefaultProduceTopic("orders"), kgo.TransactionalID("tx"))
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := tx.ProduceSync(ctx, kgo.StringRecord(tenant+"-transactional")).FirstErr(); err != nil {
			t.Fatalf("%s produces in a transaction: %v\n%s", tenant, err, ts.p.logs)
		}
		if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("%s commits: %v", tenant, err)
		}
		cons := ts.client(t, tenant, "app-"+tenant, kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("g"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		got := pollValues(ctx, cons, 4)
		want := []string{tenant + "-record-0", tenant + "-record-1", tenant + "-record-2", tenant + "-transactional"}
		if !slices.Equal(got, want) {
			t.Errorf("%s consumed %q, want only its own %q", tenant, got, want)
		}
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("%s commits offsets: %v", tenant, err)
		}
		checkTenantView(ctx, t, adm, tenant)
		md, err := adm.Metadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		clusterIDs[tenant] = md.Cluster
	}
	direct, err := kgo.NewClient(kgo.SeedBrokers(ts.kc.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	up := kadm.NewClient(direct)
	topics, err := up.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := topics.Names(); !slices.Contains(names, "a-orders") || !slices.Contains(names, "b-orders") || slices.Contains(names, "orders") {
		t.Errorf("the broker holds topics %v, want a-orders and b-orders", names)
	}
	groups, err := up.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g := groups.Groups(); !slices.Contains(g, "a-g") || !slices.Contains(g, "b-g") {
		t.Errorf("the broker holds groups %v, want a-g and b-g", g)
	}
	txs, err := up.ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids := txs.TransactionalIDs(); !slices.Contains(ids, "a-tx") || !slices.Contains(ids, "b-tx") {
		t.Errorf("the broker holds transactions %v, want a-tx and b-tx", ids)
	}
	md, err := up.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if clusterIDs["a"] == clusterIDs["b"] || clusterIDs["a"] == md.Cluster || clusterIDs["a"] == "" {
		t.Errorf("cluster ids a %q b %q upstream %q: want one per tenant", clusterIDs["a"], clusterIDs["b"], md.Cluster)
	}
}

// checkTenantView checks what tenant's admin client sees: its topic, group, offsets, configs and
// transaction, named without the prefix, and nothing of the other tenant's.
func checkTenantView(ctx context.Context, t *testing.T, adm *kadm.Client, tenant string) {
	t.Helper()
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := topics.Names(); !slices.Equal(names, []string{"orders"}) {
		t.Errorf("%s lists topics %v, want only orders", tenant, names)
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g := groups.Groups(); !slices.Equal(g, []string{"g"}) {
		t.Errorf("%s lists groups %v, want only g", tenant, g)
	}
	described, err := adm.DescribeGroups(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := described["g"]; !ok || d.Err != nil {
		t.Errorf("%s describes g: %+v", tenant, described)
	}
	offsets, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if committed := offsets["orders"]; len(committed) == 0 {
		t.Errorf("%s's committed offsets of g: %+v", tenant, offsets)
	}
	for topic := range offsets {
		if topic != "orders" {
			t.Errorf("%s's group g has offsets for %s", tenant, topic)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total < 4 {
		t.Errorf("%s's orders end offsets sum to %d, want its 4 records (and markers)", tenant, total)
	}
	configs, err := adm.DescribeTopicConfigs(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if len(configs) != 1 || configs[0].Name != "orders" || configs[0].Err != nil {
		t.Errorf("%s describes orders' configs: %+v", tenant, configs)
	}
	txs, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids := txs.TransactionalIDs(); !slices.Equal(ids, []string{"tx"}) {
		t.Errorf("%s lists transactions %v, want only tx", tenant, ids)
	}
	if _, err := adm.DescribeTransactions(ctx, "tx"); err != nil {
		t.Errorf("%s describes tx: %v", tenant, err)
	}
	for _, name := range append(topics.Names(), groups.Groups()...) {
		if strings.HasPrefix(name, "a-") || strings.HasPrefix(name, "b-") {
			t.Errorf("%s sees a prefix: %s", tenant, name)
		}
	}
}

// TestEntityIsolationOverMTLS: alice and bob (client certificates CN=alice and CN=bob) share
// topic shared through a virtual cluster with EntityIsolation; each consumes all of it with
// group g, which at the broker is alice-g and bob-g; each lists only its own g; a transactional
// id tx is alice-tx at the broker.
func TestEntityIsolationOverMTLS(t *testing.T) {
	ts := startTenants(t, `  filters:
  - name: isolate
    type: EntityIsolation
    config:
      entityTypes: [GROUP_ID, TRANSACTIONAL_ID]
      mapper: PrincipalEntityNameMapperService
      mapperConfig: {useCertificateCommonName: true}
`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tx := ts.client(t, "a", "alice", kgo.DefaultProduceTopic("shared"), kgo.TransactionalID("tx"), kgo.AllowAutoTopicCreation())
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := tx.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint("record-", i))).FirstErr(); err != nil {
			t.Fatalf("produce: %v\n%s", err, ts.p.logs)
		}
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"alice", "bob"} {
		cons := ts.client(t, "a", user, kgo.ConsumeTopics("shared"), kgo.ConsumerGroup("g"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		if got := pollValues(ctx, cons, 3); len(got) != 3 {
			t.Errorf("%s consumed %q, want all 3 records", user, got)
		}
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		groups, err := kadm.NewClient(cons).ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if g := groups.Groups(); !slices.Equal(g, []string{"g"}) {
			t.Errorf("%s lists groups %v, want only its own g", user, g)
		}
	}
	direct, err := kgo.NewClient(kgo.SeedBrokers(ts.kc.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	up := kadm.NewClient(direct)
	groups, err := up.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g := groups.Groups(); !slices.Contains(g, "alice-g") || !slices.Contains(g, "bob-g") || slices.Contains(g, "g") {
		t.Errorf("the broker holds groups %v, want alice-g and bob-g", g)
	}
	txs, err := up.ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids := txs.TransactionalIDs(); !slices.Equal(ids, []string{"alice-tx"}) {
		t.Errorf("the broker holds transactions %v, want alice-tx", ids)
	}
	topics, err := up.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(topics.Names(), "shared") {
		t.Errorf("the broker holds topics %v, want shared unprefixed", topics.Names())
	}
}

// TestMultiTenantWithKcat: kcat (librdkafka, which names topics in Produce and Fetch) produces
// to orders and consumes it through a MultiTenant virtual cluster a; its metadata lists orders
// and not the other tenant's topic the broker holds; the broker holds a-orders.
func TestMultiTenantWithKcat(t *testing.T) {
	ns := netnsForKcat(t, []string{"a-bootstrap.kafka.test", "a-broker-0.kafka.test", "a-broker-1.kafka.test", "a-broker-2.kafka.test"})
	f := startFilteredProxy(t, Options{Listen: listenInNetns(ns)}, multiTenantFilter)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	direct, err := kgo.NewClient(kgo.SeedBrokers(f.kc.ListenAddrs()...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if err := direct.ProduceSync(ctx, &kgo.Record{Topic: "b-secret", Value: []byte("b's record")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kcat := func(stdin string, args ...string) string {
		t.Helper()
		base := []string{"netns", "exec", ns, "kcat", "-b", fmt.Sprintf("a-bootstrap.kafka.test:%d", f.pc.Port),
			"-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + f.dir + "/ca.crt", "-m", "20"}
		cmd := exec.CommandContext(ctx, "ip", append(base, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("kcat %v: %v\nstdout: %s\nstderr: %s\nproxy:\n%s", args, err, out.String(), errOut.String(), f.p.logs)
		}
		return out.String()
	}
	kcat("one\ntwo\nthree\n", "-P", "-t", "orders")
	md := kcat("", "-L")
	if !strings.Contains(md, `topic "orders"`) || strings.Contains(md, "secret") || strings.Contains(md, "a-orders") {
		t.Errorf("kcat's metadata, want orders only and no prefix:\n%s", md)
	}
	got := strings.Fields(kcat("", "-C", "-t", "orders", "-o", "beginning", "-c", "3", "-e"))
	sort.Strings(got)
	if !slices.Equal(got, []string{"one", "three", "two"}) {
		t.Errorf("consumed %q", got)
	}
	topics, err := kadm.NewClient(direct).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(topics.Names(), "a-orders") {
		t.Errorf("the broker holds %v, want a-orders", topics.Names())
	}
}
