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
// Filters: kafkalink-proxy implements no filter types. A virtual cluster that lists filters
// is therefore never served, because forwarding traffic unfiltered that the user asked to
// filter would be a silent security failure. Validate accepts such a configuration (so the
// other virtual clusters keep working); the proxy refuses the affected virtual cluster with
// a log line and the kafkalink_proxy_virtual_cluster_refused metric. See
// VirtualCluster.Unservable.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Version is the only configuration version this package understands.
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
	DefaultManagementPort      = 9190
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
	// AdvertisedPort is the port given to clients in rewritten broker addresses; zero means
	// the listener port. Set it when a Service or load balancer maps another port to the listener.
	AdvertisedPort int32 `json:"advertisedPort,omitempty"`
	// TargetBootstrap is the upstream bootstrap address, host:port.
	TargetBootstrap string `json:"targetBootstrap"`
	// UpstreamTLS, when set, makes upstream connections use TLS.
	UpstreamTLS *UpstreamTLS `json:"upstreamTLS,omitempty"`
	// Filters are Kroxylicious filters. kafkalink-proxy implements none, so a virtual cluster
	// with filters is refused (fail closed), never served unfiltered.
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
	// IdleTimeout closes a connection with no traffic in either direction for this long.
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
	// FirstRequestTimeout closes a client connection with no complete request this long after
	// its handshake. (Declared here for the operator; the proxy engineer adds the behaviour.)
	FirstRequestTimeout Duration `json:"firstRequestTimeout,omitempty"`
	// MaxConnectionsPerSource caps concurrent client connections from one source address.
	MaxConnectionsPerSource int32 `json:"maxConnectionsPerSource,omitempty"`
	// HandshakesPerSecond caps new TLS handshakes per second.
	HandshakesPerSecond int32 `json:"handshakesPerSecond,omitempty"`
	// WriteTimeout closes a connection whose peer accepts no written bytes for this long.
	WriteTimeout Duration `json:"writeTimeout,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("30s", "10m").
type Duration struct {
	time.Duration
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.Duration.String())
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

// Parse decodes a YAML or JSON configuration strictly (unknown fields are errors), applies
// defaults and validates it.
func Parse(b []byte) (*Config, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
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

// Unservable returns why the proxy must refuse to serve this virtual cluster, or nil.
// Today that is any filter: kafkalink-proxy implements no filter types and fails closed.
func (vc *VirtualCluster) Unservable() error {
	if len(vc.Filters) == 0 {
		return nil
	}
	names := make([]string, 0, len(vc.Filters))
	for _, f := range vc.Filters {
		names = append(names, f.Name+" ("+f.Type+")")
	}
	return fmt.Errorf("filters are not supported by kafkalink-proxy, refusing to serve traffic unfiltered: %s", strings.Join(names, ", "))
}

// Port returns the port advertised to clients for this virtual cluster's brokers on a TLS listener.
func (vc *VirtualCluster) Port(l *Listener) int32 {
	if vc.AdvertisedPort != 0 {
		return vc.AdvertisedPort
	}
	return l.Port
}

// BrokerHost returns the broker host for node id, from BrokerPattern.
func (vc *VirtualCluster) BrokerHost(nodeID int32) string {
	return strings.Replace(vc.BrokerPattern, NodeIDPlaceholder, strconv.FormatInt(int64(nodeID), 10), 1)
}

// MatchBroker reports the node id if host (case-insensitively) matches BrokerPattern.
// Only canonical decimal node ids match: "01" does not, so each broker has one host name.
func (vc *VirtualCluster) MatchBroker(host string) (int32, bool) {
	prefix, suffix, ok := strings.Cut(vc.BrokerPattern, NodeIDPlaceholder)
	if !ok || len(host) <= len(prefix)+len(suffix) {
		return 0, false
	}
	if !strings.EqualFold(host[:len(prefix)], prefix) || !strings.EqualFold(host[len(host)-len(suffix):], suffix) {
		return 0, false
	}
	digits := host[len(prefix) : len(host)-len(suffix)]
	if len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
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
		if u := vc.UpstreamTLS; u != nil {
			out = append(out, u.CAFiles...)
			if u.CertificateFile != "" {
				out = append(out, u.CertificateFile, u.PrivateKeyFile)
			}
		}
	}
	return out
}

// BootstrapAndPattern turns a route host name pattern of the form prefix-%.suffix into the
// bootstrap host (prefix-bootstrap.suffix) and the broker pattern
// (prefix-broker-$(nodeId).suffix). The % must appear once, inside the first label, after a
// non-empty prefix.
func BootstrapAndPattern(hostnamePattern string) (bootstrap, brokerPattern string, err error) {
	if strings.Count(hostnamePattern, "%") != 1 {
		return "", "", fmt.Errorf("hostname %q must contain exactly one %%", hostnamePattern)
	}
	first, rest, hasDot := strings.Cut(hostnamePattern, ".")
	if !strings.Contains(first, "%") {
		return "", "", fmt.Errorf("hostname %q: %% must be in the first label", hostnamePattern)
	}
	if !hasDot || rest == "" {
		return "", "", fmt.Errorf("hostname %q must have a domain after the first label", hostnamePattern)
	}
	if strings.HasPrefix(hostnamePattern, "%") {
		return "", "", fmt.Errorf("hostname %q must have a non-empty prefix before %%", hostnamePattern)
	}
	bootstrap = strings.Replace(hostnamePattern, "%", "bootstrap", 1)
	brokerPattern = strings.Replace(hostnamePattern, "%", "broker-"+NodeIDPlaceholder, 1)
	if err := validHost(bootstrap); err != nil {
		return "", "", fmt.Errorf("hostname %q: %w", hostnamePattern, err)
	}
	// The longest broker host has a 10-digit node id.
	if err := validHost(strings.Replace(brokerPattern, NodeIDPlaceholder, "2147483647", 1)); err != nil {
		return "", "", fmt.Errorf("hostname %q: broker hosts: %w", hostnamePattern, err)
	}
	return bootstrap, brokerPattern, nil
}

// validHost checks a DNS name: labels of 1 to 63 letters, digits and inner hyphens, 253 characters at most.
func validHost(h string) error {
	if len(h) > 253 {
		return fmt.Errorf("%q is longer than 253 characters", h)
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("%q: label %q must be 1 to 63 characters", h, label)
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("%q: label %q must not start or end with '-'", h, label)
		}
		for i := 0; i < len(label); i++ {
			ch := label[i]
			if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-') {
				return fmt.Errorf("%q: label %q has invalid character %q", h, label, ch)
			}
		}
	}
	return nil
}

// fieldErrs collects validation errors with field paths.
type fieldErrs []error

func (e *fieldErrs) add(path, format string, args ...any) {
	*e = append(*e, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
}

// Validate checks the configuration and returns every problem, each prefixed by its field
// path (for example "virtualClusters[1].listener: no listener named \"tls\"").
func (c *Config) Validate() error {
	var errs fieldErrs
	if c.Version != Version {
		errs.add("version", "must be %q, got %q", Version, c.Version)
	}
	listeners := map[string]int{}
	ports := map[int32]string{}
	bindPort := func(path string, p int32, who string) {
		if p < 1 || p > 65535 {
			errs.add(path, "port %d out of range 1-65535", p)
			return
		}
		if other, dup := ports[p]; dup {
			errs.add(path, "port %d already used by %s", p, other)
			return
		}
		ports[p] = who
	}
	for i, l := range c.Listeners {
		p := fmt.Sprintf("listeners[%d]", i)
		if l.Name == "" {
			errs.add(p+".name", "required")
		} else if _, dup := listeners[l.Name]; dup {
			errs.add(p+".name", "duplicate listener name %q", l.Name)
		}
		listeners[l.Name] = i
		bindPort(p+".port", l.Port, "listener "+l.Name)
		for j, kp := range l.KeyPairs {
			if kp.CertificateFile == "" {
				errs.add(fmt.Sprintf("%s.keyPairs[%d].certificateFile", p, j), "required")
			}
			if kp.PrivateKeyFile == "" {
				errs.add(fmt.Sprintf("%s.keyPairs[%d].privateKeyFile", p, j), "required")
			}
		}
		for j, f := range l.ClientCAFiles {
			if f == "" {
				errs.add(fmt.Sprintf("%s.clientCAFiles[%d]", p, j), "must not be empty")
			}
		}
		if !l.TLS() {
			if len(l.ClientCAFiles) > 0 {
				errs.add(p+".clientCAFiles", "needs keyPairs: a plain listener cannot verify client certificates")
			}
			if len(l.Options) > 0 {
				errs.add(p+".options", "TLS options need keyPairs")
			}
			if l.PortPerBroker == nil {
				errs.add(p+".portPerBroker", "required on a plain listener (no keyPairs): without SNI, brokers are told apart by port")
			} else {
				if l.PortPerBroker.MaxNodeID < 0 || l.PortPerBroker.MaxNodeID > 1023 {
					errs.add(p+".portPerBroker.maxNodeId", "must be 0 to 1023")
				} else {
					for n := int32(0); n <= l.PortPerBroker.MaxNodeID; n++ {
						bindPort(p+".portPerBroker.firstBrokerPort", l.PortPerBroker.FirstBrokerPort+n, fmt.Sprintf("listener %s broker %d", l.Name, n))
					}
				}
			}
		} else if _, err := ResolveTLSOptions(l.Options); err != nil {
			errs.add(p+".options", "%v", err)
		}
	}
	bindPort("management.port", c.Management.Port, "management")

	vcNames := map[string]bool{}
	perListener := map[string][]int{}
	for i := range c.VirtualClusters {
		vc := &c.VirtualClusters[i]
		p := fmt.Sprintf("virtualClusters[%d]", i)
		if vc.Name == "" {
			errs.add(p+".name", "required")
		} else if vcNames[vc.Name] {
			errs.add(p+".name", "duplicate virtual cluster name %q", vc.Name)
		}
		vcNames[vc.Name] = true
		if _, ok := listeners[vc.Listener]; !ok {
			errs.add(p+".listener", "no listener named %q", vc.Listener)
		} else {
			perListener[vc.Listener] = append(perListener[vc.Listener], i)
		}
		if err := validHost(vc.BootstrapHost); err != nil {
			errs.add(p+".bootstrapHost", "%v", err)
		}
		if strings.Count(vc.BrokerPattern, NodeIDPlaceholder) != 1 {
			errs.add(p+".brokerPattern", "must contain %s exactly once, got %q", NodeIDPlaceholder, vc.BrokerPattern)
		} else if err := validHost(vc.BrokerHost(0)); err != nil {
			errs.add(p+".brokerPattern", "%v", err)
		}
		if vc.AdvertisedPort < 0 || vc.AdvertisedPort > 65535 {
			errs.add(p+".advertisedPort", "out of range")
		}
		if err := validHostPort(vc.TargetBootstrap); err != nil {
			errs.add(p+".targetBootstrap", "%v", err)
		}
		if u := vc.UpstreamTLS; u != nil {
			if (u.CertificateFile == "") != (u.PrivateKeyFile == "") {
				errs.add(p+".upstreamTLS", "certificateFile and privateKeyFile go together")
			}
			if _, err := ResolveTLSOptions(u.Options); err != nil {
				errs.add(p+".upstreamTLS.options", "%v", err)
			}
		}
		for j, f := range vc.Filters {
			if f.Name == "" {
				errs.add(fmt.Sprintf("%s.filters[%d].name", p, j), "required")
			}
			if f.Type == "" {
				errs.add(fmt.Sprintf("%s.filters[%d].type", p, j), "required")
			}
		}
	}
	// Host names under one listener must route unambiguously.
	for lname, idxs := range perListener {
		l := c.Listeners[listeners[lname]]
		if !l.TLS() && len(idxs) > 1 {
			errs.add(fmt.Sprintf("virtualClusters[%d].listener", idxs[1]), "plain listener %q already serves virtual cluster %q: without SNI a plain listener serves one virtual cluster", lname, c.VirtualClusters[idxs[0]].Name)
			continue
		}
		for a, i := range idxs {
			for _, j := range idxs[a+1:] {
				vi, vj := &c.VirtualClusters[i], &c.VirtualClusters[j]
				p := fmt.Sprintf("virtualClusters[%d]", j)
				if strings.EqualFold(vi.BootstrapHost, vj.BootstrapHost) {
					errs.add(p+".bootstrapHost", "%q is also the bootstrap host of virtual cluster %q on listener %q", vj.BootstrapHost, vi.Name, lname)
				}
				if strings.EqualFold(vi.BrokerPattern, vj.BrokerPattern) {
					errs.add(p+".brokerPattern", "%q is also the broker pattern of virtual cluster %q on listener %q", vj.BrokerPattern, vi.Name, lname)
				}
				if _, ok := vi.MatchBroker(vj.BootstrapHost); ok {
					errs.add(p+".bootstrapHost", "%q matches the broker pattern of virtual cluster %q", vj.BootstrapHost, vi.Name)
				}
				if _, ok := vj.MatchBroker(vi.BootstrapHost); ok {
					errs.add(p+".brokerPattern", "matches the bootstrap host of virtual cluster %q", vi.Name)
				}
			}
		}
	}
	lim := c.Limits
	if lim.MaxFrameBytes < 1024 {
		errs.add("limits.maxFrameBytes", "must be at least 1024")
	}
	if lim.MaxConnections < 1 {
		errs.add("limits.maxConnections", "must be positive")
	}
	for path, d := range map[string]time.Duration{
		"limits.idleTimeout": lim.IdleTimeout.Duration, "limits.drainTimeout": lim.DrainTimeout.Duration,
		"limits.upstreamDialTimeout": lim.UpstreamDialTimeout.Duration, "limits.upstreamRetryBudget": lim.UpstreamRetryBudget.Duration,
		"limits.handshakeTimeout": lim.HandshakeTimeout.Duration,
	} {
		if d < 0 {
			errs.add(path, "must not be negative")
		}
	}
	if len(errs) == 0 {
		return nil
	}
	sortErrs(errs)
	return errors.Join(errs...)
}

func sortErrs(errs fieldErrs) {
	// Map iteration above (limits, listeners) is unordered; sort for stable messages.
	for i := 1; i < len(errs); i++ {
		for j := i; j > 0 && errs[j].Error() < errs[j-1].Error(); j-- {
			errs[j], errs[j-1] = errs[j-1], errs[j]
		}
	}
}

func validHostPort(hp string) error {
	i := strings.LastIndexByte(hp, ':')
	if i <= 0 {
		return fmt.Errorf("%q must be host:port", hp)
	}
	port, err := strconv.Atoi(hp[i+1:])
	if err != nil || port < 1 || port > 65535 {
		return fmt.Errorf("%q has an invalid port", hp)
	}
	return nil
}
