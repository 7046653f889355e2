package config

import (
	"crypto/tls"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestBootstrapAndPattern(t *testing.T) {
	tests := map[string]struct {
		in            string
		bootstrap     string
		pattern       string
		errorContains string
	}{
		"a pattern ending the first label gives bootstrap and broker hosts": {
			in: "my-cluster-%.example.com", bootstrap: "my-cluster-bootstrap.example.com", pattern: "my-cluster-broker-$(nodeId).example.com",
		},
		"a percent in the middle of the first label is kept in place": {
			in: "kafka-%-east.example.com", bootstrap: "kafka-bootstrap-east.example.com", pattern: "kafka-broker-$(nodeId)-east.example.com",
		},
		"an in-cluster service domain works": {
			in: "c-%.ns.svc.cluster.local", bootstrap: "c-bootstrap.ns.svc.cluster.local", pattern: "c-broker-$(nodeId).ns.svc.cluster.local",
		},
		"no percent is refused":            {in: "my-cluster.example.com", errorContains: "exactly one %"},
		"two percents are refused":         {in: "a-%-%.example.com", errorContains: "exactly one %"},
		"a percent in a later label fails": {in: "a.%.example.com", errorContains: "first label"},
		"an empty prefix is refused":       {in: "%.example.com", errorContains: "non-empty prefix"},
		"a single label is refused":        {in: "a-%", errorContains: "domain after"},
		"an overlong broker label is refused": {
			in: strings.Repeat("a", 48) + "-%.example.com", errorContains: "broker hosts",
		},
		"invalid characters are refused": {in: "a_b-%.example.com", errorContains: "invalid character"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b, p, err := BootstrapAndPattern(tc.in)
			if tc.errorContains != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errorContains) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.errorContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b != tc.bootstrap || p != tc.pattern {
				t.Fatalf("got %q %q, want %q %q", b, p, tc.bootstrap, tc.pattern)
			}
		})
	}
}

func TestMatchBroker(t *testing.T) {
	vc := VirtualCluster{BrokerPattern: "my-broker-$(nodeId).example.com"}
	tests := map[string]struct {
		host string
		id   int32
		ok   bool
	}{
		"a node id matches":                 {host: "my-broker-3.example.com", id: 3, ok: true},
		"matching ignores case":             {host: "MY-Broker-12.EXAMPLE.com", id: 12, ok: true},
		"node id zero matches":              {host: "my-broker-0.example.com", id: 0, ok: true},
		"a leading zero does not match":     {host: "my-broker-03.example.com"},
		"letters in the id do not match":    {host: "my-broker-x.example.com"},
		"an empty id does not match":        {host: "my-broker-.example.com"},
		"another suffix does not match":     {host: "my-broker-1.example.org"},
		"an id above int32 does not match":  {host: "my-broker-99999999999.example.com"},
		"a negative id does not match":      {host: "my-broker--1.example.com"},
		"the bootstrap host does not match": {host: "my-bootstrap.example.com"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			id, ok := vc.MatchBroker(tc.host)
			if ok != tc.ok || id != tc.id {
				t.Fatalf("MatchBroker(%q) = %d %v, want %d %v", tc.host, id, ok, tc.id, tc.ok)
			}
		})
	}
}

func TestParseExample(t *testing.T) {
	b, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.MaxFrameBytes != DefaultMaxFrameBytes || c.Limits.IdleTimeout.Duration != 5*time.Minute {
		t.Fatalf("limits not defaulted: %+v", c.Limits)
	}
	if len(c.VirtualClusters[0].Filters) != 0 || len(c.VirtualClusters[1].Filters) == 0 || !strings.Contains(c.VirtualClusters[1].Filters[0].Name, "encryption") {
		t.Fatalf("filters not read: %+v", c.VirtualClusters)
	}
	if string(c.VirtualClusters[1].Filters[0].Config) != `{"kms":"VaultKmsService"}` {
		t.Fatalf("filter config = %s", c.VirtualClusters[1].Filters[0].Config)
	}
	// A round trip through Marshal gives the same model.
	out, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	c2, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, c2) {
		t.Fatalf("round trip differs:\n%s", out)
	}
	c.RemapPaths("/opt/kroxylicious/", "/tmp/x/")
	if got := c.Listeners[0].KeyPairs[0].CertificateFile; got != "/tmp/x/secrets/tls/tls/server-cert/tls.crt" {
		t.Fatalf("remapped path = %q", got)
	}
}

// TestRemapReachesFilterConfigs: the operator writes filter secrets as paths anywhere in a
// filter's configuration; a remap rewrites them there too, and keeps everything else as written.
func TestRemapReachesFilterConfigs(t *testing.T) {
	c := &Config{VirtualClusters: []VirtualCluster{{Filters: []Filter{
		{Config: json.RawMessage(`{"kmsConfig":{"keyDir":"/opt/kroxylicious/secrets/filter/keks","n":12345678901234567890},"list":["/opt/kroxylicious/a","/elsewhere"]}`)},
		{Config: json.RawMessage(`not json`)},
	}}}}
	c.RemapPaths("/opt/kroxylicious/", "/tmp/x/")
	want := `{"kmsConfig":{"keyDir":"/tmp/x/secrets/filter/keks","n":12345678901234567890},"list":["/tmp/x/a","/elsewhere"]}`
	if got := string(c.VirtualClusters[0].Filters[0].Config); got != want {
		t.Errorf("remapped filter config:\n%s\nwant\n%s", got, want)
	}
	if got := string(c.VirtualClusters[0].Filters[1].Config); got != "not json" {
		t.Errorf("a config that is not JSON changed: %s", got)
	}
}

func TestValidate(t *testing.T) {
	base := func() *Config {
		c := &Config{
			Version:   Version,
			Listeners: []Listener{{Name: "tls", Port: 9292, KeyPairs: []KeyPair{{CertificateFile: "c", PrivateKeyFile: "k"}}}},
			VirtualClusters: []VirtualCluster{{
				Name: "a", Listener: "tls", BootstrapHost: "a-bootstrap.example.com", BrokerPattern: "a-broker-$(nodeId).example.com",
				TargetBootstrap: "kafka:9092",
			}},
		}
		c.Default()
		return c
	}
	tests := map[string]struct {
		mutate  func(*Config)
		wantErr string
	}{
		"a valid config passes": {mutate: func(*Config) {}},
		"a wrong version fails": {mutate: func(c *Config) { c.Version = "v0" }, wantErr: "version: must be"},
		"an unknown listener reference fails": {
			mutate: func(c *Config) { c.VirtualClusters[0].Listener = "x" }, wantErr: `virtualClusters[0].listener: no listener named "x"`,
		},
		"a pattern without placeholder fails": {
			mutate: func(c *Config) { c.VirtualClusters[0].BrokerPattern = "a.example.com" }, wantErr: "virtualClusters[0].brokerPattern: must contain",
		},
		"a target without port fails": {
			mutate: func(c *Config) { c.VirtualClusters[0].TargetBootstrap = "kafka" }, wantErr: "virtualClusters[0].targetBootstrap",
		},
		"an unknown TLS option fails": {
			mutate: func(c *Config) { c.Listeners[0].Options = map[string]string{"kroxylicious.io/foo": "x"} }, wantErr: `listeners[0].options: unknown option`,
		},
		"an unknown protocol name fails": {
			mutate: func(c *Config) {
				c.Listeners[0].Options = map[string]string{OptionEnabledProtocols: "TLSv1.4"}
			}, wantErr: `unknown protocol "TLSv1.4"`,
		},
		"an unknown upstream cipher fails": {
			mutate: func(c *Config) {
				c.VirtualClusters[0].UpstreamTLS = &UpstreamTLS{Options: map[string]string{OptionDisabledCipherSuites: "TLS_FOO"}}
			}, wantErr: `virtualClusters[0].upstreamTLS.options`,
		},
		"a duplicate bootstrap host on one listener fails": {
			mutate: func(c *Config) {
				vc := c.VirtualClusters[0]
				vc.Name = "b"
				vc.BrokerPattern = "b-broker-$(nodeId).example.com"
				c.VirtualClusters = append(c.VirtualClusters, vc)
			}, wantErr: `virtualClusters[1].bootstrapHost: "a-bootstrap.example.com" is also the bootstrap host`,
		},
		"a plain listener without port per broker fails": {
			mutate: func(c *Config) { c.Listeners[0].KeyPairs = nil }, wantErr: "listeners[0].portPerBroker: required",
		},
		"a management port clash fails": {
			mutate: func(c *Config) { c.Management.Port = 9292 }, wantErr: "management.port: port 9292 already used",
		},
		"a negative per-source limit fails": {
			mutate: func(c *Config) { c.Limits.MaxConnectionsPerSource = -1 }, wantErr: "limits.maxConnectionsPerSource",
		},
		"a negative handshake rate fails": {
			mutate: func(c *Config) { c.Limits.HandshakesPerSecond = -1 }, wantErr: "limits.handshakesPerSecond",
		},
		"a negative first request timeout fails": {
			mutate: func(c *Config) { c.Limits.FirstRequestTimeout.Duration = -time.Second }, wantErr: "limits.firstRequestTimeout",
		},
		"a negative write timeout fails": {
			mutate: func(c *Config) { c.Limits.WriteTimeout.Duration = -time.Second }, wantErr: "limits.writeTimeout",
		},
		"an insecure listener cipher fails": {
			mutate: func(c *Config) {
				c.Listeners[0].Options = map[string]string{OptionEnabledCipherSuites: "TLS_RSA_WITH_RC4_128_SHA"}
			}, wantErr: "is insecure",
		},
		"a small frame limit fails": {
			mutate: func(c *Config) { c.Limits.MaxFrameBytes = 10 }, wantErr: "limits.maxFrameBytes",
		},
		"a filtered frame limit above the frame limit fails": {
			mutate: func(c *Config) { c.Limits.MaxFilteredFrameBytes = c.Limits.MaxFrameBytes + 1 }, wantErr: "limits.maxFilteredFrameBytes",
		},
		"a negative decompression ratio fails": {
			mutate: func(c *Config) { c.Limits.DecompressionRatio = -1 }, wantErr: "limits.decompressionRatio",
		},
		"a filter budget under four batches fails": {
			mutate: func(c *Config) { c.Limits.FilterMemoryBytes = 3 * int64(c.Limits.MaxBatchBytes) }, wantErr: "limits.filterMemoryBytes: must be at least four times maxBatchBytes",
		},
		"upstream brokers pass": {mutate: func(c *Config) {
			c.VirtualClusters[0].UpstreamBrokers = []UpstreamBroker{{NodeID: 0, Address: "b-0.kafka.svc.cluster.local.:9093"}, {NodeID: 3, Address: "b-3:9093"}}
		}},
		"a duplicate upstream broker fails": {
			mutate: func(c *Config) {
				c.VirtualClusters[0].UpstreamBrokers = []UpstreamBroker{{NodeID: 1, Address: "b:1"}, {NodeID: 1, Address: "c:1"}}
			}, wantErr: "virtualClusters[0].upstreamBrokers[1].nodeId: duplicate node id 1",
		},
		"an upstream broker without port fails": {
			mutate:  func(c *Config) { c.VirtualClusters[0].UpstreamBrokers = []UpstreamBroker{{NodeID: 1, Address: "b"}} },
			wantErr: "virtualClusters[0].upstreamBrokers[0].address",
		},
		"a negative upstream node id fails": {
			mutate:  func(c *Config) { c.VirtualClusters[0].UpstreamBrokers = []UpstreamBroker{{NodeID: -1, Address: "b:1"}} },
			wantErr: "upstreamBrokers[0].nodeId: must not be negative",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := base()
			tc.mutate(c)
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseRejectsUnknownFields(t *testing.T) {
	_, err := Parse([]byte("version: " + Version + "\nlistenerz: []\n"))
	if err == nil || !strings.Contains(err.Error(), "listenerz") {
		t.Fatalf("error = %v", err)
	}
}

// defaultSuites12 are Go's TLS 1.2 suites, as ResolveTLSOptions lists them when only a TLS 1.3
// suite is disabled.
func defaultSuites12() []uint16 {
	var out []uint16
	for _, cs := range tls.CipherSuites() {
		if supports(cs, tls.VersionTLS12) {
			out = append(out, cs.ID)
		}
	}
	return out
}

func TestResolveTLSOptions(t *testing.T) {
	ecdhe := tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
	tests := map[string]struct {
		opts    map[string]string
		want    TLSParams
		wantErr string
	}{
		"no options give TLS 1.2 to 1.3 with Go's suites": {
			want: TLSParams{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13, Suites13: all13},
		},
		"only TLS 1.3 enabled": {
			opts: map[string]string{OptionEnabledProtocols: "TLSv1.3"},
			want: TLSParams{MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13, Suites13: all13},
		},
		"TLS 1.2 disabled leaves TLS 1.3": {
			opts: map[string]string{OptionDisabledProtocols: "TLSv1, TLSv1.1,TLSv1.2"},
			want: TLSParams{MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13, Suites13: all13},
		},
		"enabling TLS 1.1 is refused": {
			opts: map[string]string{OptionEnabledProtocols: "TLSv1.1,TLSv1.2"}, wantErr: "below the minimum",
		},
		"an unknown protocol is refused": {
			opts: map[string]string{OptionDisabledProtocols: "TLS1.2"}, wantErr: `unknown protocol "TLS1.2"`,
		},
		"an insecure suite (3DES) is refused": {
			opts: map[string]string{OptionEnabledCipherSuites: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA"}, wantErr: "is insecure",
		},
		"an insecure suite (RC4, JSSE spelling) is refused": {
			opts: map[string]string{OptionEnabledCipherSuites: "SSL_RSA_WITH_RC4_128_SHA"}, wantErr: "is insecure",
		},
		"only TLS 1.2 suites enabled turns TLS 1.3 off as JSSE does": {
			opts: map[string]string{OptionEnabledCipherSuites: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			want: TLSParams{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{ecdhe}},
		},
		"all TLS 1.3 suites plus a TLS 1.2 suite": {
			opts: map[string]string{OptionEnabledCipherSuites: "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			want: TLSParams{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13, CipherSuites: []uint16{ecdhe}, Suites13: all13},
		},
		"only TLS 1.3 suites turns TLS 1.2 off": {
			opts: map[string]string{OptionEnabledCipherSuites: "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256"},
			want: TLSParams{MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13, Suites13: all13},
		},
		"the seed's example: TLS 1.3 in FIPS 140-3 mode, AES-128-GCM not enforced off": {
			opts: map[string]string{OptionEnabledProtocols: "TLSv1.3", OptionDisabledProtocols: "TLSv1.2",
				OptionEnabledCipherSuites: "TLS_AES_256_GCM_SHA384", OptionDisabledCipherSuites: "TLS_CHACHA20_POLY1305_SHA256"},
			want: TLSParams{MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13, FIPS: true, Suites13: fips13,
				Unenforced: []string{"TLS_AES_128_GCM_SHA256 stays enabled (Go enables TLS 1.3 suites as a set: all three, or in FIPS 140-3 mode both AES-GCM ones)"}},
		},
		"disabling ChaCha20 alone asks for FIPS 140-3 mode and enforces it exactly": {
			opts: map[string]string{OptionDisabledCipherSuites: "TLS_CHACHA20_POLY1305_SHA256"},
			want: TLSParams{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13, CipherSuites: defaultSuites12(), FIPS: true, Suites13: fips13},
		},
		"disabling an AES suite cannot be enforced and says so": {
			opts: map[string]string{OptionEnabledProtocols: "TLSv1.3", OptionDisabledCipherSuites: "TLS_AES_128_GCM_SHA256"},
			want: TLSParams{MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13, Suites13: all13,
				Unenforced: []string{"TLS_AES_128_GCM_SHA256 stays enabled (Go enables TLS 1.3 suites as a set: all three, or in FIPS 140-3 mode both AES-GCM ones)"}},
		},
		"disabling every TLS 1.3 suite turns TLS 1.3 off": {
			opts:    map[string]string{OptionEnabledProtocols: "TLSv1.3", OptionDisabledCipherSuites: "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256"},
			wantErr: "no TLS protocol version",
		},
		"disabling a TLS 1.3 suite is fine with TLS 1.3 off": {
			opts: map[string]string{OptionDisabledCipherSuites: "TLS_AES_128_GCM_SHA256", OptionEnabledProtocols: "TLSv1.2",
				OptionEnabledCipherSuites: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			want: TLSParams{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{ecdhe}},
		},
		"JSSE SSL_ prefixed names map to TLS_ names (every such suite is insecure, so refused as that, not as unknown)": {
			opts:    map[string]string{OptionEnabledCipherSuites: "SSL_RSA_WITH_3DES_EDE_CBC_SHA,TLS_EMPTY_RENEGOTIATION_INFO_SCSV"},
			wantErr: `cipher suite "SSL_RSA_WITH_3DES_EDE_CBC_SHA" is insecure`,
		},
		"an unknown cipher suite is refused": {
			opts: map[string]string{OptionEnabledCipherSuites: "TLS_NOPE"}, wantErr: `unknown cipher suite "TLS_NOPE"`,
		},
		"disabling every TLS 1.2 suite with TLS 1.3 off leaves nothing": {
			opts: map[string]string{OptionEnabledProtocols: "TLSv1.2", OptionEnabledCipherSuites: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
				OptionDisabledCipherSuites: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			wantErr: "no TLS protocol version",
		},
		"an unknown option key is refused": {
			opts: map[string]string{"kroxylicious.io/enabled-protocol": "TLSv1.3"}, wantErr: "unknown option",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ResolveTLSOptions(tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
