//go:build !linux

package ingest

// AvailableMemory is 0 (unknown) here: builds are not checked against it.
func AvailableMemory() int64 { return 0 }
