package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/gpu"
	"github.com/streamsampler/streamsampler/host"
)

// The GPU engine's own flags. They live on pflag.CommandLine, which cobra
// adds to the root command's persistent flags, so that this file alone
// wires --backend gpu in.
var gpuFlags struct {
	lib     string
	device  int
	uva     bool
	mode    string
	timeout time.Duration
}

var _ host.Backend = (*gpu.Backend)(nil)

func init() {
	fs := pflag.CommandLine
	fs.StringVar(&gpuFlags.lib, "gpu-lib", "", "path of "+gpu.LibName+" for --backend gpu (default: $"+gpu.EnvLib+", then next to the executable, then the system library path)")
	fs.IntVar(&gpuFlags.device, "gpu-device", 0, "CUDA device index for --backend gpu")
	fs.BoolVar(&gpuFlags.uva, "gpu-uva", false, "--backend gpu: keep the graph in pinned host memory, read over UVA (for graphs larger than GPU memory)")
	fs.StringVar(&gpuFlags.mode, "gpu-mode", "fused", "--backend gpu engine: fused (one persistent multi-hop kernel) or bsp (one kernel per hop)")
	fs.DurationVar(&gpuFlags.timeout, "gpu-timeout", time.Minute, "--backend gpu: watchdog on every GPU wait")
	openGPUBackend = openGPU
}

// openGPU loads the CUDA library, reads the graph's CSR from its chunks
// and copies it to the GPU; the graph directory is closed again since the
// backend keeps its own copy.
func openGPU(graphDir string, _ backendFlags) (host.Backend, error) {
	mode, err := gpu.ParseMode(gpuFlags.mode)
	if err != nil {
		return nil, usagef("--gpu-mode %q: want fused or bsp", gpuFlags.mode)
	}
	g, err := chunkfmt.Open(graphDir)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	be, err := gpu.Open(gpuFlags.lib, gpuFlags.device, g, gpu.Options{Mode: mode, UVA: gpuFlags.uva, Timeout: gpuFlags.timeout})
	if err != nil {
		return nil, fmt.Errorf("--backend gpu: %w", err)
	}
	return be, nil
}
