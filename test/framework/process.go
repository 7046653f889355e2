package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FindProcess finds a started binary's process by its path, which is unique to a test's folder,
// waiting up to 5 s for it to appear.
func FindProcess(tb testing.TB, binary string) int {
	tb.Helper()
	for range 100 {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err == nil && strings.HasPrefix(string(cmdline), binary+"\x00") {
				return pid
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("no process runs %s", binary)
	return 0
}

// ProcessMemory reads VmHWM (peak resident set) and VmRSS of a process, in KiB.
func ProcessMemory(tb testing.TB, pid int) (hwm, rss int64) {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmHWM:":
			hwm = v
		case "VmRSS:":
			rss = v
		}
	}
	return hwm, rss
}
