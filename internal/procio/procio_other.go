//go:build !linux

package procio

// Self reports ErrUnavailable: only Linux keeps /proc/self/io.
func Self() (Counters, error) { return Counters{}, ErrUnavailable }
