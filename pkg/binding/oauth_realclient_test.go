package binding_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// kfake speaks no OAUTHBEARER, so these tests put a small broker front on loopback before it:
// the front answers SaslHandshake and SaslAuthenticate itself, accepting only bearer tokens its
// token endpoint issued to the right client, points Metadata at itself, and relays every other
// request to kfake. The token endpoint implements the client-credentials grant (RFC 6749 4.4).

// tokenEndpoint issues opaque tokens for one client id and secret.
type tokenEndpoint struct {
	id, secret string
	mu         sync.Mutex
	issued     map[string]bool
}

func (te *tokenEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost || r.PostForm.Get("grant_type") != "client_credentials" {
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != te.id || secret != te.secret {
		http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
		return
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	te.mu.Lock()
	te.issued[token] = true
	te.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": 3600})
}

func (te *tokenEndpoint) valid(token string) bool {
	te.mu.Lock()
	defer te.mu.Unlock()
	return te.issued[token]
}

// oauthFront is the OAUTHBEARER broker front described above.
type oauthFront struct {
	ln     net.Listener
	target string
	te     *tokenEndpoint
}

func (f *oauthFront) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		go f.handle(c)
	}
}

func (f *oauthFront) handle(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", f.target)
	if err != nil {
		return
	}
	defer up.Close()
	cr, ur := bufio.NewReader(c), bufio.NewReader(up)
	authed := false
	for {
		frame, err := readFrame(cr)
		if err != nil {
			return
		}
		key, version := int16(binary.BigEndian.Uint16(frame[4:])), int16(binary.BigEndian.Uint16(frame[6:]))
		corr := binary.BigEndian.Uint32(frame[8:])
		switch {
		case key == kmsg.SASLHandshake.Int16():
			resp := kmsg.NewPtrSASLHandshakeResponse()
			resp.SetVersion(version)
			resp.SupportedMechanisms = []string{binding.SASLMechanismOAuthBearer}
			if !strings.Contains(string(frame), binding.SASLMechanismOAuthBearer) {
				resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
			}
			writeResponse(c, corr, resp)
		case key == kmsg.SASLAuthenticate.Int16():
			req := kmsg.NewPtrSASLAuthenticateRequest()
			req.SetVersion(version)
			resp := kmsg.NewPtrSASLAuthenticateResponse()
			resp.SetVersion(version)
			if err := req.ReadFrom(requestBody(frame, req.IsFlexible())); err != nil || !f.te.valid(bearer(req.SASLAuthBytes)) {
				resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
				msg := "token not issued by the test's token endpoint"
				resp.ErrorMessage = &msg
			} else {
				authed = true
			}
			writeResponse(c, corr, resp)
		case !authed && key != kmsg.ApiVersions.Int16():
			return // the front, like an oauth listener, serves nothing before authentication
		default:
			if _, err := up.Write(frame); err != nil {
				return
			}
			rf, err := readFrame(ur)
			if err != nil {
				return
			}
			if key == kmsg.Metadata.Int16() {
				rf = f.pointMetadataHere(rf, version)
			}
			if _, err := c.Write(rf); err != nil {
				return
			}
		}
	}
}

// pointMetadataHere makes every broker of a Metadata response the front.
func (f *oauthFront) pointMetadataHere(frame []byte, version int16) []byte {
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(version)
	if err := resp.ReadFrom(responseBody(frame, resp.IsFlexible())); err != nil {
		return frame
	}
	host, port, _ := net.SplitHostPort(f.ln.Addr().String())
	p, _ := strconv.Atoi(port)
	for i := range resp.Brokers {
		resp.Brokers[i].Host, resp.Brokers[i].Port = host, int32(p)
	}
	return encodeResponse(binary.BigEndian.Uint32(frame[4:]), resp)
}

// bearer reads the token of an OAUTHBEARER initial response (RFC 7628): n,,^Aauth=Bearer <token>^A^A.
func bearer(b []byte) string {
	for _, kv := range strings.Split(string(b), "\x01") {
		if t, ok := strings.CutPrefix(kv, "auth=Bearer "); ok {
			return t
		}
	}
	return ""
}

func readFrame(r *bufio.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 16<<20 {
		return nil, errors.New("frame too large")
	}
	frame := make([]byte, 4+n)
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// requestBody is a request frame's body: after the size, key, version, correlation id, client
// id, and for flexible versions an (empty) tag buffer.
func requestBody(frame []byte, flexible bool) []byte {
	if len(frame) < 14 {
		return nil
	}
	n := max(int(int16(binary.BigEndian.Uint16(frame[12:]))), 0)
	b := frame[min(14+n, len(frame)):]
	if flexible && len(b) > 0 {
		b = b[1:]
	}
	return b
}

// responseBody is a response frame's body: after the size, correlation id and, for flexible
// versions, an (empty) tag buffer.
func responseBody(frame []byte, flexible bool) []byte {
	b := frame[8:]
	if flexible && len(b) > 0 {
		b = b[1:]
	}
	return b
}

func encodeResponse(corr uint32, resp kmsg.Response) []byte {
	body := make([]byte, 8, 64)
	binary.BigEndian.PutUint32(body[4:], corr)
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		body = append(body, 0)
	}
	body = resp.AppendTo(body)
	binary.BigEndian.PutUint32(body, uint32(len(body)-4))
	return body
}

func writeResponse(w io.Writer, corr uint32, resp kmsg.Response) {
	_, _ = w.Write(encodeResponse(corr, resp))
}

// TestOAuthBindingWithRealClient binds an oauth listener (Strimzi's authentication type oauth,
// tokenEndpointUri set) with a KafkaConnection's client credentials, projects the Secret as files,
// and has franz-go, configured from those files only, get a token with the client-credentials
// grant and produce and consume through OAUTHBEARER.
func TestOAuthBindingWithRealClient(t *testing.T) {
	te := &tokenEndpoint{id: "orders-app", secret: "s3cret-Client", issued: map[string]bool{}}
	srv := &http.Server{Handler: te, ReadHeaderTimeout: 5 * time.Second}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(hl) }()
	t.Cleanup(func() { _ = srv.Close() })
	tokenURL := "http://" + hl.Addr().String() + "/realms/kafka/protocol/openid-connect/token"

	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	front := &oauthFront{ln: ln, target: kc.ListenAddrs()[0], te: te}
	go front.serve()

	kafka := &strimzi.Kafka{Namespace: "kafka", Name: "sso", Listeners: []strimzi.Listener{{Name: "oauth", Port: 9092, Type: strimzi.ListenerInternal,
		Authentication: strimzi.ListenerAuthOAuth, OAuth: &strimzi.OAuthListener{TokenEndpointURI: tokenURL, OAuthBearer: true}}},
		Status: strimzi.KafkaStatus{Listeners: []strimzi.ListenerStatus{{Name: "oauth", BootstrapServers: ln.Addr().String()}}}}
	res, f := binding.Build(binding.Input{Kafka: kafka, OAuth: &binding.OAuthCredentials{SecretName: "apps/orders-app-oauth",
		ClientID: te.id, ClientSecret: te.secret}})
	if f != nil {
		t.Fatal(f)
	}
	for k, want := range map[string]string{binding.KeySecurityProtocol: binding.ProtocolSASLPlaintext, binding.KeySASLMechanism: "OAUTHBEARER",
		binding.KeyOAuthTokenEndpoint: tokenURL, binding.KeyLoginCallbackHandler: "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
		binding.KeySASLJAASConfig: `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="orders-app" clientSecret="s3cret-Client";`} {
		if got := string(res.Data[k]); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	dir := t.TempDir()
	for k, v := range res.Data {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts := oauthClientOpts(t, dir)
	cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("with-a-token")}).FirstErr(); err != nil {
		t.Fatalf("produce over OAUTHBEARER: %v", err)
	}
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume: %v", fs.Errors())
		}
		found := false
		fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == "with-a-token" })
		if found {
			break
		}
	}

	// A client with a wrong secret gets no token, and the front refuses a made-up one.
	bad := oauth.Oauth(func(context.Context) (oauth.Auth, error) { return oauth.Auth{Token: "made-up"}, nil })
	cl2, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()), kgo.SASL(bad), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	if _, err := cl2.Request(ctx, kmsg.NewPtrMetadataRequest()); err == nil {
		t.Error("a token the endpoint never issued was accepted: the front checks nothing")
	}
}

// oauthClientOpts configures franz-go from an OAuth binding's files only, as a franz-go
// application does (docs/apps.md): the client-credentials grant against the token endpoint.
func oauthClientOpts(t *testing.T, dir string) []kgo.Opt {
	read := func(k string) string {
		b, err := os.ReadFile(filepath.Join(dir, k))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if read(binding.KeySASLMechanism) != "OAUTHBEARER" {
		t.Fatalf("sasl.mechanism %s", read(binding.KeySASLMechanism))
	}
	endpoint, id, secret := read(binding.KeyOAuthTokenEndpoint), read(binding.KeyOAuthClientID), read(binding.KeyOAuthClientSecret)
	token := func(ctx context.Context) (oauth.Auth, error) {
		form := url.Values{"grant_type": {"client_credentials"}}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
		if err != nil {
			return oauth.Auth{}, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return oauth.Auth{}, err
		}
		defer resp.Body.Close()
		var body struct {
			AccessToken string `json:"access_token"`
		}
		if resp.StatusCode != http.StatusOK {
			return oauth.Auth{}, fmt.Errorf("token endpoint: %s", resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return oauth.Auth{}, fmt.Errorf("token endpoint: %w", err)
		}
		return oauth.Auth{Token: body.AccessToken}, nil
	}
	return []kgo.Opt{kgo.SeedBrokers(strings.Split(read(binding.KeyBootstrapServers), ",")...), kgo.SASL(oauth.Oauth(token))}
}
