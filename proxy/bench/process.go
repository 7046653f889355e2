package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// proxyProcess is kafkalink-proxy running as a process of its own, built from
// ./cmd/kafkalink-proxy: its CPU time, resident memory, heap and goroutines are its own, not
// the benchmark's clients' or kfake's.
type proxyProcess struct {
	cmd        *exec.Cmd
	metricsURL string
	base       map[string]float64 // the metrics once it answered
	mgmtPort   int
}

// buildProxy builds kafkalink-proxy into dir once per run.
func buildProxy(dir string) (string, error) {
	bin := filepath.Join(dir, "kafkalink-proxy")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/kafkalink-proxy").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building kafkalink-proxy: %w\n%s", err, out)
	}
	return bin, nil
}

// startProxy builds and starts kafkalink-proxy with the configuration at cfgPath, whose
// management listener serves metrics on mgmtPort, and waits until the metrics answer. profiling
// serves /debug/pprof/ there too (as -proxyprofile does).
func startProxy(dir, cfgPath string, mgmtPort int, profiling bool) (*proxyProcess, error) {
	bin, err := buildProxy(dir)
	if err != nil {
		return nil, err
	}
	args := append([]string{"--config", cfgPath}, proxyArgs...)
	if proxyProfile != "" || profiling {
		args = append(args, "--profiling")
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proxyProcess{cmd: cmd, metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", mgmtPort), mgmtPort: mgmtPort}
	if p.base, err = waitMetrics(p.metricsURL); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *proxyProcess) stop() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// proxyProfile is -proxyprofile: where the profiles of the proxy process go.
var proxyProfile string

// profile takes CPU profiles of the proxy, 5 s each, into proxyProfile + phase + .N until stop
// is called, which waits for the one in progress: `go tool pprof` shows or merges them.
func (p *proxyProcess) profile(mgmtPort int, phase string) (stop func()) {
	if proxyProfile == "" {
		return func() {}
	}
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=5", mgmtPort))
			if err != nil {
				fmt.Fprintln(os.Stderr, "proxy profile:", err)
				time.Sleep(time.Second)
				continue
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				err = os.WriteFile(fmt.Sprintf("%s%s.%d", proxyProfile, phase, i), b, 0o644)
			}
			if err != nil || resp.StatusCode != http.StatusOK {
				fmt.Fprintln(os.Stderr, "proxy profile:", resp.Status, err)
				return
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

func (p *proxyProcess) pid() int { return p.cmd.Process.Pid }

// proxyArgs are more flags for the proxy processes (BENCH_PROXY_ARGS=--profiling to profile one).
var proxyArgs = strings.Fields(os.Getenv("BENCH_PROXY_ARGS"))
