package gpu

import "github.com/streamsampler/streamsampler/rng"

// Hooks into the engine for the external tests of the C ABI's capacity
// checks: the Backend's own calls always size their arrays exactly.

// RawSample runs the library's sampling (ssg_sample_keyed, with the
// layer keys of seed and epoch ep) and returns its counts.
func (b *Backend) RawSample(mode Mode, seeds []uint32, fanouts []int32, seed uint64, ep uint32) ([]uint64, error) {
	keys := make([]uint64, len(fanouts))
	for l := range keys {
		keys[l] = rng.Key(seed, ep, l)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eng.sample(mode, seeds, fanouts, keys, false)
}

// RawFetch runs the library's ssg_fetch into the slices, whose lengths
// are passed as the capacities.
func (b *Backend) RawFetch(frontiers []uint32, samples []int32, final []uint32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eng.fetch(frontiers, samples, final)
}

// OpenStreamForTest creates a context of n nodes and nnz edges in the
// library at path and lets fill load it through the library's sink
// unchecked, then frees it: for tests of the library's loading checks.
func OpenStreamForTest(path string, n uint32, nnz uint64, fill func(CSRSink) error) error {
	lib, err := loadLibrary(path)
	if err != nil {
		return err
	}
	b, err := lib.openStream(0, n, nnz, Options{}, fill)
	if err != nil {
		return err
	}
	return b.Close()
}

// RawWalk runs the library's ssg_walk (a DeepWalk of length steps, one
// walk per start) into out, whose length is passed as the capacity.
func (b *Backend) RawWalk(starts []uint32, length uint32, out []int32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eng.walk(walkRequest{starts: starts, walksPerNode: 1, length: length, seed: 1}, out)
}
