package main

import (
	"os"
	"runtime"
	"testing"
)

// TestResidentHeapSparesFirstTouches checks what the bench's timed phases rely on: after
// residentHeap and a collection between paths, what a phase allocates (here 1 MiB buffers, as
// responses are) lands on pages already touched, so the bench's process takes almost no minor
// page faults for it; without the reserve every 4 KiB page would take one (256 a MiB).
func TestResidentHeapSparesFirstTouches(t *testing.T) {
	const reserve, phase = 256 << 20, 128 << 20
	defer residentHeap(reserve)()
	for path := range 3 { // paths one after another, each collecting first
		holdGC()
		f0 := minorFaults(os.Getpid())
		var keep [][]byte // GC off: a phase's buffers are garbage that nothing collects
		for range phase >> 20 {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		faults := minorFaults(os.Getpid()) - f0
		runtime.KeepAlive(keep)
		if pages := int64(phase / 4096); faults > pages/20 {
			t.Fatalf("path %d: %d minor faults for %d pages allocated from the reserved heap", path, faults, pages)
		}
		t.Logf("path %d: %d minor faults for %d MiB", path, faults, phase>>20)
	}
}
