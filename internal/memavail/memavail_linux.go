//go:build linux

package memavail

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Available is the memory, in bytes, that the system can give a new
// process without swapping: MemAvailable from /proc/meminfo, else (old
// kernels) free plus buffer memory from sysinfo(2); 0 where neither
// tells. Inside a memory cgroup with a limit (v1 or v2, on the process's
// group or an ancestor), it is at most three quarters of the room the
// tightest limit leaves: the cgroup's page cache (the build's spill files
// and output being written back) is charged to the same limit, and the
// kernel must have room to keep it moving. It is the default of a build's
// memory (ingest.BuildOptions.Memory) and what the feature cache is sized
// from (featplan.AutoCacheBytes).
func Available() int64 {
	avail := systemAvailable()
	if room, ok := cgroupRoom(); ok {
		room = room / 4 * 3
		if avail == 0 || room < avail {
			avail = max(room, 1)
		}
	}
	return avail
}

func systemAvailable() int64 {
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

// CgroupRoom is the least, over the process's memory cgroup and its
// ancestors that have a limit, of limit minus usage: the memory the
// process may still use, page cache included; ok is false where no
// limit applies or the cgroup files cannot be read.
func CgroupRoom() (room int64, ok bool) { return cgroupRoom() }

// cgroupRoom is the least, over the process's memory cgroup and its
// ancestors that have a limit, of limit minus usage; ok is false where no
// limit applies or the cgroup files cannot be read.
func cgroupRoom() (room int64, ok bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	return cgroupRoomFrom(string(b), "/sys/fs/cgroup", func(path string) (int64, bool) {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, false
		}
		v, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		return v, err == nil // "max" (v2: no limit) does not parse
	})
}

// cgroupRoomFrom is cgroupRoom over /proc/self/cgroup's text, with the
// cgroup file system at root and read reading one number from a file.
func cgroupRoomFrom(procCgroup, root string, read func(path string) (int64, bool)) (room int64, ok bool) {
	for _, line := range strings.Split(procCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir, limitFile, usageFile string
		switch {
		case parts[1] == "" && parts[0] == "0": // v2, unified
			dir, limitFile, usageFile = root, "memory.max", "memory.current"
		case slices.Contains(strings.Split(parts[1], ","), "memory"): // v1
			dir, limitFile, usageFile = filepath.Join(root, "memory"), "memory.limit_in_bytes", "memory.usage_in_bytes"
		default:
			continue
		}
		// The group and each ancestor up to the root of the hierarchy.
		for p := filepath.Clean("/" + parts[2]); ; p = filepath.Dir(p) {
			d := filepath.Join(dir, p)
			limit, lok := read(filepath.Join(d, limitFile))
			usage, uok := read(filepath.Join(d, usageFile))
			// v1 writes "no limit" as a huge number (near 2^63, page-aligned).
			if lok && uok && limit < 1<<60 {
				if r := max(limit-usage, 0); !ok || r < room {
					room, ok = r, true
				}
			}
			if p == "/" {
				break
			}
		}
	}
	return room, ok
}
