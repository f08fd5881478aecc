// Package procio reads the process's own I/O counters as the kernel keeps
// them in /proc/self/io, so that a build or a benchmark can set the bytes
// it moved against its input and output sizes (the I/O floor) without
// polling the process from outside. chunkify build --json, the build
// summaries of ingest, and streamsampler's walk and hetero benchmarks all
// read them here.
package procio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// ErrUnavailable is returned where the system keeps no such counters (not
// Linux, /proc not mounted, or a kernel without task I/O accounting).
var ErrUnavailable = errors.New("procio: /proc/self/io not available")

// Counters are the counters of /proc/PID/io that the benchmarks use.
type Counters struct {
	ReadBytes           int64 `json:"read_bytes"`            // fetched from storage
	WriteBytes          int64 `json:"write_bytes"`           // dirtied for storage, mapped writes included
	CancelledWriteBytes int64 `json:"cancelled_write_bytes"` // dirtied, then truncated or deleted before writeback
	RChar               int64 `json:"rchar"`                 // passed to read-like system calls, page cache hits included
	WChar               int64 `json:"wchar"`                 // passed to write-like system calls
}

// ReadBytesOr is the read_bytes counter so far, or def where the counters
// are unavailable: the form a summary field that means "unknown" by -1
// wants.
func ReadBytesOr(def int64) int64 {
	c, err := Self()
	if err != nil {
		return def
	}
	return c.ReadBytes
}

// Parse parses the "name: value" lines of a /proc/PID/io file. Every
// counter Counters carries must be present: a partial reading would pass
// for a process that did no I/O.
func Parse(r io.Reader) (Counters, error) {
	var c Counters
	fields := map[string]*int64{
		"read_bytes": &c.ReadBytes, "write_bytes": &c.WriteBytes, "cancelled_write_bytes": &c.CancelledWriteBytes,
		"rchar": &c.RChar, "wchar": &c.WChar,
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		name = strings.TrimSpace(name)
		dst := fields[name]
		if dst == nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return Counters{}, fmt.Errorf("procio: %s: %w", name, err)
		}
		*dst = n
		delete(fields, name)
	}
	if err := sc.Err(); err != nil {
		return Counters{}, fmt.Errorf("procio: %w", err)
	}
	if len(fields) > 0 {
		missing := make([]string, 0, len(fields))
		for k := range fields {
			missing = append(missing, k)
		}
		slices.Sort(missing)
		return Counters{}, fmt.Errorf("procio: missing %s", strings.Join(missing, ", "))
	}
	return c, nil
}
