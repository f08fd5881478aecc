//go:build !linux

package layerwise

import (
	"errors"
	"os"
)

// mapReadOnly is Linux's: elsewhere the rows are read into memory.
func mapReadOnly(*os.File, int64) ([]byte, error) { return nil, errors.New("no mapping here") }

func populate([]byte) {}

func willNeed([]byte) {}

func unmap([]byte) {}
