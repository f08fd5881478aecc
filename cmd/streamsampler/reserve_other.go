//go:build !linux

package main

import "os"

// reserveFile sizes f to size bytes.
func reserveFile(f *os.File, size int64) error { return f.Truncate(size) }
