// Package gateway_test runs the gateway controller against a real API server, etcd and
// kube-controller-manager with the real Gateway API and OpenShift Route CRDs. The tests run the
// kafkalink-operator binary under exactly the RBAC in manifests/rbac; the test plays the parts
// nobody else plays here (kubelet readiness, the load balancer, a Gateway API implementation).
package gateway_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	"github.com/kafkalink/kafkalink/test/framework"
)

// waitLimit bounds every wait; it guards against hangs and is not a performance assertion.
const waitLimit = 90 * time.Second

var (
	cp          *framework.ControlPlane
	kube        kubernetes.Interface
	kl          kafkalinkclient.Interface
	dyn         dynamic.Interface
	binary      string
	kubeconfig  string
	operatorCfg *rest.Config
	workDir     string
)

var (
	gvrRoute    = schema.GroupVersionResource{Group: "route.openshift.io", Version: "v1", Resource: "routes"}
	gvrTLSRoute = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "tlsroutes"}
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping control-plane tests in -short mode")
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	routeCRD, err := framework.OpenShiftRouteCRDFile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "OpenShift Route CRD:", err)
		return 1
	}
	cp, err = framework.Start(ctx, framework.Options{ExtraCRDFiles: []string{routeCRD}, Log: func(f string, a ...any) { fmt.Printf(f+"\n", a...) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer cp.Stop()
	if kubeconfig, operatorCfg, err = cp.InstallOperatorRBAC(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kube = cp.Client
	if kl, err = kafkalinkclient.NewForConfig(cp.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if dyn, err = dynamic.NewForConfig(cp.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if workDir, err = os.MkdirTemp("", "kafkalink-gateway-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workDir)
	if binary, err = framework.BuildBinary("./cmd/kafkalink-operator", workDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if op, err = startOperator("operator"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = op.p.Stop(10 * time.Second) }()
	return m.Run()
}

// op is the operator the tests share; TestRestartMakesNoWrites replaces it.
var op *operator

// operator is a running kafkalink-operator binary.
type operator struct {
	p *framework.Process
}

func startOperator(name string) (*operator, error) {
	health, metrics := framework.FreeAddress(), framework.FreeAddress()
	p, err := framework.StartProcess(workDir, name, binary,
		"--kubeconfig="+kubeconfig, "--health-address="+health, "--metrics-address="+metrics,
		"--leader-elect=false", "--tlsroute-attach-timeout=4s", "--v=2")
	if err != nil {
		return nil, err
	}
	if err := framework.WaitHTTP200(context.Background(), "http://"+health+"/readyz", waitLimit); err != nil {
		_ = p.Stop(5 * time.Second)
		return nil, fmt.Errorf("%w\n%s", err, p.Log())
	}
	return &operator{p: p}, nil
}

func (o *operator) tail() string {
	if o == nil {
		return ""
	}
	log := o.p.Log()
	if len(log) > 6000 {
		log = log[len(log)-6000:]
	}
	return log
}

// poll waits for cond, failing the test with the operator's log when it does not hold in time.
func poll(t *testing.T, op *operator, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitLimit, true, func(context.Context) (bool, error) {
		ok, err := cond()
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %v)\noperator log tail:\n%s", what, err, last, op.tail())
	}
}

func namespace(t *testing.T, name string) {
	t.Helper()
	_, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// apply runs kubectl apply with the given YAML, as a user would.
func apply(t testing.TB, yaml string) {
	t.Helper()
	f, err := os.CreateTemp(workDir, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(framework.WithTestKeyPair(yaml)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := cp.Kubectl("apply", "-f", f.Name()); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := cp.Kubectl(args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return out
}

func gatewayCondition(ns, name, condType string) (*metav1.Condition, *kroxyliciousv1alpha1.KafkaGateway, error) {
	gw, err := kl.KroxyliciousV1alpha1().KafkaGateways(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	return meta.FindStatusCondition(gw.Status.Conditions, condType), gw, nil
}

func waitGatewayCondition(t *testing.T, op *operator, ns, name, condType string, status metav1.ConditionStatus, reason string) *kroxyliciousv1alpha1.KafkaGateway {
	t.Helper()
	var gw *kroxyliciousv1alpha1.KafkaGateway
	poll(t, op, fmt.Sprintf("gateway %s/%s %s=%s (%s)", ns, name, condType, status, reason), func() (bool, error) {
		c, g, err := gatewayCondition(ns, name, condType)
		if err != nil || c == nil {
			return false, err
		}
		gw = g
		if c.Status != status || (reason != "" && c.Reason != reason) {
			return false, fmt.Errorf("%s=%s %s: %s", condType, c.Status, c.Reason, c.Message)
		}
		return true, nil
	})
	return gw
}

func routeParentCondition(ns, route, condType string) (*metav1.Condition, error) {
	r, err := kl.KroxyliciousV1alpha1().KafkaRoutes(ns).Get(context.Background(), route, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	for _, p := range r.Status.Parents {
		if c := meta.FindStatusCondition(p.Conditions, condType); c != nil {
			return c, nil
		}
	}
	return nil, nil
}

func waitRouteCondition(t *testing.T, op *operator, ns, route, condType string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	poll(t, op, fmt.Sprintf("route %s/%s %s=%s (%s)", ns, route, condType, status, reason), func() (bool, error) {
		c, err := routeParentCondition(ns, route, condType)
		if err != nil || c == nil {
			return false, err
		}
		if c.Status != status || (reason != "" && c.Reason != reason) {
			return false, fmt.Errorf("%s=%s %s: %s", condType, c.Status, c.Reason, c.Message)
		}
		return true, nil
	})
}

// services returns the Services the gateway generated, as "name type ports".
func services(ns, gateway string) (map[string]string, error) {
	list, err := kube.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "kafkalink.io/gateway=" + gateway})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range list.Items {
		var ports []string
		for _, p := range s.Spec.Ports {
			ports = append(ports, fmt.Sprintf("%d->%s", p.Port, p.TargetPort.String()))
		}
		out[s.Name] = string(s.Spec.Type) + " " + strings.Join(ports, ",")
	}
	return out, nil
}

func waitServices(t *testing.T, op *operator, ns, gateway string, want map[string]string) {
	t.Helper()
	poll(t, op, fmt.Sprintf("Services of %s/%s to be %v", ns, gateway, want), func() (bool, error) {
		got, err := services(ns, gateway)
		if err != nil {
			return false, err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return false, fmt.Errorf("got %v", got)
		}
		return true, nil
	})
}

// markPodsReady plays the kubelet: the proxy pods the ReplicaSet controller created are reported
// running and ready, so the Deployment controller reports the Deployment available.
func markPodsReady(t *testing.T, op *operator, ns, gateway string) {
	t.Helper()
	ctx := context.Background()
	poll(t, op, "proxy pods to be created and marked ready", func() (bool, error) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "kafkalink.io/gateway=" + gateway})
		if err != nil || len(pods.Items) == 0 {
			return false, err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Status.Phase == corev1.PodRunning {
				continue
			}
			now := metav1.Now()
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			}
			if _, err := kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// assignAddress plays the cloud load balancer.
func assignAddress(t *testing.T, op *operator, ns, name, ip string) {
	t.Helper()
	poll(t, op, "LoadBalancer Service "+name+" to get an address", func() (bool, error) {
		svc, err := kube.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		_, err = kube.CoreV1().Services(ns).UpdateStatus(context.Background(), svc, metav1.UpdateOptions{})
		return err == nil, err
	})
}

// writesSince returns the operator's write requests after the first skip ones.
func writesSince(t *testing.T, skip int) []framework.AuditEvent {
	t.Helper()
	events, err := cp.Writes(framework.OperatorUser)
	if err != nil {
		t.Fatal(err)
	}
	if skip > len(events) {
		return nil
	}
	return events[skip:]
}
