//go:build xrt && cgo && !xrt_noop

package xrt

import (
	"errors"
	"strings"
	"testing"
)

// With the real libxrt_core and no card, Open returns a Go error naming
// the failed call, for every index, and the process goes on (with
// -lxrt_coreutil alone XRT would abort it).
func TestOpenWithoutHardware(t *testing.T) {
	if !Hardware || Driver != "xrt_core" {
		t.Fatalf("Hardware %v Driver %q", Hardware, Driver)
	}
	for _, i := range []int{0, 1, 7} {
		d, err := Open(i)
		if err == nil {
			d.Close()
			t.Skipf("device %d opened: this machine has an XRT card; the no-hardware path is not testable here", i)
		}
		if d != nil || errors.Is(err, ErrNoXRT) || !strings.Contains(err.Error(), "xrtDeviceOpen") {
			t.Fatalf("Open(%d) = %v, %v; want an error naming xrtDeviceOpen", i, d, err)
		}
		t.Logf("Open(%d): %v", i, err)
	}
	if _, err := Open(-1); err == nil {
		t.Fatal("Open(-1) succeeded")
	}
}
