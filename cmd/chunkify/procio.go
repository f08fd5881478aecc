package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/streamsampler/streamsampler/ingest"
)

// procIO is the build process's own I/O as the kernel counts it in
// /proc/self/io, printed with build --json so that a benchmark
// (bench/scale.sh) can compare the bytes a build moved with its input and
// output sizes without polling the process from outside.
type procIO struct {
	ReadBytes           int64 `json:"read_bytes"`            // fetched from storage
	WriteBytes          int64 `json:"write_bytes"`           // dirtied for storage, mapped writes included
	CancelledWriteBytes int64 `json:"cancelled_write_bytes"` // dirtied, then truncated or deleted before writeback
	RChar               int64 `json:"rchar"`                 // passed to read-like system calls, page cache hits included
	WChar               int64 `json:"wchar"`                 // passed to write-like system calls
}

// buildJSON is what build --json prints: the build's summary, its fields
// at the top level as before, plus the process's I/O counters where the
// system has them.
type buildJSON struct {
	*ingest.Summary
	IO *procIO `json:"io,omitempty"`
}

// selfIO reads /proc/self/io; nil where the system has no such file
// (not Linux, /proc not mounted, or a kernel without task I/O accounting).
func selfIO() *procIO {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return nil
	}
	defer f.Close()
	p, err := parseProcIO(f)
	if err != nil {
		return nil
	}
	return p
}

// parseProcIO parses the "name: value" lines of a /proc/PID/io file. Every
// counter procIO carries must be present: a partial reading would pass
// for a build that did no I/O.
func parseProcIO(r io.Reader) (*procIO, error) {
	var p procIO
	fields := map[string]*int64{
		"read_bytes": &p.ReadBytes, "write_bytes": &p.WriteBytes, "cancelled_write_bytes": &p.CancelledWriteBytes,
		"rchar": &p.RChar, "wchar": &p.WChar,
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
			return nil, fmt.Errorf("proc io: %s: %w", name, err)
		}
		*dst = n
		delete(fields, name)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("proc io: %w", err)
	}
	if len(fields) > 0 {
		missing := make([]string, 0, len(fields))
		for k := range fields {
			missing = append(missing, k)
		}
		slices.Sort(missing)
		return nil, fmt.Errorf("proc io: missing %s", strings.Join(missing, ", "))
	}
	return &p, nil
}
