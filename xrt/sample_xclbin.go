package xrt

import "github.com/streamsampler/streamsampler/xrt/xclbin"

// SmartSSDDDRBytes is the DDR4 attached to a SmartSSD's FPGA (4 GiB), the
// emulator's default device memory.
const SmartSSDDDRBytes = 4 << 30

// sampleKernelBase is the control-register base address of the compute
// unit in SampleKernelXclbin.
const sampleKernelBase = 0x1800000

// SampleKernelXclbin describes an xclbin holding one compute unit
// (sample_kernel_1) of SampleKernel, all three buffer arguments connected
// to one DDR4 bank (group 0), with the given UUID. Its register map is the
// one Vitis HLS generates for the kernel's signature (control registers
// from 0x10, each followed by a reserved word).
//
// Written with xclbin.WriteFile, it loads in the emulator and on XRT's
// noop driver; it has no bitstream, so a real card rejects it.
func SampleKernelXclbin(uuid UUID) *xclbin.Xclbin {
	args := []xclbin.Arg{
		{Name: "chunk", Index: ArgChunk, AddressQualifier: 1, Port: "M_AXI_GMEM0", Size: 8, Type: "uint*"},
		{Name: "result", Index: ArgResult, AddressQualifier: 1, Port: "M_AXI_GMEM1", Size: 8, Type: "int*"},
		{Name: "targets", Index: ArgTargets, AddressQualifier: 1, Port: "M_AXI_GMEM2", Size: 8, Type: "uint*"},
		{Name: "n_targets", Index: ArgNTargets, Port: "S_AXI_CONTROL", Size: 4, Type: "uint"},
		{Name: "fanout", Index: ArgFanout, Port: "S_AXI_CONTROL", Size: 4, Type: "uint"},
		{Name: "key", Index: ArgKey, Port: "S_AXI_CONTROL", Size: 8, Type: "ulong"},
		{Name: "replace", Index: ArgReplace, Port: "S_AXI_CONTROL", Size: 4, Type: "uint"},
		{Name: "edges", Index: ArgEdges, Port: "S_AXI_CONTROL", Size: 4, Type: "uint"},
		{Name: "walk", Index: ArgWalk, Port: "S_AXI_CONTROL", Size: 4, Type: "uint"},
	}
	off := 0x10
	for i := range args {
		args[i].Offset = off
		off += args[i].Size + 4
	}
	return &xclbin.Xclbin{
		UUID:     uuid,
		Platform: "xilinx_u2_gen3x4_xdma_gc_2_202110_1",
		Mems: []xclbin.Mem{{Type: xclbin.MemDDR4, Used: true, SizeKB: SmartSSDDDRBytes >> 10,
			BaseAddress: 0x4000000000, Tag: "bank0"}},
		IPs: []xclbin.IP{{Type: xclbin.IPKernel, Properties: xclbin.IPIntEnable | xclbin.IPControlHS | 1<<1,
			BaseAddress: sampleKernelBase, Name: SampleKernel + ":sample_kernel_1"}},
		Connections: []xclbin.Connection{
			{ArgIndex: ArgChunk, IPIndex: 0, MemIndex: 0},
			{ArgIndex: ArgResult, IPIndex: 0, MemIndex: 0},
			{ArgIndex: ArgTargets, IPIndex: 0, MemIndex: 0},
		},
		Kernels: []xclbin.Kernel{{Name: SampleKernel, Args: args, Instances: []string{"sample_kernel_1"}}},
	}
}
