package oauth

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// fetchTimeout bounds one JWKS request.
const fetchTimeout = 10 * time.Second

// httpClient is the JWKS client: the CAs of caFile (read with readFile) or the system's, TLS
// 1.2 at least, no redirects (the configured URL is the one trusted).
func httpClient(caFile string, readFile ReadFile) (*http.Client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		if readFile == nil {
			return nil, fmt.Errorf("jwksEndpointCaFile %s: no way to read files here", caFile)
		}
		pem, err := readFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("jwksEndpointCaFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("jwksEndpointCaFile %s: no PEM certificate in it", caFile)
		}
		tlsConfig.RootCAs = pool
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	return &http.Client{
		Transport:     transport,
		Timeout:       fetchTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// keySource keeps the JWKS: fetched by a goroutine started at the first use and stopped by
// close, refreshed every s.refresh, retried with exponential backoff up to s.backoffMax while it
// fails (the last good set stays in use meanwhile), and refetched on demand (an unknown kid) at
// most once per s.backoffMax.
type keySource struct {
	s        settings
	client   *http.Client
	onChange func() // called when a fetched set differs from the one before

	startOnce sync.Once
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	wake      chan struct{}

	mu          sync.Mutex
	keys        []key
	sum         [32]byte
	lastErr     error
	attempts    int
	lastRefetch time.Time
	updated     chan struct{} // closed when a fetch attempt ends, then replaced
}

func newKeySource(s settings, client *http.Client, onChange func()) *keySource {
	ctx, cancel := context.WithCancel(context.Background())
	return &keySource{s: s, client: client, onChange: onChange, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), wake: make(chan struct{}, 1), updated: make(chan struct{})}
}

// start runs the fetch loop once, unless the source is closed.
func (k *keySource) start() {
	k.startOnce.Do(func() {
		if k.ctx.Err() != nil {
			close(k.done)
			return
		}
		go k.loop()
	})
}

// close stops the loop and waits for it.
func (k *keySource) close() {
	k.cancel()
	k.start() // a source never started closes done itself
	<-k.done
}

// get is the current key set, waiting for the first fetch when there is none yet.
func (k *keySource) get(ctx context.Context) ([]key, error) {
	k.start()
	k.mu.Lock()
	keys, attempts, ch, lastErr := k.keys, k.attempts, k.updated, k.lastErr
	k.mu.Unlock()
	if keys != nil {
		return keys, nil
	}
	if attempts > 0 { // the endpoint fails: the loop retries with backoff, callers do not wait
		return nil, noJWKS(lastErr)
	}
	return k.wait(ctx, ch)
}

// refetch fetches the JWKS again, unless it was asked to within s.backoffMax, and returns the
// set then held.
func (k *keySource) refetch(ctx context.Context) ([]key, error) {
	k.mu.Lock()
	now := time.Now()
	if now.Sub(k.lastRefetch) < k.s.backoffMax {
		keys := k.keys
		k.mu.Unlock()
		return keys, nil
	}
	k.lastRefetch = now
	ch := k.updated
	k.mu.Unlock()
	select {
	case k.wake <- struct{}{}:
	default:
	}
	return k.wait(ctx, ch)
}

// wait waits for the fetch attempt that closes ch.
func (k *keySource) wait(ctx context.Context, ch chan struct{}) ([]key, error) {
	select {
	case <-ch:
	case <-ctx.Done():
		return nil, noJWKS(ctx.Err())
	case <-k.ctx.Done():
		return nil, noJWKS(k.ctx.Err())
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys == nil {
		return nil, noJWKS(k.lastErr)
	}
	return k.keys, nil
}

func (k *keySource) loop() {
	defer close(k.done)
	backoff := k.s.backoff
	for {
		err := k.fetchOnce()
		wait := k.s.refresh
		if err != nil {
			wait, backoff = backoff, min(2*backoff, k.s.backoffMax)
		} else {
			backoff = k.s.backoff
		}
		t := time.NewTimer(wait)
		select {
		case <-k.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-k.wake:
			t.Stop()
		}
	}
}

// fetchOnce fetches and installs the JWKS, keeping the last good set on failure.
func (k *keySource) fetchOnce() error {
	keys, sum, err := k.fetch()
	k.mu.Lock()
	changed := err == nil && sum != k.sum
	if err == nil {
		k.keys, k.sum = keys, sum
	}
	k.lastErr = err
	k.attempts++
	close(k.updated)
	k.updated = make(chan struct{})
	k.mu.Unlock()
	if changed {
		k.onChange()
	}
	return err
}

func (k *keySource) fetch() ([]key, [32]byte, error) {
	req, err := http.NewRequestWithContext(k.ctx, http.MethodGet, k.s.url.String(), nil)
	if err != nil {
		return nil, [32]byte{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, [32]byte{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, [32]byte{}, fmt.Errorf("GET %s: %s", k.s.url.Redacted(), resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxJWKSBytes+1))
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("GET %s: %w", k.s.url.Redacted(), err)
	}
	keys, err := parseJWKS(body)
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("GET %s: %w", k.s.url.Redacted(), err)
	}
	return keys, sha256.Sum256(body), nil
}

// lastError is the error of the last fetch attempt, nil when it succeeded.
func (k *keySource) lastError() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lastErr
}
