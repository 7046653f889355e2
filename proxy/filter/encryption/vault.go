package encryption

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"software.sslmate.com/src/go-pkcs12"

	"github.com/kafkalink/kafkalink/proxy/filter"
)

// VaultKMS is HashiCorp Vault's (or OpenBao's) transit secrets engine: KEKs are transit keys,
// DEKs come from its datakey endpoint and are unwrapped by its decrypt endpoint, so a KEK never
// leaves Vault. The token needs read on keys/<kek>, update on datakey/plaintext/<kek> and on
// decrypt/<kek> (docs/record-encryption.md has the policy).
type VaultKMS struct {
	// Transit is the transit engine's URL, such as https://vault:8200/v1/transit.
	Transit *url.URL
	Token   string
	Client  *http.Client
}

// vaultConfig is kmsConfig for VaultKmsService, in Kroxylicious' shape.
type vaultConfig struct {
	VaultTransitEngineURL string   `json:"vaultTransitEngineUrl"`
	VaultToken            password `json:"vaultToken"`
	TLS                   *struct {
		Trust *struct {
			StoreFile     string    `json:"storeFile"`
			StoreType     string    `json:"storeType"`
			StorePassword *password `json:"storePassword"`
			Insecure      bool      `json:"insecure"`
		} `json:"trust"`
		Key json.RawMessage `json:"key"`
	} `json:"tls"`
}

// password is Kroxylicious' password provider: inline, or a file (a $(secretFile:…)).
type password struct {
	Password     string `json:"password"`
	PasswordFile string `json:"passwordFile"`
}

func (p password) read(readFile filter.ReadFile) (string, error) {
	if p.PasswordFile == "" {
		return p.Password, nil
	}
	b, err := readFile(p.PasswordFile)
	return strings.TrimSpace(string(b)), err
}

// vaultTimeout bounds one call to Vault, so an unresponsive Vault fails a Produce (retriably)
// instead of holding the connection.
const vaultTimeout = 10 * time.Second

// newVaultKMS reads kmsConfig and the files it names.
func newVaultKMS(raw json.RawMessage, readFile filter.ReadFile) (*VaultKMS, error) {
	var cfg vaultConfig
	if err := filter.DecodeStrict(raw, &cfg); err != nil {
		return nil, fmt.Errorf("kmsConfig: %w", err)
	}
	u, err := url.Parse(cfg.VaultTransitEngineURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("kmsConfig.vaultTransitEngineUrl: %q is not an http(s) URL such as https://vault:8200/v1/transit", cfg.VaultTransitEngineURL)
	}
	if cfg.VaultToken == (password{}) {
		return nil, fmt.Errorf("kmsConfig.vaultToken: no token: give passwordFile (a $(secretFile:…)) or password")
	}
	if cfg.TLS != nil && len(cfg.TLS.Key) > 0 && string(cfg.TLS.Key) != "null" {
		return nil, fmt.Errorf("kmsConfig.tls.key: TLS client certificates to Vault are not implemented by kafkalink-proxy; use the token")
	}
	token, err := cfg.VaultToken.read(readFile)
	if err != nil {
		return nil, fmt.Errorf("kmsConfig.vaultToken: no token in %s: %w", cfg.VaultToken.PasswordFile, err)
	}
	if token == "" {
		return nil, fmt.Errorf("kmsConfig.vaultToken: the token is empty")
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.TLS != nil {
		if t := cfg.TLS.Trust; t != nil {
			if tlsConfig.RootCAs, err = trustPool(t.StoreFile, t.StoreType, t.StorePassword, readFile); err != nil && !t.Insecure {
				return nil, fmt.Errorf("kmsConfig.tls.trust: %w", err)
			}
			tlsConfig.InsecureSkipVerify = t.Insecure //nolint:gosec // the user's explicit choice, as in Kroxylicious
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig
	return &VaultKMS{Transit: u, Token: token, Client: &http.Client{Transport: tr, Timeout: vaultTimeout}}, nil
}

// trustPool reads CA certificates from a PEM file or a PKCS#12 trust store.
func trustPool(file, storeType string, pw *password, readFile filter.ReadFile) (*x509.CertPool, error) {
	if file == "" {
		return nil, fmt.Errorf("storeFile is empty")
	}
	b, err := readFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	switch strings.ToUpper(storeType) {
	case "PEM":
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("%s holds no PEM certificate", file)
		}
	case "", "PKCS12":
		pass := ""
		if pw != nil {
			if pass, err = pw.read(readFile); err != nil {
				return nil, err
			}
		}
		certs, err := pkcs12.DecodeTrustStore(b, pass)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for _, c := range certs {
			pool.AddCert(c)
		}
	default:
		return nil, fmt.Errorf("storeType %q: kafkalink-proxy reads PEM and PKCS12 trust stores", storeType)
	}
	return pool, nil
}

// call sends one request to the transit engine. An answer other than 2xx is an error that
// vaultError classifies.
func (v *VaultKMS) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, v.Transit.JoinPath(path).String(), rd)
	if err != nil {
		return err
	}
	req.Header.Set("X-Vault-Token", v.Token)
	resp, err := v.Client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrKMSUnavailable, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("transit %s %s: %s: %w", method, path, resp.Status, vaultError(resp.StatusCode, data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%w: Vault %s %s: %w", ErrKMSUnavailable, method, path, err)
		}
	}
	return nil
}

// vaultError classifies a transit answer other than 2xx from its status and body
// ({"errors": [...]}), as Vault (and OpenBao) answer:
//   - 404 with no error text: reading a key that does not exist (ErrKEKNotFound). A 404 with text
//     ("no handler for route") is a transit mount that is not there: a wrong
//     vaultTransitEngineUrl, unavailable, never taken as "no KEK", which would write in the clear.
//   - 400 "encryption key not found": datakey or decrypt under a key that does not exist
//     (ErrKEKNotFound).
//   - any other 400: a request Vault will refuse whenever it is sent (ErrKMSRefused), such as a
//     ciphertext whose version is below the key's min_decryption_version ("ciphertext version is
//     disallowed by policy (too old)"), or one that is not Vault's.
//   - anything else (403 token refused, 429, 5xx, sealed): ErrKMSUnavailable, retriable.
func vaultError(status int, body []byte) error {
	var answer struct {
		Errors []string `json:"errors"`
	}
	_ = json.Unmarshal(body, &answer)
	text := strings.Join(answer.Errors, "; ")
	if len(text) > 512 {
		text = text[:512] // for the log: an error body can be up to the 1 MiB read
	}
	switch {
	case status == http.StatusNotFound && text == "":
		return ErrKEKNotFound
	case status == http.StatusBadRequest && strings.Contains(text, "encryption key not found"):
		return fmt.Errorf("%w: %s", ErrKEKNotFound, text)
	case status == http.StatusBadRequest:
		return fmt.Errorf("%w: %s", ErrKMSRefused, text)
	default:
		return fmt.Errorf("%w: %s", ErrKMSUnavailable, text)
	}
}

// Close closes the client's idle connections to Vault.
func (v *VaultKMS) Close() error {
	v.Client.CloseIdleConnections()
	return nil
}

// Exists implements KMS: the transit key can be read.
func (v *VaultKMS) Exists(ctx context.Context, kekID string) (bool, error) {
	err := v.call(ctx, http.MethodGet, "keys/"+url.PathEscape(kekID), nil, nil)
	if errors.Is(err, ErrKEKNotFound) {
		return false, nil
	}
	return err == nil, err
}

type vaultData struct {
	Data struct {
		Plaintext  string `json:"plaintext"`
		Ciphertext string `json:"ciphertext"`
	} `json:"data"`
}

// GenerateDEK implements KMS with the datakey endpoint: the wrapped DEK is Vault's ciphertext
// string (vault:vN:…), so key versions and rotation stay Vault's.
func (v *VaultKMS) GenerateDEK(ctx context.Context, kekID string) ([]byte, []byte, error) {
	var out vaultData
	if err := v.call(ctx, http.MethodPost, "datakey/plaintext/"+url.PathEscape(kekID), map[string]any{"bits": 256}, &out); err != nil {
		return nil, nil, err
	}
	dek, err := base64.StdEncoding.DecodeString(out.Data.Plaintext)
	if err != nil || len(dek) != 32 || out.Data.Ciphertext == "" {
		return nil, nil, fmt.Errorf("%w: Vault's datakey answer for %s is not a 256-bit key", ErrKMSUnavailable, kekID)
	}
	return dek, []byte(out.Data.Ciphertext), nil
}

// DecryptDEK implements KMS with the decrypt endpoint.
func (v *VaultKMS) DecryptDEK(ctx context.Context, kekID string, edek []byte) ([]byte, error) {
	var out vaultData
	if err := v.call(ctx, http.MethodPost, "decrypt/"+url.PathEscape(kekID), map[string]any{"ciphertext": string(edek)}, &out); err != nil {
		return nil, err
	}
	dek, err := base64.StdEncoding.DecodeString(out.Data.Plaintext)
	if err != nil || len(dek) != 32 {
		return nil, fmt.Errorf("%w: Vault's decrypt answer for %s is not a 256-bit key", ErrKMSUnavailable, kekID)
	}
	return dek, nil
}
