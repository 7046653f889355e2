package server

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestUnreadableConfigKeepsServing walks the skew policy's promise through real reloads: a
// configuration file the proxy cannot read (a newer operator's version, invalid, missing) is
// refused, reported once per change with its reason, and the last good configuration keeps
// serving clients; a good file afterwards is applied and the report clears.
func TestUnreadableConfigKeepsServing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "")
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}}}
	path := writeConfig(t, dir, pc)
	good := pc.yaml()
	p := startProxy(t, path)
	mgmt := "http://" + p.srv.ManagementAddr().String()
	opts, _ := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port), pki.pool, "", nil)
	cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("skew"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(step string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, kgo.StringRecord(step)).FirstErr(); err != nil {
			t.Fatalf("%s: produce through the proxy: %v", step, err)
		}
	}
	produce("before")

	steps := []struct {
		name, content, reason, log string
	}{
		{name: "a newer operator's config version", content: strings.Replace(good, "proxy-config/v1", "proxy-config/v2", 1),
			reason: RejectedUnsupportedVersion, log: "unsupported configuration version kafkalink.io/proxy-config/v2"},
		{name: "an invalid config", content: good + "virtualClusterz: []\n", reason: RejectedInvalid, log: "virtualClusterz"},
		{name: "a missing config file", reason: RejectedUnreadable, log: "no such file"},
	}
	for _, st := range steps {
		if st.content == "" {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		} else {
			writeAtomic(t, path, []byte(st.content))
		}
		metric := fmt.Sprintf(`kafkalink_proxy_config_rejected{reason="%s"} 1`, st.reason)
		for !strings.Contains(httpGet(t, mgmt+"/metrics"), metric) {
			if ctx.Err() != nil {
				t.Fatalf("%s: no %s\n%s", st.name, metric, p.logs)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !p.logs.waitFor("Reload failed", st.log) {
			t.Fatalf("%s: no log line naming %q\n%s", st.name, st.log, p.logs)
		}
		if body := httpGet(t, mgmt+"/readyz"); !strings.HasPrefix(body, "ok\n") || !strings.Contains(body, "refused ("+st.reason+")") {
			t.Fatalf("%s: /readyz says %q", st.name, body)
		}
		produce(st.name)
	}

	// One log line per change: the missing file, polled many times since, was reported once.
	// Poll rounds run every 50 ms; wait for several to pass.
	before := strings.Count(p.logs.String(), "Reload failed")
	time.Sleep(300 * time.Millisecond)
	if after := strings.Count(p.logs.String(), "Reload failed"); after != before || before != len(steps) {
		t.Fatalf("%d Reload failed lines for %d changes (then %d)", before, len(steps), after)
	}

	// The good file again: applied, and the report clears.
	writeAtomic(t, path, []byte(good))
	for strings.Contains(httpGet(t, mgmt+"/metrics"), "kafkalink_proxy_config_rejected{") {
		if ctx.Err() != nil {
			t.Fatalf("the report did not clear\n%s", p.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if body := httpGet(t, mgmt+"/readyz"); body != "ok\n" {
		t.Fatalf("/readyz says %q after a good file", body)
	}
	produce("after")
}

// TestStartWithoutGoodConfigFails: at start there is no last good configuration to keep, so a
// config of an unsupported version stops Run at once with the reason.
func TestStartWithoutGoodConfigFails(t *testing.T) {
	path := t.TempDir() + "/proxy.yaml"
	writeAtomic(t, path, []byte("version: kafkalink.io/proxy-config/v2\n"))
	err := New(Options{ConfigPath: path}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "unsupported configuration version kafkalink.io/proxy-config/v2") {
		t.Fatalf("Run = %v", err)
	}
}
