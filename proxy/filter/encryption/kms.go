package encryption

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KMS holds key-encryption keys (KEKs) by id and wraps data-encryption keys (DEKs) with them.
type KMS interface {
	// Exists reports whether a KEK exists.
	Exists(ctx context.Context, kekID string) (bool, error)
	// GenerateDEK returns a new 256-bit DEK and its wrapped form under the KEK.
	GenerateDEK(ctx context.Context, kekID string) (dek, edek []byte, err error)
	// DecryptDEK unwraps a DEK wrapped under the KEK.
	DecryptDEK(ctx context.Context, kekID string, edek []byte) ([]byte, error)
}

// ErrKMSUnavailable marks a KMS that cannot answer now (as opposed to a key that does not
// exist): produce and fetch fail with retriable errors, and nothing is written in the clear.
var ErrKMSUnavailable = errors.New("KMS unavailable")

// ErrKEKNotFound is the KMS's answer that a KEK does not exist, when asked to make or unwrap a
// DEK under it: the filter then treats the KEK as one that does not exist, as when Exists says
// so, rather than waiting for a KMS that answered.
var ErrKEKNotFound = errors.New("the KEK does not exist")

// ErrKMSRefused is the KMS's answer that it will not do what was asked, whenever asked: a
// wrapped DEK it does not accept (Vault: its key version is below the key's
// min_decryption_version, or it is not Vault's ciphertext), or a KEK it cannot make DEKs with.
// Retrying does not help, so clients get an error that is not retried.
var ErrKMSRefused = errors.New("the KMS refuses the request")

// SecretKMS is the KMS for clusters without Vault: each KEK is a file in a folder (a mounted
// Kubernetes Secret: one key per KEK id, the value 32 random bytes, raw or base64), and DEKs are
// wrapped with AES-256-GCM under it.
//
// What it protects: record values at rest in the brokers and their backups, from anyone who
// can read the brokers' disks or consume the topics directly but cannot read the Secret. What it
// does not: anyone who can read the Secret (kubectl get secret, the namespace's admins, etcd
// backups without encryption at rest) or the proxy's memory can decrypt everything; there is no
// key usage audit and no key rotation service. Use Vault's transit engine for those.
type SecretKMS struct {
	Dir string
}

// KMS type names, as the filter configuration's kms says them.
const (
	KMSSecret = "KubernetesSecretKms"
	KMSVault  = "VaultKmsService"
)

func (k SecretKMS) kek(kekID string) ([]byte, error) {
	if kekID == "" || strings.ContainsAny(kekID, `/\`) || kekID == "." || kekID == ".." {
		return nil, fmt.Errorf("KEK id %q is not a file name", kekID)
	}
	b, err := os.ReadFile(filepath.Join(k.Dir, kekID))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKMSUnavailable, err)
	}
	if len(b) != 32 {
		dec, derr := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
		if derr != nil || len(dec) != 32 {
			// A Secret being fixed: retriable, like a KMS that cannot answer.
			return nil, fmt.Errorf("%w: KEK %s is not 32 bytes, raw or base64", ErrKMSUnavailable, kekID)
		}
		b = dec
	}
	return b, nil
}

// Exists implements KMS.
func (k SecretKMS) Exists(_ context.Context, kekID string) (bool, error) {
	key, err := k.kek(kekID)
	return key != nil, err
}

// GenerateDEK implements KMS.
func (k SecretKMS) GenerateDEK(_ context.Context, kekID string) ([]byte, []byte, error) {
	key, err := k.kek(kekID)
	if err != nil || key == nil {
		return nil, nil, fmt.Errorf("KEK %s: %w", kekID, errOr(err, ErrKEKNotFound))
	}
	dek := make([]byte, 32)
	if _, err := rand.Read(dek); err != nil {
		return nil, nil, err
	}
	edek, err := seal(key, dek, []byte(kekID))
	return dek, edek, err
}

// DecryptDEK implements KMS.
func (k SecretKMS) DecryptDEK(_ context.Context, kekID string, edek []byte) ([]byte, error) {
	key, err := k.kek(kekID)
	if err != nil || key == nil {
		return nil, fmt.Errorf("KEK %s: %w", kekID, errOr(err, ErrKEKNotFound))
	}
	dek, err := open(key, edek, []byte(kekID))
	if err != nil {
		// Not wrapped under this KEK (changed bytes): it never will unwrap.
		return nil, fmt.Errorf("%w: the wrapped DEK does not open under KEK %s: %w", ErrKMSRefused, kekID, err)
	}
	return dek, nil
}

func errOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// seal encrypts with AES-256-GCM under key: a random 12-byte nonce, then the ciphertext and tag.
func seal(key, plaintext, aad []byte) ([]byte, error) {
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return gcm.Seal(nonce, nonce, plaintext, aad), nil
}

// open reverses seal.
func open(key, sealed, aad []byte) ([]byte, error) {
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	if len(sealed) < gcm.NonceSize()+gcm.Overhead() {
		return nil, errors.New("ciphertext too short")
	}
	return gcm.Open(nil, sealed[:gcm.NonceSize()], sealed[gcm.NonceSize():], aad)
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// randRead is crypto/rand.Read, for the nonces of record values.
var randRead = rand.Read
