// Package apis_test checks the CRDs against a real API server: the seeds' examples are accepted
// as written, each "must" of the seeds is refused with a message naming the field, and every
// scenario KafkaGateway converts to a Gateway that Gateway API's own CRDs accept.
package apis_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/kafkalink/kafkalink/test/framework"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping control-plane tests in -short mode")
		os.Exit(0)
	}
	var err error
	cp, err = framework.Start(context.Background(), framework.Options{
		WithoutControllerManager: true, // admission only: nothing here needs controllers
		Log:                      func(f string, a ...any) { fmt.Printf(f+"\n", a...) },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		os.Exit(1)
	}
	code := m.Run()
	cp.Stop()
	os.Exit(code)
}
