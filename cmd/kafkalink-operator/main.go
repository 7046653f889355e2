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

	"github.com/kafkalink/kafkalink/pkg/logging"
	"github.com/kafkalink/kafkalink/pkg/operator"
	"github.com/kafkalink/kafkalink/pkg/version"
)

func main() {
	var opts operator.Options
	opts.AddFlags(flag.CommandLine)
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
	klog.FromContext(ctx).Info("Starting", "version", version.Version, "revision", version.Revision, "proxyImage", opts.ProxyImage)

	cfg, err := opts.RestConfig()
	if err == nil {
		var clients operator.Clients
		if clients, err = operator.NewClients(cfg); err == nil {
			err = operator.Run(ctx, opts, clients, controllers...)
		}
	}
	klog.Flush()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafkalink-operator:", err)
		os.Exit(1)
	}
}
