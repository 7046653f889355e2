package gctune

import (
	"io/fs"
	"runtime/debug"
	"testing"
)

func TestCgroupLimit(t *testing.T) {
	for name, tc := range map[string]struct {
		files map[string]string
		want  int64
	}{
		"cgroup v2 with a 512Mi limit": {files: map[string]string{"/sys/fs/cgroup/memory.max": "536870912\n"}, want: 536870912},
		"cgroup v2 without a limit":    {files: map[string]string{"/sys/fs/cgroup/memory.max": "max\n"}},
		"cgroup v1 with a 256Mi limit": {files: map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n"}, want: 268435456},
		"cgroup v1 without a limit":    {files: map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}},
		"v2 wins over v1": {files: map[string]string{
			"/sys/fs/cgroup/memory.max": "1000000", "/sys/fs/cgroup/memory/memory.limit_in_bytes": "2000000"}, want: 1000000},
		"no cgroup files":     {},
		"garbage in the file": {files: map[string]string{"/sys/fs/cgroup/memory.max": "lots"}},
		"zero is no limit":    {files: map[string]string{"/sys/fs/cgroup/memory.max": "0"}},
	} {
		t.Run(name, func(t *testing.T) {
			read := func(path string) ([]byte, error) {
				if s, ok := tc.files[path]; ok {
					return []byte(s), nil
				}
				return nil, fs.ErrNotExist
			}
			if got := CgroupLimit(read); got != tc.want {
				t.Errorf("CgroupLimit = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSoftLimit(t *testing.T) {
	if got, want := SoftLimit(512<<20), int64(483183820); got != want {
		t.Errorf("SoftLimit(512Mi) = %d, want %d (90%%)", got, want)
	}
	if got := SoftLimit(0); got != 0 {
		t.Errorf("SoftLimit(0) = %d, want 0 (no limit)", got)
	}
}

func TestSetLeavesGOMEMLIMITAlone(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "100MiB")
	if got := SetMemoryLimit(); got != 0 {
		t.Errorf("SetMemoryLimit with GOMEMLIMIT in the environment = %d, want 0 (unchanged)", got)
	}
}

func TestApplyLeavesGOGCAlone(t *testing.T) {
	t.Setenv("GOGC", "80")
	before := debug.SetGCPercent(80)
	defer debug.SetGCPercent(before)
	if got, _ := Apply(); got != 80 {
		t.Errorf("Apply with GOGC=80 in the environment set GOGC %d, want 80", got)
	}
}

func TestApplySetsGCPercent(t *testing.T) {
	t.Setenv("GOGC", "")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	if got, _ := Apply(); got != GCPercent {
		t.Errorf("Apply set GOGC %d, want %d", got, GCPercent)
	}
}
