package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/streamsampler/streamsampler/host"
)

// backendFlags are the flags that pick and configure the sampling engine.
type backendFlags struct {
	Backend string
	Devices int
	Xclbin  string
}

func (b *backendFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&b.Backend, "backend", "emu", "sampling engine: emu (emulated SmartSSD), xrt (SmartSSD via XRT, needs -tags xrt) or gpu")
	cmd.Flags().IntVar(&b.Devices, "devices", 1, "number of devices to stream over")
	cmd.Flags().StringVar(&b.Xclbin, "xclbin", "", "kernel binary for --backend xrt")
}

// errGPUNotBuiltIn is returned for --backend gpu until backend_gpu.go
// sets openGPUBackend.
var errGPUNotBuiltIn = errors.New("gpu backend not built in")

// openGPUBackend opens the GPU engine; backend_gpu.go assigns it in an init
// function. Nil means this binary has no GPU support.
var openGPUBackend func(graphDir string, b backendFlags) (host.Backend, error)

// openBackend opens the engine b names over graphDir.
func openBackend(graphDir string, b backendFlags) (host.Backend, error) {
	switch b.Backend {
	case "emu", "xrt":
		return host.Open(graphDir, host.Options{Backend: b.Backend, Devices: b.Devices, Xclbin: b.Xclbin})
	case "gpu":
		if openGPUBackend == nil {
			return nil, errGPUNotBuiltIn
		}
		return openGPUBackend(graphDir, b)
	default:
		return nil, usagef("--backend %q: want emu, xrt or gpu", b.Backend)
	}
}

// statser is implemented by backends that report per-layer statistics.
type statser interface{ LastStats() *host.Stats }

func backendStats(be host.Backend) *host.Stats {
	if s, ok := be.(statser); ok {
		return s.LastStats()
	}
	return nil
}

var _ = fmt.Sprint
