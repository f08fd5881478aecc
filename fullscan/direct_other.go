//go:build !linux

package fullscan

import "os"

// openDirect opens path read-only; O_DIRECT is Linux's.
func openDirect(path string) (*os.File, bool, error) {
	f, err := os.Open(path)
	return f, false, err
}
