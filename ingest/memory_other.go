//go:build !linux

package ingest

// AvailableMemory is 0 (unknown) here: builds are not checked against it.
func AvailableMemory() int64 { return 0 }

// CgroupRoom reports no memory cgroup here.
func CgroupRoom() (room int64, ok bool) { return 0, false }
