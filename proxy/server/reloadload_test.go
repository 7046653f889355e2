package server

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// loadConn is one client connection producing in a loop: a Produce (acks=all), its response,
// the next. It stops at the first error, which the test reports.
type loadConn struct {
	done    atomic.Int64 // Produce requests answered without error
	slowest atomic.Int64 // the longest round trip, in nanoseconds
	failed  atomic.Pointer[error]
}

func (l *loadConn) err() error {
	if e := l.failed.Load(); e != nil {
		return *e
	}
	return nil
}

func (l *loadConn) run(pc proxyConfig, pki *testPKI, stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	if err := l.produce(pc, pki, stop); err != nil {
		l.failed.Store(&err)
	}
}

func (l *loadConn) produce(pc proxyConfig, pki *testPKI, stop <-chan struct{}) error {
	c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", pc.Port), &tls.Config{ServerName: "a-bootstrap.kafka.test", RootCAs: pki.pool})
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	value := []byte(strings.Repeat("v", 200))
	for corr := int32(1); ; corr++ {
		select {
		case <-stop:
			return nil
		default:
		}
		start := time.Now()
		if _, err := c.Write(produceFrame("load", value, corr)); err != nil {
			return fmt.Errorf("writing Produce %d: %w", corr, err)
		}
		b, err := readFrame(c)
		if err != nil {
			return fmt.Errorf("reading the response to Produce %d: %w", corr, err)
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(7)
		if got := int32(binary.BigEndian.Uint32(b)); got != corr {
			return fmt.Errorf("response correlation id %d, want %d", got, corr)
		}
		if err := resp.ReadFrom(b[4:]); err != nil {
			return fmt.Errorf("Produce %d: %w", corr, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("Produce %d answered for %d topics", corr, len(resp.Topics))
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			return fmt.Errorf("Produce %d answered with error code %d", corr, code)
		}
		if d := int64(time.Since(start)); d > l.slowest.Load() {
			l.slowest.Store(d)
		}
		l.done.Add(1)
	}
}

// TestConfigReloadsUnderLoadKeepConnections: 100 connections produce to virtual cluster a
// while the configuration changes around it: a virtual cluster added, another retargeted (its
// own connection is ended, which shows the reload applied), the listener's certificate rotated,
// that other virtual cluster removed. Not one of a's connections is dropped or reopened, every
// Produce is answered without error, and after each change every connection goes on producing.
// (TestCertificateRotationKeepsConnections covers a certificate rotation on its own.)
func TestConfigReloadsUnderLoadKeepConnections(t *testing.T) {
	const conns = 100
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "", kfake.NumBrokers(1), kfake.SeedTopics(1, "load"))
	other := fakeKafka(t, nil, "", kfake.NumBrokers(1))
	cf, kf := writePair(t, dir, "server", pki.issue(t, "first", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	a := testCluster{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}
	b := testCluster{Name: "b", Prefix: "b", Target: kc.ListenAddrs()[0]}
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, Clusters: []testCluster{a, b}}
	path := writeConfig(t, dir, pc)
	p := startProxy(t, path)

	load := make([]*loadConn, conns)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range load {
		load[i] = &loadConn{}
		wg.Add(1)
		go load[i].run(pc, pki, stop, &wg)
	}
	stopped := false
	stopLoad := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopLoad()
	// everyProduces waits until every connection has had n more Produce requests answered.
	everyProduces := func(step string, n int64) {
		t.Helper()
		marks := make([]int64, conns)
		for i, l := range load {
			marks[i] = l.done.Load()
		}
		for i, l := range load {
			for l.done.Load() < marks[i]+n {
				if ctx.Err() != nil || l.err() != nil && l.done.Load() < marks[i]+n {
					stopLoad()
					t.Fatalf("%s: connection %d stopped producing after %d requests: %v\n%s", step, i, l.done.Load(), l.err(), p.logs)
				}
				time.Sleep(5 * time.Millisecond)
			}
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
			time.Sleep(10 * time.Millisecond)
		}
		everyProduces(step, 3)
	}
	everyProduces("before any change", 5)
	start := time.Now()

	reload("virtual cluster c added", func() {
		pc.Clusters = append(pc.Clusters, testCluster{Name: "c", Prefix: "c", Target: kc.ListenAddrs()[0]})
		writeAtomic(t, path, []byte(pc.yaml()))
	})
	bConn := dialTLS(t, pc, pki, "b-bootstrap.kafka.test")
	rawRequest(t, bConn, kmsg.NewPtrApiVersionsRequest(), 1)
	if _, err := readFrame(bConn); err != nil {
		t.Fatal(err)
	}
	reload("virtual cluster b retargeted", func() {
		pc.Clusters[1].Target = other.ListenAddrs()[0]
		writeAtomic(t, path, []byte(pc.yaml()))
	})
	_ = bConn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := readFrame(bConn); !errors.Is(err, io.EOF) {
		t.Fatalf("b's connection outlived b's retargeting: read %v", err)
	}
	reload("listener certificate rotated", func() {
		writePair(t, dir, "server", pki.issue(t, "second", []string{"*.kafka.test"}, nil, time.Now().Add(2*time.Hour)))
	})
	if cn := peerCN(t, pc.Port, "a-bootstrap.kafka.test"); cn != "second" {
		t.Fatalf("new connections get certificate %q after the rotation", cn)
	}
	reload("virtual cluster b removed", func() {
		pc.Clusters = []testCluster{pc.Clusters[0], pc.Clusters[2]}
		writeAtomic(t, path, []byte(pc.yaml()))
	})
	elapsed := time.Since(start)
	stopLoad()

	var total, slowest int64
	for i, l := range load {
		if err := l.err(); err != nil {
			t.Errorf("connection %d: %v", i, err)
		}
		total += l.done.Load()
		slowest = max(slowest, l.slowest.Load())
	}
	if opened := testutil.ToFloat64(p.srv.Metrics.ConnectionsTotal.WithLabelValues("a")); opened != conns {
		t.Errorf("virtual cluster a had %v connections opened, want %d: some were dropped and reopened", opened, conns)
	}
	fmt.Printf("config reload fault | %d connections producing to a (acks=all) across 4 reloads touching b, c and the certificate in %v | lost: 0 connections, 0 requests (%d answered) | longest Produce round trip %v\n",
		conns, elapsed.Round(time.Millisecond), total, time.Duration(slowest).Round(time.Millisecond))
}
