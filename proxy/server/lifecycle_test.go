package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalink/kafkalink/proxy/proxytest"
)

// vaultFor is a Vault transit stand-in that counts the connections its clients closed.
type vaultFor struct {
	*proxytest.Transit
	url    string
	closed atomic.Int32
}

func startVault(t *testing.T, token string) *vaultFor {
	t.Helper()
	v := &vaultFor{Transit: proxytest.NewTransit(token, "KEK_secrets")}
	srv := httptest.NewUnstartedServer(v.Transit)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			v.closed.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	v.url = srv.URL + "/v1/transit"
	return v
}

// encryptWith is the filters field of a virtual cluster encrypting with Vault at v, its token in
// tokenFile; extra is more of the filter's config.
func encryptWith(v *vaultFor, tokenFile, extra string) string {
	return fmt.Sprintf("  filters:\n  - name: encrypt\n    type: RecordEncryption\n    config: {kms: VaultKmsService, kmsConfig: {vaultTransitEngineUrl: %q, vaultToken: {passwordFile: %s}}, selector: TemplateKekSelector, selectorConfig: {template: \"KEK_$(topicName)\"}%s}\n",
		v.url, tokenFile, extra)
}

// TestReloadKeepsUnchangedFilterChains: two virtual clusters encrypt with their own Vault. A
// reload that changes only b's filter keeps a's chain: a's client goes on over the same
// connection and a's cached DEK serves it (no new Vault call), while b's old chain is closed
// (its Vault connections closed) and b's client reconnects to a new chain (a new DEK). A rotated
// token file rebuilds only the chain that read it; removing b closes its chain.
func TestReloadKeepsUnchangedFilterChains(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "")
	vaultA, vaultB := startVault(t, "hvs.a"), startVault(t, "hvs.b")
	tokenA, tokenB := dir+"/token-a", dir+"/token-b"
	writeAtomic(t, tokenA, []byte("hvs.a\n"))
	writeAtomic(t, tokenB, []byte("hvs.b\n"))
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	a := testCluster{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0], FiltersYAML: encryptWith(vaultA, tokenA, "")}
	b := testCluster{Name: "b", Prefix: "b", Target: kc.ListenAddrs()[0], FiltersYAML: encryptWith(vaultB, tokenB, "")}
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, Clusters: []testCluster{a, b}}
	path := writeConfig(t, dir, pc)
	p := startProxy(t, path)

	client := func(vc string) *kgo.Client {
		opts, _ := clientOpts(fmt.Sprintf("%s-bootstrap.kafka.test:%d", vc, pc.Port), pki.pool, "", nil)
		cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("secrets"))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	clA, clB := client("a"), client("b")
	produce := func(cl *kgo.Client, step string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, kgo.StringRecord(step)).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", step, err)
		}
	}
	reloads := 0.0
	reload := func(step string, change func()) {
		t.Helper()
		change()
		reloads++
		for testutil.ToFloat64(p.srv.Metrics.Reloads.WithLabelValues("success")) < reloads {
			if ctx.Err() != nil {
				t.Fatalf("%s: no reload\n%s", step, p.logs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitClosed := func(step string, v *vaultFor, atLeast int32) {
		t.Helper()
		for v.closed.Load() < atLeast {
			if ctx.Err() != nil {
				t.Fatalf("%s: the replaced chain's Vault connections were never closed (%d closed)", step, v.closed.Load())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	connectionsA := func() float64 { return testutil.ToFloat64(p.srv.Metrics.ConnectionsTotal.WithLabelValues("a")) }

	produce(clA, "a before")
	produce(clB, "b before")
	openedA := connectionsA()
	if vaultA.Calls("datakey") != 1 || vaultB.Calls("datakey") != 1 || vaultA.closed.Load() != 0 {
		t.Fatalf("after the first records: datakey calls a=%d b=%d, a's closed connections %d; want 1, 1, 0",
			vaultA.Calls("datakey"), vaultB.Calls("datakey"), vaultA.closed.Load())
	}

	reload("b's filter changed", func() {
		pc.Clusters[1].FiltersYAML = encryptWith(vaultB, tokenB, ", unresolvedKeyPolicy: PASSTHROUGH_UNENCRYPTED")
		writeAtomic(t, path, []byte(pc.yaml()))
	})
	waitClosed("b's filter changed", vaultB, 1)
	produce(clA, "a after b changed")
	produce(clB, "b after b changed")
	if n := vaultA.Calls("datakey") + vaultA.Calls("keys"); n != 2 || connectionsA() != openedA || vaultA.closed.Load() != 0 {
		t.Fatalf("a's chain was not kept: Vault calls %d (want 2, both before the reload), connections %v (want %v), closed Vault connections %d",
			n, connectionsA(), openedA, vaultA.closed.Load())
	}
	if vaultB.Calls("datakey") != 2 {
		t.Fatalf("b's new chain: %d datakey calls in all, want 2 (a new DEK)", vaultB.Calls("datakey"))
	}

	closedB := vaultB.closed.Load()
	reload("b's token file rewritten", func() { writeAtomic(t, tokenB, []byte("hvs.b")) })
	waitClosed("b's token file rewritten", vaultB, closedB+1)
	produce(clA, "a after b's token changed")
	produce(clB, "b after its token changed")

	closedB = vaultB.closed.Load()
	reload("b removed", func() {
		pc.Clusters = pc.Clusters[:1]
		writeAtomic(t, path, []byte(pc.yaml()))
	})
	waitClosed("b removed", vaultB, closedB+1)
	produce(clA, "a after b was removed")
	if n := vaultA.Calls("datakey") + vaultA.Calls("keys"); n != 2 || connectionsA() != openedA || vaultA.closed.Load() != 0 {
		t.Fatalf("a's chain was not kept through three reloads: Vault calls %d, connections %v (want %v), closed Vault connections %d",
			n, connectionsA(), openedA, vaultA.closed.Load())
	}
}
