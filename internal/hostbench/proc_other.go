//go:build !linux

package hostbench

import (
	"errors"
	"os"
	"time"
)

// Off Linux there is no VmHWM: the RSS check reports 0 and fails.
func peakRSS() int64 { return 0 }

func resetPeakRSS() {}

var processStart = time.Now()

// threadCPU falls back to wall time: without RUSAGE_THREAD the CPU-time
// figures are wall-time figures.
func threadCPU() float64 { return time.Since(processStart).Seconds() }

func openDirect(path string) (*os.File, error) {
	return nil, errors.New("O_DIRECT is only used on linux")
}

func alignedBuffer(n int) ([]byte, func(), error) { return make([]byte, n), func() {}, nil }
