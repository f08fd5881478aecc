//go:build !linux

package host

import (
	"errors"
	"os"
)

// populateMemory is a Linux hint (MADV_POPULATE_WRITE); elsewhere the
// read that fills b faults its pages in.
func populateMemory([]byte) {}

// openDirect is unavailable off Linux; Open falls back to buffered reads.
func openDirectFile(path string) (*os.File, error) {
	return nil, errors.New("O_DIRECT is only used on linux")
}
