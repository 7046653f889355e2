package e2e_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kafkalink/kafkalink/test/framework"
	"github.com/kafkalink/kafkalink/test/kubelet"
)

// pluginConfig runs kubectl kafkalink config for a connection and a client, as a user would, and
// returns the folder it wrote.
func (e *env) pluginConfig(t *testing.T, ns, connection, client string) string {
	t.Helper()
	bin, err := framework.BuildBinary("./cmd/kubectl-kafkalink", e.work)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), client)
	out, err := exec.Command(bin, "--kubeconfig", e.cp.Kubeconfig, "-n", ns, "config", connection, "--client", client, "--dir", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kafkalink config: %v\n%s", err, out)
	}
	t.Logf("kubectl kafkalink config %s --client %s:\n%s", connection, client, out)
	return dir
}

// franzGoProducerMain is a program of the user's: it takes the options of the kafkaclient
// package kubectl kafkalink wrote, adds nothing, and produces one record.
const franzGoProducerMain = `package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kafkalink.test/pluginclient/kafkaclient"
)

func main() {
	opts, err := kafkaclient.Options()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := &kgo.Record{Topic: os.Args[1], Value: []byte(os.Args[2])}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		fmt.Fprintln(os.Stderr, "produce:", err)
		os.Exit(1)
	}
	fmt.Printf("produced to partition %d at offset %d\n", r.Partition, r.Offset)
}
`

// buildFranzGoProducer builds franzGoProducerMain in a module of its own, with the kafkaclient
// package from dir, as a user's application would be built. The module's go.sum is this
// repository's, so that the build needs no download.
func buildFranzGoProducer(t *testing.T, dir string) string {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	src, err := os.ReadFile(filepath.Join(dir, "kafkaclient.go"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	version := franzGoVersion(t, root)
	files := map[string][]byte{
		"go.mod":                     []byte("module kafkalink.test/pluginclient\n\ngo 1.26.0\n\nrequire github.com/twmb/franz-go " + version + "\n"),
		"go.sum":                     sum,
		"main.go":                    []byte(franzGoProducerMain),
		"kafkaclient/kafkaclient.go": src,
	}
	for name, data := range files {
		path := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(mod, "producer")
	cmd := exec.Command("go", "build", "-mod=mod", "-o", bin, ".")
	cmd.Dir = mod
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building a franz-go program on kubectl kafkalink's kafkaclient.go: %v\n%s\n%s", err, out, src)
	}
	return bin
}

// franzGoVersion is the franz-go version this repository requires.
func franzGoVersion(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/twmb/franz-go" {
			return f[1]
		}
	}
	t.Fatal("go.mod requires no github.com/twmb/franz-go")
	return ""
}

// runWithHosts runs a program under a private /etc/hosts that maps hosts to loopback, as cluster
// DNS leads a pod to the proxy's Services.
func runWithHosts(t *testing.T, hosts []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hostsFile := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hostsFile, kubelet.HostsFile("", []corev1.HostAlias{{IP: "127.0.0.1", Hostnames: hosts}}), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := kubelet.PrivateHostsCommand(ctx, hostsFile, name, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\nstdout: %s\nstderr: %s", name, args, err, out.String(), errOut.String())
	}
	return out.String()
}
