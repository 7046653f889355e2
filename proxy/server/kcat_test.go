package server

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// netnsForKcat creates a network namespace whose own hosts file maps the test host names
// to loopback, so kcat resolves them with nothing set up by hand. It skips the test when
// kcat, ip or namespaces are unavailable.
func netnsForKcat(t *testing.T, hosts []string) (name string) {
	t.Helper()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat not installed (Debian package kcat): skipping the kcat test")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip not installed (Debian package iproute2): skipping the kcat test")
	}
	name = fmt.Sprintf("kafkalink-test-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace (needs root or CAP_SYS_ADMIN): %v: %s", err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", name).Run()
		_ = os.RemoveAll(filepath.Join("/etc/netns", name))
	})
	if out, err := exec.Command("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v: %s", err, out)
	}
	var b strings.Builder
	for _, h := range hosts {
		fmt.Fprintf(&b, "127.0.0.1 %s\n", h)
	}
	if err := os.MkdirAll(filepath.Join("/etc/netns", name), 0o755); err != nil {
		t.Skipf("cannot write /etc/netns: %v", err)
	}
	if err := os.WriteFile(filepath.Join("/etc/netns", name, "hosts"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// listenInNetns binds listeners inside the named network namespace. The socket keeps its
// namespace; the locked thread that entered it exits with its goroutine, so no other
// goroutine ever runs in that namespace. Upstream dials from the proxy stay in the test's
// namespace, where kfake listens.
func listenInNetns(name string) func(network, address string) (net.Listener, error) {
	return func(network, address string) (net.Listener, error) {
		type result struct {
			ln  net.Listener
			err error
		}
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
			f, err := os.Open(filepath.Join("/var/run/netns", name))
			if err != nil {
				ch <- result{err: err}
				return
			}
			defer f.Close()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				ch <- result{err: err}
				return
			}
			ln, err := net.Listen(network, address)
			ch <- result{ln, err}
		}()
		r := <-ch
		return r.ln, r.err
	}
}

// TestKcatThroughProxy lists metadata, produces and consumes with Debian's kcat through
// the proxy, with real SNI: kcat runs in a network namespace whose hosts file maps the
// virtual cluster's host names to loopback, where the proxy listens.
func TestKcatThroughProxy(t *testing.T) {
	ns := netnsForKcat(t, []string{"a-bootstrap.kafka.test", "a-broker-0.kafka.test", "a-broker-1.kafka.test", "a-broker-2.kafka.test"})
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	dir := t.TempDir()
	pki := newPKI(t)
	writeAtomic(t, dir+"/ca.crt", pki.pem)
	kc := fakeKafka(t, nil, "")
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}}}
	p := startProxyWith(t, Options{ConfigPath: writeConfig(t, dir, pc), Listen: listenInNetns(ns)})

	kcat := func(stdin string, args ...string) string {
		t.Helper()
		base := []string{"netns", "exec", ns, "kcat", "-b", fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port),
			"-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + dir + "/ca.crt", "-m", "20"}
		cmd := exec.CommandContext(ctx, "ip", append(base, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("kcat %v: %v\nstdout: %s\nstderr: %s\nproxy:\n%s", args, err, out.String(), errOut.String(), p.logs)
		}
		return out.String()
	}
	var in strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&in, "message-%d\n", i)
	}
	kcat(in.String(), "-P", "-t", "kcat-topic")
	md := kcat("", "-L", "-t", "kcat-topic")
	for i := 0; i < 3; i++ {
		if want := fmt.Sprintf("a-broker-%d.kafka.test:%d", i, pc.Port); !strings.Contains(md, want) {
			t.Errorf("metadata does not list %s:\n%s", want, md)
		}
	}
	got := kcat("", "-C", "-t", "kcat-topic", "-o", "beginning", "-c", "20", "-e")
	for i := 0; i < 20; i++ {
		if !strings.Contains(got, fmt.Sprintf("message-%d\n", i)) {
			t.Errorf("message-%d not consumed; got:\n%s", i, got)
		}
	}
}
