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
	// Work until CPU says 100 ms went by, not for a wall time: on a loaded machine 200 ms of wall
	// time may hold little CPU. A CPU that never grows ends the loop at its bound and fails.
	before, userBefore := CPU(os.Getpid()), UserCPU(os.Getpid())
	x := 0
	for start := time.Now(); CPU(os.Getpid())-before < 100*time.Millisecond && time.Since(start) < 30*time.Second; {
		for range 1 << 22 { // a few ms: the reads of /proc, in the kernel, are a small part
			x++
		}
	}
	if got := CPU(os.Getpid()) - before; got < 100*time.Millisecond {
		t.Errorf("CPU grew by %s over 30 s of work (x=%d)", got, x)
	}
	// The loop is user space but for its reads of /proc: at least half of it, at 10 ms ticks.
	if got := UserCPU(os.Getpid()) - userBefore; got < 50*time.Millisecond {
		t.Errorf("user CPU grew by %s over 100 ms of CPU in a loop", got)
	}
	if CPU(-1) != 0 || UserCPU(-1) != 0 {
		t.Error("a missing process has CPU time")
	}
	// Both readings agree within the ticks' resolution and a little scheduling.
	sched, ok := schedCPU(os.Getpid())
	if ticks := tickCPU(os.Getpid()); ok && (sched < ticks-50*time.Millisecond || sched > ticks+50*time.Millisecond) {
		t.Errorf("threads' schedstat says %s, stat's ticks %s", sched, ticks)
	}
}

// TestRSSGrowsWithTouchedMemory touches 64 MiB and checks RSS sees it.
func TestRSSGrowsWithTouchedMemory(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	before := RSS(os.Getpid())
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = 1
	}
	if got := RSS(os.Getpid()) - before; got < 48<<20 {
		t.Errorf("RSS grew by %d bytes after touching %d", got, len(b))
	}
	if RSS(-1) != 0 {
		t.Error("a missing process has resident memory")
	}
	b[len(b)-1] = 2 // keeps b alive until RSS was read
}

// TestFaultsCountFirstTouches touches 64 MiB of fresh memory and checks Faults sees at least a
// fault per 2 MiB (a huge page, should the kernel back the memory with them).
func TestFaultsCountFirstTouches(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	before, _ := Faults(os.Getpid())
	b := make([]byte, 64<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	if after, _ := Faults(os.Getpid()); after-before < 32 {
		t.Errorf("%d minor faults after touching %d fresh bytes", after-before, len(b))
	}
	if minor, major := Faults(-1); minor != 0 || major != 0 {
		t.Error("a missing process has page faults")
	}
	b[len(b)-1] = 2 // keeps b alive until Faults was read
}
