package kubelet_test

import (
	"context"
	"fmt"
	"os"

	"github.com/kafkalink/kafkalink/test/framework"
	"github.com/kafkalink/kafkalink/test/kubelet"
)

// An end-to-end test starts kube-controller-manager without the controllers that own
// Deployment status, builds the proxy, and runs the runner next to the operator. The operator's
// proxy image (whatever it is configured with) maps to the local binary.
func ExampleRunner() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp, err := framework.Start(ctx, framework.Options{Controllers: "*,-deployment,-replicaset"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cp.Stop()
	dir, _ := os.MkdirTemp("", "kubelet-")
	defer os.RemoveAll(dir)
	proxy, err := framework.BuildBinary("./cmd/kafkalink-proxy", dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	runner, err := kubelet.New(kubelet.Options{
		Client:        cp.Client,
		Images:        map[string]string{"ghcr.io/kafkalink/kafkalink-proxy:*": proxy},
		WorkDir:       dir,
		ProcessOutput: os.Stdout, // the demo shows the proxy's log
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error)
	go func() { done <- runner.Run(ctx) }()

	// ... apply a KafkaGateway; wait for its Programmed condition (the runner makes the
	// proxy Deployment Available once /readyz answers); runner.Pod(ns, name) gives the pid,
	// the local folders and the log path.

	cancel()
	<-done // every process has stopped
}
