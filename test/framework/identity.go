package framework

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

func randomToken() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// ServiceAccountConfig creates the namespace and ServiceAccount if needed and returns a client
// configuration that authenticates as that ServiceAccount with a real bound token, so its requests
// are authorized by exactly the RBAC bound to it.
func (cp *ControlPlane) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	_, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	_, err = cp.Client.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	expiry := int64(24 * 3600)
	tr, err := cp.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for %s/%s: %w", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(cp.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}

// ServiceAccountUser is the user name the API server gives a ServiceAccount.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// AuditEvent is one request from the audit log.
type AuditEvent struct {
	// AuditID is the request's: a watch's two events (ResponseStarted, ResponseComplete) share it.
	AuditID    string `json:"auditID"`
	Verb       string `json:"verb"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// Writes returns the write requests (create, update, patch, delete) that a user made, in order.
// The audit log is written synchronously, so a request that returned is already in it.
func (cp *ControlPlane) Writes(user string) ([]AuditEvent, error) {
	return cp.audited(user, func(verb string) bool { return !readVerbs[verb] })
}

// Reads returns the read requests (get, list, watch) of the operator's user, in order; the audit
// policy records no one else's. A watch appears twice: when its response starts and when it ends.
func (cp *ControlPlane) Reads(user string) ([]AuditEvent, error) {
	return cp.audited(user, func(verb string) bool { return readVerbs[verb] })
}

var readVerbs = map[string]bool{"get": true, "list": true, "watch": true}

// audited returns the audit log's events of user whose verb keep accepts.
func (cp *ControlPlane) audited(user string, keep func(verb string) bool) ([]AuditEvent, error) {
	f, err := os.Open(cp.AuditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var events []AuditEvent
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for s.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			continue
		}
		if e.User.Username == user && keep(e.Verb) {
			events = append(events, e)
		}
	}
	return events, s.Err()
}

// WritesByKind counts audit events by verb and resource, with its subresource: "patch
// secrets", "patch kafkaconnections/status".
func WritesByKind(events []AuditEvent) map[string]int {
	out := map[string]int{}
	for _, e := range events {
		path, _, _ := strings.Cut(e.RequestURI, "?")
		parts := strings.Split(strings.Trim(path, "/"), "/")
		// /api/v1/namespaces/<ns>/<resource>[/<name>[/<sub>]] or /apis/<g>/<v>/namespaces/...
		resource := "?"
		for i, p := range parts {
			if p == "namespaces" && i+2 < len(parts) {
				resource = parts[i+2]
				if i+4 < len(parts) {
					resource += "/" + parts[i+4]
				}
				break
			}
		}
		out[e.Verb+" "+resource]++
	}
	return out
}
