package xrt

import "github.com/streamsampler/streamsampler/hls"

// sampleKernelImpl is what emulated runs of SampleKernel execute: the HLS
// kernel's C++ compiled for the CPU (or hls's Go reference without cgo).
// It is a variable only so that tests can wrap it.
var sampleKernelImpl kernelFunc = hls.RunEdges

// walkKernelImpl is what emulated runs of SampleKernel's walk-step mode
// (ArgWalk != 0) execute: the same C++ kernel (or Go reference).
var walkKernelImpl walkFunc = hls.RunWalkEdges

// KernelEngine names the implementation emulated runs execute
// (hls.Engine: "hls-cpp" with cgo, "go-reference" without).
const KernelEngine = hls.Engine
