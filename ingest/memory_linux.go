//go:build linux

package ingest

import (
	"bufio"
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// AvailableMemory is the memory, in bytes, that the system can give a new
// process without swapping: MemAvailable from /proc/meminfo, else (old
// kernels) free plus buffer memory from sysinfo(2); 0 where neither
// tells. It is the default of BuildOptions.Memory.
func AvailableMemory() int64 {
	if f, err := os.Open("/proc/meminfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("MemAvailable:"))
			if !ok {
				continue
			}
			kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
			if err == nil && kb > 0 {
				return kb << 10
			}
		}
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		return int64(si.Freeram+si.Bufferram) * int64(si.Unit)
	}
	return 0
}
