//go:build !linux

package host

import (
	"errors"
	"os"
)

// openDirect is unavailable off Linux; Open falls back to buffered reads.
func openDirectFile(path string) (*os.File, error) {
	return nil, errors.New("O_DIRECT is only used on linux")
}
