//go:build !linux

package memavail

// Available is 0 (unknown) here: builds are not checked against it.
func Available() int64 { return 0 }

// CgroupRoom reports no memory cgroup here.
func CgroupRoom() (room int64, ok bool) { return 0, false }
