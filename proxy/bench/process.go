package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// proxyProcess is kafkalink-proxy running as a process of its own, built from
// ./cmd/kafkalink-proxy: its CPU time, resident memory, heap and goroutines are its own, not
// the benchmark's clients' or kfake's.
type proxyProcess struct {
	cmd        *exec.Cmd
	metricsURL string
	base       map[string]float64 // the metrics once it answered
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
// management listener serves metrics on mgmtPort, and waits until the metrics answer.
func startProxy(dir, cfgPath string, mgmtPort int) (*proxyProcess, error) {
	bin, err := buildProxy(dir)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"--config", cfgPath}, proxyArgs...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proxyProcess{cmd: cmd, metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", mgmtPort)}
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

func (p *proxyProcess) pid() int { return p.cmd.Process.Pid }

// proxyArgs are more flags for the proxy processes (BENCH_PROXY_ARGS=--profiling to profile one).
var proxyArgs = strings.Fields(os.Getenv("BENCH_PROXY_ARGS"))
