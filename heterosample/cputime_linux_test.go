//go:build linux

package heterosample

import "golang.org/x/sys/unix"

// processCPU is the process's CPU time (user + system) in nanoseconds: an
// epoch runs on several goroutines (readers, devices), and on a shared
// machine its CPU time is steadier than its wall time.
func processCPU() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
