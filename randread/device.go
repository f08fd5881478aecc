package randread

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/streamsampler/streamsampler/hls"
	"github.com/streamsampler/streamsampler/xrt"
	"github.com/streamsampler/streamsampler/xrt/xclbin"
)

// The SmartSSD path (Options.Kernel): the blocks a layer needs are read
// peer to peer into a device buffer (a P2P buffer object, whose mapping
// is the FPGA's DDR on a SmartSSD: the same AIO or pread reads, into it),
// and the gather kernel (hls/gather_kernel.cpp) runs on the device over
// them; only the samples come back. Here the device is the emulated
// SmartSSD (xrt.OpenEmulated), which runs the kernel's C++ compiled for
// the CPU.

// gatherUUID names the emulator's gather xclbin.
var gatherUUID = xrt.UUID{'s', 't', 'r', 'e', 'a', 'm', 's', 'a', 'm', 'p', 'l', 'e', 'r', 'g', 'a', 't'}

// kernelTimeout bounds one gather run.
const kernelTimeout = time.Minute

// device is an opened emulated SmartSSD with the gather kernel loaded.
type device struct {
	dev    xrt.Device
	kernel xrt.Kernel
	groups [3]int // the memory groups of the blocks, slots and out arguments
}

// openDevice opens emulated SmartSSD 0 and loads the gather kernel (its
// xclbin is written to a temporary file: an emulated device loads what a
// real one would, through LoadXclbin).
func openDevice() (*device, error) {
	tmp, err := os.MkdirTemp("", "randread-xclbin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "gather.xclbin")
	if err := xclbin.WriteFile(path, xrt.GatherKernelXclbin(gatherUUID)); err != nil {
		return nil, err
	}
	dev, err := xrt.OpenEmulated(0, xrt.EmulatorConfig{})
	if err != nil {
		return nil, err
	}
	d := &device{dev: dev}
	fail := func(err error) (*device, error) {
		dev.Close()
		return nil, err
	}
	uuid, err := dev.LoadXclbin(path)
	if err != nil {
		return fail(err)
	}
	if d.kernel, err = dev.OpenKernel(uuid, xrt.GatherKernel); err != nil {
		return fail(err)
	}
	for i, arg := range []int{xrt.GatherArgBlocks, xrt.GatherArgSlots, xrt.GatherArgOut} {
		if d.groups[i], err = d.kernel.GroupID(arg); err != nil {
			return fail(err)
		}
	}
	return d, nil
}

func (d *device) close() error {
	d.kernel.Close()
	return d.dev.Close()
}

// deviceBlocks allocates the P2P buffer of a layer's blocks (n of them,
// bs bytes each) and returns it with its mapping.
func (d *device) deviceBlocks(n int, bs int64) (xrt.BO, []byte, error) {
	bo, err := d.dev.AllocBO(int(int64(n)*bs), xrt.BOP2P, d.groups[0])
	if err != nil {
		return nil, nil, err
	}
	m, err := bo.Map()
	if err != nil {
		bo.Free()
		return nil, nil, err
	}
	return bo, m[:int64(n)*bs], nil
}

// gather runs the gather kernel over the blocks buffer (words uint32) for
// slots, and returns the samples.
func (d *device) gather(blocks xrt.BO, words int64, slots []uint32, numNodes uint32) ([]int32, error) {
	n := len(slots)
	slotsBO, err := d.dev.AllocBO(4*n, xrt.BONormal, d.groups[1])
	if err != nil {
		return nil, err
	}
	defer slotsBO.Free()
	outBO, err := d.dev.AllocBO(4*n, xrt.BONormal, d.groups[2])
	if err != nil {
		return nil, err
	}
	defer outBO.Free()
	sm, err := slotsBO.Map()
	if err != nil {
		return nil, err
	}
	for i, s := range slots {
		binary.LittleEndian.PutUint32(sm[4*i:], s)
	}
	if err := slotsBO.Sync(xrt.ToDevice, 4*n, 0); err != nil {
		return nil, err
	}
	r, err := d.kernel.NewRun()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	for _, set := range []error{
		r.SetBO(xrt.GatherArgBlocks, blocks), r.SetBO(xrt.GatherArgSlots, slotsBO), r.SetBO(xrt.GatherArgOut, outBO),
		r.SetUint32(xrt.GatherArgNSlots, uint32(n)), r.SetUint64(xrt.GatherArgNWords, uint64(words)), r.SetUint32(xrt.GatherArgNumNodes, numNodes),
	} {
		if set != nil {
			return nil, set
		}
	}
	if err := r.Start(); err != nil {
		return nil, err
	}
	if _, err := r.Wait(kernelTimeout); err != nil {
		return nil, err
	}
	if err := outBO.Sync(xrt.FromDevice, 4*n, 0); err != nil {
		return nil, err
	}
	om, err := outBO.Map()
	if err != nil {
		return nil, err
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(om[4*i:]))
	}
	return out, nil
}

// gatherDevice is the gather of a layer on the device: want are the
// layer's blocks (sorted), held in the P2P buffer blocks at bs each in
// that order; each valid slot's word is given to the kernel as its index
// in the buffer.
func (rq *request) gatherDevice(frontier []uint32, samples []int32, span func(int) (int64, int64), want []int64, blocks xrt.BO) error {
	s := rq.s
	bs := int64(s.o.BlockSize)
	indptr, base := s.off.indptr, s.off.base
	slots := make([]uint32, len(samples))
	c := 0
	for i, v := range frontier {
		for s.ix.End(c) <= v {
			c++
		}
		first := indptr[v]
		lo, hi := span(i)
		for t := lo; t < hi; t++ {
			p := samples[t]
			if p < 0 {
				slots[t] = hls.GatherEmpty
				continue
			}
			at := base[c] + 4*int64(first+uint64(p))
			j, _ := slices.BinarySearch(want, at/bs)
			slots[t] = uint32((int64(j)*bs + at%bs) / 4)
		}
	}
	if len(samples) == 0 {
		return nil
	}
	if blocks == nil { // no valid slot: every sample is empty
		for t := range samples {
			samples[t] = -1
		}
		return nil
	}
	out, err := s.dev.gather(blocks, int64(len(want))*bs/4, slots, s.m.NumNodes)
	if err != nil {
		return fmt.Errorf("randread: gather kernel on %s: %w", s.dev.dev.Name(), err)
	}
	c = 0
	for i, v := range frontier {
		for s.ix.End(c) <= v {
			c++
		}
		lo, hi := span(i)
		for t := lo; t < hi; t++ {
			if out[t] == hls.GatherBad {
				at := base[c] + 4*int64(indptr[v]+uint64(samples[t]))
				w := binary.LittleEndian.Uint32(rq.blocks[at/bs][at%bs:])
				return s.notANode(c, v, samples[t], at, w)
			}
			samples[t] = out[t]
		}
	}
	return nil
}
