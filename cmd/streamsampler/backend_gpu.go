package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/gpu"
	"github.com/streamsampler/streamsampler/heterosample"
	"github.com/streamsampler/streamsampler/host"
)

var _ host.Backend = (*gpu.Backend)(nil)

// addGPUFlags registers the --gpu-* flags, which join the backend flag
// group of the commands that open a backend (backendFlags.add).
func addGPUFlags(fs *pflag.FlagSet, g *gpuOptions) {
	fs.StringVar(&g.Lib, "gpu-lib", "", "path of "+gpu.LibName+" for --backend gpu (default: $"+gpu.EnvLib+", then next to the executable, then the system library path)")
	fs.IntVar(&g.Device, "gpu-device", -1, "CUDA device index for --backend gpu (default: $LOCAL_RANK among the visible devices, as torchrun gives each rank its own GPU; else 0)")
	fs.BoolVar(&g.UVA, "gpu-uva", false, "--backend gpu: keep the graph in pinned host memory, read over UVA (for graphs larger than GPU memory)")
	fs.StringVar(&g.Mode, "gpu-mode", "bsp", "--backend gpu engine: bsp (one kernel per hop; the faster for whole epochs, docs/GPU.md) or fused (one persistent multi-hop kernel; the faster for minibatches)")
	fs.DurationVar(&g.Timeout, "gpu-timeout", time.Minute, "--backend gpu: watchdog on every GPU wait")
}

// openGPU loads the CUDA library, reads the graph's CSR from its chunks
// and copies it to the GPU; the graph directory is closed again since the
// backend keeps its own copy.
func openGPU(graphDir string, b backendFlags) (host.Backend, error) {
	mode, err := gpu.ParseMode(b.GPU.Mode)
	if err != nil {
		return nil, usagef("--gpu-mode %q: want fused or bsp", b.GPU.Mode)
	}
	dev := b.GPU.Device
	if dev < 0 {
		if dev, err = rankDevice(); err != nil {
			return nil, err
		}
	}
	g, err := chunkfmt.Open(graphDir)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	be, err := gpu.Open(b.GPU.Lib, dev, g, gpu.Options{Mode: mode, UVA: b.GPU.UVA, Timeout: b.GPU.Timeout, EdgeIDs: b.EdgeIDs})
	if err != nil {
		return nil, fmt.Errorf("--backend gpu: %w", err)
	}
	return be, nil
}

// gpuRelations is heterosample.Options.OpenRelation for --backend gpu: a
// gpu.Backend over each relation's graph directory, each with its own
// copy of the relation's CSR on the device.
func gpuRelations(b backendFlags) func(r int, dir string) (heterosample.LayerSampler, error) {
	return func(_ int, dir string) (heterosample.LayerSampler, error) {
		be, err := openGPU(dir, b)
		if err != nil {
			return nil, err
		}
		return be.(*gpu.Backend), nil
	}
}
