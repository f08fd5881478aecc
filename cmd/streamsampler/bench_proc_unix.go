//go:build unix

package main

import (
	"runtime"
	"syscall"
)

// processCPU is the process's CPU time so far (user + system, every
// thread), in seconds: on a machine shared with other work it moves far
// less than the wall time.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// procPeakRSS is the process's peak resident set so far, in bytes
// (getrusage's ru_maxrss: KiB on Linux, bytes on Darwin).
func procPeakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) << 10
}
