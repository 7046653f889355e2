package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A kubelet gives every pod its own /etc/hosts (localhost, the pod's own name, then
// spec.hostAliases), and cluster DNS resolves <service>.<namespace>. Neither exists on a test
// machine, so a process that dials a Service by name (the proxy dials its KafkaRoute backend as
// <service>.<namespace>:<port>) resolves nothing. The runner emulates both the way hostAliases
// work: the process runs in a private mount namespace where a hosts file of its own is
// bind-mounted over /etc/hosts. Nothing outside that process sees the change, and no network
// namespace is needed, so the process still reaches every loopback server.

// HostsFile is the content of the /etc/hosts a kubelet writes for a pod: loopback names, the
// pod's hostname on loopback (its pod IP here), then one line per host alias.
func HostsFile(hostname string, aliases []corev1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed hosts file (kafkalink local kubelet runner).\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	if hostname != "" {
		fmt.Fprintf(&b, "127.0.0.1\t%s\n", hostname)
	}
	if len(aliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
	}
	for _, a := range aliases {
		if a.IP == "" || len(a.Hostnames) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}

// privateHostsScript bind-mounts $0 over /etc/hosts and then becomes the program ("$@"), so the
// pid the caller started is the program's pid, and signals to it reach the program.
const privateHostsScript = `mount --bind "$0" /etc/hosts && exec "$@"`

// PrivateHostsCommand returns a command that runs name with args in a private mount namespace
// (util-linux unshare, with private propagation so nothing leaks back) whose /etc/hosts is the
// file hostsPath. The process keeps the caller's network, so loopback servers stay reachable.
// It needs root (CAP_SYS_ADMIN); CheckPrivateHosts says whether this machine allows it.
func PrivateHostsCommand(ctx context.Context, hostsPath, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "unshare", privateHostsArgs(hostsPath, name, args)...)
}

// privateHostsArgs are unshare's arguments that run name with args under hostsPath.
func privateHostsArgs(hostsPath, name string, args []string) []string {
	return append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", privateHostsScript, hostsPath, name}, args...)
}

var (
	privateHostsOnce sync.Once
	privateHostsErr  error
)

// CheckPrivateHosts reports (once per process, then from memory) whether PrivateHostsCommand
// works here: unshare and mount from util-linux, /bin/sh, a regular /etc/hosts, and the
// privilege to make a mount namespace.
func CheckPrivateHosts() error {
	privateHostsOnce.Do(func() { privateHostsErr = checkPrivateHosts() })
	return privateHostsErr
}

func checkPrivateHosts() error {
	for _, tool := range []string{"unshare", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("host aliases need %s from util-linux (apt-get install util-linux mount): %w", tool, err)
		}
	}
	if fi, err := os.Stat("/etc/hosts"); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("host aliases bind-mount a file over /etc/hosts, which is not a regular file here: %w", err)
	}
	f, err := os.CreateTemp("", "kubelet-hosts-check-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	const probe = "kafkalink-hosts-check.invalid"
	if _, err := f.Write(HostsFile("", []corev1.HostAlias{{IP: "127.0.0.1", Hostnames: []string{probe}}})); err != nil {
		f.Close()
		return err
	}
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := PrivateHostsCommand(ctx, f.Name(), "cat", "/etc/hosts").CombinedOutput()
	if err != nil {
		return fmt.Errorf("host aliases need a private mount namespace (root or CAP_SYS_ADMIN), which this machine refuses: %w: %s",
			err, strings.TrimSpace(string(out)))
	}
	if !bytes.Contains(out, []byte(probe)) {
		return errors.New("host aliases: the private /etc/hosts did not show up in the mount namespace")
	}
	return nil
}
