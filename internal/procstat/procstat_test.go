package procstat

import (
	"os"
	"testing"
	"time"
)

// TestCPUGrowsWithWork burns CPU in this process and checks CPU sees it.
func TestCPUGrowsWithWork(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	before := CPU(os.Getpid())
	x := 0
	for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
		x++
	}
	if got := CPU(os.Getpid()) - before; got < 50*time.Millisecond {
		t.Errorf("CPU grew by %s over 200 ms of work (x=%d)", got, x)
	}
	if CPU(-1) != 0 {
		t.Error("a missing process has CPU time")
	}
}
