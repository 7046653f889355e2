// Command kafkalink-proxy is the Kafka-aware SNI proxy: it loads the configuration written
// by the kafkalink operator and serves every virtual cluster in it. See package
// github.com/kafkalink/kafkalink/proxy/server.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	// The image has no CA bundle: a backend TLS policy without CA refs verifies upstream
	// brokers against this bundle of Mozilla's roots instead of failing on empty system roots.
	_ "golang.org/x/crypto/x509roots/fallback"
	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/pkg/logging"
	"github.com/kafkalink/kafkalink/pkg/version"
	"github.com/kafkalink/kafkalink/proxy/server"
)

// remapFlag collects repeated --remap-path FROM=TO values.
type remapFlag []server.PathRemap

func (r *remapFlag) String() string {
	var out []string
	for _, m := range *r {
		out = append(out, m.From+"="+m.To)
	}
	return strings.Join(out, ",")
}

func (r *remapFlag) Set(v string) error {
	from, to, ok := strings.Cut(v, "=")
	if !ok || from == "" {
		return fmt.Errorf("want FROM=TO, got %q", v)
	}
	*r = append(*r, server.PathRemap{From: from, To: to})
	return nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "scram-credential" {
		if err := scramCredential(os.Args[2:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		return
	}
	logConfig := logging.AddFlags(flag.CommandLine)
	var remaps remapFlag
	configPath := flag.String("config", "/opt/kafkalink/config/proxy-config.yaml", "proxy configuration file (reloaded on change)")
	flag.Var(&remaps, "remap-path", "rewrite a path prefix in the configuration, FROM=TO; repeatable (test runners lay mounted Secrets out elsewhere)")
	poll := flag.Duration("poll-interval", time.Second, "how often the configuration and key material are checked for changes")
	bind := flag.String("bind-address", "", "bind every listener and the management port to this address instead of the configured one (test runners use 127.0.0.1)")
	profiling := flag.Bool("profiling", false, "Also serve Go's /debug/pprof/ profiles on the management port (for measuring; they show the proxy's internals, so keep that port private).")
	showVersion := flag.Bool("version", false, "Print the version and exit.")
	flag.Parse()
	if err := logging.Apply(logConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *showVersion {
		fmt.Println(version.String("kafkalink-proxy"))
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger := klog.Background()
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting kafkalink-proxy", "version", version.Version, "revision", version.Revision)
	srv := server.New(server.Options{ConfigPath: *configPath, Remaps: remaps, PollInterval: *poll, BindAddress: *bind, Profiling: *profiling})
	if err := srv.Run(ctx); err != nil {
		logger.Error(err, "Proxy failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}
