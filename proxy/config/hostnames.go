package config

import (
	"fmt"
	"strconv"
	"strings"
)

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
			if (ch < 'a' || ch > 'z') && (ch < 'A' || ch > 'Z') && (ch < '0' || ch > '9') && ch != '-' {
				return fmt.Errorf("%q: label %q has invalid character %q", h, label, ch)
			}
		}
	}
	return nil
}

// HostOverlap is one way two virtual clusters on one TLS listener would take each other's
// hosts, so that SNI could not route a host to exactly one of them.
type HostOverlap int

// The overlaps, in the order HostOverlaps reports them.
const (
	// SameBootstrapHost: both have the same bootstrap host (case-insensitively).
	SameBootstrapHost HostOverlap = iota + 1
	// SameBrokerPattern: both have the same broker pattern (case-insensitively).
	SameBrokerPattern
	// BootstrapIsBroker: b's bootstrap host is one of a's broker hosts.
	BootstrapIsBroker
	// BrokerIsBootstrap: a's bootstrap host is one of b's broker hosts.
	BrokerIsBootstrap
)

// HostOverlaps is the one rule for virtual clusters sharing a TLS listener: it lists every way
// a and b overlap, in the order of the HostOverlap constants, and nothing when SNI tells
// their hosts apart. Validate and the gateway translator both use it.
func HostOverlaps(a, b VirtualCluster) []HostOverlap {
	var out []HostOverlap
	if strings.EqualFold(a.BootstrapHost, b.BootstrapHost) {
		out = append(out, SameBootstrapHost)
	}
	if strings.EqualFold(a.BrokerPattern, b.BrokerPattern) {
		out = append(out, SameBrokerPattern)
	}
	if _, ok := a.MatchBroker(b.BootstrapHost); ok {
		out = append(out, BootstrapIsBroker)
	}
	if _, ok := b.MatchBroker(a.BootstrapHost); ok {
		out = append(out, BrokerIsBootstrap)
	}
	return out
}
