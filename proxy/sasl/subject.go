package sasl

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Names of Kroxylicious' default SASL subject builder and of its one principal factory, each
// short and fully qualified.
var (
	subjectBuilderNames   = []string{"DefaultSaslSubjectBuilderService", "io.kroxylicious.proxy.internal.subject.DefaultSaslSubjectBuilderService"}
	principalFactoryNames = []string{"UserFactory", "io.kroxylicious.proxy.authentication.UserFactory"}
)

// FromSaslAuthorizedID is the one field a SASL subject builder reads: the authorization id the
// exchange established.
const FromSaslAuthorizedID = "saslAuthorizedId"

// SubjectBuilderConfig is the subjectBuilderConfig of Kroxylicious' DefaultSaslSubjectBuilderService.
type SubjectBuilderConfig struct {
	AddPrincipals []PrincipalAdderConfig `json:"addPrincipals"`
}

// PrincipalAdderConfig makes a principal from a field, mapped by the first rule that matches.
type PrincipalAdderConfig struct {
	From             string      `json:"from"`
	Map              []MapConfig `json:"map,omitempty"`
	PrincipalFactory string      `json:"principalFactory"`
}

// MapConfig is one mapping rule: replaceMatch "/regexp/replacement/flags" (any separator
// character; flags L or U lower or upper the result), or else "identity" or "anonymous".
type MapConfig struct {
	ReplaceMatch string `json:"replaceMatch,omitempty"`
	Else         string `json:"else,omitempty"`
}

// SubjectBuilder maps a SASL authorization id to the subject's user name, as Kroxylicious'
// subject builders do: by default the id itself.
type SubjectBuilder struct {
	rules [][]mapRule // per principal adder; the first adder that gives a name wins
}

// mapRule maps a name, or reports false when it does not apply.
type mapRule func(string) (string, bool)

// maxMapRules bounds the rules of one adder.
const maxMapRules = 100

// NewSubjectBuilder builds the subject builder named name (empty: the default, the authorization
// id as the user) with its configuration.
func NewSubjectBuilder(name string, config json.RawMessage) (*SubjectBuilder, error) {
	if name == "" {
		if len(config) > 0 && string(config) != "null" {
			return nil, errors.New("subjectBuilderConfig without subjectBuilder")
		}
		return &SubjectBuilder{rules: [][]mapRule{{identityRule}}}, nil
	}
	if !oneOf(name, subjectBuilderNames) {
		return nil, fmt.Errorf("subjectBuilder %q: kafkalink-proxy implements %s", name, strings.Join(subjectBuilderNames, " or "))
	}
	var cfg SubjectBuilderConfig
	if err := decodeStrict(config, &cfg); err != nil {
		return nil, fmt.Errorf("subjectBuilderConfig: %w", err)
	}
	if len(cfg.AddPrincipals) != 1 {
		return nil, fmt.Errorf("subjectBuilderConfig.addPrincipals: %d entries, the subject has one user principal", len(cfg.AddPrincipals))
	}
	b := &SubjectBuilder{}
	for i, a := range cfg.AddPrincipals {
		rules, err := a.build()
		if err != nil {
			return nil, fmt.Errorf("subjectBuilderConfig.addPrincipals[%d]: %w", i, err)
		}
		b.rules = append(b.rules, rules)
	}
	return b, nil
}

func decodeStrict(raw json.RawMessage, into any) error {
	if len(raw) == 0 {
		return errors.New("missing")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

func oneOf(s string, list []string) bool {
	for _, l := range list {
		if s == l {
			return true
		}
	}
	return false
}

func (a PrincipalAdderConfig) build() ([]mapRule, error) {
	if a.From != FromSaslAuthorizedID {
		return nil, fmt.Errorf("from %q: the supported value is %q", a.From, FromSaslAuthorizedID)
	}
	if !oneOf(a.PrincipalFactory, principalFactoryNames) {
		return nil, fmt.Errorf("principalFactory %q: the supported one is %s", a.PrincipalFactory, principalFactoryNames[1])
	}
	if len(a.Map) == 0 {
		return []mapRule{identityRule}, nil
	}
	if len(a.Map) > maxMapRules {
		return nil, fmt.Errorf("map: %d rules, over %d", len(a.Map), maxMapRules)
	}
	rules := make([]mapRule, 0, len(a.Map))
	for i, m := range a.Map {
		r, err := m.build(i == len(a.Map)-1)
		if err != nil {
			return nil, fmt.Errorf("map[%d]: %w", i, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func identityRule(s string) (string, bool) { return s, true }

func (m MapConfig) build(last bool) (mapRule, error) {
	switch {
	case m.ReplaceMatch != "" && m.Else != "":
		return nil, errors.New("replaceMatch and else are mutually exclusive")
	case m.ReplaceMatch != "":
		return replaceMatch(m.ReplaceMatch)
	case !last && m.Else != "":
		return nil, errors.New("else may only be the last rule of map")
	case m.Else == "identity":
		return identityRule, nil
	case m.Else == "anonymous":
		return func(string) (string, bool) { return "", true }, nil
	case m.Else != "":
		return nil, fmt.Errorf("else %q: the values are identity and anonymous", m.Else)
	}
	return nil, errors.New("exactly one of replaceMatch and else is required")
}

// javaGroupRef is a $n group reference in a Java replacement, which Go's Expand would read as
// the longest name ("$1x" is group "1x").
var javaGroupRef = regexp.MustCompile(`\$(\d+)`)

// replaceMatch builds a "cPATTERNcREPLACEMENTcFLAGS" rule: when the whole name matches PATTERN it
// becomes REPLACEMENT ($1 refers to groups), then lowered (L) or uppered (U).
func replaceMatch(rule string) (mapRule, error) {
	sep, size := utf8.DecodeRuneInString(rule)
	parts := strings.SplitN(rule[size:], string(sep), 3)
	if len(parts) != 3 {
		return nil, fmt.Errorf("replaceMatch %q: want the format cPATTERNcREPLACEMENTcFLAGS, c a separator of your choosing", rule)
	}
	re, err := regexp.Compile(`^(?:` + parts[0] + `)$`)
	if err != nil {
		return nil, fmt.Errorf("replaceMatch %q: the pattern: %w", rule, err)
	}
	flags := map[string]func(string) string{"": func(s string) string { return s }, "L": strings.ToLower, "U": strings.ToUpper}[parts[2]]
	if flags == nil {
		return nil, fmt.Errorf("replaceMatch %q: flags %q, want none, L or U", rule, parts[2])
	}
	template := javaGroupRef.ReplaceAllString(strings.ReplaceAll(parts[1], `\$`, `$$`), `$${$1}`)
	return func(s string) (string, bool) {
		m := re.FindStringSubmatchIndex(s)
		if m == nil {
			return "", false
		}
		return flags(string(re.ExpandString(nil, template, s, m))), true
	}, nil
}

// User is the user name of the subject whose SASL authorization id is id: empty for anonymous
// (an else: anonymous rule, or no rule that matched).
func (b *SubjectBuilder) User(id string) string {
	for _, rules := range b.rules {
		for _, r := range rules {
			if name, ok := r(id); ok {
				return name
			}
		}
	}
	return ""
}
