package sasltermination

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/oauth"
	"github.com/kafkalink/kafkalink/proxy/sasl"
)

// Config is the filter's configuration, in Kroxylicious' SaslTerminationConfig shape.
type Config struct {
	// Mechanisms are the enabled mechanisms, each once: SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER.
	Mechanisms []MechanismConfig `json:"mechanisms"`
	// MaxTimeBeforeReauth is the longest session a client gets before it must re-authenticate
	// (KIP-368); unset, only a token's expiry ends a session.
	MaxTimeBeforeReauth *config.Duration `json:"maxTimeBeforeReauth,omitempty"`
	// FixedAuthDelay is how long a failed authentication waits before it is answered (default
	// 200ms; 0s turns it off).
	FixedAuthDelay *config.Duration `json:"fixedAuthDelay,omitempty"`
}

// MechanismConfig is one enabled mechanism: Mechanism names it, and the fields of its kind apply.
type MechanismConfig struct {
	Mechanism string `json:"mechanism"`

	// CredentialStore (SCRAM) names the store of salted credentials: ScramCredentialFile.
	CredentialStore string `json:"credentialStore,omitempty"`
	// CredentialStoreConfig (SCRAM) is the store's configuration: {file: <path>}.
	CredentialStoreConfig json.RawMessage `json:"credentialStoreConfig,omitempty"`
	// PhantomIterations (SCRAM) is the iteration count of the challenge an unknown user gets.
	PhantomIterations *int `json:"phantomIterations,omitempty"`

	// The OAUTHBEARER fields, with Kroxylicious' names.
	JwksEndpointURL             string           `json:"jwksEndpointUrl,omitempty"`
	ExpectedAudience            string           `json:"expectedAudience,omitempty"`
	ExpectedIssuer              string           `json:"expectedIssuer,omitempty"`
	ScopeClaimName              string           `json:"scopeClaimName,omitempty"`
	SubClaimName                string           `json:"subClaimName,omitempty"`
	JwksEndpointRefresh         *config.Duration `json:"jwksEndpointRefresh,omitempty"`
	JwksEndpointRetryBackoff    *config.Duration `json:"jwksEndpointRetryBackoff,omitempty"`
	JwksEndpointRetryBackoffMax *config.Duration `json:"jwksEndpointRetryBackoffMax,omitempty"`
	// MaxAuthBytes is the largest token message accepted (default 128 KiB).
	MaxAuthBytes *int `json:"maxAuthBytes,omitempty"`
	// JwksEndpointCAFile (kafkalink's own) is a PEM file of the CAs the JWKS endpoint's
	// certificate is verified with; the system's roots when empty.
	JwksEndpointCAFile string `json:"jwksEndpointCaFile,omitempty"`
}

// Defaults and bounds.
const (
	OAuthBearer           = "OAUTHBEARER"
	DefaultFixedAuthDelay = 200 * time.Millisecond
	// maxFixedAuthDelay bounds fixedAuthDelay: each failing client holds its connection that long.
	maxFixedAuthDelay = 10 * time.Second
	// minReauth and maxReauth bound maxTimeBeforeReauth (Kafka takes any positive value; below a
	// second clients would do little else than re-authenticate).
	minReauth = time.Second
	maxReauth = 365 * 24 * time.Hour
	// DefaultMaxAuthBytes is Kroxylicious' default for OAUTHBEARER.
	DefaultMaxAuthBytes = 128 << 10
	// MaxUnauthenticatedBytes is the largest SASL message taken (Kafka's
	// sasl.server.max.receive.size): maxAuthBytes may not exceed it.
	MaxUnauthenticatedBytes = 512 << 10
)

// settings is a checked Config.
type settings struct {
	mechanisms []string // in configured order, as the handshake lists them
	reauth     time.Duration
	delay      time.Duration
	scram      map[string]scramSettings
	oauth      *oauthSettings
}

type scramSettings struct {
	file       string
	iterations int
}

type oauthSettings struct {
	cfg      oauth.Config
	maxBytes int
}

// check validates cfg; errors name the field.
func (c *Config) check() (settings, error) {
	s := settings{delay: DefaultFixedAuthDelay, scram: map[string]scramSettings{}}
	if len(c.Mechanisms) == 0 {
		return s, fmt.Errorf("mechanisms: at least one mechanism is required")
	}
	if d := c.FixedAuthDelay; d != nil {
		if d.Duration < 0 || d.Duration > maxFixedAuthDelay {
			return s, fmt.Errorf("fixedAuthDelay: %s is outside 0s..%s", d.Duration, maxFixedAuthDelay)
		}
		s.delay = d.Duration
	}
	if d := c.MaxTimeBeforeReauth; d != nil {
		if d.Duration < minReauth || d.Duration > maxReauth {
			return s, fmt.Errorf("maxTimeBeforeReauth: %s is outside %s..%s", d.Duration, minReauth, maxReauth)
		}
		s.reauth = d.Duration
	}
	for i := range c.Mechanisms {
		m := &c.Mechanisms[i]
		path := fmt.Sprintf("mechanisms[%d]", i)
		if slicesContains(s.mechanisms, m.Mechanism) {
			return s, fmt.Errorf("%s.mechanism: %s is enabled twice", path, m.Mechanism)
		}
		if err := m.check(path, &s); err != nil {
			return s, err
		}
		s.mechanisms = append(s.mechanisms, m.Mechanism)
	}
	return s, nil
}

func slicesContains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// check validates one mechanism into s.
func (m *MechanismConfig) check(path string, s *settings) error {
	switch {
	case sasl.IsScram(m.Mechanism):
		if err := m.onlyFieldsOf(path, false); err != nil {
			return err
		}
		ss, err := m.checkScram(path)
		if err != nil {
			return err
		}
		s.scram[m.Mechanism] = ss
	case m.Mechanism == OAuthBearer:
		if err := m.onlyFieldsOf(path, true); err != nil {
			return err
		}
		o, err := m.checkOAuth(path)
		if err != nil {
			return err
		}
		s.oauth = &o
	default:
		return fmt.Errorf("%s.mechanism: %q is not one of %s, %s, %s", path, m.Mechanism, sasl.ScramSHA256, sasl.ScramSHA512, OAuthBearer)
	}
	return nil
}

// onlyFieldsOf refuses the other kind's fields: a SCRAM entry with a jwksEndpointUrl is a
// configuration mistake, not a setting to ignore.
func (m *MechanismConfig) onlyFieldsOf(path string, oauthKind bool) error {
	scramSet := m.CredentialStore != "" || m.CredentialStoreConfig != nil || m.PhantomIterations != nil
	oauthSet := m.JwksEndpointURL != "" || m.ExpectedAudience != "" || m.ExpectedIssuer != "" || m.ScopeClaimName != "" ||
		m.SubClaimName != "" || m.JwksEndpointRefresh != nil || m.JwksEndpointRetryBackoff != nil ||
		m.JwksEndpointRetryBackoffMax != nil || m.MaxAuthBytes != nil || m.JwksEndpointCAFile != ""
	if oauthKind && scramSet {
		return fmt.Errorf("%s: credentialStore, credentialStoreConfig and phantomIterations are for SCRAM mechanisms, not %s", path, m.Mechanism)
	}
	if !oauthKind && oauthSet {
		return fmt.Errorf("%s: the jwksEndpoint*, expected*, *ClaimName and maxAuthBytes fields are for OAUTHBEARER, not %s", path, m.Mechanism)
	}
	return nil
}

// credentialFile is the one credential store kafkalink-proxy implements: the JSON file that
// `kafkalink-proxy scram-credential` writes, mounted from a Secret.
const credentialFile = "ScramCredentialFile"

type credentialStoreConfig struct {
	File string `json:"file"`
}

func (m *MechanismConfig) checkScram(path string) (scramSettings, error) {
	var ss scramSettings
	if m.CredentialStore != credentialFile {
		return ss, fmt.Errorf("%s.credentialStore: %q is not a store kafkalink-proxy has (it has %s; Kroxylicious' KeystoreScramCredentialStoreService is not implemented)", path, m.CredentialStore, credentialFile)
	}
	var sc credentialStoreConfig
	if len(m.CredentialStoreConfig) == 0 {
		return ss, fmt.Errorf("%s.credentialStoreConfig: required ({file: <path>})", path)
	}
	if err := filter.DecodeStrict(m.CredentialStoreConfig, &sc); err != nil {
		return ss, fmt.Errorf("%s.credentialStoreConfig: %w", path, err)
	}
	if strings.TrimSpace(sc.File) == "" {
		return ss, fmt.Errorf("%s.credentialStoreConfig.file: required", path)
	}
	ss.file = sc.File
	if p := m.PhantomIterations; p != nil {
		if *p < sasl.MinIterations || *p > sasl.MaxIterations {
			return ss, fmt.Errorf("%s.phantomIterations: %d is outside %d..%d", path, *p, sasl.MinIterations, sasl.MaxIterations)
		}
		ss.iterations = *p
	}
	return ss, nil
}

func (m *MechanismConfig) checkOAuth(path string) (oauthSettings, error) {
	o := oauthSettings{maxBytes: DefaultMaxAuthBytes}
	if strings.TrimSpace(m.ExpectedAudience) == "" {
		return o, fmt.Errorf("%s.expectedAudience: required", path)
	}
	if strings.TrimSpace(m.ExpectedIssuer) == "" {
		return o, fmt.Errorf("%s.expectedIssuer: required", path)
	}
	if n := m.MaxAuthBytes; n != nil {
		if *n <= 0 || *n > MaxUnauthenticatedBytes {
			return o, fmt.Errorf("%s.maxAuthBytes: %d is outside 1..%d", path, *n, MaxUnauthenticatedBytes)
		}
		o.maxBytes = *n
	}
	o.cfg = oauth.Config{JwksEndpointURL: m.JwksEndpointURL, ScopeClaimName: m.ScopeClaimName, SubClaimName: m.SubClaimName,
		ExpectedAudience: m.ExpectedAudience, ExpectedIssuer: m.ExpectedIssuer, JwksEndpointCAFile: m.JwksEndpointCAFile,
		JwksEndpointRefreshMs: millis(m.JwksEndpointRefresh), JwksEndpointRetryBackoffMs: millis(m.JwksEndpointRetryBackoff),
		JwksEndpointRetryBackoffMaxMs: millis(m.JwksEndpointRetryBackoffMax)}
	return o, nil
}

// millis is a duration as the oauth package's millisecond settings take it.
func millis(d *config.Duration) *int64 {
	if d == nil {
		return nil
	}
	ms := d.Milliseconds()
	return &ms
}
