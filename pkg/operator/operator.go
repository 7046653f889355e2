// Package operator wires kafkalink's controllers to a cluster: clients, shared informer factories
// per watched namespace, leader election on a Lease, events, and the /healthz, /readyz and
// /metrics endpoints. The controllers themselves live in their own packages and receive a
// controller.Env (package controller), which the operator builds for each watched namespace;
// they do not import this package. The proxy's filter types and their check are the command's
// to set (Options.AddFlags), so the operator does not depend on the proxy's filters.
package operator

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	kafkalinkscheme "github.com/kafkalink/kafkalink/generated/clientset/versioned/scheme"
	kafkalinkinformers "github.com/kafkalink/kafkalink/generated/informers/externalversions"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gateway"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
	"github.com/kafkalink/kafkalink/pkg/version"
)

// Options are the operator's settings, bound to command-line flags by AddFlags: its own (clients,
// watched namespaces, endpoints, leader election, workers) and, embedded, the controllers'.
//
// Each field is the flag of the same name in AddFlags, which says what it does and its default.
type Options struct {
	// Kubeconfig is --kubeconfig.
	Kubeconfig string
	// KubeAPIQPS is --kube-api-qps.
	KubeAPIQPS float64
	// KubeAPIBurst is --kube-api-burst.
	KubeAPIBurst int
	// WatchNamespaces is --watch-namespaces; empty for all.
	WatchNamespaces []string
	// MetricsAddress is --metrics-address; empty disables /metrics.
	MetricsAddress string
	// Profiling is --profiling: /debug/pprof/ on the metrics address.
	Profiling bool
	// HealthAddress is --health-address.
	HealthAddress string
	// LeaderElect is --leader-elect.
	LeaderElect bool
	// LeaderElectionNamespace is --leader-election-namespace.
	LeaderElectionNamespace string
	// LeaderElectionID is --leader-election-id, the Lease's name.
	LeaderElectionID string
	// LeaseDuration is --leader-election-lease-duration.
	LeaseDuration time.Duration
	// RenewDeadline is --leader-election-renew-deadline.
	RenewDeadline time.Duration
	// RetryPeriod is --leader-election-retry-period.
	RetryPeriod time.Duration
	// Workers is --workers, per controller.
	Workers int

	// Options are the controllers' settings, which each controller gets in its controller.Env.
	// Their flags are bound here too.
	controller.Options
}

// AddFlags binds the options to flags with their defaults. ProxyFilterTypes and CheckFilter are
// the caller's to set before: they come from the proxy (package proxy/filter/all, which
// cmd/kafkalink-operator wires in), and ProxyFilterTypes is --proxy-filter-types' default.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig; the in-cluster configuration when empty.")
	// The API server's Priority and Fairness (the FlowSchema and PriorityLevelConfiguration in
	// manifests/rbac/flowcontrol.yaml) shares it out between clients, as SIG API Machinery
	// advises and controller-runtime does by default: no client-side rate limit unless asked
	// for. The workers bound what the operator has in flight (each sync makes its requests one
	// after the other), and a client-side limit only made it wait with the server idle: 500 per
	// second, per client, set the pace of a CA renewal on a large API server (docs/scale.md).
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", -1, "Client-side limit on requests per second to the API server, per client; negative for none (the default: the server's Priority and Fairness does the sharing, docs/install.md).")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", 1000, "Burst of requests to the API server above --kube-api-qps, when that is positive.")
	fs.Func("watch-namespaces", "Comma-separated namespaces to watch; all namespaces when empty.", commaList(&o.WatchNamespaces))
	fs.StringVar(&o.MetricsAddress, "metrics-address", ":8080", "Address of the Prometheus /metrics endpoint; empty disables it.")
	fs.BoolVar(&o.Profiling, "profiling", false, "Also serve Go's /debug/pprof/ profiles on the metrics address (for measuring; they show the operator's internals, so keep that address private).")
	fs.StringVar(&o.HealthAddress, "health-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "Run controllers only while holding the leader Lease, so replicas can stand by.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader Lease; $POD_NAMESPACE, else kafkalink-system, when empty.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", "kafkalink-operator", "Name of the leader Lease.")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", 15*time.Second, "How long a standby waits before taking over an unrenewed Lease.")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", 10*time.Second, "How long the leader retries renewing before giving up.")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", 2*time.Second, "How often candidates try to take or renew the Lease.")
	// 16: with 4, 5,000 connections waited on the workers with the API server's cores half idle;
	// past 16 a 2-core API server gains little more and stale-cache conflicts begin (docs/scale.md).
	fs.IntVar(&o.Workers, "workers", 16, "Workers per controller: at most this many objects of a kind are reconciled at once, each making its API requests one after another.")
	fs.StringVar(&o.ClusterDomain, "cluster-domain", "svc.cluster.local", "Hostnames ending in this domain are served in-cluster.")
	fs.StringVar(&o.ProxyImage, "proxy-image", version.ProxyImage(), "Image of the kafkalink-proxy Deployments (defaults to the proxy of this release).")
	fs.Func("allowed-metadata-prefixes", "Comma-separated prefixes (such as example.com/) that KafkaGateway infrastructure labels and annotations must start with to be put on generated pods and Services (others are not applied and are reported in the gateway's Accepted condition), and that KafkaConnection spec.template.secret.metadata keys must start with (a connection with others is not Ready, MetadataNotAllowed). Unset: any.", commaList(&o.AllowedMetadataPrefixes))
	fs.Func("allowed-ingress-domains", "Comma-separated domains that KafkaGatewayParameters ingressDomains (OpenShift Route hosts) must equal or be under; others are not applied, reported in the gateway's Accepted condition, and route hostnames under them are refused. Unset: any.", commaList(&o.AllowedIngressDomains))
	fs.Func("allowed-member-servers", "Comma-separated API server URLs of member clusters (such as https://member-a.example.com:6443) that KafkaConnection targets and KafkaGatewayParameters members may reach; \"*\" allows any. The URL comes from an application's kubeconfig Secret or clusterUrl, so unset allows none: a target or member elsewhere reports the flag in its status.", commaList(&o.AllowedMemberServers))
	fs.Func("proxy-filter-types", fmt.Sprintf("Comma-separated KafkaFilter types the proxy image implements (default: kafkalink-proxy's, %s). A route using another type is not served and reports ResolvedRefs=False UnsupportedValue.", strings.Join(o.ProxyFilterTypes, ",")), commaList(&o.ProxyFilterTypes))

	// Gateway controller.
	fs.DurationVar(&o.TLSRouteAttachTimeout, "tlsroute-attach-timeout", 5*time.Minute, "How long a generated TLSRoute may wait for a Gateway API parent to accept it before the KafkaGateway reports TLSRouteNotAccepted.")
	o.MaxGeneratedObjectsPerGateway = gateway.DefaultMaxGeneratedObjectsPerGateway
	fs.Func("max-generated-objects-per-gateway", fmt.Sprintf("Most Services, OpenShift Routes and TLSRoutes one KafkaGateway may generate for its routes (each host is a ClusterIP Service, and Service IPs are shared by the whole cluster); a route parentRef that would go over it reports Accepted=False LimitExceeded (default %d).", o.MaxGeneratedObjectsPerGateway), func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return errors.New("not a whole number of at least 1")
		}
		o.MaxGeneratedObjectsPerGateway = n
		return nil
	})
}

// commaList parses a flag of comma-separated values into dst, skipping empty items.
func commaList(dst *[]string) func(string) error {
	return func(s string) error {
		*dst = nil
		for _, v := range strings.Split(s, ",") {
			if v = strings.TrimSpace(v); v != "" {
				*dst = append(*dst, v)
			}
		}
		return nil
	}
}

// Resources of Gateway API's ReferenceGrant, in order of preference.
var (
	gvrGrantV1beta1 = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1beta1", Resource: "referencegrants"}
	gvrGrantV1      = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "referencegrants"}
	gvrGateway      = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
)

// newInformers makes the shared informers of one watched namespace ("" for all).
func newInformers(c controller.Clients, namespace string) controller.Informers {
	return controller.Informers{
		Namespace: namespace,
		Kube:      kubeinformers.NewSharedInformerFactoryWithOptions(c.Kube, 0, kubeinformers.WithNamespace(namespace)),
		KafkaLink: kafkalinkinformers.NewSharedInformerFactoryWithOptions(c.KafkaLink, 0, kafkalinkinformers.WithNamespace(namespace)),
		ReferenceGrants: controller.NewOptionalInformer(controller.OptionalConfig{
			What:      "ReferenceGrant",
			GVRs:      []schema.GroupVersionResource{gvrGrantV1beta1, gvrGrantV1},
			Namespace: namespace,
			Dynamic:   c.Dynamic,
			Discovery: c.Discovery,
			Transform: typedReferenceGrant,
		}),
		Kafkas: controller.NewOptionalInformer(controller.OptionalConfig{What: "Strimzi Kafka",
			GVRs: strimzi.GVRs(strimzi.ResourceKafkas), Namespace: namespace, Dynamic: c.Dynamic, Discovery: c.Discovery,
			Transform: strimzi.PruneKafka}),
		KafkaNodePools: controller.NewOptionalInformer(controller.OptionalConfig{What: "Strimzi KafkaNodePool",
			GVRs: strimzi.GVRs(strimzi.ResourceKafkaNodePools), Namespace: namespace, Dynamic: c.Dynamic, Discovery: c.Discovery,
			Transform: strimzi.PruneKafkaNodePool}),
		GatewayAPIGateways: controller.NewOptionalInformer(controller.OptionalConfig{What: "Gateway API Gateway",
			GVRs: []schema.GroupVersionResource{gvrGateway}, Namespace: namespace, Dynamic: c.Dynamic, Discovery: c.Discovery,
			Transform: typedGateway, Indexers: cache.Indexers{controller.IndexGatewayAPICertificate: controller.GatewayAPICertificates}}),
	}
}

// typedReferenceGrant turns a cached ReferenceGrant into a *gatewayv1beta1.ReferenceGrant (v1 has
// the same schema), so every reader gets one type.
func typedReferenceGrant(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	g := &gatewayv1beta1.ReferenceGrant{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, g); err != nil {
		return nil, err
	}
	g.ManagedFields = nil
	return g, nil
}

// typedGateway turns a cached Gateway API Gateway into a *gatewayv1.Gateway without managedFields
// or status: its readers (the binding and gateway controllers) read only its spec, and a Gateway's
// status (listener and address conditions, attached route counts) is most of its size.
func typedGateway(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	g := &gatewayv1.Gateway{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, g); err != nil {
		return nil, err
	}
	g.ManagedFields, g.Status = nil, gatewayv1.GatewayStatus{}
	return g, nil
}

// NewControllerFunc builds a controller for one watched namespace. It registers its informers and
// event handlers but starts nothing.
type NewControllerFunc func(ctx context.Context, env controller.Env) (*controller.Controller, error)

// Scheme knows the built-in kinds and kafkalink's, for events about our objects.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(kubescheme.AddToScheme(Scheme))
	utilruntime.Must(kafkalinkscheme.AddToScheme(Scheme))
}

// RestConfig loads the kubeconfig, or the in-cluster configuration when path is empty.
func RestConfig(path string) (*rest.Config, error) {
	if path == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", path)
}

// RestConfig loads the configured kubeconfig with the options' client rate limits.
func (o *Options) RestConfig() (*rest.Config, error) {
	cfg, err := RestConfig(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = float32(o.KubeAPIQPS)
	cfg.Burst = o.KubeAPIBurst
	cfg.UserAgent = "kafkalink-operator"
	return cfg, nil
}

// NewClients builds every client from one configuration.
func NewClients(cfg *rest.Config) (controller.Clients, error) {
	var c controller.Clients
	var err error
	c.Config = cfg
	if c.Kube, err = controller.NewKubeClient(cfg); err != nil {
		return c, err
	}
	if c.KafkaLink, err = kafkalinkclient.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.Gateway, err = gatewayclient.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.Discovery, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
		return c, err
	}
	return c, nil
}

// Run runs the operator until ctx ends, in three steps: buildControllers builds the informers and
// controllers of every watched namespace, serveProbes serves /healthz, /readyz and /metrics (given
// the leader elector up front, which /healthz checks), and lead runs the controllers' workers while
// this replica holds the leader Lease (at once without leader election). Informers run on every
// replica. It returns nil after a clean shutdown, and an error when the Lease is lost or a probe
// server fails.
func Run(ctx context.Context, opts Options, clients controller.Clients, constructors ...NewControllerFunc) error {
	controller.RegisterMetrics()
	// The Lease is read and written with the clients as given; with leader election, everything
	// else writes through the fence (see writeFence), so only a replica sure to lead writes.
	lockClients := clients
	var fence *writeFence
	if opts.LeaderElect {
		if err := checkLeaderElectionNamespace(ctx, opts, clients.Kube); err != nil {
			return err
		}
		var err error
		if fence, clients, err = fencedClients(opts, clients); err != nil {
			return err
		}
	}

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: clients.Kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(Scheme, corev1.EventSource{Component: "kafkalink-operator"})

	ctrls, err := buildControllers(ctx, opts, clients, recorder, constructors)
	if err != nil {
		return err
	}
	controller.SetConditionSources(conditionSources(ctrls.informers)...)
	// Informers run on every replica, so a standby's caches are warm when it takes over and its
	// readiness means the same as the leader's.
	informerCtx, stopInformers := context.WithCancel(ctx)
	defer func() {
		stopInformers()
		ctrls.shutdownInformers()
	}()
	ctrls.startInformers(informerCtx)

	var elector *elector
	if opts.LeaderElect {
		if elector, err = newElector(ctx, opts, lockClients, fence, recorder, ctrls); err != nil {
			return err
		}
	}
	probes := probes{elector: elector, ready: ctrls.hasSynced, leading: ctrls.leading.Load}
	serveErrs, stopServing, err := serveProbes(ctx, opts, probes)
	if err != nil {
		return err
	}
	defer stopServing()
	return lead(ctx, ctrls, elector, serveErrs)
}

// controllers are what buildControllers made: the informers of every watched namespace and the
// controllers that read them.
type controllers struct {
	informers   []controller.Informers
	controllers []*controller.Controller
	workers     int
	// leading is true while the controllers' workers run (this replica leads).
	leading atomic.Bool
}

// buildControllers makes the informers of every watched namespace and, for each, a controller per
// constructor. Nothing starts.
func buildControllers(ctx context.Context, opts Options, clients controller.Clients, recorder record.EventRecorder, constructors []NewControllerFunc) (*controllers, error) {
	namespaces := opts.WatchNamespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	out := &controllers{workers: opts.Workers}
	for _, ns := range namespaces {
		inf := newInformers(clients, ns)
		out.informers = append(out.informers, inf)
		for _, newController := range constructors {
			c, err := newController(ctx, controller.Env{Clients: clients, Informers: inf, Recorder: recorder, Options: opts.Options})
			if err != nil {
				return nil, fmt.Errorf("building controllers for namespace %q: %w", ns, err)
			}
			out.controllers = append(out.controllers, c)
		}
	}
	return out, nil
}

func (cs *controllers) startInformers(ctx context.Context) {
	for _, inf := range cs.informers {
		inf.Kube.Start(ctx.Done())
		inf.KafkaLink.Start(ctx.Done())
		inf.ReferenceGrants.Start(ctx)
		inf.Kafkas.Start(ctx)
		inf.KafkaNodePools.Start(ctx)
		inf.GatewayAPIGateways.Start(ctx)
	}
}

func (cs *controllers) shutdownInformers() {
	for _, inf := range cs.informers {
		inf.Kube.Shutdown()
		inf.KafkaLink.Shutdown()
	}
}

// hasSynced reports whether every controller's caches have synced: the operator's readiness.
func (cs *controllers) hasSynced() bool {
	for _, c := range cs.controllers {
		if !c.HasSynced() {
			return false
		}
	}
	return true
}

// run runs every controller's workers until ctx ends.
func (cs *controllers) run(ctx context.Context) {
	cs.leading.Store(true)
	var wg sync.WaitGroup
	for _, c := range cs.controllers {
		wg.Go(func() { c.Run(ctx, cs.workers) })
	}
	wg.Wait()
}

// elector is the leader elector, and lost, closed when this replica stops leading.
type elector struct {
	*leaderelection.LeaderElector
	lost chan struct{}
}

// newElector makes the leader elector whose leadership runs the controllers.
func newElector(ctx context.Context, opts Options, clients controller.Clients, fence *writeFence, recorder record.EventRecorder, ctrls *controllers) (*elector, error) {
	logger := klog.FromContext(ctx)
	leaseLock, err := newLeaseLock(opts, clients, recorder)
	if err != nil {
		return nil, err
	}
	var lock resourcelock.Interface = leaseLock
	if fence != nil {
		lock = &fencedLock{Interface: leaseLock, fence: fence, drain: fence.window}
	}
	e := &elector{lost: make(chan struct{})}
	e.LeaderElector, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   opts.LeaseDuration,
		RenewDeadline:   opts.RenewDeadline,
		RetryPeriod:     opts.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            opts.LeaderElectionID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("Became leader", "lease", opts.LeaderElectionID, "identity", lock.Identity())
				ctrls.run(ctx)
			},
			OnStoppedLeading: func() {
				ctrls.leading.Store(false)
				close(e.lost)
			},
			OnNewLeader: func(identity string) {
				if identity != lock.Identity() {
					logger.Info("Waiting: another replica leads", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// probes is what the health endpoints read.
type probes struct {
	// elector is nil without leader election.
	elector *elector
	ready   func() bool
	leading func() bool
}

// healthHandler serves /healthz (fails when this replica holds the Lease but has stopped renewing
// it) and /readyz (fails until every controller's caches have synced, and says whether this
// replica leads).
func healthHandler(p probes) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if p.elector != nil {
			if err := p.elector.Check(20 * time.Second); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !p.ready() {
			http.Error(w, "informer caches not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "ok (leader: %t)\n", p.leading())
	})
	return mux
}

// serveProbes listens on the health address and, when set, the metrics address, and serves them
// in the background. A server that fails later reports on errs; stop shuts them down.
func serveProbes(ctx context.Context, opts Options, p probes) (errs <-chan error, stop func(), err error) {
	logger := klog.FromContext(ctx)
	servers := []*http.Server{{Addr: opts.HealthAddress, Handler: healthHandler(p), ReadHeaderTimeout: 5 * time.Second}}
	if opts.MetricsAddress != "" {
		metricsMux := http.NewServeMux()
		metricsMux.Handle("/metrics", promhttp.HandlerFor(controller.Registry, promhttp.HandlerOpts{}))
		if opts.Profiling {
			metricsMux.HandleFunc("/debug/pprof/", pprof.Index)
			metricsMux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		}
		servers = append(servers, &http.Server{Addr: opts.MetricsAddress, Handler: metricsMux, ReadHeaderTimeout: 5 * time.Second})
	}
	stop = func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, srv := range servers {
			_ = srv.Shutdown(shutdownCtx)
		}
	}
	serveErrs := make(chan error, len(servers))
	for i, srv := range servers {
		l, err := net.Listen("tcp", srv.Addr)
		if err != nil {
			for _, started := range servers[:i] {
				_ = started.Close()
			}
			return nil, nil, fmt.Errorf("listening on %s: %w", srv.Addr, err)
		}
		logger.Info("Serving", "address", l.Addr().String())
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				serveErrs <- err
			}
		}()
	}
	return serveErrs, stop, nil
}

// lead runs the controllers until ctx ends: at once without leader election, else while the
// elector holds the Lease. Losing the Lease, or a probe server failing, ends it with an error.
func lead(ctx context.Context, ctrls *controllers, e *elector, serveErrs <-chan error) error {
	logger := klog.FromContext(ctx)
	if e == nil {
		ctrls.run(ctx)
		return nil
	}
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	go e.Run(runCtx)
	select {
	case <-ctx.Done():
		cancelRun()
		// Give the elector its chance to release the Lease, so a standby takes over at once.
		select {
		case <-e.lost:
		case <-time.After(5 * time.Second):
		}
		logger.Info("Shut down cleanly")
		return nil
	case <-e.lost:
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("lost the leader Lease")
	case err := <-serveErrs:
		return err
	}
}

// leaderElectionNamespace is the namespace of the leader Lease and where that choice came from.
func leaderElectionNamespace(opts Options) (namespace, from string) {
	if opts.LeaderElectionNamespace != "" {
		return opts.LeaderElectionNamespace, "--leader-election-namespace"
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns, "$POD_NAMESPACE"
	}
	return "kafkalink-system", "the default"
}

// checkLeaderElectionNamespace fails, with what to do, when the Lease's namespace does not exist,
// which otherwise makes leader election log the same error every retry period forever (typically
// when running out of cluster with --kubeconfig). It reads the Namespace, or, without permission
// to, asks for a dry-run create of the Lease, which admission rejects in a missing namespace.
// Anything it cannot tell is left to leader election to report.
func checkLeaderElectionNamespace(ctx context.Context, opts Options, kube kubernetes.Interface) error {
	ns, from := leaderElectionNamespace(opts)
	missing := func() error {
		return fmt.Errorf("leader election namespace %q (from %s) does not exist: create it (kubectl create namespace %s), or pass --leader-election-namespace=<an existing namespace>, or --leader-elect=false", ns, from, ns)
	}
	_, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return missing()
	}
	if _, err := kube.CoordinationV1().Leases(ns).Get(ctx, opts.LeaderElectionID, metav1.GetOptions{}); err == nil {
		return nil
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: opts.LeaderElectionID, Namespace: ns}}
	_, err = kube.CoordinationV1().Leases(ns).Create(ctx, lease, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	var status apierrors.APIStatus
	if apierrors.IsNotFound(err) && errors.As(err, &status) && status.Status().Details != nil && status.Status().Details.Kind == "namespaces" {
		return missing()
	}
	return nil
}

// fencedClients makes the clients everything but the Lease lock uses: the same configuration,
// with writes through a fence sized from the leader election flags. Clients without a
// configuration (fakes in tests) stay unfenced.
func fencedClients(opts Options, clients controller.Clients) (*writeFence, controller.Clients, error) {
	if clients.Config == nil {
		return nil, clients, nil
	}
	window := fenceWindow(opts.LeaseDuration, opts.RenewDeadline)
	if window <= 0 {
		return nil, clients, fmt.Errorf("--leader-election-lease-duration (%s) and --leader-election-renew-deadline (%s) must be at least 1s: the Lease records whole seconds", opts.LeaseDuration, opts.RenewDeadline)
	}
	fence := newWriteFence(window, time.Now)
	fenced, err := NewClients(fence.wrap(clients.Config))
	if err != nil {
		return nil, clients, err
	}
	return fence, fenced, nil
}

func newLeaseLock(opts Options, clients controller.Clients, recorder record.EventRecorder) (*resourcelock.LeaseLock, error) {
	namespace, _ := leaderElectionNamespace(opts)
	hostname, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, opts.LeaderElectionID,
		clients.Kube.CoreV1(), clients.Kube.CoordinationV1(), resourcelock.ResourceLockConfig{
			Identity:      hostname + "_" + uuid.NewString(),
			EventRecorder: recorder,
		})
	if err != nil {
		return nil, err
	}
	return lock.(*resourcelock.LeaseLock), nil
}
