package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/internal/procstat"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// smallTarget is where a small producer's connection goes: the broker itself, the relay, or
// the proxy's broker 0 hostname.
type smallTarget struct {
	name string
	dial func() (net.Conn, error)
	base int
	hop  int // the pid of the relay or proxy on the way; 0 for direct
}

// smallProducers measures n connections each sending one-record Produce requests (100-byte
// value, acks=1) one after another for d, over TLS, per target: the aggregate requests per
// second and the latency percentiles of a request, as many clients with little to send each
// make them.
func smallProducers(run smallRun, plain, tlsK *kfake.Cluster, h *hops, roots *x509.CertPool) error {
	n, d := run.n, run.d
	targets, err := smallTargets(plain, tlsK, h, roots)
	if err != nil {
		return err
	}
	targets = selectRows(targets, onlyPaths, func(t *smallTarget) (string, *int) { return t.name, &t.base })
	frame, err := smallProduceFrame()
	if err != nil {
		return err
	}
	fmt.Printf("\n%d connections, each sending one-record Produce requests (100 B, acks=1) one after another for %s, TLS, to the partition's leader:\n\n", n, d)
	fmt.Println("| path | requests/s | compared with | vs | p50 µs | p99 µs | added p99 µs | hop CPU µs/request | of which user space |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	rates, p99s := make([]float64, len(targets)), make([]float64, len(targets))
	for i, t := range targets {
		rate, lat, hop, err := runSmall(t, n, d, frame)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		hopCPU, hopUser := "-", "-"
		if t.hop != 0 {
			hopCPU = fmt.Sprintf("%.1f", float64(hop.all.Microseconds())/float64(len(lat)))
			hopUser = fmt.Sprintf("%.1f", float64(hop.user.Microseconds())/float64(len(lat)))
		}
		rates[i], p99s[i] = rate, lat[len(lat)*99/100]
		fmt.Printf("| %s | %.0f | %s | %.0f%% | %.0f | %.0f | %+.0f | %s | %s |\n", t.name, rate, targets[t.base].name,
			100*rate/rates[t.base], lat[len(lat)/2], p99s[i], p99s[i]-p99s[t.base], hopCPU, hopUser)
	}
	return nil
}

// smallTopicLeader creates the one-partition topic "small" in cluster (reached with opts) and
// returns its leader.
func smallTopicLeader(cluster *kfake.Cluster, opts ...kgo.Opt) (int32, error) {
	admin, err := kgo.NewClient(append(opts, kgo.SeedBrokers(cluster.ListenAddrs()...))...)
	if err != nil {
		return 0, err
	}
	defer admin.Close()
	if _, err = kadm.NewClient(admin).CreateTopic(context.Background(), 1, 1, nil, "small"); err != nil {
		return 0, err
	}
	return cluster.LeaderFor("small", 0), nil
}

// smallTargets are the rows: direct to the TLS kfake, and through the TLS relay, the proxy and
// the proxy's encryption virtual cluster to the plain one, each to the leader of "small".
func smallTargets(plain, tlsK *kfake.Cluster, h *hops, roots *x509.CertPool) ([]smallTarget, error) {
	plainLeader, err := smallTopicLeader(plain)
	if err != nil {
		return nil, err
	}
	tlsLeader, err := smallTopicLeader(tlsK, kgo.DialTLSConfig(&tls.Config{RootCAs: roots}))
	if err != nil {
		return nil, err
	}
	broker := func(vc string) string { return fmt.Sprintf("%s-broker-%d.bench.test", vc, plainLeader) }
	return []smallTarget{
		{"direct TLS", tlsDial(tlsK.ListenAddrs()[tlsLeader], "127.0.0.1", roots), 0, 0},
		{"relay TLS-down/plain-up", tlsDial(h.tlsRelay.addrs[plain.ListenAddrs()[plainLeader]], "127.0.0.1", roots), 0, h.tlsRelay.pid()},
		{"proxy TLS-down/plain-up", tlsDial(loopback(h.ports[1]), broker("tls"), roots), 1, h.proxy.pid()},
		{"proxy TLS + encryption", tlsDial(loopback(h.ports[1]), broker("enc"), roots), 2, h.proxy.pid()},
	}, nil
}

// hopTime is the CPU time a hop used: all of it, and the part in user space (at 10 ms ticks;
// the system calls and TCP a proxy and a relay share are in the rest).
type hopTime struct{ all, user time.Duration }

// runSmall runs n producers against one target and returns requests per second, every
// request's latency in µs, sorted, and the CPU time the hop (t.hop) used meanwhile: from when
// every connection is open, so it is the requests' and not the TLS handshakes'.
func runSmall(t smallTarget, n int, d time.Duration, frame []byte) (float64, []float64, hopTime, error) {
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := t.dial()
		if err != nil {
			return 0, nil, hopTime{}, fmt.Errorf("connection %d: %w", i+1, err)
		}
		defer c.Close()
		conns[i] = c
	}
	hop0, user0 := procstat.CPU(t.hop), procstat.UserCPU(t.hop)
	var mu sync.Mutex
	var all []float64
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range conns {
		wg.Go(func() {
			lat, err := produceLoop(c, frame, start.Add(d))
			mu.Lock()
			defer mu.Unlock()
			all = append(all, lat...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	hop := hopTime{all: procstat.CPU(t.hop) - hop0, user: procstat.UserCPU(t.hop) - user0}
	if firstErr != nil {
		return 0, nil, hopTime{}, firstErr
	}
	if len(all) == 0 {
		return 0, nil, hopTime{}, fmt.Errorf("no request completed")
	}
	sort.Float64s(all)
	return float64(len(all)) / time.Since(start).Seconds(), all, hop, nil
}

// produceLoop sends the frame and reads its response until the deadline; it returns each
// round trip in µs. The first response is decoded, so that a refused request (a broker that
// does not lead the partition answers at once) cannot pass for a fast one.
func produceLoop(c net.Conn, frame []byte, until time.Time) ([]float64, error) {
	var lat []float64
	var size [4]byte
	var body []byte
	for time.Now().Before(until) {
		s := time.Now()
		_ = c.SetDeadline(s.Add(10 * time.Second))
		if _, err := c.Write(frame); err != nil {
			return lat, err
		}
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return lat, err
		}
		if n := int(binary.BigEndian.Uint32(size[:])); cap(body) < n {
			body = make([]byte, n)
		} else {
			body = body[:n]
		}
		if _, err := io.ReadFull(c, body); err != nil {
			return lat, err
		}
		if lat == nil {
			if err := produceError(body); err != nil {
				return lat, err
			}
		}
		lat = append(lat, float64(time.Since(s).Microseconds()))
	}
	return lat, nil
}

// produceError is the error of the one partition in a Produce v9 response (after its size).
func produceError(body []byte) error {
	if len(body) < 5 {
		return fmt.Errorf("short Produce response")
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(9)
	// The correlation id, then the flexible header's empty tagged fields.
	if err := resp.ReadFrom(body[5:]); err != nil {
		return err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("unexpected Produce response")
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		return fmt.Errorf("produce: %w", kerr.ErrorForCode(code))
	}
	return nil
}

// smallProduceFrame is a Produce v9 request of one 100-byte record to small-0, acks=1. Every
// request reuses it: the correlation id does not matter to a client that waits for each answer.
func smallProduceFrame() ([]byte, error) {
	b := records.Batch{Header: kmsg.RecordBatch{Magic: 2, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1}}
	b.Records = []kmsg.Record{{Value: make([]byte, 100)}}
	raw, err := b.Encode()
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "small"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1), nil
}

// tlsDial dials addr over TLS with serverName as SNI.
func tlsDial(addr, serverName string, roots *x509.CertPool) func() (net.Conn, error) {
	return func() (net.Conn, error) {
		return tls.Dial("tcp", addr, &tls.Config{ServerName: serverName, RootCAs: roots})
	}
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
