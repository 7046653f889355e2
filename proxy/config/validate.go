package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// fieldErrs collects validation errors with field paths.
type fieldErrs []error

func (e *fieldErrs) add(path, format string, args ...any) {
	*e = append(*e, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
}

// Validate checks the configuration and returns every problem, each prefixed by its field
// path (for example "virtualClusters[1].listener: no listener named \"tls\"").
func (c *Config) Validate() error {
	v := newValidator(c)
	v.validateVersion()
	v.validateListeners()
	v.bindPort("management.port", c.Management.Port, "management")
	v.validateVirtualClusters()
	v.validateRouting()
	validateLimits(&v.errs, &c.Limits)
	return v.result()
}

// validator holds one Validate call: the configuration, the errors found so far, and what
// earlier steps learn that later steps check against. Every map is written by one step.
type validator struct {
	c    *Config
	errs fieldErrs
	// portOwner names what binds each port, so that a second bind is reported; written by bindPort.
	portOwner map[int32]string
	// listenerIndex is the index of each listener by name (the last, for a duplicate name);
	// written by validateListeners.
	listenerIndex map[string]int
	// servedBy lists, by listener name, the indexes of the virtual clusters the listener
	// serves; written by validateVirtualClusters.
	servedBy map[string][]int
}

// newValidator starts a Validate call on c with nothing found yet.
func newValidator(c *Config) *validator {
	return &validator{c: c, portOwner: map[int32]string{}, listenerIndex: map[string]int{}, servedBy: map[string][]int{}}
}

// result joins the errors found, sorted so that the message is stable, or is nil.
func (v *validator) result() error {
	if len(v.errs) == 0 {
		return nil
	}
	sortErrs(v.errs)
	return errors.Join(v.errs...)
}

// validateVersion refuses a version other than this release's: Parse has already upgraded an
// accepted older one.
func (v *validator) validateVersion() {
	if v.c.Version != Version {
		v.errs.add("version", "must be %q, got %q", Version, v.c.Version)
	}
}

// bindPort claims port p for who, reporting a port out of range or one already claimed.
func (v *validator) bindPort(path string, p int32, who string) {
	if p < 1 || p > 65535 {
		v.errs.add(path, "port %d out of range 1-65535", p)
		return
	}
	if other, dup := v.portOwner[p]; dup {
		v.errs.add(path, "port %d already used by %s", p, other)
		return
	}
	v.portOwner[p] = who
}

// validateListeners checks each listener and claims its ports.
func (v *validator) validateListeners() {
	for i := range v.c.Listeners {
		l := &v.c.Listeners[i]
		p := fmt.Sprintf("listeners[%d]", i)
		if l.Name == "" {
			v.errs.add(p+".name", "required")
		} else if _, dup := v.listenerIndex[l.Name]; dup {
			v.errs.add(p+".name", "duplicate listener name %q", l.Name)
		}
		v.listenerIndex[l.Name] = i
		v.bindPort(p+".port", l.Port, "listener "+l.Name)
		validateListenerFiles(&v.errs, p, l)
		if !l.TLS() {
			v.validatePlainListener(p, l)
		} else if _, err := ResolveTLSOptions(l.Options); err != nil {
			v.errs.add(p+".options", "%v", err)
		}
	}
}

// validateListenerFiles requires every key pair and client CA path a listener lists to be set.
func validateListenerFiles(errs *fieldErrs, path string, l *Listener) {
	for j, kp := range l.KeyPairs {
		if kp.CertificateFile == "" {
			errs.add(fmt.Sprintf("%s.keyPairs[%d].certificateFile", path, j), "required")
		}
		if kp.PrivateKeyFile == "" {
			errs.add(fmt.Sprintf("%s.keyPairs[%d].privateKeyFile", path, j), "required")
		}
	}
	for j, f := range l.ClientCAFiles {
		if f == "" {
			errs.add(fmt.Sprintf("%s.clientCAFiles[%d]", path, j), "must not be empty")
		}
	}
}

// validatePlainListener checks a listener without key pairs: it has no TLS to configure, and
// with no SNI only a port per broker tells the brokers apart, so it claims those ports too.
func (v *validator) validatePlainListener(path string, l *Listener) {
	if len(l.ClientCAFiles) > 0 {
		v.errs.add(path+".clientCAFiles", "needs keyPairs: a plain listener cannot verify client certificates")
	}
	if len(l.Options) > 0 {
		v.errs.add(path+".options", "TLS options need keyPairs")
	}
	if l.PortPerBroker == nil {
		v.errs.add(path+".portPerBroker", "required on a plain listener (no keyPairs): without SNI, brokers are told apart by port")
		return
	}
	if l.PortPerBroker.MaxNodeID < 0 || l.PortPerBroker.MaxNodeID > 1023 {
		v.errs.add(path+".portPerBroker.maxNodeId", "must be 0 to 1023")
		return
	}
	for n := int32(0); n <= l.PortPerBroker.MaxNodeID; n++ {
		v.bindPort(path+".portPerBroker.firstBrokerPort", l.PortPerBroker.FirstBrokerPort+n, fmt.Sprintf("listener %s broker %d", l.Name, n))
	}
}

// validateVirtualClusters checks each virtual cluster and records the listener serving it,
// for validateRouting.
func (v *validator) validateVirtualClusters() {
	names := map[string]bool{}
	for i := range v.c.VirtualClusters {
		vc := &v.c.VirtualClusters[i]
		p := fmt.Sprintf("virtualClusters[%d]", i)
		if vc.Name == "" {
			v.errs.add(p+".name", "required")
		} else if names[vc.Name] {
			v.errs.add(p+".name", "duplicate virtual cluster name %q", vc.Name)
		}
		names[vc.Name] = true
		if _, ok := v.listenerIndex[vc.Listener]; !ok {
			v.errs.add(p+".listener", "no listener named %q", vc.Listener)
		} else {
			v.servedBy[vc.Listener] = append(v.servedBy[vc.Listener], i)
		}
		validateAdvertisedAddresses(&v.errs, p, vc)
		validateUpstream(&v.errs, p, vc)
		validateFilters(&v.errs, p, vc.Filters)
	}
}

// validateAdvertisedAddresses checks the host names and port clients are given, which must
// be valid DNS names for SNI and for the clients' resolvers.
func validateAdvertisedAddresses(errs *fieldErrs, path string, vc *VirtualCluster) {
	if err := validHost(vc.BootstrapHost); err != nil {
		errs.add(path+".bootstrapHost", "%v", err)
	}
	if strings.Count(vc.BrokerPattern, NodeIDPlaceholder) != 1 {
		errs.add(path+".brokerPattern", "must contain %s exactly once, got %q", NodeIDPlaceholder, vc.BrokerPattern)
	} else if err := validHost(vc.BrokerHost(0)); err != nil {
		errs.add(path+".brokerPattern", "%v", err)
	}
	validateBrokerIdentity(errs, path, vc)
	if vc.AdvertisedPort < 0 || vc.AdvertisedPort > 65535 {
		errs.add(path+".advertisedPort", "out of range")
	}
}

// ValidateVirtualClusterHosts checks the host names a virtual cluster gives clients, as Validate
// does, for the operator to refuse a route before it writes a configuration the proxy refuses.
func ValidateVirtualClusterHosts(vc *VirtualCluster) error {
	var errs fieldErrs
	validateAdvertisedAddresses(&errs, "virtualCluster", vc)
	return errors.Join(errs...)
}

// validateBrokerIdentity checks the hash mapping: a key file, and a broker pattern whose
// placeholder ends its first label (where the proxy looks for the token, HashedPatternKey), with
// room there for the token.
func validateBrokerIdentity(errs *fieldErrs, path string, vc *VirtualCluster) {
	b := vc.BrokerIdentity
	if b == nil {
		return
	}
	if b.Mapping != BrokerIdentityMappingHash {
		errs.add(path+".brokerIdentity.mapping", "must be %q, got %q", BrokerIdentityMappingHash, b.Mapping)
	}
	if b.KeyFile == "" {
		errs.add(path+".brokerIdentity.keyFile", "is required")
	}
	first, _, _ := strings.Cut(vc.BrokerPattern, ".")
	if !strings.HasSuffix(first, NodeIDPlaceholder) {
		errs.add(path+".brokerPattern", "must end its first label with %s for the hash mapping, got %q", NodeIDPlaceholder, vc.BrokerPattern)
	} else if err := validHost(strings.Replace(vc.BrokerPattern, NodeIDPlaceholder, strings.Repeat("a", BrokerTokenLength), 1)); err != nil {
		errs.add(path+".brokerPattern", "with the hash mapping's %d-character token: %v", BrokerTokenLength, err)
	}
}

// validateUpstream checks how the proxy reaches the Kafka cluster behind a virtual cluster.
func validateUpstream(errs *fieldErrs, path string, vc *VirtualCluster) {
	if err := validHostPort(vc.TargetBootstrap); err != nil {
		errs.add(path+".targetBootstrap", "%v", err)
	}
	validateUpstreamBrokers(errs, path+".upstreamBrokers", vc.UpstreamBrokers)
	validateDiscovery(errs, path+".discovery", vc.Discovery)
	if u := vc.UpstreamTLS; u != nil {
		if (u.CertificateFile == "") != (u.PrivateKeyFile == "") {
			errs.add(path+".upstreamTLS", "certificateFile and privateKeyFile go together")
		}
		if _, err := ResolveTLSOptions(u.Options); err != nil {
			errs.add(path+".upstreamTLS.options", "%v", err)
		}
	}
}

// validateFilters requires a name and a type of each filter; whether the proxy implements the
// type is its own decision (fail closed), not a configuration error.
func validateFilters(errs *fieldErrs, path string, filters []Filter) {
	for j, f := range filters {
		if f.Name == "" {
			errs.add(fmt.Sprintf("%s.filters[%d].name", path, j), "required")
		}
		if f.Type == "" {
			errs.add(fmt.Sprintf("%s.filters[%d].type", path, j), "required")
		}
	}
}

// validateRouting checks that each listener can route a connection to exactly one virtual
// cluster: by SNI host name on a TLS listener, while a plain listener, without SNI, serves one.
func (v *validator) validateRouting() {
	for lname, idxs := range v.servedBy {
		l := v.c.Listeners[v.listenerIndex[lname]]
		if !l.TLS() && len(idxs) > 1 {
			v.errs.add(fmt.Sprintf("virtualClusters[%d].listener", idxs[1]), "plain listener %q already serves virtual cluster %q: without SNI a plain listener serves one virtual cluster", lname, v.c.VirtualClusters[idxs[0]].Name)
			continue
		}
		v.validateDistinctHosts(lname, idxs)
	}
}

// validateDistinctHosts reports every host that two virtual clusters on one TLS listener would
// share, against the later of the two.
func (v *validator) validateDistinctHosts(lname string, idxs []int) {
	for a, i := range idxs {
		for _, j := range idxs[a+1:] {
			earlier, later := &v.c.VirtualClusters[i], &v.c.VirtualClusters[j]
			p := fmt.Sprintf("virtualClusters[%d]", j)
			for _, o := range HostOverlaps(*earlier, *later) {
				addHostOverlap(&v.errs, p, lname, o, earlier, later)
			}
		}
	}
}

// addHostOverlap words one HostOverlap of later with earlier, under the field of later it is in.
func addHostOverlap(errs *fieldErrs, path, lname string, o HostOverlap, earlier, later *VirtualCluster) {
	switch o {
	case SameBootstrapHost:
		errs.add(path+".bootstrapHost", "%q is also the bootstrap host of virtual cluster %q on listener %q", later.BootstrapHost, earlier.Name, lname)
	case SameBrokerPattern:
		errs.add(path+".brokerPattern", "%q is also the broker pattern of virtual cluster %q on listener %q", later.BrokerPattern, earlier.Name, lname)
	case BootstrapIsBroker:
		errs.add(path+".bootstrapHost", "%q matches the broker pattern of virtual cluster %q", later.BootstrapHost, earlier.Name)
	case BrokerIsBootstrap:
		errs.add(path+".brokerPattern", "matches the bootstrap host of virtual cluster %q", earlier.Name)
	}
}

// validateLimits checks the limits once Default has filled in those left zero.
func validateLimits(errs *fieldErrs, lim *Limits) {
	validateSizeLimits(errs, lim)
	validateConnectionLimits(errs, lim)
	validateTimeouts(errs, lim)
}

// validateSizeLimits checks the frame, batch and filter memory bounds against each other.
func validateSizeLimits(errs *fieldErrs, lim *Limits) {
	if lim.MaxFrameBytes < 1024 {
		errs.add("limits.maxFrameBytes", "must be at least 1024")
	}
	if lim.MaxFilteredFrameBytes < 1024 || lim.MaxFilteredFrameBytes > lim.MaxFrameBytes {
		errs.add("limits.maxFilteredFrameBytes", "must be at least 1024 and at most maxFrameBytes (%d)", lim.MaxFrameBytes)
	}
	if lim.MaxBatchBytes < 1024 {
		errs.add("limits.maxBatchBytes", "must be at least 1024")
	}
	if lim.DecompressionRatio < 1 {
		errs.add("limits.decompressionRatio", "must be at least 1")
	}
	if lim.FilterMemoryBytes < 4*int64(lim.MaxBatchBytes) {
		// A batch is decompressed within one acquisition of the budget, and no acquisition may
		// take more than a quarter of it.
		errs.add("limits.filterMemoryBytes", "must be at least four times maxBatchBytes (%d)", lim.MaxBatchBytes)
	}
}

// validateConnectionLimits checks the caps on connections and handshakes.
func validateConnectionLimits(errs *fieldErrs, lim *Limits) {
	if lim.MaxConnections < 1 {
		errs.add("limits.maxConnections", "must be positive")
	}
	if lim.MaxConnectionsPerSource < 0 {
		errs.add("limits.maxConnectionsPerSource", "must not be negative")
	}
	if lim.HandshakesPerSecond < 0 {
		errs.add("limits.handshakesPerSecond", "must not be negative")
	}
}

// validateTimeouts refuses negative timeouts; zero ones took their defaults.
func validateTimeouts(errs *fieldErrs, lim *Limits) {
	for path, d := range map[string]time.Duration{
		"limits.idleTimeout": lim.IdleTimeout.Duration, "limits.drainTimeout": lim.DrainTimeout.Duration,
		"limits.upstreamDialTimeout": lim.UpstreamDialTimeout.Duration, "limits.upstreamRetryBudget": lim.UpstreamRetryBudget.Duration,
		"limits.handshakeTimeout": lim.HandshakeTimeout.Duration, "limits.firstRequestTimeout": lim.FirstRequestTimeout.Duration,
		"limits.writeTimeout": lim.WriteTimeout.Duration,
	} {
		if d < 0 {
			errs.add(path, "must not be negative")
		}
	}
}

// sortErrs orders errors by message: some steps iterate maps (validateRouting,
// validateTimeouts), so without it the message would change from run to run.
func sortErrs(errs fieldErrs) {
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
