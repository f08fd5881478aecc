package xrt

import "github.com/streamsampler/streamsampler/hls"

// sampleKernelImpl is what emulated runs of SampleKernel execute: the HLS
// kernel's C++ compiled for the CPU (or hls's Go reference without cgo).
// It is a variable only so that tests can wrap it.
var sampleKernelImpl kernelFunc = hls.RunEdges

// walkKernelImpl is what emulated runs of SampleKernel's walk-step mode
// (ArgWalk != 0) execute: the same C++ kernel (or Go reference).
var walkKernelImpl walkFunc = hls.RunWalkEdges

// allKernelImpl is what emulated runs of SampleKernel's copy-all mode
// (fanout hls.FanoutAll) execute: the same C++ kernel's top over the
// result buffer's layout (or the Go reference without cgo).
var allKernelImpl func(chunk, targets []uint32, result []int32, capacity int, skip uint32, edges bool) error = hls.RunAllRaw

// KernelEngine names the implementation emulated runs execute
// (hls.Engine: "hls-cpp" with cgo, "go-reference" without).
const KernelEngine = hls.Engine
