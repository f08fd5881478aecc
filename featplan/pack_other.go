//go:build !linux

package featplan

import "os"

// fallocate sets f's size: a writer past the end needs no more, and the
// preallocation that saves ext4's one-at-a-time O_DIRECT appends is
// Linux's.
func fallocate(f *os.File, size int64) error { return f.Truncate(size) }

// openDirectRW opens path for reading and writing, buffered: no O_DIRECT
// outside Linux.
func openDirectRW(path string) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	return f, false, err
}
