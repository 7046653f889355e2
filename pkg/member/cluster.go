package member

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Cluster is one member cluster in use: its client, informers and queue.
type Cluster struct {
	ctx    context.Context // the member's life
	ref    Ref
	cfg    Config
	cancel context.CancelFunc
	queue  workqueue.TypedRateLimitingInterface[string]
	refs   map[string]bool // items referring to the member; guarded by the Registry's lock

	mu         sync.Mutex
	client     kubernetes.Interface
	dynamic    dynamic.Interface
	digest     [32]byte // of the kubeconfig and URL the client was built from
	namespaces map[string]*namespaceCache
	clientCtx  context.Context // ends when the client is replaced or the member closed
	stopClient context.CancelFunc
	last       Health
}

type kubernetesConfig struct {
	cfg    *rest.Config
	digest [32]byte
}

// namespaceCache is the Secret informer of one namespace of the member.
type namespaceCache struct {
	informer cache.SharedIndexInformer
}

// Ref names the member.
func (c *Cluster) Ref() Ref { return c.ref }

func (c *Cluster) run(ctx context.Context) {
	defer c.queue.ShutDown()
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for c.next(ctx) {
	}
}

// next does one item; false once the queue is shut down.
func (c *Cluster) next(ctx context.Context) bool {
	item, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(item)
	err := c.handle(ctx, item)
	c.record(err)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Member work failed; retrying", "item", item, "err", err.Error())
		c.queue.AddRateLimited(item)
		return true
	}
	c.queue.Forget(item)
	return true
}

// handle runs the handler and turns a panic into an error, so one bad item never stops the
// member's worker.
func (c *Cluster) handle(ctx context.Context, item string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = ownf("panic: %v", p)
		}
	}()
	return c.cfg.Handle(ctx, c, item)
}

func (c *Cluster) record(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = Health{Known: true, Reachable: !Unreachable(err)}
	if err != nil {
		c.last.Err = Describe(err)
	}
}

func (c *Cluster) health() Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

func (c *Cluster) close() {
	c.cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopClient != nil {
		c.stopClient()
	}
}

// Client is the member's client, built from its kubeconfig Secret as it is now: a changed
// Secret (a rotated token) replaces the client and its informers.
func (c *Cluster) Client(ctx context.Context) (kubernetes.Interface, error) {
	s, err := readKubeconfig(ctx, c.cfg.Central, c.ref)
	if err != nil {
		return nil, err
	}
	kc, err := restConfigFrom(s, c.ref.ClusterURL, c.cfg.Timeout)
	if err != nil {
		return nil, err
	}
	origin, err := checkServerURL(kc.cfg.Host)
	if err != nil {
		return nil, ownf("member %s: %w", c.ref, err)
	}
	if !ServerAllowed(c.cfg.AllowedServers, origin) {
		return nil, ownf("member %s: the API server %s is %w", c.ref, origin, ErrServerNotAllowed)
	}
	// Exactly the origin checked, with its scheme: client-go would pick http for a host without
	// one when the kubeconfig has no CA.
	kc.cfg.Host = origin
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client != nil && c.digest == kc.digest {
		return c.client, nil
	}
	client, dyn, err := newClients(kc.cfg)
	if err != nil {
		return nil, ownf("member %s: %w", c.ref, err)
	}
	if c.stopClient != nil {
		c.stopClient()
	}
	c.client, c.dynamic, c.digest = client, dyn, kc.digest
	c.clientCtx, c.stopClient = context.WithCancel(c.ctx)
	c.namespaces = map[string]*namespaceCache{}
	return client, nil
}

// newClients are a member's typed client (protobuf for built-in kinds, as
// controller.NewKubeClient) and dynamic client, sharing one HTTP client that follows no redirect:
// client-go's own would follow one to wherever the member's server points, out of
// --allowed-member-servers, and read that answer as the member's.
func newClients(cfg *rest.Config) (kubernetes.Interface, dynamic.Interface, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	httpClient.Transport = noRedirects{httpClient.Transport}
	httpClient.CheckRedirect = func(*http.Request, []*http.Request) error { return ErrRedirect } // never called: noRedirects
	pb := rest.CopyConfig(cfg)
	pb.ContentType = runtime.ContentTypeProtobuf
	pb.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	client, err := kubernetes.NewForConfigAndClient(pb, httpClient)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, nil, err
	}
	return client, dyn, nil
}

// noRedirects turns a redirect into ErrRedirect before the HTTP client sees it: no request
// follows, and client-go gets no response whose body it would read.
type noRedirects struct{ next http.RoundTripper }

func (t noRedirects) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096)) // lets the connection be reused
		_ = resp.Body.Close()
		return nil, ErrRedirect
	}
	return resp, nil
}

// Dynamic is the member's dynamic client, for objects of any kind, from the same kubeconfig as
// Client (which it reads again, so call it after Client or instead of it).
func (c *Cluster) Dynamic(ctx context.Context) (dynamic.Interface, error) {
	if _, err := c.Client(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dynamic, nil
}

// Requeue does an item again after a while, for work that waits on the member (a Deployment
// becoming available).
func (c *Cluster) Requeue(item string, after time.Duration) { c.queue.AddAfter(item, after) }

// Secret reads a watched Secret of the member: from the namespace's informer once it has synced
// (started on first use), else from the API server. Nil when it does not exist.
func (c *Cluster) Secret(ctx context.Context, client kubernetes.Interface, namespace, name string) (*corev1.Secret, error) {
	if inf := c.informer(client, namespace); inf.HasSynced() {
		obj, exists, err := inf.GetIndexer().GetByKey(namespace + "/" + name)
		if err != nil || !exists {
			return nil, err
		}
		return obj.(*corev1.Secret), nil
	}
	s, err := client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return s, err
}

// informer returns the namespace's Secret informer, starting it when it is new.
func (c *Cluster) informer(client kubernetes.Interface, namespace string) cache.SharedIndexInformer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if nc, ok := c.namespaces[namespace]; ok {
		return nc.informer
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = c.cfg.Watched }))
	inf := f.Core().V1().Secrets().Informer()
	_ = inf.SetTransform(stripSecretManagedFields)
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) {
		if !errors.Is(err, context.Canceled) {
			c.record(err)
		}
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { c.requeue(obj) },
		DeleteFunc: c.requeue,
	})
	c.namespaces[namespace] = &namespaceCache{informer: inf}
	f.Start(c.clientCtx.Done())
	return inf
}

// requeue does again the items of a watched Secret that changed or went away in the member.
func (c *Cluster) requeue(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	s, ok := obj.(*corev1.Secret)
	if !ok || c.cfg.ItemsOf == nil {
		return
	}
	for _, item := range c.cfg.ItemsOf(s) {
		c.queue.Add(item)
	}
}

func stripSecretManagedFields(obj any) (any, error) {
	if s, ok := obj.(*corev1.Secret); ok {
		s.ManagedFields = nil
	}
	return obj, nil
}
