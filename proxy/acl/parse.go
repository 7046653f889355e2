package acl

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Limits of a rules file: it is read at start and on every reload, by the proxy and by the
// operator's config check, so its cost is bounded whatever it holds. Parsing is linear in the
// file's size; each limit is refused with an error saying which.
const (
	// MaxFileBytes is the largest rules file.
	MaxFileBytes = 8 << 20
	// MaxEntries is the most names and patterns the rules may hold: each rule counts one, and
	// one more per name of an `in` set beyond the first (a set of users times a set of
	// resources is not expanded, so one line cannot make millions).
	MaxEntries = 100_000
	// MaxRegexRules is the most `matching` rules: a name not decided by the cache is tried
	// against every regex of the rules that apply to its subject.
	MaxRegexRules = 1024
	// MaxRegexBytes is the longest regex.
	MaxRegexBytes = 4096
	// maxErrors is the most errors one parse reports (the file stops being read at the first
	// syntax error; errors of meaning, such as an unknown operation, are gathered).
	maxErrors = 20
)

// ErrorAt is an error at a position of a rules file.
type ErrorAt struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *ErrorAt) Error() string {
	if e.File == "" {
		return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

func errAt(line, col int, format string, args ...any) *ErrorAt {
	return &ErrorAt{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// matchKind is how a rule matches a name.
type matchKind uint8

const (
	mInvalid matchKind = iota // a predicate whose error was recorded
	mAny
	mExact
	mPrefix
	mRegex
)

// nameMatch matches principal or resource names: any, one of names, a prefix (names[0]), or re.
type nameMatch struct {
	kind  matchKind
	names []string
	re    *regexp.Regexp
}

// rule is one compiled rule; its principal is in the Rules' user index.
type rule struct {
	deny bool
	typ  Type
	ops  Ops // implied operations included
	res  nameMatch
}

type importTarget struct {
	principal bool
	typ       Type
}

// parser reads a rules file by recursive descent, one token of look-ahead.
type parser struct {
	lx      *lexer
	tok     token
	file    string
	imports map[string]importTarget
	out     *Rules
	entries int
	regexes int
	errs    []error
}

// Parse reads a rules file; name is how errors refer to it ("rules.acl:3:17: …").
func Parse(name string, src []byte) (*Rules, error) {
	if len(src) > MaxFileBytes {
		return nil, fmt.Errorf("%s: %d bytes: a rules file may have at most %d (8 MiB)", name, len(src), MaxFileBytes)
	}
	p := &parser{lx: newLexer(src), file: name, out: newRules(),
		imports: map[string]importTarget{}}
	err := p.parseFile()
	if err != nil {
		p.errs = append(p.errs, err)
	}
	if len(p.errs) > 0 {
		for _, e := range p.errs {
			var ea *ErrorAt
			if errors.As(e, &ea) {
				ea.File = name
			}
		}
		return nil, errors.Join(p.errs...)
	}
	p.out.index()
	return p.out, nil
}

// fail records an error of meaning and goes on, so that one parse reports several.
func (p *parser) fail(t token, format string, args ...any) error {
	p.errs = append(p.errs, errAt(t.line, t.col, format, args...))
	if len(p.errs) >= maxErrors {
		return errAt(t.line, t.col, "too many errors; stopped")
	}
	return nil
}

func (p *parser) advance() error {
	t, err := p.lx.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

// expected is the syntax error at the current token.
func (p *parser) expected(what string) error {
	return errAt(p.tok.line, p.tok.col, "expected %s, found %s", what, p.tok.describe())
}

// keyword consumes the identifier kw, or fails.
func (p *parser) keyword(kw string) error {
	if p.tok.kind != tIdent || p.tok.text != kw {
		return p.expected(fmt.Sprintf("%q", kw))
	}
	return p.advance()
}

func (p *parser) is(kw string) bool { return p.tok.kind == tIdent && p.tok.text == kw }

func (p *parser) punct(k tokKind) error {
	if p.tok.kind != k {
		return p.expected(tokNames[k])
	}
	return p.advance()
}

func (p *parser) ident(what string) (token, error) {
	t := p.tok
	if t.kind != tIdent {
		return t, p.expected(what)
	}
	return t, p.advance()
}

// parseFile: import* deny* allow* "otherwise deny;" EOF.
func (p *parser) parseFile() error {
	if err := p.advance(); err != nil {
		return err
	}
	for p.is("from") {
		if err := p.parseImport(); err != nil {
			return err
		}
	}
	seenAllow := false
	for {
		switch {
		case p.is("deny") && seenAllow:
			return errAt(p.tok.line, p.tok.col, "deny rules must come before allow rules")
		case p.is("deny") || p.is("allow"):
			seenAllow = p.is("allow")
			if err := p.parseRule(); err != nil {
				return err
			}
		case p.is("otherwise"):
			return p.parseEnd()
		case p.is("from"):
			return errAt(p.tok.line, p.tok.col, "imports must come before the rules")
		default:
			return p.expected(`"allow", "deny" or "otherwise deny;"`)
		}
	}
}

func (p *parser) parseEnd() error {
	if err := p.keyword("otherwise"); err != nil {
		return err
	}
	if err := p.keyword("deny"); err != nil {
		return err
	}
	if err := p.punct(tSemi); err != nil {
		return err
	}
	if p.tok.kind != tEOF {
		return p.expected(`end of file after "otherwise deny;"`)
	}
	return nil
}

// parseImport: from a.b.c import X [as Y] {, X [as Y]} ;
func (p *parser) parseImport() error {
	if err := p.keyword("from"); err != nil {
		return err
	}
	first, err := p.ident("a package name")
	if err != nil {
		return err
	}
	pkg := []string{first.text}
	for p.tok.kind == tDot {
		if err := p.advance(); err != nil {
			return err
		}
		t, err := p.ident("a package name")
		if err != nil {
			return err
		}
		pkg = append(pkg, t.text)
	}
	if err := p.keyword("import"); err != nil {
		return err
	}
	for {
		if err := p.parseImportElement(first, strings.Join(pkg, ".")); err != nil {
			return err
		}
		if p.tok.kind != tComma {
			return p.punct(tSemi)
		}
		if err := p.advance(); err != nil {
			return err
		}
	}
}

func (p *parser) parseImportElement(pkgTok token, pkg string) error {
	name, err := p.ident("a class name")
	if err != nil {
		return err
	}
	local := name
	if p.is("as") {
		if err := p.advance(); err != nil {
			return err
		}
		if local, err = p.ident("a name after \"as\""); err != nil {
			return err
		}
	}
	target, ok := resolveClass(pkg + "." + name.text)
	if !ok {
		return p.fail(name, "class %s.%s was not found (resource types are %s.%s)", pkg, name.text, kroxyliciousPackage, strings.Join(typeClasses[:], ", "))
	}
	if _, dup := p.imports[local.text]; dup {
		return p.fail(local, "local name %q is already imported", local.text)
	}
	p.imports[local.text] = target
	return nil
}

// lookup resolves a local name: imported, or User (imported by default, as in Kroxylicious).
func (p *parser) lookup(local string) (importTarget, bool) {
	if t, ok := p.imports[local]; ok {
		return t, true
	}
	return importTarget{principal: true}, local == "User"
}

func resolveClass(qualified string) (importTarget, bool) {
	if qualified == principalClass {
		return importTarget{principal: true}, true
	}
	for t, c := range typeClasses {
		if qualified == kroxyliciousPackage+"."+c {
			return importTarget{typ: Type(t)}, true
		}
	}
	return importTarget{}, false
}

// parseRule: (allow|deny) Principal with name <pred> to <ops> Resource with name <pred> ;
func (p *parser) parseRule() error {
	deny := p.is("deny")
	if err := p.advance(); err != nil {
		return err
	}
	ptype, err := p.ident("a principal type (User)")
	if err != nil {
		return err
	}
	if t, ok := p.lookup(ptype.text); !ok || !t.principal {
		if err := p.fail(ptype, "principal type %q is not known (rules match the User principal)", ptype.text); err != nil {
			return err
		}
	}
	if err := p.withName(); err != nil {
		return err
	}
	users, err := p.parsePredicate(false)
	if err != nil {
		return err
	}
	if err := p.keyword("to"); err != nil {
		return err
	}
	opToks, all, err := p.parseOperations()
	if err != nil {
		return err
	}
	rtype, err := p.ident("a resource type")
	if err != nil {
		return err
	}
	if err := p.withName(); err != nil {
		return err
	}
	res, err := p.parsePredicate(true)
	if err != nil {
		return err
	}
	if err := p.punct(tSemi); err != nil {
		return err
	}
	return p.addRule(deny, users, opToks, all, rtype, res)
}

func (p *parser) withName() error {
	if err := p.keyword("with"); err != nil {
		return err
	}
	return p.keyword("name")
}

// parseOperations: * | OP | { OP {, OP} }
func (p *parser) parseOperations() (ops []token, all bool, err error) {
	switch p.tok.kind {
	case tStar:
		return nil, true, p.advance()
	case tIdent:
		t := p.tok
		return []token{t}, false, p.advance()
	case tLBrace:
		if err := p.advance(); err != nil {
			return nil, false, err
		}
		for {
			t, err := p.ident("an operation")
			if err != nil {
				return nil, false, err
			}
			ops = append(ops, t)
			if p.tok.kind == tRBrace {
				return ops, false, p.advance()
			}
			if err := p.punct(tComma); err != nil {
				return nil, false, err
			}
		}
	}
	return nil, false, p.expected(`an operation, "{" or "*"`)
}

// parsePredicate: * | = "s" | in {"s", …} | like "p*" | matching /re/ (resources only).
func (p *parser) parsePredicate(resource bool) (nameMatch, error) {
	t := p.tok
	switch {
	case t.kind == tStar:
		return nameMatch{kind: mAny}, p.advance()
	case t.kind == tEq:
		if err := p.advance(); err != nil {
			return nameMatch{}, err
		}
		s, err := p.str()
		return nameMatch{kind: mExact, names: []string{s.text}}, err
	case p.is("in"):
		return p.parseIn()
	case p.is("like"):
		if err := p.advance(); err != nil {
			return nameMatch{}, err
		}
		s, err := p.str()
		if err != nil {
			return nameMatch{}, err
		}
		return p.like(s)
	case p.is("matching"):
		return p.parseMatching(resource)
	}
	return nameMatch{}, p.expected(`"*", "=", "in", "like" or "matching"`)
}

func (p *parser) str() (token, error) {
	t := p.tok
	if t.kind != tString {
		return t, p.expected("a string in double quotes")
	}
	return t, p.advance()
}

func (p *parser) parseIn() (nameMatch, error) {
	if err := p.advance(); err != nil {
		return nameMatch{}, err
	}
	if err := p.punct(tLBrace); err != nil {
		return nameMatch{}, err
	}
	m := nameMatch{kind: mExact}
	seen := map[string]bool{}
	for {
		s, err := p.str()
		if err != nil {
			return m, err
		}
		if !seen[s.text] {
			seen[s.text] = true
			m.names = append(m.names, s.text)
		}
		if len(m.names) > 1 {
			if err := p.count(s, 1); err != nil {
				return m, err
			}
		}
		if p.tok.kind == tRBrace {
			return m, p.advance()
		}
		if err := p.punct(tComma); err != nil {
			return m, err
		}
	}
}

// like is Kroxylicious' `like`: a '*' only at the end makes a prefix ("" is every name), no '*'
// an exact name; `\*` is a literal '*'.
func (p *parser) like(s token) (nameMatch, error) {
	var b strings.Builder
	wildcard := false
	for i := 0; i < len(s.raw); i++ {
		c := s.raw[i]
		switch {
		case c == '\\' && i+1 < len(s.raw):
			i++
			b.WriteByte(s.raw[i])
		case c == '*' && i == len(s.raw)-1:
			wildcard = true
		case c == '*':
			return nameMatch{}, p.fail(s, "wildcard '*' only supported as last character in 'like'")
		default:
			b.WriteByte(c)
		}
	}
	switch {
	case !wildcard:
		return nameMatch{kind: mExact, names: []string{b.String()}}, nil
	case b.Len() == 0:
		return nameMatch{kind: mAny}, nil
	}
	return nameMatch{kind: mPrefix, names: []string{b.String()}}, nil
}

func (p *parser) parseMatching(resource bool) (nameMatch, error) {
	kw := p.tok
	if err := p.advance(); err != nil {
		return nameMatch{}, err
	}
	re := p.tok
	if re.kind != tRegex {
		return nameMatch{}, p.expected("a regex in slashes (/…/)")
	}
	if err := p.advance(); err != nil {
		return nameMatch{}, err
	}
	if !resource {
		return nameMatch{}, p.fail(kw, "'matching' operation not supported on principals")
	}
	if len(re.text) > MaxRegexBytes {
		return nameMatch{}, p.fail(re, "regex of %d bytes: at most %d", len(re.text), MaxRegexBytes)
	}
	if p.regexes++; p.regexes > MaxRegexRules {
		return nameMatch{}, errAt(re.line, re.col, "more than %d 'matching' rules", MaxRegexRules)
	}
	// Kroxylicious matches the whole name (Java's Matcher.matches).
	compiled, err := regexp.Compile(`^(?:` + re.text + `)$`)
	if err != nil {
		return nameMatch{}, p.fail(re, "regex provided for 'matching' operation is not valid: %v", err)
	}
	return nameMatch{kind: mRegex, re: compiled}, nil
}

// count adds n entries, refusing a file that holds more than MaxEntries.
func (p *parser) count(at token, n int) error {
	p.entries += n
	if p.entries > MaxEntries {
		return errAt(at.line, at.col, "more than %d rules and names: a rules file may hold at most that many", MaxEntries)
	}
	return nil
}

// addRule checks a parsed rule's resource type and operations and adds it.
func (p *parser) addRule(deny bool, users nameMatch, opToks []token, all bool, rtype token, res nameMatch) error {
	if err := p.count(rtype, 1); err != nil {
		return err
	}
	target, ok := p.lookup(rtype.text)
	if !ok || target.principal {
		return p.fail(rtype, "resource type %q has not been imported (from %s import TopicResource as %s;)", rtype.text, kroxyliciousPackage, rtype.text)
	}
	t := target.typ
	ops := typeOps[t]
	if !all {
		ops = 0
		for _, o := range opToks {
			op, ok := opByName(o.text)
			if !ok || !typeOps[t].Has(op) {
				if err := p.fail(o, "%s is not an operation of %s (%s)", o.text, typeClasses[t], opList(typeOps[t])); err != nil {
					return err
				}
				continue
			}
			ops |= 1 << op
		}
	}
	if users.kind == mInvalid || res.kind == mInvalid {
		return nil
	}
	p.out.add(users, rule{deny: deny, typ: t, ops: withImplied(t, ops), res: res})
	return nil
}

func opList(s Ops) string {
	var names []string
	for o := range numOps {
		if s.Has(o) {
			names = append(names, o.String())
		}
	}
	return strings.Join(names, ", ")
}
