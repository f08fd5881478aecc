//go:build linux

package epoch_test

import "golang.org/x/sys/unix"

// threadCPU is the calling OS thread's CPU time in seconds (the caller
// locks itself to its thread), so that a benchmark on a shared machine can
// report the work of one core rather than its wall time.
func threadCPU() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return float64(ts.Nano()) / 1e9
}
