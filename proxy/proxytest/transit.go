package proxytest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
)

// Transit answers the three endpoints of Vault's transit engine that the RecordEncryption
// filter calls (keys/NAME, datakey/plaintext/NAME, decrypt/NAME), as Vault's API documentation
// and its transit backend answer them: no Vault or OpenBao version builds from the module proxy
// here (docs/record-encryption.md, Tests). Its keys are real AES-256-GCM keys with versions
// (Rotate) and a min_decryption_version (SetMinDecryptionVersion), and it counts calls.
type Transit struct {
	mu     sync.Mutex
	token  string
	keys   map[string]*transitKey
	sealed bool
	calls  map[string]int
}

// transitKey is one named key: its versions (index 0 is version 1) and the oldest version
// decrypt accepts.
type transitKey struct {
	versions      []cipher.AEAD
	minDecryption int
}

// NewTransit is a transit engine that accepts token and holds a new key for each name.
func NewTransit(token string, names ...string) *Transit {
	v := &Transit{token: token, keys: map[string]*transitKey{}, calls: map[string]int{}}
	for _, n := range names {
		v.keys[n] = &transitKey{versions: []cipher.AEAD{newAEAD()}, minDecryption: 1}
	}
	return v
}

func newAEAD() cipher.AEAD {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	b, _ := aes.NewCipher(k)
	aead, _ := cipher.NewGCM(b)
	return aead
}

// Calls is how often an endpoint ("keys", "datakey", "decrypt") was called.
func (v *Transit) Calls(op string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.calls[op]
}

// Break makes every call fail as a sealed Vault (sealed) or with a token it refuses (token not
// empty); Break(false, "") makes it answer again with its first token.
func (v *Transit) Break(sealed bool, token string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.sealed = sealed
	if token != "" {
		v.token = token
	}
}

// Rotate adds a new version of a key (vault write -f transit/keys/NAME/rotate): datakey wraps
// under it from now on.
func (v *Transit) Rotate(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := v.keys[name]
	k.versions = append(k.versions, newAEAD())
}

// SetMinDecryptionVersion sets a key's min_decryption_version (vault write
// transit/keys/NAME/config min_decryption_version=N): decrypt refuses older ciphertext.
func (v *Transit) SetMinDecryptionVersion(name string, version int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.keys[name].minDecryption = version
}

// Delete deletes a key (vault delete transit/keys/NAME, once deletion_allowed).
func (v *Transit) Delete(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.keys, name)
}

// ServeHTTP implements http.Handler.
func (v *Transit) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	defer v.mu.Unlock()
	rest, mounted := strings.CutPrefix(r.URL.Path, "/v1/transit/")
	op, name, _ := strings.Cut(rest, "/")
	if op == "datakey" {
		name = strings.TrimPrefix(name, "plaintext/")
	}
	v.calls[op]++
	switch {
	case v.sealed:
		reply(w, http.StatusServiceUnavailable, vaultErrors("Vault is sealed"))
		return
	case r.Header.Get("X-Vault-Token") != v.token:
		reply(w, http.StatusForbidden, vaultErrors("permission denied"))
		return
	case !mounted:
		reply(w, http.StatusNotFound, vaultErrors(fmt.Sprintf("no handler for route %q. route entry not found.", strings.TrimPrefix(r.URL.Path, "/v1/"))))
		return
	}
	key := v.keys[name]
	switch {
	case key == nil && op == "keys":
		reply(w, http.StatusNotFound, vaultErrors()) // a read of nothing: no error text
		return
	case key == nil:
		reply(w, http.StatusBadRequest, vaultErrors("encryption key not found"))
		return
	}
	var body struct {
		Bits       int    `json:"bits"`
		Ciphertext string `json:"ciphertext"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	switch {
	case op == "keys" && r.Method == http.MethodGet:
		reply(w, http.StatusOK, map[string]any{"data": map[string]any{"name": name, "type": "aes256-gcm96",
			"latest_version": len(key.versions), "min_decryption_version": key.minDecryption}})
	case op == "datakey" && r.Method == http.MethodPost && body.Bits == 256:
		dek := make([]byte, 32)
		_, _ = rand.Read(dek)
		latest := key.versions[len(key.versions)-1]
		nonce := make([]byte, latest.NonceSize())
		_, _ = rand.Read(nonce)
		reply(w, http.StatusOK, map[string]any{"data": map[string]any{"plaintext": base64.StdEncoding.EncodeToString(dek),
			"ciphertext": fmt.Sprintf("vault:v%d:%s", len(key.versions), base64.StdEncoding.EncodeToString(latest.Seal(nonce, nonce, dek, nil)))}})
	case op == "decrypt" && r.Method == http.MethodPost:
		key.decrypt(w, body.Ciphertext)
	default:
		reply(w, http.StatusBadRequest, vaultErrors("unsupported request"))
	}
}

// decrypt answers decrypt/NAME for one ciphertext, with Vault's errors: a version below
// min_decryption_version is refused before anything is decrypted.
func (k *transitKey) decrypt(w http.ResponseWriter, ciphertext string) {
	rest, ok := strings.CutPrefix(ciphertext, "vault:v")
	verText, b64, ok2 := strings.Cut(rest, ":")
	ver, err := strconv.Atoi(verText)
	if !ok || !ok2 || err != nil || ver < 1 {
		reply(w, http.StatusBadRequest, vaultErrors("invalid ciphertext: no prefix"))
		return
	}
	if ver < k.minDecryption {
		reply(w, http.StatusBadRequest, vaultErrors("ciphertext or signature version is disallowed by policy (too old)"))
		return
	}
	if ver > len(k.versions) {
		reply(w, http.StatusBadRequest, vaultErrors("invalid key version"))
		return
	}
	aead := k.versions[ver-1]
	raw, _ := base64.StdEncoding.DecodeString(b64)
	n := aead.NonceSize()
	if len(raw) < n {
		raw = make([]byte, n)
	}
	dek, err := aead.Open(nil, raw[:n], raw[n:], nil)
	if err != nil {
		reply(w, http.StatusBadRequest, vaultErrors("cipher: message authentication failed"))
		return
	}
	reply(w, http.StatusOK, map[string]any{"data": map[string]any{"plaintext": base64.StdEncoding.EncodeToString(dek)}})
}

// vaultErrors is Vault's error body.
func vaultErrors(texts ...string) map[string]any {
	return map[string]any{"errors": append([]string{}, texts...)}
}

func reply(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// DataKey asks the datakey endpoint for a new DEK under the key name, as a Vault client does:
// the DEK, and Vault's ciphertext of it (vault:v1:…).
func (v *Transit) DataKey(name string) ([]byte, string, error) {
	var out struct {
		Data struct{ Plaintext, Ciphertext string } `json:"data"`
	}
	if err := v.ask("datakey/plaintext/"+name, map[string]any{"bits": 256}, &out); err != nil {
		return nil, "", err
	}
	dek, err := base64.StdEncoding.DecodeString(out.Data.Plaintext)
	return dek, out.Data.Ciphertext, err
}

// Decrypt asks the decrypt endpoint to unwrap a DEK under the key name.
func (v *Transit) Decrypt(name, ciphertext string) ([]byte, error) {
	var out struct {
		Data struct{ Plaintext string } `json:"data"`
	}
	if err := v.ask("decrypt/"+name, map[string]any{"ciphertext": ciphertext}, &out); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(out.Data.Plaintext)
}

// ask POSTs body to an endpoint with the engine's token and decodes the answer into out.
func (v *Transit) ask(path string, body, out any) error {
	b, _ := json.Marshal(body)
	req := httptest.NewRequest(http.MethodPost, "/v1/transit/"+path, bytes.NewReader(b))
	v.mu.Lock()
	req.Header.Set("X-Vault-Token", v.token)
	v.mu.Unlock()
	rec := httptest.NewRecorder()
	v.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return fmt.Errorf("transit %s: %d %s", path, rec.Code, rec.Body)
	}
	return json.Unmarshal(rec.Body.Bytes(), out)
}
