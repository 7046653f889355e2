package encryption

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/proxy/filter"
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

// newVaultFilter is the filter with VaultKmsService on a transit stand-in that holds the keys
// named, over plain HTTP, with the template and extra configuration given.
func newVaultFilter(t *testing.T, standIn *proxytest.Transit, template, extra string) *encryptor {
	t.Helper()
	srv := httptest.NewServer(standIn)
	t.Cleanup(srv.Close)
	f, err := filter.New("RecordEncryption", json.RawMessage(fmt.Sprintf(`{"kms":"VaultKmsService","kmsConfig":{"vaultTransitEngineUrl":%q,"vaultToken":{"password":"hvs.t"}},"selector":"TemplateKekSelector","selectorConfig":{"template":%q}%s}`,
		srv.URL+"/v1/transit", template, extra)), filter.Env{ReadFile: os.ReadFile, VirtualCluster: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.(filter.Closer).Close() })
	return f.(*encryptor)
}

// vaultAnswer is a case of TestVaultAnswersAreMapped: what changes in Vault after a DEK was
// wrapped (edek), the call, and the KMS error it must give.
type vaultAnswer struct {
	prepare func(v *proxytest.Transit, edek []byte)
	mount   string // the transit engine's path, /v1/transit unless set
	call    func(ctx context.Context, k *VaultKMS, edek []byte) error
	want    error
}

var vaultAnswers = map[string]vaultAnswer{
	"a datakey under a key that does not exist is a missing KEK": {
		call: func(ctx context.Context, k *VaultKMS, _ []byte) error {
			_, _, err := k.GenerateDEK(ctx, "KEK_missing")
			return err
		},
		want: ErrKEKNotFound,
	},
	"a decrypt under a key deleted since is a missing KEK": {
		prepare: func(v *proxytest.Transit, _ []byte) { v.Delete("KEK_secrets") },
		call: func(ctx context.Context, k *VaultKMS, edek []byte) error {
			_, err := k.DecryptDEK(ctx, "KEK_secrets", edek)
			return err
		},
		want: ErrKEKNotFound,
	},
	"a decrypt of a key version below min_decryption_version is refused": {
		prepare: func(v *proxytest.Transit, _ []byte) {
			v.Rotate("KEK_secrets")
			v.SetMinDecryptionVersion("KEK_secrets", 2)
		},
		call: func(ctx context.Context, k *VaultKMS, edek []byte) error {
			_, err := k.DecryptDEK(ctx, "KEK_secrets", edek)
			return err
		},
		want: ErrKMSRefused,
	},
	"a decrypt of what is not Vault's ciphertext is refused": {
		call: func(ctx context.Context, k *VaultKMS, _ []byte) error {
			_, err := k.DecryptDEK(ctx, "KEK_secrets", []byte("not-vault"))
			return err
		},
		want: ErrKMSRefused,
	},
	"a sealed Vault is unavailable": {
		prepare: func(v *proxytest.Transit, _ []byte) { v.Break(true, "") },
		call: func(ctx context.Context, k *VaultKMS, _ []byte) error {
			_, _, err := k.GenerateDEK(ctx, "KEK_secrets")
			return err
		},
		want: ErrKMSUnavailable,
	},
	"a refused token is unavailable": {
		prepare: func(v *proxytest.Transit, _ []byte) { v.Break(false, "another") },
		call: func(ctx context.Context, k *VaultKMS, edek []byte) error {
			_, err := k.DecryptDEK(ctx, "KEK_secrets", edek)
			return err
		},
		want: ErrKMSUnavailable,
	},
	"a path where no transit engine is mounted is unavailable, not a missing KEK": {
		mount: "/v1/transit-typo",
		call: func(ctx context.Context, k *VaultKMS, _ []byte) error {
			exists, err := k.Exists(ctx, "KEK_secrets")
			if exists {
				return errors.New("exists")
			}
			return err
		},
		want: ErrKMSUnavailable,
	},
}

// TestVaultAnswersAreMapped: each answer Vault gives (as its transit backend does) is the
// KMS error the filter acts on: a key that does not exist is a missing KEK whichever endpoint
// says so, a request Vault will never grant is refused, and a Vault that cannot answer now is
// unavailable.
func TestVaultAnswersAreMapped(t *testing.T) {
	for name, tc := range vaultAnswers {
		t.Run(name, func(t *testing.T) {
			standIn := proxytest.NewTransit("hvs.t", "KEK_secrets")
			srv := httptest.NewServer(standIn)
			defer srv.Close()
			mount := cmp.Or(tc.mount, "/v1/transit")
			u, _ := url.Parse(srv.URL + mount)
			k := &VaultKMS{Transit: u, Token: "hvs.t", Client: srv.Client()}
			// A DEK wrapped under version 1, as records written before anything changed hold.
			ok := &VaultKMS{Transit: must(url.Parse(srv.URL + "/v1/transit")), Token: "hvs.t", Client: srv.Client()}
			_, edek, err := ok.GenerateDEK(t.Context(), "KEK_secrets")
			if err != nil {
				t.Fatal(err)
			}
			if tc.prepare != nil {
				tc.prepare(standIn, edek)
			}
			err = tc.call(t.Context(), k, edek)
			for _, sentinel := range []error{ErrKEKNotFound, ErrKMSRefused, ErrKMSUnavailable} {
				if want := errors.Is(tc.want, sentinel); errors.Is(err, sentinel) != want {
					t.Errorf("%v: is %v %v, want %v", err, sentinel, !want, want)
				}
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestVaultKEKDeletedWhileInUse: a transit key deleted after the filter saw it is a KEK that does
// not exist, not a KMS to wait for. Produce: its DEK's next renewal finds it gone, and the
// partition goes through in the clear (or is refused under REJECT) as the next request's would,
// with no KMS call for it until the absence expires. Fetch: records written under it, read
// through a template that now names another KEK, come back as stored, sealed and marked, with
// one decrypt call for any number of fetches.
func TestVaultKEKDeletedWhileInUse(t *testing.T) {
	for name, tc := range map[string]struct {
		extra string
		want  int16
	}{
		"passed through":       {want: 0},
		"refused under REJECT": {extra: `,"unresolvedKeyPolicy":"REJECT"`, want: errPolicyViolation},
	} {
		t.Run(name, func(t *testing.T) {
			standIn := proxytest.NewTransit("hvs.t", "KEK_secrets")
			e := newVaultFilter(t, standIn, "KEK_$(topicName)", tc.extra)
			encrypted(t, e, "secrets", batch(t, 0, []byte("before")))
			standIn.Delete("KEK_secrets")
			e.deks["KEK_secrets"].created = time.Now().Add(-e.tune.dekLifetime) // due for renewal
			raw := batch(t, 0, []byte("after"))
			for range 2 {
				x := produce("secrets", bytes.Clone(raw))
				if err := e.OnRequest(t.Context(), x); err != nil {
					t.Fatal(err)
				}
				switch got := x.Request.(*kmsg.ProduceRequest); {
				case tc.want == 0 && (x.Answered() != nil || !bytes.Equal(got.Topics[0].Partitions[0].Records, raw)):
					t.Errorf("want the records forwarded as produced, got answer %v", x.Answered())
				case tc.want != 0 && answeredError(x.Answered()) != tc.want:
					t.Errorf("answer %v, want error %d", x.Answered(), tc.want)
				}
			}
			if standIn.Calls("datakey") != 2 || standIn.Calls("keys") != 1 {
				t.Errorf("datakey called %d times and keys %d, want 2 and 1: the absence is remembered", standIn.Calls("datakey"), standIn.Calls("keys"))
			}
		})
	}

	standIn := proxytest.NewTransit("hvs.t", "KEK_secrets", "KEKv2_secrets")
	v1 := newVaultFilter(t, standIn, "KEK_$(topicName)", "")
	enc := encrypted(t, v1, "secrets", batch(t, 0, []byte("shredded")))
	standIn.Delete("KEK_secrets")
	v2 := newVaultFilter(t, standIn, "KEKv2_$(topicName)", "")
	for range 3 {
		p := fetched(t, v2, "secrets", enc)
		if p.ErrorCode != 0 || !bytes.Equal(p.RecordBatches, enc) {
			t.Fatalf("error %d; want the records as stored", p.ErrorCode)
		}
	}
	if n := standIn.Calls("decrypt"); n != 1 {
		t.Errorf("three fetches called decrypt %d times, want 1", n)
	}
}

// TestVaultMinDecryptionVersion: once the key's min_decryption_version is above the version
// records were written under, fetching them fails their partition with POLICY_VIOLATION, which
// consumers do not retry, with a log line that says why; Vault is asked once, not at every
// fetch. Records written under the new version read as before.
func TestVaultMinDecryptionVersion(t *testing.T) {
	standIn := proxytest.NewTransit("hvs.t", "KEK_secrets")
	writer := newVaultFilter(t, standIn, "KEK_$(topicName)", "")
	old := encrypted(t, writer, "secrets", batch(t, 0, []byte("v1 record")))
	standIn.Rotate("KEK_secrets")
	standIn.SetMinDecryptionVersion("KEK_secrets", 2)
	writer.deks["KEK_secrets"].created = time.Now().Add(-writer.tune.dekLifetime)
	current := encrypted(t, writer, "secrets", batch(t, 0, []byte("v2 record")))

	reader := newVaultFilter(t, standIn, "KEK_$(topicName)", "")
	var logged strings.Builder
	ctx := klog.NewContext(t.Context(), funcr.New(func(prefix, args string) { logged.WriteString(args + "\n") }, funcr.Options{}))
	for range 2 {
		p := fetchedWith(ctx, t, reader, "secrets", old)
		if p.ErrorCode != errKMSRefused || p.RecordBatches != nil || kerr.IsRetriable(kerr.ErrorForCode(p.ErrorCode)) {
			t.Errorf("fetch of records below min_decryption_version: error %v, %d bytes; want the non-retriable %v and none", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches), kerr.PolicyViolation)
		}
	}
	if n := standIn.Calls("decrypt"); n != 1 {
		t.Errorf("two fetches called decrypt %d times, want 1", n)
	}
	if !strings.Contains(logged.String(), "min_decryption_version") || !strings.Contains(logged.String(), `"topic"="secrets"`) {
		t.Errorf("the log does not say why the partition fails:\n%s", logged.String())
	}
	if p := fetched(t, reader, "secrets", current); p.ErrorCode != 0 || string(mustDecode(t, p.RecordBatches).Records[0].Value) != "v2 record" {
		t.Errorf("records of the current version: error %d", p.ErrorCode)
	}
}

// FuzzVaultError: any status and body Vault (or whatever answers at its address) sends back is
// exactly one of the KMS errors, never a panic; a 400 is a missing KEK or a refusal, and an
// answer that is neither 400 nor 404 is a KMS to wait for.
func FuzzVaultError(f *testing.F) {
	f.Add(400, []byte(`{"errors":["encryption key not found"]}`))
	f.Add(400, []byte(`{"errors":["ciphertext or signature version is disallowed by policy (too old)"]}`))
	f.Add(404, []byte(`{"errors":[]}`))
	f.Add(404, []byte(`{"errors":["no handler for route \"transit2/keys/x\". route entry not found."]}`))
	f.Add(503, []byte(`{"errors":["Vault is sealed"]}`))
	f.Add(400, []byte(`{"errors":null}`))
	f.Add(400, []byte(`{"errors":["`+strings.Repeat("é", 400)+`"]}`))
	f.Add(404, []byte(`{"errors":`+strings.Repeat("[", 5000)))
	f.Add(-1, []byte{0xff, 0xfe})
	f.Add(1<<31-1, []byte(`{"errors":[1,2,{"a":"b"}]}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		err := vaultError(status, body)
		n := 0
		for _, sentinel := range []error{ErrKEKNotFound, ErrKMSRefused, ErrKMSUnavailable} {
			if errors.Is(err, sentinel) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d %q: %v is %d of the KMS errors, want exactly one", status, body, err, n)
		}
		if status == 400 && errors.Is(err, ErrKMSUnavailable) || status != 400 && status != 404 && !errors.Is(err, ErrKMSUnavailable) {
			t.Fatalf("%d %q: %v", status, body, err)
		}
		if len(err.Error()) > 1024 {
			t.Fatalf("an error of %d bytes for the log", len(err.Error()))
		}
	})
}
