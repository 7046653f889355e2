package validation

import (
	"bytes"
	"cmp"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is how deeply arrays and objects may nest in a checked key or value: `[[1]]` nests
// 2 deep. A deeper value is refused before any Go value is built from it. Real records rarely
// nest more than a few levels; the limit keeps the schema check's recursion, and the memory of
// a document built for it, proportional to the value's size rather than to its depth.
const maxDepth = 128

// checkJSON reports whether b is one JSON text (RFC 8259: UTF-8, nothing after the value),
// without building Go values: a state machine whose memory is a fixed stack of maxDepth
// entries. With uniqueKeys, an object that names a member twice (after unescaping) is refused
// too; that costs 16 bytes per member name of the objects open at once (a member takes at least
// 5 bytes of b), in a slice that grows as needed.
func checkJSON(b []byte, uniqueKeys bool) error {
	if len(b) > math.MaxInt32 {
		return fmt.Errorf("%d bytes: too long to check", len(b))
	}
	s := scanner{b: b, unique: uniqueKeys}
	if uniqueKeys {
		s.seed = maphash.MakeSeed()
	}
	return s.run()
}

// scanner is checkJSON's state.
type scanner struct {
	b      []byte
	i      int // the next byte to read
	depth  int // arrays and objects open
	object [maxDepth]bool

	// With unique: the member names of the open objects, and where each object's start.
	unique   bool
	seed     maphash.Seed
	keys     []memberName
	keyStart [maxDepth]int
	scratch  [2][]byte // unescaped names, to compare two with the same hash
}

// memberName is an object member's name: its hash (of the unescaped name) and the offset of its
// opening quote.
type memberName struct {
	hash    uint64
	at      int32
	escaped bool
}

type syntaxError struct {
	at  int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.at) }

func (s *scanner) fail(format string, args ...any) error {
	return &syntaxError{s.i, fmt.Sprintf(format, args...)}
}

// unexpected is the error for the byte at s.i (or the end of the input) when something else
// was wanted.
func (s *scanner) unexpected(wanted string) error {
	if s.i >= len(s.b) {
		return &syntaxError{s.i, "unexpected end of JSON input, looking for " + wanted}
	}
	return s.fail("invalid character %s looking for %s", quoteChar(s.b[s.i]), wanted)
}

func quoteChar(c byte) string {
	if c >= utf8.RuneSelf {
		return fmt.Sprintf("byte %#02x", c)
	}
	return fmt.Sprintf("%q", rune(c))
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) run() error {
	for {
		done, err := s.value()
		if err != nil {
			return err
		}
		if !done {
			continue // in a new array or object, at its first value
		}
		// After a complete value: the end, a comma or the close of the array or object.
		for done {
			s.ws()
			if s.depth == 0 {
				if s.i < len(s.b) {
					return s.fail("invalid character %s after the top-level value", quoteChar(s.b[s.i]))
				}
				return nil
			}
			obj := s.object[s.depth-1]
			switch {
			case s.i < len(s.b) && s.b[s.i] == ',':
				s.i++
				if obj {
					if err := s.member(); err != nil {
						return err
					}
				}
				done = false
			case s.i < len(s.b) && obj && s.b[s.i] == '}', s.i < len(s.b) && !obj && s.b[s.i] == ']':
				s.i++
				if err := s.close(); err != nil {
					return err
				}
			case obj:
				return s.unexpected("',' or '}' after an object member")
			default:
				return s.unexpected("',' or ']' after an array element")
			}
		}
	}
}

// value reads a value, or the start of an array or object and its first member's name; done
// says whether the value is complete.
func (s *scanner) value() (done bool, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return false, s.unexpected("a value")
	}
	switch c := s.b[s.i]; {
	case c == '{' || c == '[':
		if s.depth == maxDepth {
			return false, s.fail("arrays and objects nested more than %d deep", maxDepth)
		}
		s.object[s.depth] = c == '{'
		if s.unique {
			s.keyStart[s.depth] = len(s.keys)
		}
		s.depth++
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == c+2 { // '}' and ']' are '{' and '[' plus 2
			s.i++
			return true, s.close()
		}
		if c == '{' {
			return false, s.member()
		}
		return false, nil
	case c == '"':
		_, err := s.str()
		return true, err
	case c == 't':
		return true, s.literal("true")
	case c == 'f':
		return true, s.literal("false")
	case c == 'n':
		return true, s.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return true, s.number()
	}
	return false, s.unexpected("a value")
}

// close ends the innermost array or object; with unique, it checks the object's member names.
func (s *scanner) close() error {
	s.depth--
	if !s.unique || !s.object[s.depth] {
		return nil
	}
	names := s.keys[s.keyStart[s.depth]:]
	s.keys = s.keys[:s.keyStart[s.depth]]
	if len(names) < 2 {
		return nil
	}
	slices.SortFunc(names, func(a, b memberName) int { return cmp.Compare(a.hash, b.hash) })
	for i := 0; i < len(names); {
		j := i + 1
		for j < len(names) && names[j].hash == names[i].hash {
			j++
		}
		// Names with the same hash: almost always the same name, compared to be sure.
		for a := i; a < j; a++ {
			for b := a + 1; b < j; b++ {
				na, nb := s.name(0, names[a]), s.name(1, names[b])
				if bytes.Equal(na, nb) {
					return &syntaxError{int(max(names[a].at, names[b].at)), fmt.Sprintf("object member name %s appears twice", quoteName(na))}
				}
			}
		}
		i = j
	}
	return nil
}

func quoteName(n []byte) string {
	if len(n) > 64 {
		return fmt.Sprintf("%q…", n[:64])
	}
	return fmt.Sprintf("%q", n)
}

// name is a member name, unescaped (in scratch[k] when it has escapes).
func (s *scanner) name(k int, m memberName) []byte {
	end := int(m.at) + 1
	for s.b[end] != '"' {
		if s.b[end] == '\\' {
			end++
		}
		end++
	}
	raw := s.b[m.at+1 : end]
	if !m.escaped {
		return raw
	}
	s.scratch[k] = unescape(s.scratch[k][:0], raw)
	return s.scratch[k]
}

// member reads an object member's name and the colon after it.
func (s *scanner) member() error {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return s.unexpected("an object member's name")
	}
	at := s.i
	escaped, err := s.str()
	if err != nil {
		return err
	}
	if s.unique {
		m := memberName{at: int32(at), escaped: escaped}
		raw := s.b[at+1 : s.i-1]
		if escaped {
			s.scratch[0] = unescape(s.scratch[0][:0], raw)
			raw = s.scratch[0]
		}
		m.hash = maphash.Bytes(s.seed, raw)
		s.keys = append(s.keys, m)
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return s.unexpected("':' after an object member's name")
	}
	s.i++
	return nil
}

// str reads a string, s.i at its opening quote; escaped says whether it has escapes.
func (s *scanner) str() (escaped bool, err error) {
	s.i++
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return escaped, nil
		case c == '\\':
			escaped = true
			if s.i+1 >= len(s.b) {
				s.i++
				return escaped, s.unexpected("an escape")
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				s.i += 2
				for k := 0; k < 4; k++ {
					if s.i >= len(s.b) || !isHex(s.b[s.i]) {
						return escaped, s.unexpected("a hexadecimal digit in a \\u escape")
					}
					s.i++
				}
			default:
				s.i++
				return escaped, s.fail("invalid escape %s in a string", quoteChar(s.b[s.i]))
			}
		case c < 0x20:
			return escaped, s.fail("control character %s in a string", quoteChar(c))
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, n := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && n == 1 {
				return escaped, s.fail("invalid UTF-8 in a string")
			}
			s.i += n
		}
	}
	return escaped, s.unexpected("the end of a string")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (s *scanner) literal(word string) error {
	for k := 0; k < len(word); k++ {
		if s.i >= len(s.b) || s.b[s.i] != word[k] {
			return s.unexpected(fmt.Sprintf("%q", word))
		}
		s.i++
	}
	return nil
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	if s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case digits() == 0:
		return s.unexpected("a digit")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return s.unexpected("a digit after a decimal point")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return s.unexpected("a digit in an exponent")
		}
	}
	return nil
}

// unescape appends the string whose body (between the quotes, already checked) is raw, as
// encoding/json decodes it: an unpaired surrogate becomes U+FFFD.
func unescape(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch raw[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(raw[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2 := utf16.DecodeRune(r, hex4(raw[i+2:])); r2 != utf8.RuneError {
						dst = utf8.AppendRune(dst, r2)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, raw[i+1])
		}
		i += 2
	}
	return dst
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
