//go:build !xrt || !cgo

package xrt

import (
	"errors"
	"testing"
)

func TestOpenWithoutXRT(t *testing.T) {
	d, err := Open(0)
	if d != nil || !errors.Is(err, ErrNoXRT) || Hardware {
		t.Fatalf("Open(0) = %v, %v; want ErrNoXRT", d, err)
	}
}
