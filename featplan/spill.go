package featplan

import (
	"fmt"
	"os"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PlanOption changes how NewPlan and NewPreloadedPlan keep a plan.
type PlanOption func(*planOptions)

type planOptions struct {
	spillDir string
	packDir  string // PackTo
	rowBytes int64  // PackTo
	// PackModel's disk (0: RequestCost, StreamRate).
	requestCost, writeCost time.Duration
	streamRate             float64
	// For tests: a packed copy's staging in bytes (0: packStaging's).
	staging int64
}

// SpillTo keeps the plan's per-access array (4 bytes for every row of
// every n_id: 180 MB for an epoch at scale 22, as large as everything
// else the epoch holds) in an unlinked file in dir, mapped, instead of the
// heap: under memory pressure (a memory cgroup smaller than the data) the
// kernel writes it out and reads it back as the executor walks it, in
// order, rather than the process being killed. With plenty of memory it
// stays in the page cache, and is dropped unwritten if the plan goes
// before the kernel's writeback does. dir must not be a tmpfs, or the
// array is in memory again (as shared memory).
func SpillTo(dir string) PlanOption {
	return func(o *planOptions) { o.spillDir = dir }
}

// accessArray allocates a plan's per-access array of n entries, on the
// heap or, with SpillTo, in a mapped unlinked file that p releases when it
// is collected.
func (o *planOptions) accessArray(p *Plan, n int64) ([]int32, error) {
	if o.spillDir == "" || n == 0 {
		return make([]int32, n), nil
	}
	f, err := os.CreateTemp(o.spillDir, "featplan-*.bin")
	if err != nil {
		return nil, fmt.Errorf("featplan: spill file: %w", err)
	}
	defer f.Close()
	os.Remove(f.Name()) // the mapping keeps it
	if err := f.Truncate(4 * n); err != nil {
		return nil, fmt.Errorf("featplan: spill file of %d bytes: %w", 4*n, err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(4*n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("featplan: mapping a spill file of %d bytes: %w", 4*n, err)
	}
	runtime.AddCleanup(p, func(m []byte) { unix.Munmap(m) }, m)
	return unsafe.Slice((*int32)(unsafe.Pointer(&m[0])), n), nil
}
