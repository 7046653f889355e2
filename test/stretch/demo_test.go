package stretch_test

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
)

// `make demo-stretch` builds this package's test binary and runs TestDemoStretch with -demo
// (until Ctrl-C) or -demo-once (DEMO_ONCE=1: the steps, then exit).
var (
	demo     = flag.Bool("demo", false, "run the stretch demo and wait for Ctrl-C")
	demoOnce = flag.Bool("demo-once", false, "run the stretch demo's steps and exit")
)

// TestDemoStretch shows three control planes (central, member-a, member-b), a stretch Kafka's
// connection copied into both members, and the per-member status while member-b is down and
// after it is back. It runs the same world as TestStretchBindings.
func TestDemoStretch(t *testing.T) {
	if !*demo && !*demoOnce {
		t.Skip("the stretch demo runs with -demo (make demo-stretch) or -demo-once")
	}
	say := func(format string, args ...any) { fmt.Printf("\n==> "+format+"\n", args...) }
	say("starting three control planes (central, member-a, member-b) and the kafkalink operator in the central one")
	w := startWorld(t)
	say("a stretch Kafka (strimzi.io/stretch-mode: enabled) with node pools in member-a (Submariner cluster1) and member-b (cluster2)")
	w.stretchKafka()
	say("a KafkaConnection whose targets are both members")
	w.connection("orders", "member-a", "member-b")
	w.eventually("both copies", limit, func() (bool, string) { return w.bothHave("bootstrap.servers", perCluster) })
	w.eventually("status", limit, func() (bool, string) {
		c := w.get("orders")
		return len(c.Status.Targets) == 2 && c.Status.Targets[0].Synced && c.Status.Targets[1].Synced, ""
	})
	w.show()

	say("stopping member-b's API server, then rotating the user's password")
	w.members["member-b"].StopAPIServer()
	w.setSecret("app-user", map[string][]byte{"password": []byte("rotated")})
	w.eventually("member-b unreachable", limit, func() (bool, string) {
		st := targetStatus(w.get("orders"), "member-b")
		return st != nil && !st.Reachable, ""
	})
	w.show()

	say("starting member-b's API server again: its copy catches up, with no operator restart")
	w.must(w.members["member-b"].StartAPIServer(w.ctx))
	took := w.eventually("member-b caught up", limit, func() (bool, string) { return w.bothHave("password", "rotated") })
	w.eventually("member-b reachable", limit, func() (bool, string) {
		st := targetStatus(w.get("orders"), "member-b")
		return st != nil && st.Reachable && st.Synced, ""
	})
	fmt.Printf("  member-b caught up %s after its API server came back\n", took.Round(time.Millisecond))
	w.show()

	kubectl := filepath.Join(w.central.BinDir, "kubectl")
	fmt.Printf("\nThe three clusters are running. In another terminal:\n\n")
	fmt.Printf("  %s --kubeconfig %s -n apps get kconn -o wide\n", kubectl, w.central.Kubeconfig)
	for _, m := range []string{"member-a", "member-b"} {
		fmt.Printf("  %s --kubeconfig %s -n apps get secret orders    # %s\n", kubectl, w.members[m].Kubeconfig, m)
	}
	if *demoOnce {
		say("stopping (-demo-once)")
		return
	}
	fmt.Print("\nPress Ctrl-C to stop everything.\n")
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)
	<-interrupted
	say("stopping")
}

// show prints the connection as kubectl lists it, each member's status, and each member's copy.
func (w *world) show() {
	out, err := w.central.Kubectl("-n", ns, "get", "kconn", "-o", "wide")
	w.must(err)
	fmt.Print(out)
	c := w.get("orders")
	fmt.Printf("  bootstrapServers: %s\n", c.Status.BootstrapServers)
	if c.Status.Stretch != nil {
		fmt.Printf("  stretch: addressing %s, clusters %v\n", c.Status.Stretch.Addressing, c.Status.Stretch.Clusters)
	}
	for _, st := range c.Status.Targets {
		fmt.Printf("  target %-9s reachable=%-5v synced=%-5v lastSync=%s  %s\n", st.Name, st.Reachable, st.Synced, syncTime(st), st.Message)
	}
	for _, m := range []string{"member-a", "member-b"} {
		out, err := w.members[m].Kubectl("-n", ns, "get", "secret", "orders", "--request-timeout=2s")
		if err != nil {
			out = "(unreachable)\n"
		}
		fmt.Printf("  in %s:\n%s", m, out)
	}
}

func syncTime(st kafkav1beta2.TargetStatus) string {
	if st.LastSyncTime == nil {
		return "-"
	}
	return st.LastSyncTime.UTC().Format(time.RFC3339)
}
