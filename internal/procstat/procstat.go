// Package procstat reads what Linux reports about a process in /proc, for benchmarks that
// give each process its share of the machine.
package procstat

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// CPU is the user and system CPU time process pid has used, from /proc/<pid>/stat, at the
// kernel's 10 ms resolution; zero where there is no such process or no /proc.
func CPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields count from after it.
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest) // state ppid ... utime (index 11) stime (index 12)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}
