// Package config is the contract between the kafkalink operator, which writes the proxy
// configuration into a ConfigMap, and kafkalink-proxy, which loads it.
//
// The file is YAML (or JSON), versioned by the Version field, and holds no secrets: key
// material is referenced by file path (the operator mounts Secrets under
// /opt/kroxylicious/secrets/...). Every path is re-read by the proxy when the file changes
// on disk, so certificate rotation needs no restart.
//
// Routing model: a TLS listener (one port) serves many virtual clusters, chosen by the TLS
// SNI host name. The bootstrap host of a virtual cluster goes to its target bootstrap; a host
// matching its broker pattern (BrokerPattern with the $(nodeId) placeholder) goes to the
// upstream broker with that node id. A listener without key pairs is plain TCP; having no
// SNI, it serves exactly one virtual cluster, port-per-broker (see PortPerBroker).
//
// Filters: a virtual cluster's filters run in the proxy's filter chain (package proxy/filter).
// A filter of a type the proxy does not implement, or one that cannot start, fails its virtual
// cluster closed: forwarding traffic unfiltered that the user asked to filter would be a silent
// security failure. Validate accepts such a configuration (so the other virtual clusters keep
// working); the proxy refuses the affected virtual cluster with a log line and the
// kafkalink_proxy_virtual_cluster_refused metric.
package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Version is the configuration version this release's operator writes. Parse also reads the
// previous version, if any (AcceptedVersions).
const Version = "kafkalink.io/proxy-config/v1"

// NodeIDPlaceholder is the placeholder for the broker node id in a BrokerPattern.
const NodeIDPlaceholder = "$(nodeId)"

// Defaults applied by Parse for limits and the management port.
const (
	DefaultMaxFrameBytes       = 100 * 1024 * 1024 // Kafka's own socket.request.max.bytes
	DefaultIdleTimeout         = 10 * time.Minute  // Kafka's connections.max.idle.ms
	DefaultMaxConnections      = 10000
	DefaultDrainTimeout        = 30 * time.Second
	DefaultUpstreamDialTimeout = 10 * time.Second
	DefaultUpstreamRetryBudget = 30 * time.Second
	DefaultHandshakeTimeout    = 10 * time.Second
	// DefaultFirstRequestTimeout bounds the time from the end of the TLS handshake (or the
	// accept, on a plain listener) to the first complete request.
	DefaultFirstRequestTimeout = 10 * time.Second
	// DefaultMaxConnectionsPerSource caps concurrent connections from one source IP. Generous,
	// as many clients can share one address behind NAT.
	DefaultMaxConnectionsPerSource = 200
	// DefaultHandshakesPerSecond is the rate of downstream TLS handshakes the proxy starts,
	// over all listeners; bursts of up to the same number are allowed.
	DefaultHandshakesPerSecond = 1000
	// DefaultWriteTimeout bounds one write to a client or broker that does not read.
	DefaultWriteTimeout   = 30 * time.Second
	DefaultManagementPort = 9190
	// DefaultMaxFilteredFrameBytes is the largest frame a filtered virtual cluster decodes:
	// filters hold a decoded copy and a re-encoded copy, so their frames are kept far below the
	// byte path's. Kafka's producers default to 1 MiB requests (max.request.size).
	DefaultMaxFilteredFrameBytes = 16 * 1024 * 1024
	// DefaultMaxBatchBytes is the largest record batch a filter decompresses: a few times
	// Kafka's message.max.bytes (1 MiB), which bounds a batch as the broker stores it.
	DefaultMaxBatchBytes = 8 * 1024 * 1024
	// DefaultDecompressionRatio is how many times its compressed size a request's or a
	// response's records may take once decompressed (beyond a floor of DecompressionFloor):
	// zstd reaches 10 to 20 on JSON and logs, lz4 84 on the bench's three-quarters-text values,
	// a compression bomb thousands. It is also the most decompression work one byte from a
	// client can cause.
	DefaultDecompressionRatio = 128
	// DecompressionFloor is what any request or response may decompress to whatever its size,
	// so a small request of very repetitive records still passes. It is also the most a tiny
	// request can make the proxy decompress, so it is kept small.
	DecompressionFloor = 64 * 1024
	// DefaultFilterMemoryBytes is the process-wide budget of filter buffers (decompressed
	// records, re-encoded batches), shared by every connection.
	DefaultFilterMemoryBytes = 256 * 1024 * 1024
)

// Option keys accepted in Listener.Options and UpstreamTLS.Options. Values are comma-separated
// Java (JSSE) names such as TLSv1.3 or TLS_AES_256_GCM_SHA384; see ResolveTLSOptions.
const (
	OptionEnabledProtocols     = "kroxylicious.io/enabled-protocols"
	OptionDisabledProtocols    = "kroxylicious.io/disabled-protocols"
	OptionEnabledCipherSuites  = "kroxylicious.io/enabled-cipher-suites"
	OptionDisabledCipherSuites = "kroxylicious.io/disabled-cipher-suites"
)

// Config is the whole proxy configuration.
type Config struct {
	// Version must be Version.
	Version string `json:"version"`
	// Listeners are the ports the proxy binds.
	Listeners []Listener `json:"listeners,omitempty"`
	// VirtualClusters are the Kafka clusters exposed through the listeners.
	VirtualClusters []VirtualCluster `json:"virtualClusters,omitempty"`
	// Management configures the /livez, /readyz and /metrics port.
	Management Management `json:"management,omitempty"`
	// Limits bound resource use; zero values take the documented defaults.
	Limits Limits `json:"limits,omitempty"`
}

// Listener is one bound port.
type Listener struct {
	// Name identifies the listener; VirtualCluster.Listener refers to it.
	Name string `json:"name"`
	// Port is the TCP port to bind.
	Port int32 `json:"port"`
	// BindAddress is the address to bind; empty means all interfaces.
	BindAddress string `json:"bindAddress,omitempty"`
	// KeyPairs are the server certificates of this listener. The proxy picks one per SNI
	// host: the SAN (wildcards included, else the common name) must cover the host, and among
	// those the one expiring last wins. Empty means a plain TCP listener.
	KeyPairs []KeyPair `json:"keyPairs,omitempty"`
	// ClientCAFiles, when set, turn on mutual TLS: clients must present a certificate signed
	// by one of these PEM bundles.
	ClientCAFiles []string `json:"clientCAFiles,omitempty"`
	// Options are TLS protocol and cipher options (the Option* keys).
	Options map[string]string `json:"options,omitempty"`
	// PortPerBroker is required on plain listeners: broker N is served on
	// FirstBrokerPort+N, the bootstrap on Port. Ignored on TLS listeners.
	PortPerBroker *PortPerBroker `json:"portPerBroker,omitempty"`
}

// PortPerBroker maps node ids to ports on a plain listener, where there is no SNI.
type PortPerBroker struct {
	// FirstBrokerPort is the port of node id 0.
	FirstBrokerPort int32 `json:"firstBrokerPort"`
	// MaxNodeID is the highest node id served; ports FirstBrokerPort..FirstBrokerPort+MaxNodeID are bound.
	MaxNodeID int32 `json:"maxNodeId"`
}

// KeyPair is a PEM certificate chain and its private key.
type KeyPair struct {
	// CertificateFile is a PEM file: the leaf certificate first, then intermediates.
	CertificateFile string `json:"certificateFile"`
	// PrivateKeyFile is a PEM private key (PKCS#1, PKCS#8 or EC).
	PrivateKeyFile string `json:"privateKeyFile"`
}

// VirtualCluster is one Kafka cluster exposed by the proxy.
type VirtualCluster struct {
	// Name identifies the virtual cluster in logs and metrics.
	Name string `json:"name"`
	// Listener is the name of the listener serving this virtual cluster.
	Listener string `json:"listener"`
	// BootstrapHost is the SNI host name (or, on a plain listener, the advertised host) of the bootstrap.
	BootstrapHost string `json:"bootstrapHost"`
	// BrokerPattern is the broker host name with NodeIDPlaceholder, e.g. my-cluster-broker-$(nodeId).example.com.
	BrokerPattern string `json:"brokerPattern"`
	// BrokerIdentity, when set, names brokers by the hash mapping instead of their node ids
	// (BrokerNames): clients see host names that do not reveal node ids.
	BrokerIdentity *BrokerIdentity `json:"brokerIdentity,omitempty"`
	// AdvertisedPort is the port given to clients in rewritten broker addresses; zero means
	// the listener port. Set it when a Service or load balancer maps another port to the listener.
	AdvertisedPort int32 `json:"advertisedPort,omitempty"`
	// TargetBootstrap is the upstream bootstrap address, host:port.
	TargetBootstrap string `json:"targetBootstrap"`
	// UpstreamBrokers, when set, are the upstream addresses of the brokers, by node id: the
	// proxy connects to them directly and never asks the bootstrap for broker addresses with a
	// Metadata request of its own. The operator writes them for a Strimzi Kafka backend, whose
	// naming it knows. A node id not listed is unknown. Empty means the addresses are learned from
	// the Metadata responses the proxy relays, or asked for when unknown.
	UpstreamBrokers []UpstreamBroker `json:"upstreamBrokers,omitempty"`
	// UpstreamTLS, when set, makes upstream connections use TLS.
	UpstreamTLS *UpstreamTLS `json:"upstreamTLS,omitempty"`
	// Discovery, when set, is the proxy's own SASL user at the cluster: for its Metadata request
	// for an unknown broker (needed behind a bootstrap that requires SASL), and, when a filter
	// authenticates the clients itself (SaslTermination), for every upstream connection, which
	// then carries the proxy's identity instead of the client's. One credential, one place: the
	// operator writes it from the KafkaRoute rule's discoveryCredential.
	Discovery *DiscoveryCredential `json:"discovery,omitempty"`
	// Filters are the virtual cluster's filters, in order (package proxy/filter). A virtual
	// cluster whose filters cannot all start is refused (fail closed), never served unfiltered.
	Filters []Filter `json:"filters,omitempty"`
}

// UpstreamTLS configures TLS towards the Kafka cluster.
type UpstreamTLS struct {
	// CAFiles are PEM trust anchors; empty means the system roots.
	CAFiles []string `json:"caFiles,omitempty"`
	// CertificateFile is the client certificate chain for mutual TLS; PrivateKeyFile must be set with it.
	CertificateFile string `json:"certificateFile,omitempty"`
	// PrivateKeyFile is the client private key.
	PrivateKeyFile string `json:"privateKeyFile,omitempty"`
	// ServerName overrides the host name verified and sent as SNI; empty means the dialled host.
	ServerName string `json:"serverName,omitempty"`
	// Options are TLS protocol and cipher options (the Option* keys).
	Options map[string]string `json:"options,omitempty"`
	// InsecureSkipVerify turns off server certificate verification. For tests only.
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// Filter is a Kroxylicious filter, passed through from a KafkaFilter resource.
type Filter struct {
	// Name is the filter's name.
	Name string `json:"name"`
	// Type is the filter's type (a Kroxylicious filter factory class name).
	Type string `json:"type"`
	// Config is the filter's configuration, kept verbatim as JSON.
	Config json.RawMessage `json:"config,omitempty"`
}

// Management configures the management HTTP port.
type Management struct {
	// Port is the management port; zero means DefaultManagementPort.
	Port int32 `json:"port,omitempty"`
	// BindAddress is the address to bind; empty means all interfaces.
	BindAddress string `json:"bindAddress,omitempty"`
	// Metrics serves Prometheus metrics on /metrics when true.
	Metrics bool `json:"metrics,omitempty"`
}

// Limits bound resource use. Zero values take the defaults.
type Limits struct {
	// MaxFrameBytes is the largest Kafka frame accepted in either direction, default 100 MiB.
	MaxFrameBytes int32 `json:"maxFrameBytes,omitempty"`
	// IdleTimeout closes a connection whose client sent no request for this long, default 10m
	// (Kafka's connections.max.idle.ms). Responses still flowing to the client do not keep it
	// open; a client or broker that stops reading is closed by WriteTimeout instead.
	IdleTimeout Duration `json:"idleTimeout,omitempty"`
	// MaxConnections caps concurrent client connections over all listeners.
	MaxConnections int32 `json:"maxConnections,omitempty"`
	// DrainTimeout is how long shutdown waits for connections to finish.
	DrainTimeout Duration `json:"drainTimeout,omitempty"`
	// UpstreamDialTimeout bounds one upstream dial attempt, TLS handshake included.
	UpstreamDialTimeout Duration `json:"upstreamDialTimeout,omitempty"`
	// UpstreamRetryBudget bounds the total time spent retrying upstream dials with backoff.
	UpstreamRetryBudget Duration `json:"upstreamRetryBudget,omitempty"`
	// HandshakeTimeout bounds the downstream TLS handshake.
	HandshakeTimeout Duration `json:"handshakeTimeout,omitempty"`
	// FirstRequestTimeout closes a connection whose client has not sent a complete first
	// request this long after the TLS handshake (after the accept on a plain listener),
	// default 10s. The proxy dials the broker only once that request is in.
	FirstRequestTimeout Duration `json:"firstRequestTimeout,omitempty"`
	// MaxConnectionsPerSource caps concurrent client connections from one source IP address,
	// default 200. Clients behind one NAT share an address: raise it for large NATed fleets.
	MaxConnectionsPerSource int32 `json:"maxConnectionsPerSource,omitempty"`
	// HandshakesPerSecond caps the downstream TLS handshakes started per second over all
	// listeners (a token bucket with a burst of the same size), default 1000. Connections
	// above it are closed at once.
	HandshakesPerSecond int32 `json:"handshakesPerSecond,omitempty"`
	// WriteTimeout closes a connection when one write to the client or to the broker does not
	// complete within it (a peer that stopped reading), default 30s.
	WriteTimeout Duration `json:"writeTimeout,omitempty"`
	// MaxFilteredFrameBytes is the largest frame a filter decodes or re-encodes, in either
	// direction, default 16 MiB; at most MaxFrameBytes. A larger request of a key a filter
	// wants closes the connection; a larger re-encoded Produce is refused (MESSAGE_TOO_LARGE).
	MaxFilteredFrameBytes int32 `json:"maxFilteredFrameBytes,omitempty"`
	// MaxBatchBytes is the largest record batch a filter decompresses, default 8 MiB.
	MaxBatchBytes int32 `json:"maxBatchBytes,omitempty"`
	// DecompressionRatio bounds the decompressed records of one request or response to this
	// many times the frame's size (at least 64 KiB, at most MaxFrameBytes), default 128.
	DecompressionRatio int32 `json:"decompressionRatio,omitempty"`
	// FilterMemoryBytes is the process-wide budget of filter buffers, default 256 MiB: a
	// request that cannot get its share within a moment is refused with a retriable error.
	FilterMemoryBytes int64 `json:"filterMemoryBytes,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("30s", "10m").
type Duration struct {
	time.Duration
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads a duration string, or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		d.Duration = v
		return nil
	}
	secs, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("duration must be a string like \"30s\" or a number of seconds")
	}
	d.Duration = time.Duration(secs * float64(time.Second))
	return nil
}

// Load reads, parses and validates the configuration file at path.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse decodes a YAML or JSON configuration strictly (unknown fields are errors), converts an
// accepted previous version (see AcceptedVersions and the skew policy in version.go), applies
// defaults and validates it.
func Parse(b []byte) (*Config, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	if j, err = upgrade(j); err != nil {
		return nil, err
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	c.Default()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Marshal writes the configuration as YAML, the form the operator puts in its ConfigMap.
func (c *Config) Marshal() ([]byte, error) {
	return yaml.Marshal(c)
}

// Default fills in zero limits and the management port.
func (c *Config) Default() {
	l := &c.Limits
	if l.MaxFrameBytes == 0 {
		l.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if l.IdleTimeout.Duration == 0 {
		l.IdleTimeout.Duration = DefaultIdleTimeout
	}
	if l.MaxConnections == 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	if l.DrainTimeout.Duration == 0 {
		l.DrainTimeout.Duration = DefaultDrainTimeout
	}
	if l.UpstreamDialTimeout.Duration == 0 {
		l.UpstreamDialTimeout.Duration = DefaultUpstreamDialTimeout
	}
	if l.UpstreamRetryBudget.Duration == 0 {
		l.UpstreamRetryBudget.Duration = DefaultUpstreamRetryBudget
	}
	if l.HandshakeTimeout.Duration == 0 {
		l.HandshakeTimeout.Duration = DefaultHandshakeTimeout
	}
	if l.FirstRequestTimeout.Duration == 0 {
		l.FirstRequestTimeout.Duration = DefaultFirstRequestTimeout
	}
	if l.MaxConnectionsPerSource == 0 {
		l.MaxConnectionsPerSource = DefaultMaxConnectionsPerSource
	}
	if l.HandshakesPerSecond == 0 {
		l.HandshakesPerSecond = DefaultHandshakesPerSecond
	}
	if l.WriteTimeout.Duration == 0 {
		l.WriteTimeout.Duration = DefaultWriteTimeout
	}
	if l.MaxFilteredFrameBytes == 0 {
		l.MaxFilteredFrameBytes = min(DefaultMaxFilteredFrameBytes, l.MaxFrameBytes)
	}
	if l.MaxBatchBytes == 0 {
		l.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if l.DecompressionRatio == 0 {
		l.DecompressionRatio = DefaultDecompressionRatio
	}
	if l.FilterMemoryBytes == 0 {
		l.FilterMemoryBytes = DefaultFilterMemoryBytes
	}
	if c.Management.Port == 0 {
		c.Management.Port = DefaultManagementPort
	}
}

// Listener returns the listener with the given name, or nil.
func (c *Config) Listener(name string) *Listener {
	for i := range c.Listeners {
		if c.Listeners[i].Name == name {
			return &c.Listeners[i]
		}
	}
	return nil
}

// TLS reports whether the listener terminates TLS.
func (l *Listener) TLS() bool { return len(l.KeyPairs) > 0 }

// Port returns the port advertised to clients for this virtual cluster's brokers on a TLS listener.
func (vc *VirtualCluster) Port(l *Listener) int32 {
	if vc.AdvertisedPort != 0 {
		return vc.AdvertisedPort
	}
	return l.Port
}

// RemapPaths rewrites every file path that starts with from so that it starts with to
// instead. The end-to-end runner uses it to lay mounted Secrets out under a temporary folder.
func (c *Config) RemapPaths(from, to string) {
	re := func(p *string) {
		if strings.HasPrefix(*p, from) {
			*p = to + strings.TrimPrefix(*p, from)
		}
	}
	for i := range c.Listeners {
		l := &c.Listeners[i]
		for j := range l.KeyPairs {
			re(&l.KeyPairs[j].CertificateFile)
			re(&l.KeyPairs[j].PrivateKeyFile)
		}
		for j := range l.ClientCAFiles {
			re(&l.ClientCAFiles[j])
		}
	}
	for i := range c.VirtualClusters {
		for j := range c.VirtualClusters[i].Filters {
			f := &c.VirtualClusters[i].Filters[j]
			f.Config = remapJSONStrings(f.Config, re)
		}
		if b := c.VirtualClusters[i].BrokerIdentity; b != nil {
			re(&b.KeyFile)
		}
		u := c.VirtualClusters[i].UpstreamTLS
		if u == nil {
			continue
		}
		for j := range u.CAFiles {
			re(&u.CAFiles[j])
		}
		re(&u.CertificateFile)
		re(&u.PrivateKeyFile)
	}
}

// remapJSONStrings applies re to every string of a filter's configuration: the operator writes
// $(secretFile:…) and $(secretDir:…) as paths anywhere in it. A configuration that is not JSON is
// left for the filter to refuse.
func remapJSONStrings(raw json.RawMessage, re func(*string)) json.RawMessage {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers stay as written
	if len(raw) == 0 || dec.Decode(&v) != nil {
		return raw
	}
	var walk func(any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case string:
			re(&t)
			return t
		case map[string]any:
			for k, e := range t {
				t[k] = walk(e)
			}
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
		}
		return v
	}
	out, err := json.Marshal(walk(v))
	if err != nil {
		return raw
	}
	return out
}

// Files lists every file the configuration refers to, for change detection.
func (c *Config) Files() []string {
	var out []string
	for _, l := range c.Listeners {
		for _, kp := range l.KeyPairs {
			out = append(out, kp.CertificateFile, kp.PrivateKeyFile)
		}
		out = append(out, l.ClientCAFiles...)
	}
	for _, vc := range c.VirtualClusters {
		if b := vc.BrokerIdentity; b != nil {
			out = append(out, b.KeyFile)
		}
		if u := vc.UpstreamTLS; u != nil {
			out = append(out, u.CAFiles...)
			if u.CertificateFile != "" {
				out = append(out, u.CertificateFile, u.PrivateKeyFile)
			}
		}
	}
	return out
}
