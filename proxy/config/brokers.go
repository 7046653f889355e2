package config

import "fmt"

// UpstreamBroker is the upstream address of one broker.
type UpstreamBroker struct {
	// NodeID is the broker's node id.
	NodeID int32 `json:"nodeId"`
	// Address is host:port, a fully qualified name with the root dot in the operator's output.
	Address string `json:"address"`
}

// MaxUpstreamBrokers bounds UpstreamBrokers: a route exposes at most 256 broker ids.
const MaxUpstreamBrokers = 256

// UpstreamBroker returns the configured upstream address of a node id; ok is false when the
// virtual cluster lists no such broker (or lists none: see UpstreamBrokers).
func (vc *VirtualCluster) UpstreamBroker(id int32) (addr string, ok bool) {
	for _, b := range vc.UpstreamBrokers {
		if b.NodeID == id {
			return b.Address, true
		}
	}
	return "", false
}

func validateUpstreamBrokers(errs *fieldErrs, path string, brokers []UpstreamBroker) {
	if len(brokers) > MaxUpstreamBrokers {
		errs.add(path, "lists %d brokers, more than %d", len(brokers), MaxUpstreamBrokers)
		return
	}
	seen := map[int32]bool{}
	for i, b := range brokers {
		p := fmt.Sprintf("%s[%d]", path, i)
		if b.NodeID < 0 {
			errs.add(p+".nodeId", "must not be negative")
		} else if seen[b.NodeID] {
			errs.add(p+".nodeId", "duplicate node id %d", b.NodeID)
		}
		seen[b.NodeID] = true
		if err := validHostPort(b.Address); err != nil {
			errs.add(p+".address", "%v", err)
		}
	}
}

// Mechanisms of DiscoveryCredential.
const (
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// DiscoveryCredential is the proxy's own SCRAM user at a cluster: for its Metadata request, and
// on a virtual cluster whose filters terminate SASL for every upstream connection. The password
// is read from a mounted file at each use, so a rotated Secret applies without a restart.
type DiscoveryCredential struct {
	// Mechanism is SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string `json:"mechanism"`
	// Username is the user.
	Username string `json:"username,omitempty"`
	// UsernameFile, when set, holds the user instead of Username.
	UsernameFile string `json:"usernameFile,omitempty"`
	// PasswordFile holds the password.
	PasswordFile string `json:"passwordFile"`
}

func validateDiscovery(errs *fieldErrs, path string, d *DiscoveryCredential) {
	if d == nil {
		return
	}
	if d.Mechanism != MechanismScramSHA256 && d.Mechanism != MechanismScramSHA512 {
		errs.add(path+".mechanism", "must be %s or %s, got %q", MechanismScramSHA256, MechanismScramSHA512, d.Mechanism)
	}
	if (d.Username == "") == (d.UsernameFile == "") {
		errs.add(path, "exactly one of username and usernameFile is required")
	}
	if d.PasswordFile == "" {
		errs.add(path+".passwordFile", "required")
	}
}
