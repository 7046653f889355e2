package config

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

var testBrokerKey = bytes.Repeat([]byte{7}, BrokerKeySize)

func hashedNames(t testing.TB, pattern string, key []byte) *BrokerNames {
	t.Helper()
	n, err := NewBrokerNames(&VirtualCluster{BrokerPattern: pattern}, key)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A hash mapping's names are pinned: a proxy or operator release that named brokers differently
// would send clients to hosts with no Service and no certificate name.
func TestHashedBrokerNamesAreStable(t *testing.T) {
	n := hashedNames(t, "my-cluster-broker-$(nodeId).example.com", testBrokerKey)
	const pinned0 = "my-cluster-broker-g4mxk6sxwbjruz26rcaw7vlrqy.example.com"
	if got := n.Host(0); got != pinned0 || !n.Hashed() {
		t.Errorf("Host(0) = %s, pinned %s", got, pinned0)
	}
	if again := hashedNames(t, "my-cluster-broker-$(nodeId).example.com", testBrokerKey); again.Host(0) != n.Host(0) {
		t.Error("two BrokerNames of one key and pattern differ")
	}
}

// Every node id has its own name, a DNS label's worth of [a-z2-7] that reads back as that id;
// with another key or pattern it reads as nothing.
func TestHashedBrokerNamesRoundTrip(t *testing.T) {
	n := hashedNames(t, "my-cluster-broker-$(nodeId).example.com", testBrokerKey)
	other := hashedNames(t, "my-cluster-broker-$(nodeId).example.com", bytes.Repeat([]byte{8}, BrokerKeySize))
	otherPattern := hashedNames(t, "my-cluster-broker-$(nodeId).example.net", testBrokerKey)
	seen := map[string]int32{}
	ids := []int32{math.MaxInt32, 1 << 20, 65535}
	for id := int32(0); id < 20000; id++ {
		ids = append(ids, id)
	}
	for _, id := range ids {
		tok := n.Token(id)
		if len(tok) != BrokerTokenLength || strings.Trim(tok, "abcdefghijklmnopqrstuvwxyz234567") != "" {
			t.Fatalf("token %q of %d is not %d characters of [a-z2-7]", tok, id, BrokerTokenLength)
		}
		if prev, dup := seen[tok]; dup {
			t.Fatalf("ids %d and %d share token %s", prev, id, tok)
		}
		seen[tok] = id
		host := n.Host(id)
		if got, ok := n.Match(strings.ToUpper(host)); !ok || got != id {
			t.Fatalf("Match(%s) = %d, %v; want %d", host, got, ok, id)
		}
		if _, ok := other.Match(host); ok {
			t.Fatalf("another key reads %s", host)
		}
		if _, ok := otherPattern.Match(strings.Replace(host, ".com", ".net", 1)); ok {
			t.Fatalf("another pattern reads %s's token", host)
		}
	}
}

// Hosts a client may send: the identity name, a token with a character changed, a truncated or
// padded one, none of which is a broker.
func TestHashedBrokerNamesRefuse(t *testing.T) {
	n := hashedNames(t, "my-cluster-broker-$(nodeId).example.com", testBrokerKey)
	good := n.Host(3)
	flip := []byte(good)
	i := len("my-cluster-broker-") + 5
	if flip[i] == 'a' {
		flip[i] = 'b'
	} else {
		flip[i] = 'a'
	}
	for name, host := range map[string]string{
		"the node id":           "my-cluster-broker-3.example.com",
		"a changed character":   string(flip),
		"a token one too short": strings.Replace(good, n.Token(3), n.Token(3)[1:], 1),
		"a token one too long":  strings.Replace(good, n.Token(3), n.Token(3)+"a", 1),
		"another suffix":        strings.Replace(good, "example.com", "example.org", 1),
		"not base32":            strings.Replace(good, n.Token(3), strings.Repeat("1", BrokerTokenLength), 1),
	} {
		if id, ok := n.Match(host); ok {
			t.Errorf("%s: %s matches broker %d", name, host, id)
		}
	}
	// The last character's two low bits are beyond the block: every other spelling of it decodes
	// to the same 16 bytes and must still be refused.
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	token := n.Token(3)
	for _, c := range alphabet {
		if byte(c) == token[len(token)-1] {
			continue
		}
		other := token[:len(token)-1] + string(c)
		if id, ok := n.Match(strings.Replace(good, token, other, 1)); ok {
			t.Errorf("the token %s spelt %s matches broker %d", token, other, id)
		}
	}
}

func TestHashedPatternKey(t *testing.T) {
	n := hashedNames(t, "My-Cluster-broker-$(nodeId).Example.com", testBrokerKey)
	key, ok := HashedPatternKey(n.Host(5))
	if !ok || key != "my-cluster-broker-$(nodeid).example.com" {
		t.Errorf("HashedPatternKey = %q, %v", key, ok)
	}
	if _, ok := HashedPatternKey("short.example.com"); ok {
		t.Error("a first label shorter than a token has a pattern key")
	}
}

func TestNewBrokerNamesRefusesAKeyOfTheWrongSize(t *testing.T) {
	if _, err := NewBrokerNames(&VirtualCluster{BrokerPattern: "b-$(nodeId).x"}, []byte("short")); err == nil {
		t.Error("a 5-byte key was taken")
	}
}

// Match reads SNI host names, which clients choose.
func FuzzBrokerNamesMatch(f *testing.F) {
	n := hashedNames(f, "my-cluster-broker-$(nodeId).example.com", testBrokerKey)
	f.Add(n.Host(0))
	f.Add("my-cluster-broker-3.example.com")
	f.Add("my-cluster-broker-" + strings.Repeat("z", BrokerTokenLength) + ".example.com")
	f.Fuzz(func(t *testing.T, host string) {
		if id, ok := n.Match(host); ok && !strings.EqualFold(n.Host(id), host) {
			t.Fatalf("%q matches %d, whose host is %s", host, id, n.Host(id))
		}
		_, _ = HashedPatternKey(host)
	})
}
