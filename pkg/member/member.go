// Package member reaches member clusters: Kubernetes clusters other than the one kafkalink runs
// in, each named by a kubeconfig Secret in that central cluster (the shape Strimzi's stretch
// cluster proposal gives KafkaNodePool spec.target).
//
// Each member has its own client, its own Secret informers (one per namespace it writes to,
// started when first needed) and its own work queue and worker. So a member that does not
// answer only slows its own queue: the others and the central reconciliation go on, and its
// failed items are retried with backoff until it answers again, with no restart. A member is
// created on its first item and closed when the last item referring to it is released.
//
// Kubeconfigs are credentials: they are read from the API server when needed (never cached by an
// informer), never logged, and never put in an error message.
//
// A member API server is reached at scheme://host:port and nowhere else: its URL may have no
// path, user information, query or fragment, it must be in Config.AllowedServers, and member
// clients follow no HTTP redirect. What a member server answers is not quoted in status: Describe
// gives an error's class (unreachable, TLS error, forbidden, unauthorized, not found, HTTP <code>).
//
// A controller that delivers objects to members (the binding Secret copies of the KafkaConnection
// controller, the member proxies of the gateway controller) keeps its bookkeeping in a Ledger:
// what each item must be, its last outcome, what was removed; the controller keeps only what its
// objects are, how they are written to a member and how they show in status. The members' work
// queues are named (Config.Name: <controller queue>-member), for the work-queue metrics.
//
// Files:
//   - member.go: Ref, Config, Registry (members in use), Unreachable, URL checks, kubeconfigs.
//   - cluster.go: Cluster, one member in use: client without redirects, informers, queue, worker.
//   - describe.go: Describe, an error as status shows it: its class, never a member's answer.
//   - ledger.go: Ledger, delivery bookkeeping per item: Spec, Result, removed, queue and release.
//   - member_test.go: Unreachable, kubeconfig checks, Registry lifecycle, allowed servers.
//   - hardening_test.go: no redirects followed, no server body quoted, URL shape, Describe.
//   - rbac_test.go: hack/member-rbac.sh, a tenant's identity in a member.
//   - ledger_test.go: Ledger bookkeeping (table), delivery on named member queues.
package member

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// KubeconfigKey is the key of a member's kubeconfig in its Secret.
const KubeconfigKey = "kubeconfig"

// Ref names a member cluster: a kubeconfig Secret of the central cluster and, optionally, the API
// server URL to use instead of the kubeconfig's.
type Ref struct {
	Namespace, Secret, ClusterURL string
}

// String names the member in logs and status; it holds no credentials: of the URL, only its
// scheme://host:port.
func (r Ref) String() string {
	if r.ClusterURL == "" {
		return r.Namespace + "/" + r.Secret
	}
	return r.Namespace + "/" + r.Secret + " (" + displayOrigin(r.ClusterURL) + ")"
}

// Handler does one item of a member's queue; an error retries it with backoff.
type Handler func(ctx context.Context, c *Cluster, item string) error

// Config configures a Registry.
type Config struct {
	// Name names the members' work queues for the work-queue metrics (the name label; "member"
	// when empty). The members of a registry share it, so depth, adds, durations and retries add
	// up over its members; unfinished work and the longest running processor, which each queue
	// sets, are those of the member that set them last.
	Name string
	// Central reads the kubeconfig Secrets.
	Central kubernetes.Interface
	// Handle does one item.
	Handle Handler
	// Watched selects, by label, the Secrets a member's informers hold.
	Watched string
	// ItemsOf maps a watched Secret that changed in a member to the items to do again.
	ItemsOf func(s *corev1.Secret) []string
	// Timeout bounds each request to a member (10 s when zero).
	Timeout time.Duration
	// MaxBackoff bounds the retry delay of a failing item (30 s when zero): the longest a
	// member that came back waits before it is caught up.
	MaxBackoff time.Duration
	// AllowedServers are the member API servers the operator may reach (see ServerAllowed).
	AllowedServers []string
}

// ErrServerNotAllowed is a member whose API server is not in Config.AllowedServers: the operator
// sends it nothing, so it counts as unreachable.
var ErrServerNotAllowed = errors.New("not one the operator may reach; an administrator allows it with the operator's --allowed-member-servers")

// ErrServerURL is a member API server URL that is more than scheme://host[:port][/]: the operator
// sends it nothing, so it counts as unreachable.
var ErrServerURL = errors.New("a member API server URL must be scheme://host[:port] with no path, user information, query or fragment")

// ErrRedirect is a member API server that answered with an HTTP redirect: member clients follow
// none, since the redirect's target was never allowed.
var ErrRedirect = errors.New("answered with an HTTP redirect, which member clients do not follow")

// checkServerURL is scheme://host:port of a member API server URL (https when there is no scheme,
// as serverOrigin), or an error saying what else the URL holds, quoting only its origin.
func checkServerURL(server string) (string, error) {
	origin, ok := serverOrigin(server)
	if !ok {
		return "", fmt.Errorf("the API server URL is not an http or https URL with a host: %w", ErrServerURL)
	}
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	u, _ := url.Parse(server) // serverOrigin parsed it
	var problem string
	switch {
	case u.User != nil:
		problem = "holds user information"
	case u.Opaque != "" || (u.Path != "" && u.Path != "/") || u.RawPath != "":
		problem = "has a path"
	case u.RawQuery != "" || u.ForceQuery:
		problem = "has a query"
	case u.Fragment != "" || strings.Contains(server, "#"):
		problem = "has a fragment"
	default:
		return origin, nil
	}
	return "", fmt.Errorf("the API server URL for %s %s: %w", origin, problem, ErrServerURL)
}

// displayOrigin is a URL as messages show it: scheme://host:port only.
func displayOrigin(server string) string {
	if o, ok := serverOrigin(server); ok {
		return o
	}
	return "(a URL that does not parse)"
}

// ServerAllowed reports whether a member API server URL is one of allowed: equal to one of them
// once both are reduced to scheme://host:port, or allowed holds "*". Nothing is allowed when
// allowed is empty. The URL comes from a tenant (a kubeconfig Secret, a clusterUrl), and without
// this list a tenant could make the operator send requests wherever its network reaches.
func ServerAllowed(allowed []string, server string) bool {
	s, ok := serverOrigin(server)
	if !ok {
		return false
	}
	for _, a := range allowed {
		if a == "*" {
			return true
		}
		if o, ok := serverOrigin(a); ok && o == s {
			return true
		}
	}
	return false
}

// serverOrigin is scheme://host:port of an API server URL, lower case, with the scheme's port
// when none is given (https when there is no scheme, as client-go assumes).
func serverOrigin(server string) (string, bool) {
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	u, err := url.Parse(server)
	if err != nil || u.Hostname() == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return u.Scheme + "://" + strings.ToLower(net.JoinHostPort(u.Hostname(), port)), true
}

// Registry holds the members in use.
type Registry struct {
	cfg     Config
	ctx     context.Context
	mu      sync.Mutex
	members map[Ref]*Cluster
}

// NewRegistry makes a registry whose members stop when ctx ends.
func NewRegistry(ctx context.Context, cfg Config) *Registry {
	if cfg.Name == "" {
		cfg.Name = "member"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	return &Registry{cfg: cfg, ctx: ctx, members: map[Ref]*Cluster{}}
}

// Enqueue adds an item to a member's queue, creating the member on first use, and records that
// the item refers to it.
func (r *Registry) Enqueue(ref Ref, item string) {
	r.mu.Lock()
	c, ok := r.members[ref]
	if !ok {
		c = r.start(ref)
		r.members[ref] = c
	}
	c.refs[item] = true
	r.mu.Unlock()
	c.queue.Add(item)
}

// Release records that an item no longer refers to a member; the member is closed (worker,
// informers, client) when no item refers to it.
func (r *Registry) Release(ref Ref, item string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.members[ref]
	if !ok {
		return
	}
	delete(c.refs, item)
	if len(c.refs) == 0 {
		delete(r.members, ref)
		c.close()
	}
}

// Health is what is known of a member's reachability.
type Health struct {
	// Reachable: the member's API server answered the last request (errors included).
	Reachable bool
	// Err is the last request's error, without credentials; empty after a success.
	Err string
	// Known: a request was made.
	Known bool
}

// Health reports a member's state; the zero Health when it is not in use.
func (r *Registry) Health(ref Ref) Health {
	r.mu.Lock()
	c, ok := r.members[ref]
	r.mu.Unlock()
	if !ok {
		return Health{}
	}
	return c.health()
}

// Len is the number of members in use.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.members)
}

func (r *Registry) start(ref Ref) *Cluster {
	ctx, cancel := context.WithCancel(r.ctx)
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("member", ref.String()))
	c := &Cluster{
		ctx: ctx, ref: ref, cfg: r.cfg, cancel: cancel, refs: map[string]bool{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, r.cfg.MaxBackoff),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: r.cfg.Name}),
		namespaces: map[string]*namespaceCache{},
	}
	go c.run(ctx)
	return c
}

// Unreachable reports whether err says the member's API server did not answer (as opposed to
// answering with an error, such as Forbidden).
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var ue *url.Error
	var ne net.Error
	var se *apierrors.StatusError
	switch {
	case errors.Is(err, ErrServerNotAllowed), errors.Is(err, ErrServerURL):
		return true
	case errors.Is(err, ErrRedirect):
		return false // it answered
	case errors.As(err, &se):
		// The server answered; 503 and 504 come from a proxy or an overloaded server.
		code := se.ErrStatus.Code
		return code == 503 || code == 504
	case errors.As(err, &ue), errors.As(err, &ne), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	return false
}

// restConfigFrom builds a member's client configuration from its kubeconfig Secret; errors say
// what is wrong without quoting the Secret.
func restConfigFrom(s *corev1.Secret, clusterURL string, timeout time.Duration) (*kubernetesConfig, error) {
	raw := s.Data[KubeconfigKey]
	if len(raw) == 0 {
		return nil, ownf("Secret %s/%s has no key %s", s.Namespace, s.Name, KubeconfigKey)
	}
	loaded, err := clientcmd.Load(raw)
	if err != nil {
		return nil, ownf("Secret %s/%s key %s is not a kubeconfig", s.Namespace, s.Name, KubeconfigKey)
	}
	if field := outsideReference(loaded); field != "" {
		return nil, ownf("Secret %s/%s key %s sets %s: a member kubeconfig must hold its credentials and CA inline (token or client certificate data)",
			s.Namespace, s.Name, KubeconfigKey, field)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*loaded, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, ownf("Secret %s/%s key %s has no usable context: %s", s.Namespace, s.Name, KubeconfigKey, redact(err))
	}
	if clusterURL != "" {
		cfg.Host = clusterURL
	}
	cfg.Timeout = timeout
	cfg.UserAgent = "kafkalink-operator (member)"
	return &kubernetesConfig{cfg: cfg, digest: sha256.Sum256(append(raw, clusterURL...))}, nil
}

// outsideReference names a kubeconfig field that would make the operator reach outside the
// kubeconfig, "" when there is none. The kubeconfig comes from a tenant's namespace: a command
// (exec, auth-provider) would run in the operator's container, a file path (tokenFile,
// client-certificate, client-key, certificate-authority) would send the operator's own files,
// such as its ServiceAccount token, to the tenant's server, and a proxy-url would route through
// the tenant's choice.
func outsideReference(cfg *clientcmdapi.Config) string {
	for name, u := range cfg.AuthInfos {
		switch {
		case u.Exec != nil:
			return "users[" + name + "].exec"
		case u.AuthProvider != nil:
			return "users[" + name + "].auth-provider"
		case u.TokenFile != "":
			return "users[" + name + "].tokenFile"
		case u.ClientCertificate != "" || u.ClientKey != "":
			return "users[" + name + "].client-certificate/client-key"
		}
	}
	for name, c := range cfg.Clusters {
		switch {
		case c.CertificateAuthority != "":
			return "clusters[" + name + "].certificate-authority"
		case c.ProxyURL != "":
			return "clusters[" + name + "].proxy-url"
		}
	}
	return ""
}

// redact keeps a kubeconfig loading error's kind only: clientcmd's messages can quote fields.
func redact(err error) string {
	if clientcmd.IsEmptyConfig(err) {
		return "empty config"
	}
	return "invalid configuration"
}

// readKubeconfig reads a member's kubeconfig Secret from the central cluster.
func readKubeconfig(ctx context.Context, central kubernetes.Interface, ref Ref) (*corev1.Secret, error) {
	s, err := central.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Secret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, ownf("kubeconfig Secret %s/%s does not exist", ref.Namespace, ref.Secret)
	case err != nil:
		// The central API server's answer: the operator's own, so quoted.
		return nil, ownf("reading kubeconfig Secret %s/%s: %w", ref.Namespace, ref.Secret, err)
	}
	return s, nil
}
