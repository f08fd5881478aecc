package ingest

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize parses a byte count with an optional unit: B, KiB/K, MiB/M,
// GiB/G, TiB/T (powers of 1024) or kB/KB, MB, GB, TB (powers of 1000),
// case-insensitive for the binary forms: "512MiB", "64k", "4096".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9') {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("size %q: want a number with an optional unit such as 64KiB or 512MiB", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	unit := strings.TrimSpace(t[i:])
	var mul int64
	switch strings.ToLower(unit) {
	case "", "b":
		mul = 1
	case "k", "kib":
		mul = 1 << 10
	case "m", "mib":
		mul = 1 << 20
	case "g", "gib":
		mul = 1 << 30
	case "t", "tib":
		mul = 1 << 40
	case "kb":
		mul = 1e3
	case "mb":
		mul = 1e6
	case "gb":
		mul = 1e9
	case "tb":
		mul = 1e12
	default:
		return 0, fmt.Errorf("size %q: unknown unit %q (want B, KiB, MiB, GiB, TiB, or kB, MB, GB, TB)", s, unit)
	}
	if n > (1<<63-1)/mul {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n * mul, nil
}
