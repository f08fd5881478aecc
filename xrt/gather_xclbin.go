package xrt

import (
	"fmt"
	"unsafe"

	"github.com/streamsampler/streamsampler/hls"
	"github.com/streamsampler/streamsampler/xrt/xclbin"
)

// GatherKernel is the name of the random-read sampler's gather kernel
// (hls/gather_kernel.cpp) in an xclbin and in the emulator.
const GatherKernel = "gather_kernel"

// Argument indices of GatherKernel: out[i] = blocks[slots[i]] for n_slots
// slots, -1 for hls.GatherEmpty or an index not below n_words,
// hls.GatherBad for a word not below num_nodes (hls.GatherReference).
const (
	GatherArgBlocks   = 0 // BO: the blocks read (peer to peer), n_words uint32
	GatherArgSlots    = 1 // BO: n_slots uint32 word indices into blocks
	GatherArgOut      = 2 // BO: n_slots int32 samples
	GatherArgNSlots   = 3 // uint32
	GatherArgNWords   = 4 // uint64
	GatherArgNumNodes = 5 // uint32
)

// gatherKernelBase is the control-register base address of the compute
// unit in GatherKernelXclbin.
const gatherKernelBase = 0x1810000

// gatherKernelImpl is what emulated runs of GatherKernel execute: the HLS
// C++ compiled for the CPU (or the Go reference without cgo). A variable
// only so that tests can wrap it.
var gatherKernelImpl = hls.Gather

// GatherKernelXclbin describes an xclbin holding one compute unit
// (gather_kernel_1) of GatherKernel, its three buffer arguments connected
// to one DDR4 bank (group 0), with the given UUID, and the register map
// Vitis HLS generates for its signature. Written with xclbin.WriteFile it
// loads in the emulator (the random-read sampler's emulated SmartSSD
// path, randread.Options.Device); it has no bitstream.
func GatherKernelXclbin(uuid UUID) *xclbin.Xclbin {
	args := gatherArgs()
	return &xclbin.Xclbin{
		UUID:     uuid,
		Platform: "xilinx_u2_gen3x4_xdma_gc_2_202110_1",
		Mems: []xclbin.Mem{{Type: xclbin.MemDDR4, Used: true, SizeKB: SmartSSDDDRBytes >> 10,
			BaseAddress: emuDDRBase, Tag: "bank0"}},
		IPs: []xclbin.IP{{Type: xclbin.IPKernel, Properties: xclbin.IPIntEnable | xclbin.IPControlHS | 1<<1,
			BaseAddress: gatherKernelBase, Name: GatherKernel + ":gather_kernel_1"}},
		Connections: []xclbin.Connection{
			{ArgIndex: GatherArgBlocks, IPIndex: 0, MemIndex: 0},
			{ArgIndex: GatherArgSlots, IPIndex: 0, MemIndex: 0},
			{ArgIndex: GatherArgOut, IPIndex: 0, MemIndex: 0},
		},
		Kernels: []xclbin.Kernel{{Name: GatherKernel, Args: args, Instances: []string{"gather_kernel_1"}}},
	}
}

// gatherArgs are GatherKernel's arguments with their register offsets.
func gatherArgs() []xclbin.Arg {
	args := []xclbin.Arg{
		{Name: "blocks", Index: GatherArgBlocks, AddressQualifier: 1, Port: "M_AXI_GMEM0", Size: 8, Type: "uint*"},
		{Name: "slots", Index: GatherArgSlots, AddressQualifier: 1, Port: "M_AXI_GMEM1", Size: 8, Type: "uint*"},
		{Name: "out", Index: GatherArgOut, AddressQualifier: 1, Port: "M_AXI_GMEM2", Size: 8, Type: "int*"},
		{Name: "n_slots", Index: GatherArgNSlots, Port: "S_AXI_CONTROL", Size: 4, Type: "uint"},
		{Name: "n_words", Index: GatherArgNWords, Port: "S_AXI_CONTROL", Size: 8, Type: "ulong"},
		{Name: "num_nodes", Index: GatherArgNumNodes, Port: "S_AXI_CONTROL", Size: 4, Type: "uint"},
	}
	off := 0x10
	for i := range args {
		args[i].Offset = off
		off += args[i].Size + 4
	}
	return args
}

// runGatherKernel checks GatherKernel's arguments against the buffers, as
// the hardware cannot, and runs fn on the device copies.
func runGatherKernel(fn func(blocks, slots []uint32, out []int32, numNodes uint32) error, v []argVal) error {
	blocks, slots, out := v[GatherArgBlocks].bo, v[GatherArgSlots].bo, v[GatherArgOut].bo
	n := int64(uint32(v[GatherArgNSlots].scalar))
	nWords := int64(v[GatherArgNWords].scalar)
	numNodes := uint32(v[GatherArgNumNodes].scalar)
	if nWords*4 > int64(blocks.size) || nWords < 0 {
		return fmt.Errorf("blocks buffer of %d bytes too small for n_words = %d (%d bytes)", blocks.size, nWords, nWords*4)
	}
	if n*4 > int64(slots.size) {
		return fmt.Errorf("slots buffer of %d bytes too small for n_slots = %d (%d bytes)", slots.size, n, n*4)
	}
	if n*4 > int64(out.size) {
		return fmt.Errorf("out buffer of %d bytes too small for n_slots = %d int32 (%d bytes)", out.size, n, n*4)
	}
	if n == 0 {
		return nil
	}
	o := unsafe.Slice((*int32)(unsafe.Pointer(&out.mem[0])), n)
	return fn(words(blocks, int(nWords)), words(slots, int(n)), o, numNodes)
}
