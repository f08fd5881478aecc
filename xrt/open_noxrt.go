//go:build !xrt || !cgo

package xrt

import "fmt"

// Open opens hardware device index through XRT. This binary was built
// without -tags xrt (or without cgo), so it always returns ErrNoXRT.
func Open(index int) (Device, error) {
	return nil, fmt.Errorf("open device %d: %w", index, ErrNoXRT)
}

// Hardware reports whether Open can reach XRT in this build.
const Hardware = false

// Driver names the XRT shim library this binary links: none.
const Driver = "none"
