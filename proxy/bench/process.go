package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	cmd := exec.Command(bin, "--config", cfgPath)
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

// processCPU is the user and system CPU time process pid has used, from /proc/<pid>/stat
// (zero where there is none).
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields count from after it.
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest) // state ppid ... utime (12) stime (13), from 0
	if len(f) < 14 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}
