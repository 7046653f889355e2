package acl

import (
	"bytes"
	"fmt"
	"strings"
)

// tokKind is the kind of a token of the rules language (Kroxylicious' AclRules.g4 lexer).
type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tString
	tRegex
	tSemi
	tDot
	tComma
	tStar
	tEq
	tLBrace
	tRBrace
)

var tokNames = [...]string{tEOF: "end of file", tIdent: "identifier", tString: "string", tRegex: "regex",
	tSemi: "';'", tDot: "'.'", tComma: "','", tStar: "'*'", tEq: "'='", tLBrace: "'{'", tRBrace: "'}'"}

// token is one token: its kind, its text (a string's or regex's content, unescaped; raw is it
// as written, for like's escaped '*'), and where it starts (line and column from 1; columns
// count bytes).
type token struct {
	kind      tokKind
	text, raw string
	line, col int
}

func (t token) describe() string {
	switch t.kind {
	case tIdent:
		return fmt.Sprintf("%q", t.text)
	case tString:
		return "string " + quoteShort(t.text)
	case tRegex:
		return "regex /" + short(t.text) + "/"
	}
	return tokNames[t.kind]
}

// quoteShort quotes s, cut to a length an error message can carry.
func quoteShort(s string) string { return fmt.Sprintf("%q", short(s)) }

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// lexer splits a rules file into tokens, one at a time; it never looks back, so a file is read
// in time linear in its size.
type lexer struct {
	src       []byte
	off       int
	line, col int
}

func newLexer(src []byte) *lexer { return &lexer{src: src, line: 1, col: 1} }

// advance moves past n bytes, keeping the line and column.
func (l *lexer) advance(n int) {
	for range n {
		if l.src[l.off] == '\n' {
			l.line, l.col = l.line+1, 1
		} else {
			l.col++
		}
		l.off++
	}
}

// next returns the next token, skipping white space and comments.
func (l *lexer) next() (token, error) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	t := token{line: l.line, col: l.col}
	if l.off >= len(l.src) {
		return t, nil
	}
	c := l.src[l.off]
	if k, ok := punct(c); ok {
		t.kind = k
		l.advance(1)
		return t, nil
	}
	switch {
	case c == '"':
		return l.quoted(t, '"', tString)
	case c == '/':
		return l.quoted(t, '/', tRegex)
	case isLetter(c):
		end := l.off + 1
		for end < len(l.src) && (isLetter(l.src[end]) || isDigit(l.src[end]) || l.src[end] == '_') {
			end++
		}
		t.kind, t.text = tIdent, string(l.src[l.off:end])
		l.advance(end - l.off)
		return t, nil
	}
	return t, errAt(t.line, t.col, "unexpected character %q", rune(c))
}

func punct(c byte) (tokKind, bool) {
	switch c {
	case ';':
		return tSemi, true
	case '.':
		return tDot, true
	case ',':
		return tComma, true
	case '*':
		return tStar, true
	case '=':
		return tEq, true
	case '{':
		return tLBrace, true
	case '}':
		return tRBrace, true
	}
	return 0, false
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// skipSpace skips white space, line comments (// to the end of the line) and block comments.
func (l *lexer) skipSpace() error {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			l.advance(1)
		case c == '/' && l.peek(1) == '/':
			end := l.off
			for end < len(l.src) && l.src[end] != '\n' {
				end++
			}
			l.advance(end - l.off)
		case c == '/' && l.peek(1) == '*':
			line, col := l.line, l.col
			end := bytes.Index(l.src[l.off+2:], []byte("*/"))
			if end < 0 {
				return errAt(line, col, "comment not closed (no */)")
			}
			l.advance(end + 4)
		default:
			return nil
		}
	}
	return nil
}

func (l *lexer) peek(n int) byte {
	if l.off+n < len(l.src) {
		return l.src[l.off+n]
	}
	return 0
}

// quoted reads a string ("…") or a regex (/…/): a backslash makes the next character part of
// it (Kroxylicious unescapes `\x` to `x` in both).
func (l *lexer) quoted(t token, delim byte, kind tokKind) (token, error) {
	var b strings.Builder
	i := l.off + 1
	for ; i < len(l.src) && l.src[i] != delim; i++ {
		if l.src[i] == '\\' && i+1 < len(l.src) {
			i++
		}
		b.WriteByte(l.src[i])
	}
	if i >= len(l.src) {
		return t, errAt(t.line, t.col, "%s not closed (no %c)", tokNames[kind], delim)
	}
	t.kind, t.text, t.raw = kind, b.String(), string(l.src[l.off+1:i])
	l.advance(i + 1 - l.off)
	return t, nil
}
