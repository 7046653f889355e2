package encryption

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// transitStandIn answers the three transit endpoints the filter calls, as Vault's API
// documentation describes them: no Vault or OpenBao version builds from the module proxy here
// (docs/record-encryption.md, Tests). Its keys are real AES-256-GCM keys.
type transitStandIn struct {
	mu     sync.Mutex
	token  string
	keys   map[string][]byte
	sealed bool
	calls  map[string]int
}

func (v *transitStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	defer v.mu.Unlock()
	op, name, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/transit/"), "/")
	if op == "datakey" {
		name = strings.TrimPrefix(name, "plaintext/")
	}
	v.calls[op]++
	reply := func(code int, body any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(body)
	}
	switch {
	case v.sealed:
		reply(http.StatusServiceUnavailable, map[string]any{"errors": []string{"Vault is sealed"}})
		return
	case r.Header.Get("X-Vault-Token") != v.token:
		reply(http.StatusForbidden, map[string]any{"errors": []string{"permission denied"}})
		return
	}
	key := v.keys[name]
	if key == nil {
		reply(http.StatusNotFound, map[string]any{"errors": []string{}})
		return
	}
	var body struct {
		Bits       int    `json:"bits"`
		Ciphertext string `json:"ciphertext"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	switch {
	case op == "keys" && r.Method == http.MethodGet:
		reply(http.StatusOK, map[string]any{"data": map[string]any{"name": name, "type": "aes256-gcm96"}})
	case op == "datakey" && r.Method == http.MethodPost && body.Bits == 256:
		dek := make([]byte, 32)
		_, _ = rand.Read(dek)
		sealed, _ := seal(key, dek, nil)
		reply(http.StatusOK, map[string]any{"data": map[string]any{
			"plaintext": base64.StdEncoding.EncodeToString(dek), "ciphertext": "vault:v1:" + base64.StdEncoding.EncodeToString(sealed)}})
	case op == "decrypt" && r.Method == http.MethodPost && strings.HasPrefix(body.Ciphertext, "vault:v1:"):
		raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(body.Ciphertext, "vault:v1:"))
		dek, err := open(key, raw, nil)
		if err != nil {
			reply(http.StatusBadRequest, map[string]any{"errors": []string{"cipher: message authentication failed"}})
			return
		}
		reply(http.StatusOK, map[string]any{"data": map[string]any{"plaintext": base64.StdEncoding.EncodeToString(dek)}})
	default:
		reply(http.StatusBadRequest, map[string]any{"errors": []string{"unsupported request"}})
	}
}

// TestVaultKMS: the filter with VaultKmsService over TLS (PEM trust, token from a file, as
// $(secretFile:…) gives them) encrypts with a DEK from transit's datakey endpoint, reuses it, and
// decrypts with its decrypt endpoint. A topic whose transit key does not exist passes in the
// clear; a sealed Vault or a refused token fails Produce and Fetch retriably.
func TestVaultKMS(t *testing.T) {
	kek := make([]byte, 32)
	_, _ = rand.Read(kek)
	standIn := &transitStandIn{token: "hvs.test-token", keys: map[string][]byte{"KEK_secrets": kek}, calls: map[string]int{}}
	srv := httptest.NewTLSServer(standIn)
	defer srv.Close()
	dir := t.TempDir()
	tokenFile, caFile := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(tokenFile, []byte("hvs.test-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := New(json.RawMessage(fmt.Sprintf(`{"kms":"VaultKmsService","kmsConfig":{"vaultTransitEngineUrl":%q,"vaultToken":{"passwordFile":%q},"tls":{"trust":{"storeFile":%q,"storeType":"PEM"}}},"selector":"TemplateKekSelector","selectorConfig":{"template":"KEK_$(topicName)"}}`,
		srv.URL+"/v1/transit", tokenFile, caFile)))
	if err != nil {
		t.Fatal(err)
	}
	e := f.(*encryptor)

	var enc []byte
	for range 3 {
		enc = encrypted(t, e, "secrets", batch(t, 0, []byte("alpha-plaintext")))
	}
	if standIn.calls["datakey"] != 1 || standIn.calls["keys"] != 1 {
		t.Errorf("three requests called datakey %d and keys %d times, want 1 each", standIn.calls["datakey"], standIn.calls["keys"])
	}
	if v := mustDecode(t, enc).Records[0].Value; !strings.Contains(string(v), "vault:v1:") || strings.Contains(string(v), "alpha-plaintext") {
		t.Errorf("stored value %q: want the wrapped DEK (vault:v1:…) and no plaintext", v)
	}
	other, _ := newTestFilter(t, "") // a fresh proxy replica, nothing cached: decrypts through Vault
	other.kms = e.kms
	if p := fetched(t, other, "secrets", enc); p.ErrorCode != 0 || string(mustDecode(t, p.RecordBatches).Records[0].Value) != "alpha-plaintext" {
		t.Errorf("fetch through Vault: error %d", p.ErrorCode)
	}
	if standIn.calls["decrypt"] != 1 {
		t.Errorf("decrypt called %d times, want 1", standIn.calls["decrypt"])
	}
	if plain := encrypted(t, e, "public", batch(t, 0, []byte("public-value"))); !strings.Contains(string(plain), "public-value") {
		t.Error("a topic without a transit key should pass in the clear")
	}

	for name, breakIt := range map[string]func(){
		"sealed":        func() { standIn.sealed = true },
		"token refused": func() { standIn.token = "another" },
	} {
		standIn.mu.Lock()
		breakIt()
		standIn.mu.Unlock()
		fresh, _ := newTestFilter(t, "")
		fresh.kms = e.kms
		x := produce("secrets", batch(t, 0, []byte("x")))
		_ = fresh.OnRequest(t.Context(), x)
		if resp := x.Answered(); resp == nil || answeredError(resp) != errRequestTimedOut {
			t.Errorf("%s: produce answered %v, want REQUEST_TIMED_OUT", name, resp)
		}
		if p := fetched(t, fresh, "secrets", enc); p.ErrorCode != errKafkaStorageErr {
			t.Errorf("%s: fetch error %d, want KAFKA_STORAGE_ERROR", name, p.ErrorCode)
		}
		standIn.mu.Lock()
		standIn.sealed, standIn.token = false, "hvs.test-token"
		standIn.mu.Unlock()
	}
}
