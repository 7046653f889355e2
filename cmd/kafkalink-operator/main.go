// Command kafkalink-operator runs kafkalink's controllers: it turns KafkaConnections into
// Service Binding Secrets and KafkaGateways into running proxies.
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
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/logging"
	"github.com/kafkalink/kafkalink/pkg/operator"
	"github.com/kafkalink/kafkalink/pkg/version"
	filterall "github.com/kafkalink/kafkalink/proxy/filter/all"
)

func main() {
	opts := newOptions(flag.CommandLine)
	logConfig := logging.AddFlags(flag.CommandLine)
	showVersion := flag.Bool("version", false, "Print the version and exit.")
	flag.Parse()
	if err := logging.Apply(logConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *showVersion {
		fmt.Println(version.String("kafkalink-operator"))
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName("kafkalink-operator"))
	gogc, memLimit := gctune.Apply()
	klog.FromContext(ctx).Info("Starting", "version", version.Version, "revision", version.Revision, "proxyImage", opts.ProxyImage,
		"gogc", gogc, "goMemoryLimit", memLimit)

	cfg, err := opts.RestConfig()
	if err == nil {
		var clients controller.Clients
		if clients, err = operator.NewClients(cfg); err == nil {
			err = operator.Run(ctx, *opts, clients, controllers...)
		}
	}
	klog.Flush()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafkalink-operator:", err)
		os.Exit(1)
	}
}

// newOptions binds the operator's options to fs, with the proxy's filters wired in, which only
// this command does (so neither package operator nor the controllers depend on the proxy's
// filters): --proxy-filter-types defaults to the types kafkalink-proxy implements, and their
// configurations are checked as kafkalink-proxy would.
func newOptions(fs *flag.FlagSet) *operator.Options {
	opts := &operator.Options{}
	opts.ProxyFilterTypes = filterall.Types()
	opts.CheckFilter = filterall.Check
	opts.AddFlags(fs)
	return opts
}
