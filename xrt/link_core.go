//go:build xrt && cgo && !xrt_noop

package xrt

// The real XRT: libxrt_core is the device driver shim, libxrt_coreutil
// the API. --no-as-needed keeps libxrt_core although no symbol is taken
// from it directly: without it, xrtDeviceOpen aborts the whole process
// when no card is present instead of returning NULL.

// #cgo LDFLAGS: -Wl,--no-as-needed -lxrt_core -lxrt_coreutil
import "C"

// Driver names the XRT shim library this binary links.
const Driver = "xrt_core"
