// Command servicebinding runs the ServiceBinding reconciler of github.com/servicebinding/runtime
// (the Service Binding specification's reference implementation) against the cluster in
// $KUBECONFIG, without its webhooks, so end-to-end tests can check that a ServiceBinding naming a
// KafkaConnection projects kafkalink's binding Secret into a workload.
package main

import (
	"flag"
	"os"
	"time"

	"github.com/vmware-labs/reconciler-runtime/reconcilers"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"

	servicebindingv1beta1 "github.com/servicebinding/runtime/apis/v1beta1"
	"github.com/servicebinding/runtime/controllers"
	"github.com/servicebinding/runtime/lifecycle"
)

func main() {
	probeAddr := flag.String("health-probe-bind-address", "127.0.0.1:0", "Address of the health probes.")
	opts := zap.Options{Development: true}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("servicebinding")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(servicebindingv1beta1.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                server.Options{BindAddress: "0"},
		HealthProbeBindAddress: *probeAddr,
	})
	if err != nil {
		log.Error(err, "unable to start manager")
		os.Exit(1)
	}
	ctx := ctrl.SetupSignalHandler()
	config := reconcilers.NewConfig(mgr, &servicebindingv1beta1.ServiceBinding{}, time.Hour)
	if _, err := controllers.ServiceBindingReconciler(config, lifecycle.ServiceBindingHooks{}).SetupWithManagerYieldingController(ctx, mgr); err != nil {
		log.Error(err, "unable to create the ServiceBinding controller")
		os.Exit(1)
	}
	log.Info("starting the ServiceBinding reconciler")
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}
