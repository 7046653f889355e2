package config

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"strings"
)

// Broker identity mappings: how a node id becomes the part of a broker host that BrokerPattern's
// placeholder stands for.
const (
	// BrokerIdentityMappingIdentity writes the node id in decimal: my-cluster-broker-3.
	BrokerIdentityMappingIdentity = "identity"
	// BrokerIdentityMappingHash writes a keyed, reversible-only-with-the-key token of the node
	// id: my-cluster-broker-<26 characters of [a-z2-7]>.
	BrokerIdentityMappingHash = "hash"
)

// BrokerIdentity maps node ids to broker host names other than by their decimal value.
type BrokerIdentity struct {
	// Mapping is BrokerIdentityMappingHash.
	Mapping string `json:"mapping"`
	// KeyFile holds the mapping's key: BrokerKeySize random bytes.
	KeyFile string `json:"keyFile"`
}

// BrokerKeySize is the size of a hash mapping key: an AES-256 key.
const BrokerKeySize = 32

// BrokerTokenLength is the length of a hash mapping's token: one AES block in unpadded base32.
const BrokerTokenLength = 26

// brokerTokenEncoding is base32 in lower case, so tokens are DNS label characters.
var brokerTokenEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// BrokerNames names the brokers of one virtual cluster: by identity (the decimal node id) or by
// the hash mapping. A token is one AES-256 block, the node id followed by 12 bytes that depend
// on the broker pattern, encrypted under the gateway's key: a permutation, so two node ids never
// share a name; stable while the key and the pattern are; and without the key neither the node
// id nor the order of two names can be learnt. Reading a host decrypts its token and checks the
// 12 bytes, so a forged or mistyped name matches no broker.
type BrokerNames struct {
	pattern string
	block   cipher.Block // nil for identity
	context [12]byte
}

// NewBrokerNames names a virtual cluster's brokers; key is the hash mapping's key, nil for identity.
func NewBrokerNames(vc *VirtualCluster, key []byte) (*BrokerNames, error) {
	n := &BrokerNames{pattern: vc.BrokerPattern}
	if key == nil {
		return n, nil
	}
	if len(key) != BrokerKeySize {
		return nil, fmt.Errorf("the broker identity key has %d bytes, want %d", len(key), BrokerKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	n.block = block
	sum := sha256.Sum256([]byte("kafkalink broker identity\x00" + strings.ToLower(vc.BrokerPattern)))
	copy(n.context[:], sum[:])
	return n, nil
}

// Hashed reports whether the names are the hash mapping's.
func (n *BrokerNames) Hashed() bool { return n.block != nil }

// Token is what stands for node id in its host: the decimal id, or the hash mapping's token.
func (n *BrokerNames) Token(id int32) string {
	if n.block == nil {
		return fmt.Sprint(id)
	}
	var in, out [aes.BlockSize]byte
	binary.BigEndian.PutUint32(in[:4], uint32(id))
	copy(in[4:], n.context[:])
	n.block.Encrypt(out[:], in[:])
	return brokerTokenEncoding.EncodeToString(out[:])
}

// Host is the broker host of node id.
func (n *BrokerNames) Host(id int32) string {
	return strings.Replace(n.pattern, NodeIDPlaceholder, n.Token(id), 1)
}

// Match reports the node id whose host is host (case-insensitively), if any.
func (n *BrokerNames) Match(host string) (int32, bool) {
	if n.block == nil {
		vc := VirtualCluster{BrokerPattern: n.pattern}
		return vc.MatchBroker(host)
	}
	prefix, suffix, _ := strings.Cut(n.pattern, NodeIDPlaceholder)
	if len(host) != len(prefix)+BrokerTokenLength+len(suffix) ||
		!strings.EqualFold(host[:len(prefix)], prefix) || !strings.EqualFold(host[len(host)-len(suffix):], suffix) {
		return 0, false
	}
	token := strings.ToLower(host[len(prefix) : len(prefix)+BrokerTokenLength])
	raw, err := brokerTokenEncoding.DecodeString(token)
	// 26 base32 characters carry 130 bits: the last one's two spare bits are ignored by the
	// decoder, so four spellings would decode to one block. Only the one Token writes is a name.
	if err != nil || len(raw) != aes.BlockSize || brokerTokenEncoding.EncodeToString(raw) != token {
		return 0, false
	}
	var plain [aes.BlockSize]byte
	n.block.Decrypt(plain[:], raw)
	if !bytes.Equal(plain[4:], n.context[:]) {
		return 0, false
	}
	id := int32(binary.BigEndian.Uint32(plain[:4]))
	if id < 0 {
		return 0, false
	}
	return id, true
}

// HashedPatternKey is, for a host that may be a hash mapping's broker host, the broker pattern
// it would have, in lower case: its first label without the token's BrokerTokenLength
// characters, the placeholder in their place. The proxy finds a hashed virtual cluster by it in
// one lookup, as validation holds the placeholder of a hashed pattern to the end of its first
// label (as BootstrapAndPattern writes every pattern).
func HashedPatternKey(host string) (string, bool) {
	first, rest, _ := strings.Cut(strings.ToLower(host), ".")
	if len(first) <= BrokerTokenLength {
		return "", false
	}
	key := first[:len(first)-BrokerTokenLength] + strings.ToLower(NodeIDPlaceholder)
	if rest != "" {
		key += "." + rest
	}
	return key, true
}
