//go:build !linux

package npy

import "os"

// reserve sizes f to size bytes.
func reserve(f *os.File, size int64) error { return f.Truncate(size) }
