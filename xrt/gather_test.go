package xrt

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/hls"
	"github.com/streamsampler/streamsampler/xrt/xclbin"
)

// TestGatherKernelEmulated: the emulated device loads GatherKernelXclbin
// beside nothing else, and a run of gather_kernel over a P2P buffer of
// blocks gives hls.GatherReference's samples exactly (empty slots, indices
// past the blocks, words that are not nodes); a run whose buffers are too
// small for its counts fails without touching memory past them.
func TestGatherKernelEmulated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gather.xclbin")
	uuid := UUID{1, 2, 3}
	if err := xclbin.WriteFile(path, GatherKernelXclbin(uuid)); err != nil {
		t.Fatal(err)
	}
	dev := must[Device](t)(OpenEmulated(0, EmulatorConfig{}))
	defer dev.Close()
	if got := must[UUID](t)(dev.LoadXclbin(path)); got != uuid {
		t.Fatalf("uuid %v", got)
	}
	k := must[Kernel](t)(dev.OpenKernel(uuid, GatherKernel))
	defer k.Close()
	if _, err := dev.OpenKernel(uuid, SampleKernel); !errors.Is(err, ErrNoSuchKernel) {
		t.Fatalf("sample_kernel in the gather xclbin: %v", err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	const numNodes = 5000
	words := make([]uint32, 3*1024) // three 4 KiB blocks
	for i := range words {
		words[i] = uint32(r.IntN(numNodes + 100))
	}
	slots := make([]uint32, 777)
	for i := range slots {
		switch r.IntN(8) {
		case 0:
			slots[i] = hls.GatherEmpty
		case 1:
			slots[i] = uint32(len(words) + r.IntN(5))
		default:
			slots[i] = uint32(r.IntN(len(words)))
		}
	}
	want := make([]int32, len(slots))
	if err := hls.GatherReference(words, slots, want, numNodes); err != nil {
		t.Fatal(err)
	}
	group := func(arg int) int { return must[int](t)(k.GroupID(arg)) }
	blocks := must[BO](t)(dev.AllocBO(4*len(words), BOP2P, group(GatherArgBlocks)))
	slotsBO := must[BO](t)(dev.AllocBO(4*len(slots), BONormal, group(GatherArgSlots)))
	out := must[BO](t)(dev.AllocBO(4*len(slots)+64, BONormal, group(GatherArgOut)))
	putU32s(must[[]byte](t)(blocks.Map()), words)
	putU32s(must[[]byte](t)(slotsBO.Map()), slots)
	if err := slotsBO.Sync(ToDevice, 4*len(slots), 0); err != nil {
		t.Fatal(err)
	}
	run := func(nSlots uint32, nWords uint64) error {
		rn := must[Run](t)(k.NewRun())
		defer rn.Close()
		for _, err := range []error{rn.SetBO(GatherArgBlocks, blocks), rn.SetBO(GatherArgSlots, slotsBO), rn.SetBO(GatherArgOut, out),
			rn.SetUint32(GatherArgNSlots, nSlots), rn.SetUint64(GatherArgNWords, nWords), rn.SetUint32(GatherArgNumNodes, numNodes)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := rn.Start(); err != nil {
			t.Fatal(err)
		}
		_, err := rn.Wait(0)
		return err
	}
	if err := run(uint32(len(slots)), uint64(len(words))); err != nil {
		t.Fatal(err)
	}
	if err := out.Sync(FromDevice, out.Size(), 0); err != nil {
		t.Fatal(err)
	}
	got := getI32s(must[[]byte](t)(out.Map()), len(slots)+16)
	if !slices.Equal(got[:len(slots)], want) || slices.ContainsFunc(got[len(slots):], func(v int32) bool { return v != 0 }) {
		t.Fatal("gather_kernel on the emulated device differs from hls.GatherReference, or wrote past its slots")
	}
	if err := run(uint32(len(slots))+1, uint64(len(words))); !errors.Is(err, ErrKernelFailed) {
		t.Fatalf("n_slots past the slots buffer: %v", err)
	}
	if err := run(uint32(len(slots)), uint64(len(words))+1); !errors.Is(err, ErrKernelFailed) {
		t.Fatalf("n_words past the blocks buffer: %v", err)
	}
}
