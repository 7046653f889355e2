package encryption

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkalink/kafkalink/proxy/proxytest"
)

// TestVaultKMS: the filter with VaultKmsService over TLS (PEM trust, token from a file, as
// $(secretFile:…) gives them) encrypts with a DEK from transit's datakey endpoint, reuses it, and
// decrypts with its decrypt endpoint. A topic whose transit key does not exist passes in the
// clear; a sealed Vault or a refused token fails Produce and Fetch retriably.
func TestVaultKMS(t *testing.T) {
	standIn := proxytest.NewTransit("hvs.test-token", "KEK_secrets")
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
	if standIn.Calls("datakey") != 1 || standIn.Calls("keys") != 1 {
		t.Errorf("three requests called datakey %d and keys %d times, want 1 each", standIn.Calls("datakey"), standIn.Calls("keys"))
	}
	if v := mustDecode(t, enc).Records[0].Value; !strings.Contains(string(v), "vault:v1:") || strings.Contains(string(v), "alpha-plaintext") {
		t.Errorf("stored value %q: want the wrapped DEK (vault:v1:…) and no plaintext", v)
	}
	other, _ := newTestFilter(t, "") // a fresh proxy replica, nothing cached: decrypts through Vault
	other.kms = e.kms
	if p := fetched(t, other, "secrets", enc); p.ErrorCode != 0 || string(mustDecode(t, p.RecordBatches).Records[0].Value) != "alpha-plaintext" {
		t.Errorf("fetch through Vault: error %d", p.ErrorCode)
	}
	if standIn.Calls("decrypt") != 1 {
		t.Errorf("decrypt called %d times, want 1", standIn.Calls("decrypt"))
	}
	if plain := encrypted(t, e, "public", batch(t, 0, []byte("public-value"))); !strings.Contains(string(plain), "public-value") {
		t.Error("a topic without a transit key should pass in the clear")
	}

	for name, breakIt := range map[string]func(){
		"sealed":        func() { standIn.Break(true, "") },
		"token refused": func() { standIn.Break(false, "another") },
	} {
		breakIt()
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
		standIn.Break(false, "hvs.test-token")
	}
}
