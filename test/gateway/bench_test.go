package gateway_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gateway"
	"github.com/kafkalink/kafkalink/pkg/gatewaycontroller"
	kloperator "github.com/kafkalink/kafkalink/pkg/operator"
	filterall "github.com/kafkalink/kafkalink/proxy/filter/all"
	"github.com/kafkalink/kafkalink/test/framework"
)

// BenchmarkGateway200Routes measures one gateway with 200 in-cluster routes of 10 brokers each
// (2,200 generated Services): the time from creating the routes until every route is attached
// and every Service exists, and then the operator's writes over 10 idle seconds, which must be 0.
// It runs the operator in-process under the operator ServiceAccount's RBAC, with the binary's
// default flags (client-side limit, workers), and prints its figures and the operator's writes
// by kind:
//
//	go test -count=1 -run '^$' -bench BenchmarkGateway200Routes -benchtime=1x ./test/gateway/
//
// GATEWAY_BENCH_ROUTES changes the number of routes (1000 for the next size, issue 30).
// GATEWAY_BENCH_HEADLESS=1 makes the per-host Services headless (KafkaGatewayParameters
// services.inClusterType: Headless), which takes no cluster IPs. GATEWAY_BENCH_APISERVER_PROFILE
// (seconds) profiles kube-apiserver's CPU for that long from the first route on and saves the
// profile under the temporary directory (its path is logged).
func BenchmarkGateway200Routes(b *testing.B) {
	const brokers = 10
	routes := 200
	if v, err := strconv.Atoi(os.Getenv("GATEWAY_BENCH_ROUTES")); err == nil && v > 0 {
		routes = v
	}
	headless := os.Getenv("GATEWAY_BENCH_HEADLESS") == "1"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The shared binary operator would compete with the one measured here.
	if err := op.p.Stop(15 * time.Second); err != nil {
		b.Fatal(err)
	}
	ns := "bench"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var opts kloperator.Options
	opts.ProxyFilterTypes = filterall.Types() // as kafkalink-operator does
	opts.CheckFilter = filterall.Check
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	opts.AddFlags(fs)
	// 1,000 routes of 10 brokers are 11,000 Services, over the default bound on one gateway's
	// generated objects: the bound is raised to fit, as a platform this size would.
	if err := fs.Parse([]string{"--health-address=" + framework.FreeAddress(), "--metrics-address=", "--leader-elect=false",
		"--proxy-image=ghcr.io/kafkalink/kafkalink-proxy:bench", fmt.Sprintf("--max-generated-objects-per-gateway=%d", max(routes*(brokers+1), gateway.DefaultMaxGeneratedObjectsPerGateway))}); err != nil {
		b.Fatal(err)
	}
	cfg := rest.CopyConfig(operatorCfg)
	cfg.QPS, cfg.Burst = float32(opts.KubeAPIQPS), opts.KubeAPIBurst
	clients, err := kloperator.NewClients(cfg)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- kloperator.Run(ctx, opts, clients, gatewaycontroller.New) }()
	defer func() { cancel(); <-done }()

	mustCreate := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	cert, key := framework.TestKeyPair()
	_, err = kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cert"}, Data: map[string][]byte{"tls.crt": cert, "tls.key": key}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "backend"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 9092}}}}, metav1.CreateOptions{})
	mustCreate(err)
	gwSpec := kroxyliciousv1alpha1.KafkaGatewaySpec{Listeners: []kroxyliciousv1alpha1.Listener{{
		Name: "one", Port: 9092, Protocol: kroxyliciousv1alpha1.ProtocolKafkaTLS,
		TLS: &kroxyliciousv1alpha1.ListenerTLSConfig{CertificateRefs: []kroxyliciousv1alpha1.SecretObjectReference{{Name: "cert"}}},
	}}}
	if headless {
		_, err = kl.KroxyliciousV1alpha1().KafkaGatewayParameters(ns).Create(ctx, &kroxyliciousv1alpha1.KafkaGatewayParameters{
			ObjectMeta: metav1.ObjectMeta{Name: "gw"},
			Spec: kroxyliciousv1alpha1.KafkaGatewayParametersSpec{Services: &kroxyliciousv1alpha1.GeneratedServices{
				ServiceSettings: kroxyliciousv1alpha1.ServiceSettings{InClusterType: ptr.To(kroxyliciousv1alpha1.InClusterServiceHeadless)},
			}},
		}, metav1.CreateOptions{})
		mustCreate(err)
		gwSpec.Infrastructure = &kroxyliciousv1alpha1.GatewayInfrastructure{ParametersRef: &kroxyliciousv1alpha1.LocalParametersReference{
			Group: kroxyliciousv1alpha1.GroupName, Kind: "KafkaGatewayParameters", Name: "gw",
		}}
	}
	_, err = kl.KroxyliciousV1alpha1().KafkaGateways(ns).Create(ctx, &kroxyliciousv1alpha1.KafkaGateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"}, Spec: gwSpec}, metav1.CreateOptions{})
	mustCreate(err)
	ids := make([]int32, brokers)
	for i := range ids {
		ids[i] = int32(i)
	}
	writesBefore, _ := cp.Writes(framework.OperatorUser)
	kcmBefore, _ := cp.Writes(controlPlaneUser)
	syncsBefore, cpuBefore := gatewaySyncs(b), controlPlaneCPU()
	if path := os.Getenv("GATEWAY_BENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		mustCreate(err)
		mustCreate(pprof.StartCPUProfile(f))
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	b.ResetTimer()
	start := time.Now()
	waitProfile := apiserverProfile(b)
	for i := range routes {
		_, err := kl.KroxyliciousV1alpha1().KafkaRoutes(ns).Create(ctx, &kroxyliciousv1alpha1.KafkaRoute{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("route-%04d", i)},
			Spec: kroxyliciousv1alpha1.KafkaRouteSpec{ParentRefs: []kroxyliciousv1alpha1.KafkaRouteParentReference{{
				Name:      "gw",
				Brokers:   []kroxyliciousv1alpha1.BrokerTopology{{AdvertisedBrokerIds: ids}},
				Hostnames: []kroxyliciousv1alpha1.PercentHostname{kroxyliciousv1alpha1.PercentHostname(fmt.Sprintf("c%04d-%%.svc.cluster.local", i))},
				Rules:     []kroxyliciousv1alpha1.KafkaRouteRule{{Name: "r", BackendRefs: []kroxyliciousv1alpha1.BackendReference{{Name: "backend", Port: 9092}}}},
			}}},
		}, metav1.CreateOptions{})
		mustCreate(err)
	}
	created := time.Since(start)
	// A hang guard, not a performance bound: 10 minutes, or 2 s a route for the larger sizes
	// (kube-apiserver's CPU per new ClusterIP Service grows with the Services already there, and
	// the host is shared: docs/scale.md, "Gateway").
	limit := max(10*time.Minute, time.Duration(routes)*2*time.Second)
	deadline := time.Now().Add(limit)
	for {
		// The Services are listed only once the gateway counts every route: listing thousands
		// of them five times a second would load the API server the bench measures.
		gw, err := kl.KroxyliciousV1alpha1().KafkaGateways(ns).Get(ctx, "gw", metav1.GetOptions{})
		if err == nil && len(gw.Status.Listeners) == 1 && gw.Status.Listeners[0].AttachedRoutes == int32(routes) {
			svcs, err := kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: "kafkalink.io/gateway=gw"})
			if err == nil && len(svcs.Items) == routes*(brokers+1) {
				break
			}
		}
		if time.Now().After(deadline) {
			svcs, err := kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: "kafkalink.io/gateway=gw"})
			if err == nil {
				cpu := controlPlaneCPU().minus(cpuBefore)
				b.Logf("after %s: %d of %d Services; kube-apiserver %.1f s CPU (%.2f ms per Service), kube-controller-manager %.1f s; load average %s",
					limit, len(svcs.Items), routes*(brokers+1), cpu["kube-apiserver"], 1000*cpu["kube-apiserver"]/float64(max(1, len(svcs.Items))), cpu["kube-controller-manager"], loadAverage())
			}
			b.Fatalf("not settled after %s", limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
	programmed := time.Since(start)
	// Route status is written after the Services; wait for the last route too.
	for {
		r, err := kl.KroxyliciousV1alpha1().KafkaRoutes(ns).Get(ctx, fmt.Sprintf("route-%04d", routes-1), metav1.GetOptions{})
		if err == nil && len(r.Status.Parents) == 1 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the last route has no status after %s", limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
	allStatus := time.Since(start)
	b.StopTimer()
	pprof.StopCPUProfile()
	writesDone, _ := cp.Writes(framework.OperatorUser)
	syncs := gatewaySyncs(b).minus(syncsBefore)
	cpu := controlPlaneCPU().minus(cpuBefore)
	kcmDone, _ := cp.Writes(controlPlaneUser)

	// Steady state: let the last writes land, then count writes over 10 idle seconds.
	settleB(b)
	before, _ := cp.Writes(framework.OperatorUser)
	time.Sleep(10 * time.Second)
	after, _ := cp.Writes(framework.OperatorUser)
	steady := len(after) - len(before)
	// kube-controller-manager's endpoints and EndpointSlice controllers follow the Services at
	// their client's rate limit (--kube-api-qps, 20 writes a second each by default), so they
	// lag: their CPU is read per write of theirs, up to the end of the idle seconds, and with
	// GATEWAY_BENCH_ENDPOINTS=1 the bench waits until every Service has both.
	kcmIdle, _ := cp.Writes(controlPlaneUser)
	cpuIdle := controlPlaneCPU().minus(cpuBefore)
	endpointsDone := time.Duration(0)
	if os.Getenv("GATEWAY_BENCH_ENDPOINTS") == "1" {
		waitEndpoints(ctx, b, ns, routes*(brokers+1), time.Now().Add(max(10*time.Minute, time.Duration(routes*(brokers+1))*100*time.Millisecond)))
		endpointsDone = time.Since(start)
		kcmIdle, _ = cp.Writes(controlPlaneUser)
		cpuIdle = controlPlaneCPU().minus(cpuBefore)
	}

	b.ReportMetric(created.Seconds(), "s-create-routes")
	b.ReportMetric(programmed.Seconds(), "s-until-all-services")
	b.ReportMetric(allStatus.Seconds(), "s-until-all-route-status")
	b.ReportMetric(float64(steady), "steady-writes/10s")
	b.ReportMetric(float64(syncs.count), "gateway-syncs")
	b.ReportMetric(syncs.seconds, "s-in-gateway-syncs")
	b.ReportMetric(1000*cpu["kube-apiserver"]/float64(routes*(brokers+1)), "apiserver-cpu-ms/service")
	form := "ClusterIP"
	if headless {
		form = "headless"
	}
	b.Logf("%s Services; %d routes x %d brokers: routes created in %s; all %d Services and attachedRoutes=%d after %s; all route status after %s; operator writes while idle for 10s: %d",
		form, routes, brokers, created.Round(time.Millisecond), routes*(brokers+1), routes, programmed.Round(time.Millisecond), allStatus.Round(time.Millisecond), steady)
	kinds := framework.WritesByKind(writesDone[len(writesBefore):])
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Printf("  operator writes, %d routes applied: %-40s %6d (%.2f per route)\n", routes, k, kinds[k], float64(kinds[k])/float64(routes))
	}
	fmt.Printf("  gateway syncs until all route status: %d, %.1f s in them\n", syncs.count, syncs.seconds)
	// kube-controller-manager writes as the admin user here (so does the bench's client, but
	// not to these resources): its endpoints and EndpointSlice controllers' work per Service.
	kcm := framework.WritesByKind(kcmDone[len(kcmBefore):])
	for _, k := range []string{"create endpoints", "update endpoints", "create endpointslices", "update endpointslices"} {
		fmt.Printf("  kube-controller-manager writes: %-30s %6d (%.2f per Service)\n", k, kcm[k], float64(kcm[k])/float64(routes*(brokers+1)))
	}
	kcmLater := framework.WritesByKind(kcmIdle[len(kcmBefore):])
	endpointWrites := 0
	for _, k := range []string{"create endpoints", "update endpoints", "create endpointslices", "update endpointslices"} {
		endpointWrites += kcmLater[k]
	}
	if endpointsDone > 0 {
		fmt.Printf("  every Service has its Endpoints and EndpointSlice after %s\n", endpointsDone.Round(time.Millisecond))
	}
	fmt.Printf("  kube-controller-manager until %s: %d endpoint writes, %.1f s CPU (%.2f ms per endpoint write)\n",
		map[bool]string{true: "then", false: "the end of the idle seconds"}[endpointsDone > 0], endpointWrites, cpuIdle["kube-controller-manager"],
		1000*cpuIdle["kube-controller-manager"]/float64(max(1, endpointWrites)))
	waitProfile()
	services := float64(routes * (brokers + 1))
	for _, name := range cpuNames {
		fmt.Printf("  CPU until all route status: %-42s %7.1f s (%.2f ms per Service)\n", name, cpu[name], 1000*cpu[name]/services)
	}
	fmt.Printf("  load average at the end: %s\n", loadAverage())
	if steady != 0 {
		b.Errorf("the operator wrote %d times while nothing changed", steady)
	}
}

// waitEndpoints waits until the namespace holds want EndpointSlices and want Endpoints (one of
// each per generated Service; the backend Service has no selector, so none). The lists are read
// from the API server's watch cache, once a second.
func waitEndpoints(ctx context.Context, b *testing.B, ns string, want int, deadline time.Time) {
	cached := metav1.ListOptions{ResourceVersion: "0"}
	for {
		slices, err1 := kube.DiscoveryV1().EndpointSlices(ns).List(ctx, cached)
		eps, err2 := kube.CoreV1().Endpoints(ns).List(ctx, cached)
		if err1 == nil && err2 == nil && len(slices.Items) >= want && len(eps.Items) >= want {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("kube-controller-manager has not written every Service's endpoints by the deadline")
		}
		time.Sleep(time.Second)
	}
}

// controlPlaneUser is the user kube-controller-manager (and the test's admin client) writes as.
const controlPlaneUser = "kafkalink-admin"

// apiserverProfile profiles kube-apiserver's CPU (its /debug/pprof, on by default) for
// GATEWAY_BENCH_APISERVER_PROFILE seconds from now, in the background, and returns a function
// that waits for it and logs the saved file (read it with go tool pprof -top <kube-apiserver
// binary> <file>). Off by default: the profiler's own cost would be in the CPU figures.
func apiserverProfile(b *testing.B) (wait func()) {
	secs, err := strconv.Atoi(os.Getenv("GATEWAY_BENCH_APISERVER_PROFILE"))
	if err != nil || secs <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		raw, err := cp.Client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(secs)).Timeout(time.Duration(secs)*time.Second + time.Minute).DoRaw(context.Background())
		if err != nil {
			b.Logf("kube-apiserver CPU profile: %v", err)
			return
		}
		file := filepath.Join(os.TempDir(), fmt.Sprintf("gateway-bench-kube-apiserver-%d.pb.gz", time.Now().UnixNano()))
		if err := os.WriteFile(file, raw, 0o600); err != nil {
			b.Logf("kube-apiserver CPU profile: %v", err)
			return
		}
		b.Logf("kube-apiserver CPU profile of the first %d s: %s", secs, file)
	}()
	return func() { <-done }
}

func settleB(b *testing.B) {
	last, _ := cp.Writes(framework.OperatorUser)
	n, quiet := len(last), time.Now()
	for time.Since(quiet) < 3*time.Second {
		time.Sleep(250 * time.Millisecond)
		cur, _ := cp.Writes(framework.OperatorUser)
		if len(cur) != n {
			n, quiet = len(cur), time.Now()
		}
	}
}

// syncTotals are the gateway controller's syncs so far: how many, and the seconds spent in them.
type syncTotals struct {
	count   uint64
	seconds float64
}

func (a syncTotals) minus(b syncTotals) syncTotals {
	return syncTotals{count: a.count - b.count, seconds: a.seconds - b.seconds}
}

// gatewaySyncs reads the gateway work queue's processing histogram from the in-process operator's
// registry.
func gatewaySyncs(b *testing.B) syncTotals {
	families, err := controller.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "workqueue_work_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == gatewaycontroller.QueueName {
					return syncTotals{count: m.GetHistogram().GetSampleCount(), seconds: m.GetHistogram().GetSampleSum()}
				}
			}
		}
	}
	return syncTotals{}
}

// cpuNames are the processes controlPlaneCPU reads: the control plane's, and this test process
// (the operator, in-process, and the bench's own client).
var cpuNames = []string{"kube-apiserver", "etcd", "kube-controller-manager", "operator and bench client (this process)"}

// cpuSeconds are CPU seconds (user and system) by process name.
type cpuSeconds map[string]float64

func (a cpuSeconds) minus(b cpuSeconds) cpuSeconds {
	out := cpuSeconds{}
	for k, v := range a {
		out[k] = v - b[k]
	}
	return out
}

// controlPlaneCPU reads the CPU seconds each process has used so far: CPU time, which the other
// work on a shared host changes much less than wall time.
func controlPlaneCPU() cpuSeconds {
	out := cpuSeconds{}
	for _, name := range cpuNames[:3] {
		out[name] = processCPU(strconv.Itoa(cp.PID(name)))
	}
	out[cpuNames[3]] = processCPU("self")
	return out
}

// processCPU is utime+stime of /proc/<pid>/stat, in seconds (USER_HZ is 100 on Linux).
func processCPU(pid string) float64 {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces: count from after it.
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
