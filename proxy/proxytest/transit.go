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
	"strings"
	"sync"
)

// Transit answers the three endpoints of Vault's transit engine that the RecordEncryption
// filter calls (keys/NAME, datakey/plaintext/NAME, decrypt/NAME), as Vault's API documentation
// describes them: no Vault or OpenBao version builds from the module proxy here
// (docs/record-encryption.md, Tests). Its keys are real AES-256-GCM keys, and it counts calls.
type Transit struct {
	mu     sync.Mutex
	token  string
	keys   map[string]cipher.AEAD
	sealed bool
	calls  map[string]int
}

// NewTransit is a transit engine that accepts token and holds a new key for each name.
func NewTransit(token string, names ...string) *Transit {
	v := &Transit{token: token, keys: map[string]cipher.AEAD{}, calls: map[string]int{}}
	for _, n := range names {
		k := make([]byte, 32)
		_, _ = rand.Read(k)
		b, _ := aes.NewCipher(k)
		v.keys[n], _ = cipher.NewGCM(b)
	}
	return v
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

// ServeHTTP implements http.Handler.
func (v *Transit) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	defer v.mu.Unlock()
	op, name, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/transit/"), "/")
	if op == "datakey" {
		name = strings.TrimPrefix(name, "plaintext/")
	}
	v.calls[op]++
	switch {
	case v.sealed:
		reply(w, http.StatusServiceUnavailable, map[string]any{"errors": []string{"Vault is sealed"}})
		return
	case r.Header.Get("X-Vault-Token") != v.token:
		reply(w, http.StatusForbidden, map[string]any{"errors": []string{"permission denied"}})
		return
	}
	key := v.keys[name]
	if key == nil {
		reply(w, http.StatusNotFound, map[string]any{"errors": []string{}})
		return
	}
	var body struct {
		Bits       int    `json:"bits"`
		Ciphertext string `json:"ciphertext"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	switch {
	case op == "keys" && r.Method == http.MethodGet:
		reply(w, http.StatusOK, map[string]any{"data": map[string]any{"name": name, "type": "aes256-gcm96"}})
	case op == "datakey" && r.Method == http.MethodPost && body.Bits == 256:
		dek := make([]byte, 32)
		_, _ = rand.Read(dek)
		nonce := make([]byte, key.NonceSize())
		_, _ = rand.Read(nonce)
		reply(w, http.StatusOK, map[string]any{"data": map[string]any{"plaintext": base64.StdEncoding.EncodeToString(dek),
			"ciphertext": "vault:v1:" + base64.StdEncoding.EncodeToString(key.Seal(nonce, nonce, dek, nil))}})
	case op == "decrypt" && r.Method == http.MethodPost && strings.HasPrefix(body.Ciphertext, "vault:v1:"):
		raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(body.Ciphertext, "vault:v1:"))
		n := key.NonceSize()
		if len(raw) < n {
			raw = make([]byte, n)
		}
		dek, err := key.Open(nil, raw[:n], raw[n:], nil)
		if err != nil {
			reply(w, http.StatusBadRequest, map[string]any{"errors": []string{"cipher: message authentication failed"}})
			return
		}
		reply(w, http.StatusOK, map[string]any{"data": map[string]any{"plaintext": base64.StdEncoding.EncodeToString(dek)}})
	default:
		reply(w, http.StatusBadRequest, map[string]any{"errors": []string{"unsupported request"}})
	}
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
