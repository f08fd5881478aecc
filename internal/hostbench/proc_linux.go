//go:build linux

package hostbench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// peakRSS returns the process's peak resident set (VmHWM) in bytes, 0 if
// /proc cannot tell.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var kb int64
		if n, _ := fmt.Sscanf(sc.Text(), "VmHWM: %d kB", &kb); n == 1 {
			return kb << 10
		}
	}
	return 0
}

// resetPeakRSS restarts the peak at the current RSS (Linux >= 4.0), so
// that each fanout set's peak is its own.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// threadCPU is the calling OS thread's CPU time (user + system) in
// seconds; the caller locks itself to its thread. CLOCK_THREAD_CPUTIME_ID
// is precise to the nanosecond, where getrusage's figures can stay at zero
// over a short pass (and a rate over zero seconds is +Inf, which JSON
// cannot carry).
func threadCPU() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return float64(ts.Nano()) / 1e9
}

// openDirect opens path read-only with O_DIRECT, as the streaming sampler
// reads its chunks.
func openDirect(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// alignedBuffer returns n bytes aligned for O_DIRECT (an anonymous
// mapping is page-aligned) and the function that frees them.
func alignedBuffer(n int) ([]byte, func(), error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, nil, fmt.Errorf("read buffer of %d bytes: %w", n, err)
	}
	return b, func() { _ = unix.Munmap(b) }, nil
}
