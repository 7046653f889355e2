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
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// smallTarget is where a small producer's connection goes: the broker itself, the relay, or
// the proxy's broker 0 hostname.
type smallTarget struct {
	name string
	dial func() (net.Conn, error)
	base int
}

// smallProducers measures n connections each sending one-record Produce requests (100-byte
// value, acks=1) one after another for d, over TLS, per target: the aggregate requests per
// second and the latency percentiles of a request, as many clients with little to send each
// make them.
func smallProducers(run smallRun, targets []smallTarget, brokers [][]kgo.Opt) error {
	n, d := run.n, run.d
	for _, opts := range brokers {
		if err := createTopic(opts, "small"); err != nil {
			return err
		}
	}
	frame, err := smallProduceFrame()
	if err != nil {
		return err
	}
	fmt.Printf("\n%d connections, each sending one-record Produce requests (100 B, acks=1) one after another for %s, TLS:\n\n", n, d)
	fmt.Println("| path | requests/s | compared with | vs | p50 µs | p99 µs | added p99 µs |")
	fmt.Println("|---|---|---|---|---|---|---|")
	rates, p99s := make([]float64, len(targets)), make([]float64, len(targets))
	for i, t := range targets {
		rate, lat, err := runSmall(t, n, d, frame)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		rates[i], p99s[i] = rate, lat[len(lat)*99/100]
		fmt.Printf("| %s | %.0f | %s | %.0f%% | %.0f | %.0f | %+.0f |\n", t.name, rate, targets[t.base].name,
			100*rate/rates[t.base], lat[len(lat)/2], p99s[i], p99s[i]-p99s[t.base])
	}
	return nil
}

func createTopic(opts []kgo.Opt, topic string) error {
	admin, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer admin.Close()
	_, err = kadm.NewClient(admin).CreateTopic(context.Background(), 1, 1, nil, topic)
	return err
}

// smallTargets are the rows: direct to the TLS kfake, and through the TLS relay, the proxy and
// the proxy's encryption virtual cluster to the plain one (broker 0's hostname as SNI).
func smallTargets(tlsK *kfake.Cluster, tlsRelay *relay, proxyPort int, roots *x509.CertPool) []smallTarget {
	return []smallTarget{
		{"direct TLS", tlsDial(tlsK.ListenAddrs()[0], "127.0.0.1", roots), 0},
		{"relay TLS-down/plain-up", tlsDial(tlsRelay.ln.Addr().String(), "127.0.0.1", roots), 0},
		{"proxy TLS-down/plain-up", tlsDial(loopback(proxyPort), "tls-broker-0.bench.test", roots), 1},
		{"proxy TLS + encryption", tlsDial(loopback(proxyPort), "enc-broker-0.bench.test", roots), 2},
	}
}

// runSmall runs n producers against one target and returns requests per second and every
// request's latency in µs, sorted.
func runSmall(t smallTarget, n int, d time.Duration, frame []byte) (float64, []float64, error) {
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := t.dial()
		if err != nil {
			return 0, nil, fmt.Errorf("connection %d: %w", i+1, err)
		}
		defer c.Close()
		conns[i] = c
	}
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
	if firstErr != nil {
		return 0, nil, firstErr
	}
	if len(all) == 0 {
		return 0, nil, fmt.Errorf("no request completed")
	}
	sort.Float64s(all)
	return float64(len(all)) / time.Since(start).Seconds(), all, nil
}

// produceLoop sends the frame and reads its response until the deadline; it returns each
// round trip in µs.
func produceLoop(c net.Conn, frame []byte, until time.Time) ([]float64, error) {
	var lat []float64
	var size [4]byte
	for time.Now().Before(until) {
		s := time.Now()
		_ = c.SetDeadline(s.Add(10 * time.Second))
		if _, err := c.Write(frame); err != nil {
			return lat, err
		}
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return lat, err
		}
		if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
			return lat, err
		}
		lat = append(lat, float64(time.Since(s).Microseconds()))
	}
	return lat, nil
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
