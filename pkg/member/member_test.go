package member

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
)

func TestUnreachable(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"connection refused", refused, true},
		{"wrapped", fmt.Errorf("applying: %w", refused), true},
		{"deadline", context.DeadlineExceeded, true},
		{"forbidden: the server answered", apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "x", errors.New("no")), false},
		{"service unavailable", apierrors.NewServiceUnavailable("overloaded"), true},
		{"other", errors.New("kubeconfig Secret a/b does not exist"), false},
	} {
		if got := Unreachable(tc.err); got != tc.want {
			t.Errorf("%s: Unreachable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A kubeconfig that does not load is reported without quoting it: it holds credentials.
func TestKubeconfigErrorsQuoteNoSecret(t *testing.T) {
	const token = "s3cr3t-token-value"
	for name, data := range map[string]map[string][]byte{
		"missing key": {"other": []byte(token)},
		"not yaml":    {KubeconfigKey: []byte("{" + token)},
		"no context": {KubeconfigKey: []byte(`apiVersion: v1
kind: Config
users: [{name: u, user: {token: ` + token + `}}]
current-context: missing`)},
	} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "member-a"}, Data: data}
		_, err := restConfigFrom(s, "", time.Second)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), token) {
			t.Errorf("%s: error quotes the token: %v", name, err)
		}
	}
}

// A tenant's kubeconfig may not run a command in the operator's container, read its files or
// pick a proxy; inline credentials are accepted.
func TestKubeconfigMustBeInline(t *testing.T) {
	const base = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://member.example:6443"%s}}]
users: [{name: u, user: {%s}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	for name, tc := range map[string]struct{ cluster, user string }{
		"exec":                  {"", `exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, id]}`},
		"auth-provider":         {"", `auth-provider: {name: oidc}`},
		"tokenFile":             {"", `tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token`},
		"client-certificate":    {"", `client-certificate: /etc/ssl/private/a.crt, client-key: /etc/ssl/private/a.key`},
		"certificate-authority": {", certificate-authority: /etc/ssl/certs/ca.crt", `token: abc`},
		"proxy-url":             {`, proxy-url: "http://10.0.0.1:3128"`, `token: abc`},
	} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "member-a"},
			Data: map[string][]byte{KubeconfigKey: []byte(fmt.Sprintf(base, tc.cluster, tc.user))}}
		if _, err := restConfigFrom(s, "", time.Second); err == nil || !strings.Contains(err.Error(), "inline") {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "member-a"},
		Data: map[string][]byte{KubeconfigKey: []byte(fmt.Sprintf(base, `, certificate-authority-data: ""`, `token: abc`))}}
	if kc, err := restConfigFrom(s, "", time.Second); err != nil || kc.cfg.BearerToken != "abc" {
		t.Errorf("an inline token kubeconfig: %v", err)
	}
}

// A member whose kubeconfig Secret is missing reports it through its item's handler, and the
// registry closes the member when its last item is released.
func TestRegistryLifecycle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 10)
	r := NewRegistry(ctx, Config{Central: fake.NewClientset(), Handle: func(ctx context.Context, c *Cluster, item string) error {
		_, err := c.Client(ctx)
		errs <- err
		return nil
	}})
	ref := Ref{Namespace: "apps", Secret: "member-a"}
	r.Enqueue(ref, "apps/conn/member-a")
	select {
	case err := <-errs:
		if err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("Client: %v, want the missing Secret named", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the item was not handled")
	}
	if r.Len() != 1 {
		t.Fatalf("%d members, want 1", r.Len())
	}
	r.Release(ref, "apps/conn/member-a")
	if r.Len() != 0 {
		t.Fatalf("%d members after the last release, want 0", r.Len())
	}
}

func TestServerAllowed(t *testing.T) {
	allowed := []string{"https://member-a.example.com:6443", "member-b.example.com", "http://10.0.0.9"}
	for server, want := range map[string]bool{
		"https://member-a.example.com:6443":  true,
		"https://MEMBER-A.example.com:6443/": true,
		"member-a.example.com:6443":          true, // no scheme: https, as client-go
		"https://member-a.example.com:6444":  false,
		"http://member-a.example.com:6443":   false,
		"https://member-b.example.com":       true,
		"https://member-b.example.com:443":   true,
		"https://member-b.example.com.evil":  false,
		"http://10.0.0.9:80":                 true,
		"https://169.254.169.254":            false,
		"unix:///var/run/docker.sock":        false,
		"":                                   false,
	} {
		if got := ServerAllowed(allowed, server); got != want {
			t.Errorf("ServerAllowed(%q) = %t, want %t", server, got, want)
		}
	}
	if ServerAllowed(nil, "https://member-a.example.com:6443") {
		t.Error("an empty list allowed a server")
	}
	if !ServerAllowed([]string{"*"}, "https://anywhere:6443") {
		t.Error(`"*" did not allow a server`)
	}
}

// A member whose API server is not allowed gets no client: the handler sees an error that names
// the server and the flag, and no request leaves for that server.
func TestClientRefusesServersNotAllowed(t *testing.T) {
	kubeconfig := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://member-a.example.com:6443"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`)
	central := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "member-a"},
		Data: map[string][]byte{KubeconfigKey: kubeconfig}})
	for name, tc := range map[string]struct {
		allowed []string
		ref     Ref
		refused bool
	}{
		"the kubeconfig's server, allowed":  {allowed: []string{"https://member-a.example.com:6443"}, ref: Ref{Namespace: "apps", Secret: "member-a"}},
		"nothing allowed":                   {ref: Ref{Namespace: "apps", Secret: "member-a"}, refused: true},
		"a clusterUrl elsewhere":            {allowed: []string{"https://member-a.example.com:6443"}, ref: Ref{Namespace: "apps", Secret: "member-a", ClusterURL: "https://10.0.0.1:6443"}, refused: true},
		"a clusterUrl allowed by the \"*\"": {allowed: []string{"*"}, ref: Ref{Namespace: "apps", Secret: "member-a", ClusterURL: "https://10.0.0.1:6443"}},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		errs := make(chan error, 1)
		r := NewRegistry(ctx, Config{Central: central, AllowedServers: tc.allowed, Handle: func(ctx context.Context, c *Cluster, _ string) error {
			_, err := c.Client(ctx)
			errs <- err
			return nil
		}})
		r.Enqueue(tc.ref, "item")
		var err error
		select {
		case err = <-errs:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the item was not handled", name)
		}
		cancel()
		if refused := err != nil && strings.Contains(err.Error(), "--allowed-member-servers"); refused != tc.refused || (!tc.refused && err != nil) {
			t.Errorf("%s: Client error %v, want refused=%t", name, err, tc.refused)
		}
	}
}
