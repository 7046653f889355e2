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
		validateUpstreamBrokers(&errs, p+".upstreamBrokers", vc.UpstreamBrokers)
		validateDiscovery(&errs, p+".discovery", vc.Discovery)
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
				for _, o := range HostOverlaps(*vi, *vj) {
					switch o {
					case SameBootstrapHost:
						errs.add(p+".bootstrapHost", "%q is also the bootstrap host of virtual cluster %q on listener %q", vj.BootstrapHost, vi.Name, lname)
					case SameBrokerPattern:
						errs.add(p+".brokerPattern", "%q is also the broker pattern of virtual cluster %q on listener %q", vj.BrokerPattern, vi.Name, lname)
					case BootstrapIsBroker:
						errs.add(p+".bootstrapHost", "%q matches the broker pattern of virtual cluster %q", vj.BootstrapHost, vi.Name)
					case BrokerIsBootstrap:
						errs.add(p+".brokerPattern", "matches the bootstrap host of virtual cluster %q", vi.Name)
					}
				}
			}
		}
	}
	lim := c.Limits
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
	if lim.MaxConnections < 1 {
		errs.add("limits.maxConnections", "must be positive")
	}
	if lim.MaxConnectionsPerSource < 0 {
		errs.add("limits.maxConnectionsPerSource", "must not be negative")
	}
	if lim.HandshakesPerSecond < 0 {
		errs.add("limits.handshakesPerSecond", "must not be negative")
	}
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
