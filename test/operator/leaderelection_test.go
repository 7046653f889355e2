package operator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kafkalink/kafkalink/test/framework"
)

// TestMissingLeaderElectionNamespace runs the operator out of cluster (an admin kubeconfig) with
// leader election in a namespace that does not exist: it exits at once with one line saying what
// to do, instead of logging the same Lease error every retry period.
func TestMissingLeaderElectionNamespace(t *testing.T) {
	cp, binary := startWithOperatorBinary(t, framework.Options{StrimziVersion: "none", WithoutGatewayAPI: true})
	p, err := framework.StartProcess(t.TempDir(), "operator", binary,
		"--kubeconfig="+cp.Kubeconfig, "--health-address="+framework.FreeAddress(), "--metrics-address=",
		"--leader-elect=true", "--leader-election-namespace=no-such-namespace")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(5 * time.Second) })
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("the operator did not exit:\n%s", p.Log())
	}
	if p.Err() == nil {
		t.Fatalf("the operator exited with status 0:\n%s", p.Log())
	}
	log := p.Log()
	want := `leader election namespace "no-such-namespace" (from --leader-election-namespace) does not exist: create it`
	if n := strings.Count(log, want); n != 1 {
		t.Errorf("the log says %d times %q:\n%s", n, want, log)
	}
	for _, hint := range []string{"--leader-election-namespace=", "--leader-elect=false"} {
		if !strings.Contains(log, hint) {
			t.Errorf("the error does not mention %s:\n%s", hint, log)
		}
	}
}
