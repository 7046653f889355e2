package config

import (
	"crypto/tls"
	"fmt"
	"sort"
	"strings"
)

// TLSParams is the Go form of the kroxylicious.io TLS options.
type TLSParams struct {
	// MinVersion and MaxVersion are tls.VersionTLS12 or tls.VersionTLS13.
	MinVersion, MaxVersion uint16
	// CipherSuites are the TLS 1.2 cipher suites, in preference order; nil means Go's defaults.
	CipherSuites []uint16
	// FIPS is set when the options exclude TLS_CHACHA20_POLY1305_SHA256 from TLS 1.3: Go cannot
	// pick TLS 1.3 suites one by one, but its FIPS 140-3 mode (GODEBUG=fips140=on, for the whole
	// process) restricts TLS 1.3 to the two AES-GCM suites. The proxy refuses such options when it
	// does not run in that mode, and the operator turns it on for the proxy pods.
	FIPS bool `json:"-"`
	// Suites13 are the TLS 1.3 suites in force when TLS 1.3 is on.
	Suites13 []uint16 `json:"-"`
	// Unenforced says, one entry each, what the options asked for that Go cannot enforce.
	Unenforced []string `json:"-"`
}

// TLS 1.3 suites: Go enables all three, or in FIPS 140-3 mode the AES-GCM ones.
var (
	all13  = []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256}
	fips13 = []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384}
)

// Describe says which protocols and suites are in force, and what was asked for but is not
// enforced, for status messages and logs.
func (p TLSParams) Describe() string {
	var parts []string
	if p.MinVersion <= tls.VersionTLS12 && p.MaxVersion >= tls.VersionTLS12 {
		suites := "Go's default suites"
		if p.CipherSuites != nil {
			suites = names(p.CipherSuites)
		}
		parts = append(parts, "TLSv1.2 with "+suites)
	}
	if p.MaxVersion >= tls.VersionTLS13 {
		s := "TLSv1.3 with " + names(p.Suites13)
		if p.FIPS {
			s += " (FIPS 140-3 mode)"
		}
		parts = append(parts, s)
	}
	out := "in force: " + strings.Join(parts, "; ")
	if len(p.Unenforced) > 0 {
		out += "; not enforced: " + strings.Join(p.Unenforced, "; ")
	}
	return out
}

// Apply sets the versions and cipher suites on c.
func (p TLSParams) Apply(c *tls.Config) {
	c.MinVersion = p.MinVersion
	c.MaxVersion = p.MaxVersion
	c.CipherSuites = p.CipherSuites
}

// Java protocol names. Go cannot negotiate below TLS 1.2 here, so the older names may be
// disabled (a no-op) but never enabled.
var protocolNames = map[string]uint16{
	"SSLv2Hello": 0x0002, "SSLv3": tls.VersionSSL30, "TLSv1": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11, //nolint:staticcheck // a Java name a user may disable
	"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13,
}

// scsv is the JSSE pseudo cipher suite for secure renegotiation; Go always behaves as if it were on.
const scsv = "TLS_EMPTY_RENEGOTIATION_INFO_SCSV"

func cipherByName(name string) (*tls.CipherSuite, bool) {
	// JSSE spells some legacy suites with an SSL_ prefix where IANA (and Go) say TLS_.
	if strings.HasPrefix(name, "SSL_") {
		name = "TLS_" + strings.TrimPrefix(name, "SSL_")
	}
	for _, list := range [][]*tls.CipherSuite{tls.CipherSuites(), tls.InsecureCipherSuites()} {
		for _, cs := range list {
			if cs.Name == name {
				return cs, true
			}
		}
	}
	return nil, false
}

func supports(cs *tls.CipherSuite, v uint16) bool {
	for _, s := range cs.SupportedVersions {
		if s == v {
			return true
		}
	}
	return false
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// ResolveTLSOptions maps the kroxylicious.io/{enabled,disabled}-{protocols,cipher-suites}
// options (comma-separated JSSE names) to Go TLS settings. Anything Go cannot honour exactly
// is an error rather than silently ignored: an unknown key or name, enabling a protocol below
// TLS 1.2, or restricting TLS 1.3 cipher suites individually (Go always enables all three).
// Enabling only TLS 1.2 suites turns TLS 1.3 off, as JSSE would.
func ResolveTLSOptions(opts map[string]string) (TLSParams, error) {
	if err := checkOptionKeys(opts); err != nil {
		return TLSParams{}, err
	}
	versions, err := resolveProtocols(opts)
	if err != nil {
		return TLSParams{}, err
	}
	r := newSuiteResolution(versions)
	enabled, explicit := opts[OptionEnabledCipherSuites]
	if explicit {
		if err := r.enableSuites(enabled); err != nil {
			return TLSParams{}, err
		}
	}
	if disabled, ok := opts[OptionDisabledCipherSuites]; ok {
		if err := r.disableSuites(disabled, explicit); err != nil {
			return TLSParams{}, err
		}
	}
	return r.params()
}

// checkOptionKeys refuses a key other than the four options, such as a misspelt one that
// would otherwise leave its setting silently unapplied.
func checkOptionKeys(opts map[string]string) error {
	for k := range opts {
		switch k {
		case OptionEnabledProtocols, OptionDisabledProtocols, OptionEnabledCipherSuites, OptionDisabledCipherSuites:
		default:
			return fmt.Errorf("unknown option %q", k)
		}
	}
	return nil
}

// resolveProtocols returns the TLS versions the protocol options leave on: TLS 1.2 and 1.3
// unless enabled-protocols says otherwise, never one below TLS 1.2, as Go cannot negotiate it.
func resolveProtocols(opts map[string]string) (map[uint16]bool, error) {
	versions := map[uint16]bool{tls.VersionTLS12: true, tls.VersionTLS13: true}
	if v, ok := opts[OptionEnabledProtocols]; ok {
		versions = map[uint16]bool{}
		for _, n := range splitList(v) {
			ver, ok := protocolNames[n]
			if !ok {
				return nil, fmt.Errorf("%s: unknown protocol %q (known: TLSv1.2, TLSv1.3)", OptionEnabledProtocols, n)
			}
			if ver < tls.VersionTLS12 {
				return nil, fmt.Errorf("%s: %s is below the minimum TLS 1.2", OptionEnabledProtocols, n)
			}
			versions[ver] = true
		}
	}
	for _, n := range splitList(opts[OptionDisabledProtocols]) {
		ver, ok := protocolNames[n]
		if !ok {
			return nil, fmt.Errorf("%s: unknown protocol %q", OptionDisabledProtocols, n)
		}
		delete(versions, ver)
	}
	return versions, nil
}

// suiteResolution is what ResolveTLSOptions has worked out so far: the cipher suite options
// can turn a version off, so the versions travel with the suites.
type suiteResolution struct {
	// versions are the TLS versions still on.
	versions map[uint16]bool
	// suites12 are the TLS 1.2 suites, in preference order; nil means Go's defaults.
	suites12 []uint16
	// want13 are the TLS 1.3 suites asked for, which enforce13 maps to what Go can enforce.
	want13 map[uint16]bool
}

// newSuiteResolution starts from the versions the protocol options leave on, with Go's TLS
// 1.2 suites and all three TLS 1.3 suites.
func newSuiteResolution(versions map[uint16]bool) *suiteResolution {
	want13 := map[uint16]bool{}
	for _, id := range all13 {
		want13[id] = true
	}
	return &suiteResolution{versions: versions, want13: want13}
}

// enableSuites applies enabled-cipher-suites: exactly the suites listed are on, and a version
// none of them serves is off, as in JSSE.
func (r *suiteResolution) enableSuites(list string) error {
	seen13 := map[uint16]bool{}
	for _, n := range splitList(list) {
		if n == scsv {
			continue
		}
		cs, ok := cipherByName(n)
		if !ok {
			return fmt.Errorf("%s: unknown cipher suite %q", OptionEnabledCipherSuites, n)
		}
		if cs.Insecure {
			return fmt.Errorf("%s: cipher suite %q is insecure (RC4, 3DES, CBC-SHA256 or no forward secrecy; Go's tls.InsecureCipherSuites) and cannot be enabled", OptionEnabledCipherSuites, n)
		}
		if supports(cs, tls.VersionTLS13) {
			seen13[cs.ID] = true
			continue
		}
		r.suites12 = append(r.suites12, cs.ID)
	}
	r.want13 = seen13
	if len(seen13) == 0 {
		// JSSE with no TLS 1.3 suite enabled cannot negotiate TLS 1.3.
		delete(r.versions, tls.VersionTLS13)
	}
	if len(r.suites12) == 0 {
		delete(r.versions, tls.VersionTLS12)
	}
	return nil
}

// disableSuites applies disabled-cipher-suites to the suites enabled-cipher-suites listed
// (afterEnabled) or else to Go's, spelled out: nil, meaning Go's defaults, cannot lose one.
func (r *suiteResolution) disableSuites(list string, afterEnabled bool) error {
	if !afterEnabled {
		r.suites12 = goSuites12()
	}
	for _, n := range splitList(list) {
		if n == scsv {
			continue
		}
		cs, ok := cipherByName(n)
		if !ok {
			return fmt.Errorf("%s: unknown cipher suite %q", OptionDisabledCipherSuites, n)
		}
		if supports(cs, tls.VersionTLS13) {
			delete(r.want13, cs.ID)
			continue
		}
		r.suites12 = without(r.suites12, cs.ID)
	}
	if len(r.suites12) == 0 {
		delete(r.versions, tls.VersionTLS12)
	}
	return nil
}

// goSuites12 lists Go's default suites that serve TLS 1.2, in Go's preference order.
func goSuites12() []uint16 {
	var out []uint16
	for _, cs := range tls.CipherSuites() {
		if supports(cs, tls.VersionTLS12) {
			out = append(out, cs.ID)
		}
	}
	return out
}

// without removes id from ids in place, keeping the order of the rest.
func without(ids []uint16, id uint16) []uint16 {
	out := ids[:0]
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

// params turns the resolution into TLSParams, refusing options that leave no version on.
func (r *suiteResolution) params() (TLSParams, error) {
	if len(r.want13) == 0 {
		delete(r.versions, tls.VersionTLS13)
	}
	if len(r.versions) == 0 {
		return TLSParams{}, fmt.Errorf("the options leave no TLS protocol version enabled (TLS 1.2 needs at least one TLS 1.2 cipher suite)")
	}
	p := TLSParams{MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS12}
	for v := range r.versions {
		p.MinVersion = min(p.MinVersion, v)
		p.MaxVersion = max(p.MaxVersion, v)
	}
	if p.MinVersion > p.MaxVersion {
		p.MaxVersion = p.MinVersion
	}
	if p.MinVersion == tls.VersionTLS12 {
		p.CipherSuites = r.suites12
	}
	if r.versions[tls.VersionTLS13] {
		p.FIPS, p.Suites13, p.Unenforced = enforce13(r.want13)
	}
	return p, nil
}

// enforce13 maps the TLS 1.3 suites asked for to what Go can enforce: all three, or without
// ChaCha20-Poly1305 the AES-GCM pair of FIPS 140-3 mode; a suite in force but not asked for is
// reported as not enforced.
func enforce13(want map[uint16]bool) (fips bool, suites []uint16, unenforced []string) {
	suites = all13
	if !want[tls.TLS_CHACHA20_POLY1305_SHA256] {
		fips, suites = true, fips13
	}
	for _, id := range suites {
		if !want[id] {
			unenforced = append(unenforced, fmt.Sprintf("%s stays enabled (Go enables TLS 1.3 suites as a set: all three, or in FIPS 140-3 mode both AES-GCM ones)", tls.CipherSuiteName(id)))
		}
	}
	return fips, suites, unenforced
}

func names(ids []uint16) string {
	var out []string
	for _, id := range ids {
		out = append(out, tls.CipherSuiteName(id))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// NeedsFIPS reports whether some listener's or upstream's TLS options need FIPS 140-3 mode
// (TLSParams.FIPS), and names the first that does. Options that do not resolve are left to
// Validate.
func (c *Config) NeedsFIPS() (string, bool) {
	for _, l := range c.Listeners {
		if p, err := ResolveTLSOptions(l.Options); err == nil && p.FIPS {
			return "listener " + l.Name, true
		}
	}
	for _, vc := range c.VirtualClusters {
		if vc.UpstreamTLS == nil {
			continue
		}
		if p, err := ResolveTLSOptions(vc.UpstreamTLS.Options); err == nil && p.FIPS {
			return "the upstream TLS of virtual cluster " + vc.Name, true
		}
	}
	return "", false
}
