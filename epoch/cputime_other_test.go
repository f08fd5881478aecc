//go:build !linux

package epoch_test

import "time"

var processStart = time.Now()

// threadCPU falls back to wall time off Linux.
func threadCPU() float64 { return time.Since(processStart).Seconds() }
