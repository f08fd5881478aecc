//go:build !linux

package hugepages

// Advise does nothing where madvise is not available.
func Advise[T any](s []T) {}
