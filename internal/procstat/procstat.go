// Package procstat reads what Linux reports about a process in /proc, for benchmarks that
// give each process its share of the machine.
package procstat

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPU is the CPU time process pid has used; zero where there is no such process or no /proc.
// It sums its threads' time on the CPU in nanoseconds (/proc/<pid>/task/*/schedstat), because
// the benchmarks time phases of a few hundred milliseconds, where the 10 ms ticks of
// /proc/<pid>/stat are too coarse. Threads that have exited no longer count: Go processes keep
// theirs. Without schedstat (a kernel built without it), the ticks are used.
func CPU(pid int) time.Duration {
	if d, ok := schedCPU(pid); ok {
		return d
	}
	return tickCPU(pid)
}

func schedCPU(pid int) (time.Duration, bool) {
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread exited since the listing
		}
		f := strings.Fields(string(b)) // on-CPU ns, waiting ns, time slices
		if len(f) < 1 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		total += time.Duration(ns)
	}
	return total, true
}

// ticksPerSecond is USER_HZ on Linux: the unit of /proc/<pid>/stat's times.
const ticksPerSecond = 100

// tickCPU is the user and system CPU time from /proc/<pid>/stat, at the kernel's 10 ms ticks.
func tickCPU(pid int) time.Duration {
	f := statFields(pid)
	if f == nil {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}

// UserCPU is the part of process pid's CPU time spent in user space, from /proc/<pid>/stat at
// the kernel's 10 ms ticks (schedstat does not split it): for phases of several seconds, where
// what a process adds to the system calls it shares with another is in user space.
func UserCPU(pid int) time.Duration {
	f := statFields(pid)
	if f == nil {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	return time.Duration(utime) * time.Second / ticksPerSecond
}

// Faults is the page faults process pid has taken (/proc/<pid>/stat): minor ones, served
// without I/O (such as the first touch of fresh memory), and major ones; zeros where Linux does
// not say. A benchmark that copies into memory it touches for the first time pays a fault per
// page, which can cost more than the copy.
func Faults(pid int) (minor, major int64) {
	f := statFields(pid)
	if f == nil {
		return 0, 0
	}
	minor, _ = strconv.ParseInt(f[7], 10, 64)
	major, _ = strconv.ParseInt(f[9], 10, 64)
	return minor, major
}

// statFields is /proc/<pid>/stat's fields after the command name: state ppid pgrp session
// tty_nr tpgid flags minflt (index 7) cminflt majflt (9) cmajflt utime (11) stime (12) ...;
// nil when unreadable.
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	// The command name, in parentheses, may hold spaces: fields count from after it.
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return nil
	}
	return f
}

// RSS is the resident memory of process pid (VmRSS in /proc/<pid>/status), in bytes; zero where
// there is no such process or no /proc.
func RSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kib << 10
		}
	}
	return 0
}
