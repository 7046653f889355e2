// Command bindingonly is kafkalink-operator with the binding controller alone, so the benchmark
// can tell the binding controller's memory from the other controllers'. Same flags, same RBAC.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/internal/gctune"
	"github.com/kafkalink/kafkalink/pkg/bindingcontroller"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/operator"
	filterall "github.com/kafkalink/kafkalink/proxy/filter/all"
)

func main() {
	var opts operator.Options
	opts.ProxyFilterTypes = filterall.Types() // as kafkalink-operator does
	opts.CheckFilter = filterall.Check
	opts.AddFlags(flag.CommandLine)
	klog.InitFlags(flag.CommandLine)
	flag.Parse()
	gctune.Apply() // as kafkalink-operator does

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName("kafkalink-operator"))

	cfg, err := opts.RestConfig()
	if err == nil {
		var clients controller.Clients
		if clients, err = operator.NewClients(cfg); err == nil {
			err = operator.Run(ctx, opts, clients, bindingcontroller.New)
		}
	}
	klog.Flush()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bindingonly:", err)
		os.Exit(1)
	}
}
