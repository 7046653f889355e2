package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kafkalink/kafkalink/test/framework"
)

// The operator (both controllers read Gateway API Gateways: the gateway controller for its
// TLSRoutes' parents, the binding controller for tlsroute listeners' certificates) has one watch
// of them open, from the audit log: one shared informer, not one per controller.
func TestGatewayAPIGatewaysWatchedOnce(t *testing.T) {
	const path = "/apis/gateway.networking.k8s.io/v1/gateways"
	poll(t, op, "one open watch of "+path, func() (bool, error) {
		reads, err := cp.Reads(framework.OperatorUser)
		if err != nil {
			return false, err
		}
		if n := openWatches(reads, path); n != 1 {
			return false, fmt.Errorf("the operator has %d watches of %s open, want 1", n, path)
		}
		return true, nil
	})
}

// openWatches counts the watches of one path (all namespaces) that started and have not ended:
// a watch's events share an audit ID, one at ResponseStarted and one at ResponseComplete. An
// operator stopped earlier (TestRestartMakesNoWrites) has its watches ended once the API server
// sees its connections close.
func openWatches(reads []framework.AuditEvent, path string) int {
	open := map[string]bool{}
	for _, e := range reads {
		p, _, _ := strings.Cut(e.RequestURI, "?")
		if e.Verb != "watch" || p != path {
			continue
		}
		switch e.Stage {
		case "ResponseStarted":
			open[e.AuditID] = true
		case "ResponseComplete", "Panic":
			delete(open, e.AuditID)
		}
	}
	return len(open)
}
