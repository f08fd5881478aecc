//go:build xrt && cgo && xrt_noop

package xrt

// XRT's no-hardware "noop" shim, linked instead of libxrt_core (never
// both): every device opens, every call succeeds and kernels complete
// without doing anything. CI uses it to run the host's XRT call sequence
// through this binding (docs/KERNEL.md lists what it does and does not do).

// #cgo LDFLAGS: -Wl,--no-as-needed -lxrt_noop -lxrt_coreutil
import "C"

// Driver names the XRT shim library this binary links.
const Driver = "xrt_noop"
