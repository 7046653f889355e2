package sasl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// Bounds of a credential store file.
const (
	MaxStoreUsers     = 100_000
	MaxStoreBytes     = 64 << 20
	maxUserNameBytes  = 1024
	maxStoreSaltBytes = 1024
)

// CredentialStore is a SCRAM credential store: per user, per mechanism, a salted credential. Its
// file is JSON (docs/identity.md, "Credential stores for SCRAM"):
//
//	{"users": {"alice": {"SCRAM-SHA-512": {"salt": "…", "iterations": 10000, "storedKey": "…", "serverKey": "…"}}}}
//
// with the byte fields in standard base64. It holds no password. A store is not changed once
// in use: a new file makes a new store.
type CredentialStore struct {
	users map[string]map[string]ScramCredential
}

// storedCredential is one credential as the file writes it; []byte is standard base64 in JSON.
type storedCredential struct {
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"storedKey"`
	ServerKey  []byte `json:"serverKey"`
}

// NewCredentialStore is an empty store, to Set users in.
func NewCredentialStore() *CredentialStore {
	return &CredentialStore{users: map[string]map[string]ScramCredential{}}
}

// ParseCredentialStore reads a store file, refusing unknown fields, a user named twice, more
// than MaxStoreUsers users, and any credential out of bounds, with the user and field named.
func ParseCredentialStore(b []byte) (*CredentialStore, error) {
	if len(b) > MaxStoreBytes {
		return nil, fmt.Errorf("credential store of %d bytes, over %d", len(b), MaxStoreBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := expectDelim(dec, '{', "the store"); err != nil {
		return nil, err
	}
	s := NewCredentialStore()
	seenUsers := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("credential store: %w", err)
		}
		if key != "users" || seenUsers {
			return nil, fmt.Errorf("credential store: field %v: only one \"users\" is known", key)
		}
		seenUsers = true
		if err := s.readUsers(dec); err != nil {
			return nil, err
		}
	}
	if err := expectDelim(dec, '}', "the store"); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("credential store: data after the document")
	}
	return s, nil
}

// readUsers reads the users object, one user at a time.
func (s *CredentialStore) readUsers(dec *json.Decoder) error {
	if err := expectDelim(dec, '{', "users"); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("credential store: users: %w", err)
		}
		user := tok.(string) // object keys are strings
		if _, dup := s.users[user]; dup {
			return fmt.Errorf("credential store: user %q given twice", user)
		}
		if len(s.users) >= MaxStoreUsers {
			return fmt.Errorf("credential store: more than %d users", MaxStoreUsers)
		}
		var mechs map[string]json.RawMessage
		if err := dec.Decode(&mechs); err != nil {
			return fmt.Errorf("credential store: user %q: not an object of mechanisms: %w", user, err)
		}
		for mech, raw := range mechs {
			if err := s.readCredential(user, mech, raw); err != nil {
				return err
			}
		}
		if len(mechs) == 0 {
			return fmt.Errorf("credential store: user %q has no credential", user)
		}
	}
	return expectDelim(dec, '}', "users")
}

// readCredential reads and checks one user's credential of one mechanism.
func (s *CredentialStore) readCredential(user, mech string, raw json.RawMessage) error {
	var sc storedCredential
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sc); err != nil {
		return fmt.Errorf("credential store: user %q, %s: %w", user, mech, err)
	}
	c := ScramCredential(sc)
	if err := s.Set(user, mech, c); err != nil {
		return fmt.Errorf("credential store: %w", err)
	}
	return nil
}

// expectDelim reads the next token, which must be the delimiter d.
func expectDelim(dec *json.Decoder, d json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("credential store: %s: %w", what, err)
	}
	if tok != d {
		return fmt.Errorf("credential store: %s: want %v, found %v", what, d, tok)
	}
	return nil
}

// Set adds or replaces user's credential of mech, after checking it.
func (s *CredentialStore) Set(user, mech string, c ScramCredential) error {
	if user == "" || len(user) > maxUserNameBytes || !utf8.ValidString(user) {
		return fmt.Errorf("user %q: the name must be 1..%d bytes of UTF-8", user, maxUserNameBytes)
	}
	h, err := scramHash(mech)
	if err != nil {
		return fmt.Errorf("user %q: %w", user, err)
	}
	if len(c.Salt) > maxStoreSaltBytes {
		return fmt.Errorf("user %q, %s: salt of %d bytes, over %d", user, mech, len(c.Salt), maxStoreSaltBytes)
	}
	if err := c.check(h); err != nil {
		return fmt.Errorf("user %q, %s: %w", user, mech, err)
	}
	if s.users[user] == nil {
		if len(s.users) >= MaxStoreUsers {
			return fmt.Errorf("user %q: the store has %d users already", user, MaxStoreUsers)
		}
		s.users[user] = map[string]ScramCredential{}
	}
	s.users[user][mech] = c
	return nil
}

// Users is the number of users in the store.
func (s *CredentialStore) Users() int { return len(s.users) }

// Lookup is the store's credential lookup for mech, as NewScramServer takes it.
func (s *CredentialStore) Lookup(mech string) func(user string) (ScramCredential, bool) {
	return func(user string) (ScramCredential, bool) {
		c, ok := s.users[user][mech]
		return c, ok
	}
}

// Marshal writes the store as its file: indented, users and mechanisms sorted.
func (s *CredentialStore) Marshal() ([]byte, error) {
	doc := struct {
		Users map[string]map[string]storedCredential `json:"users"`
	}{Users: make(map[string]map[string]storedCredential, len(s.users))}
	for u, mechs := range s.users {
		doc.Users[u] = make(map[string]storedCredential, len(mechs))
		for m, c := range mechs {
			doc.Users[u][m] = storedCredential(c)
		}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	return append(b, '\n'), err
}
