package member

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
)

// memberKubeconfig is an inline-token kubeconfig for server.
func memberKubeconfig(server string) []byte {
	return []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + server + `"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`)
}

// requestOnce makes a registry for one member whose kubeconfig names server (allowed: allowed),
// has its handler read a Secret of the member, and returns, once the item has been done, the
// member's Health and the handler's error.
func requestOnce(t *testing.T, server string, allowed []string, ref Ref) (Health, error) {
	t.Helper()
	central := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "member-a"},
		Data: map[string][]byte{KubeconfigKey: memberKubeconfig(server)}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 1)
	r := NewRegistry(ctx, Config{Central: central, AllowedServers: allowed, Timeout: 5 * time.Second,
		Handle: func(ctx context.Context, c *Cluster, _ string) error {
			client, err := c.Client(ctx)
			if err == nil {
				_, err = client.CoreV1().Secrets("apps").Get(ctx, "copy", metav1.GetOptions{})
			}
			select {
			case errs <- err:
			default:
			}
			return err
		}})
	if ref == (Ref{}) {
		ref = Ref{Namespace: "apps", Secret: "member-a"}
	}
	r.Enqueue(ref, "item")
	var err error
	select {
	case err = <-errs:
	case <-time.After(15 * time.Second):
		t.Fatal("the item was not handled")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !r.Health(ref).Known && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return r.Health(ref), err
}

// An allowed member API server that redirects elsewhere (here to a server that is not allowed)
// is not followed: the other server gets no request, and nothing it could say reaches a message.
func TestMemberClientFollowsNoRedirect(t *testing.T) {
	const body = "elsewhere-says-kl7Qz9-do-not-quote"
	var elsewhereCalled atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		elsewhereCalled.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(body))
	}))
	defer elsewhere.Close()
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, code)
		}))
		health, err := requestOnce(t, redirector.URL, []string{redirector.URL}, Ref{})
		redirector.Close()
		if err == nil {
			t.Fatalf("%d: the request succeeded", code)
		}
		if n := elsewhereCalled.Load(); n != 0 {
			t.Errorf("%d: the redirect was followed: the other server got %d requests", code, n)
		}
		t.Logf("%d: %s", code, Describe(err))
		for name, msg := range map[string]string{"Describe": Describe(err), "Health.Err": health.Err} {
			if strings.Contains(msg, body) {
				t.Errorf("%d: %s quotes the other server's body: %s", code, name, msg)
			}
			if !strings.Contains(msg, "redirect") {
				t.Errorf("%d: %s does not say the server redirected: %s", code, name, msg)
			}
		}
		if !health.Reachable {
			t.Errorf("%d: a server that answered with a redirect counts as unreachable", code)
		}
	}
}

// A member API server's answer is classified, never quoted: a 403 with a body of its own gives
// "forbidden", whether the body is text or a Status.
func TestMemberErrorsQuoteNoBody(t *testing.T) {
	const body = "forbidden-body-Xq81-do-not-quote"
	for name, tc := range map[string]struct {
		contentType, body string
		code              int
		want              string
	}{
		"403 text":   {"text/plain", body, http.StatusForbidden, "forbidden"},
		"403 Status": {"application/json", `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"` + body + `","reason":"Forbidden","code":403}`, http.StatusForbidden, "forbidden"},
		"401 text":   {"text/plain", body, http.StatusUnauthorized, "unauthorized"},
		"404 Status": {"application/json", `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"` + body + `","reason":"NotFound","code":404}`, http.StatusNotFound, "not found"},
		"418 text":   {"text/plain", body, http.StatusTeapot, "HTTP 418"},
		"200 junk":   {"text/html", "<html>" + body + "</html>", http.StatusOK, "not shown"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", tc.contentType)
			w.WriteHeader(tc.code)
			_, _ = w.Write([]byte(tc.body))
		}))
		health, err := requestOnce(t, srv.URL, []string{srv.URL}, Ref{})
		srv.Close()
		if err == nil {
			t.Errorf("%s: the request succeeded", name)
			continue
		}
		t.Logf("%s: %s", name, Describe(err))
		for what, msg := range map[string]string{"Describe": Describe(err), "Health.Err": health.Err} {
			if strings.Contains(msg, body) {
				t.Errorf("%s: %s quotes the server's body: %s", name, what, msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("%s: %s = %q, want it to say %q", name, what, msg, tc.want)
			}
		}
	}
}

// A member API server URL is scheme://host[:port][/]: a path, user information, a query or a
// fragment is refused before any request, and no message quotes more than scheme://host:port.
func TestMemberServerURLShape(t *testing.T) {
	var called atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		called.Add(1)
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	for name, tc := range map[string]struct {
		server string
		ok     bool
	}{
		"plain":         {srv.URL, true},
		"slash":         {srv.URL + "/", true},
		"path":          {srv.URL + "/k8s/clusters/c-1", false},
		"userinfo":      {"http://admin:pw-Zz93@" + host, false},
		"user only":     {"http://admin-Zz93@" + host, false},
		"query":         {srv.URL + "/?token=q-Zz93", false},
		"empty query":   {srv.URL + "/?", false},
		"fragment":      {srv.URL + "/#f-Zz93", false},
		"empty fragmnt": {srv.URL + "#", false},
	} {
		for _, viaClusterURL := range []bool{false, true} {
			server, ref := tc.server, Ref{}
			if viaClusterURL {
				server, ref = srv.URL, Ref{Namespace: "apps", Secret: "member-a", ClusterURL: tc.server}
			}
			called.Store(0)
			health, err := requestOnce(t, server, []string{"*"}, ref)
			refused := err != nil && called.Load() == 0
			if refused == tc.ok {
				t.Errorf("%s (clusterUrl %t): refused %t (%v), want %t", name, viaClusterURL, refused, err, !tc.ok)
			}
			if tc.ok {
				continue
			}
			for what, msg := range map[string]string{"error": err.Error(), "Describe": Describe(err), "Health.Err": health.Err, "Ref": ref.String()} {
				if strings.Contains(msg, "Zz93") || strings.Contains(msg, "k8s/clusters") {
					t.Errorf("%s (clusterUrl %t): %s quotes the URL beyond its origin: %s", name, viaClusterURL, what, msg)
				}
			}
			if msg := Describe(err); !strings.Contains(msg, srv.URL) {
				t.Errorf("%s (clusterUrl %t): %q does not name the server as %s", name, viaClusterURL, msg, srv.URL)
			}
		}
	}
}

// Describe keeps the operator's own words around a member server's error and classifies the
// error itself.
func TestDescribe(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "deployments"}, "proxy", errors.New("body-Qq1"))
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("applying Deployment proxy: %w", forbidden), "applying Deployment proxy: forbidden: "},
		{fmt.Errorf("applying Secret s: %w", apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, "body-Qq1")), "applying Secret s: already exists (HTTP 409)"},
		{ownf("kubeconfig Secret a/b does not exist"), "kubeconfig Secret a/b does not exist"},
		{&url.Error{Op: "Get", URL: "https://u:body-Qq1@10.0.0.1:6443/api?body-Qq1", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, "cannot reach https://10.0.0.1:6443: connection refused"},
		{fmt.Errorf("listing: %w", context.DeadlineExceeded), "listing: timed out"},
		{errors.New("Object 'Kind' is missing in 'body-Qq1'"), "an unexpected answer"},
	} {
		got := Describe(tc.err)
		if !strings.HasPrefix(got, tc.want) || strings.Contains(got, "body-Qq1") {
			t.Errorf("Describe(%v) = %q, want it to start with %q and quote nothing of the server's", tc.err, got, tc.want)
		}
	}
	if Describe(nil) != "" {
		t.Error("Describe(nil) is not empty")
	}
}

// A member API server whose certificate the kubeconfig's CA does not sign is a TLS error.
func TestDescribeTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	health, err := requestOnce(t, srv.URL, []string{srv.URL}, Ref{})
	if err == nil || !strings.HasPrefix(health.Err, "TLS error with "+srv.URL+": ") || health.Reachable {
		t.Errorf("a certificate of an unknown authority: %v, Health %+v", err, health)
	}
}
