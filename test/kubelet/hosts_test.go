package kubelet_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kafkalink/kafkalink/test/kubelet"
)

func TestHostsFile(t *testing.T) {
	tests := map[string]struct {
		hostname string
		aliases  []corev1.HostAlias
		want     []string
		absent   []string
	}{
		"a pod without aliases gets loopback names and its own name": {
			hostname: "gw-abc-local",
			want:     []string{"127.0.0.1\tlocalhost\n", "::1\tlocalhost ip6-localhost ip6-loopback\n", "127.0.0.1\tgw-abc-local\n"},
			absent:   []string{"HostAliases"},
		},
		"aliases follow, one line per address with every hostname": {
			hostname: "gw",
			aliases: []corev1.HostAlias{
				{IP: "127.0.0.1", Hostnames: []string{"my-cluster-kafka-bootstrap.kafka", "my-cluster-kafka-bootstrap.kafka.svc"}},
				{IP: "10.0.0.1", Hostnames: []string{"other"}},
			},
			want: []string{"# Entries added by HostAliases.\n",
				"127.0.0.1\tmy-cluster-kafka-bootstrap.kafka\tmy-cluster-kafka-bootstrap.kafka.svc\n", "10.0.0.1\tother\n"},
		},
		"an alias without an address or hostnames is left out": {
			aliases: []corev1.HostAlias{{IP: "", Hostnames: []string{"nowhere"}}, {IP: "127.0.0.2"}},
			absent:  []string{"nowhere", "127.0.0.2"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := string(kubelet.HostsFile(tc.hostname, tc.aliases))
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("hosts file lacks %q:\n%s", w, got)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(got, a) {
					t.Errorf("hosts file holds %q:\n%s", a, got)
				}
			}
		})
	}
}

// TestPrivateHostsCommand resolves a name only the private hosts file knows, and checks that the
// machine's own /etc/hosts is untouched afterwards.
func TestPrivateHostsCommand(t *testing.T) {
	if err := kubelet.CheckPrivateHosts(); err != nil {
		t.Skipf("private mount namespaces are not available: %v", err)
	}
	before, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, kubelet.HostsFile("pod", []corev1.HostAlias{
		{IP: "127.0.0.1", Hostnames: []string{"backend.kafka.test-only"}},
	}), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := kubelet.PrivateHostsCommand(ctx, hosts, "getent", "hosts", "backend.kafka.test-only").CombinedOutput()
	if err != nil {
		t.Fatalf("getent in the private namespace: %v: %s", err, out)
	}
	if !strings.HasPrefix(string(out), "127.0.0.1") {
		t.Errorf("getent resolved %q, want 127.0.0.1", out)
	}
	after, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("the machine's /etc/hosts changed:\n%s", after)
	}
}
