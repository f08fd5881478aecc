//go:build linux

package hugepages

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Advise asks for transparent huge pages (madvise MADV_HUGEPAGE) behind
// the whole 2 MiB pages inside s's memory, which must not have been
// touched yet for the hint to take effect at first touch (a fresh
// allocation). Slices smaller than MinBytes are left alone. A hint: a
// kernel without transparent huge pages, or one that refuses, changes
// nothing but speed.
func Advise[T any](s []T) {
	if len(s) == 0 {
		return
	}
	n := uintptr(len(s)) * unsafe.Sizeof(s[0])
	if n < MinBytes {
		return
	}
	base := unsafe.Pointer(&s[0])
	p := uintptr(base)
	lo := (p + size - 1) &^ (size - 1)
	hi := (p + n) &^ (size - 1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(base, lo-p)), hi-lo), unix.MADV_HUGEPAGE)
}
