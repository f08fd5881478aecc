package randread_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/testgraph"
	"github.com/streamsampler/streamsampler/randread"
)

// TestHybridOnBundledAndRMAT: the streaming sampler's per-chunk choice
// (host.Options.RandomReads auto, with rates that split layers between
// the stream and random reads, and always) gives the epoch pure streaming
// gives and the one this package's sampler gives, bit for bit, edge ids
// and full layers included, on graphs built from the bundled data sets
// and on a symmetrized R-MAT graph (skewed degrees, hubs), over frontier
// densities from a few seeds to every node.
func TestHybridOnBundledAndRMAT(t *testing.T) {
	ctx := context.Background()
	rmat := filepath.Join(t.TempDir(), "rmat.bin32")
	if err := ingest.WriteRMATFile(ctx, rmat, ingest.RMATOptions{Scale: 13, EdgeFactor: 8, Seed: 3}, ingest.FormatAuto); err != nil {
		t.Fatal(err)
	}
	mixed := false
	for _, in := range []struct {
		path string
		o    ingest.BuildOptions
	}{
		{filepath.Join("..", "testdata", "email-Eu-core.txt.gz"), ingest.BuildOptions{Reverse: true, ChunkSize: 16 << 10}},
		{filepath.Join("..", "testdata", "Wiki-Vote.txt"), ingest.BuildOptions{Reverse: true, ChunkSize: 32 << 10}},
		{rmat, ingest.BuildOptions{Symmetrize: true, ChunkSize: 32 << 10}},
	} {
		t.Run(filepath.Base(in.path), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "g")
			if _, err := ingest.Build(ctx, []string{in.path}, dir, in.o); err != nil {
				t.Fatal(err)
			}
			rr := open(t, dir, randread.Options{})
			n := rr.NumNodes()
			rates := host.DiskRates{SeqBytesPerSec: 1e9, RandReadsPerSec: 2e5} // a chunk of 32 KiB: 32 µs, a read 5 µs
			for _, devices := range []int{1, 3} {
				mk := func(m host.RandomReads) *host.Sampler {
					s, err := host.Open(dir, host.Options{Devices: devices, EdgeIDs: true, RandomReads: m, DiskRates: rates})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.Close() })
					return s
				}
				off, auto, always := mk(host.RandomOff), mk(host.RandomAuto), mk(host.RandomAlways)
				for i, m := range []int{1, 5, int(n) / 50, int(n) / 5, int(n)} {
					seeds := testgraph.RandomSeeds(n, max(m, 1), uint64(i))
					for _, fanouts := range [][]int{{10, 5}, {-1, 4}, {6, -1}} {
						key := epoch.Key{Seed: 5, Epoch: uint32(i), Replace: i%2 == 1}
						want, err := off.SampleEpoch(ctx, seeds, fanouts, key)
						if err != nil {
							t.Fatal(err)
						}
						name := fmt.Sprintf("devices %d, %d seeds, fanouts %v", devices, m, fanouts)
						for _, s := range []*host.Sampler{auto, always} {
							got, st, err := s.SampleEpochStats(ctx, seeds, fanouts, key)
							if err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							if err := diffResult(got, want); err != nil {
								t.Fatalf("%s, %v: %v", name, st.Random.Mode, err)
							}
							for _, ls := range st.Layers {
								mixed = mixed || s == auto && ls.ChunksRandom > 0 && ls.ChunksRead > 0
							}
						}
						pure, _, err := rr.Sample(ctx, randread.Request{Seeds: seeds, Fanouts: fanouts, Key: key, EdgeIDs: true})
						if err != nil {
							t.Fatal(err)
						}
						if err := diffResult(pure, want); err != nil {
							t.Fatalf("%s, randread: %v", name, err)
						}
					}
				}
			}
		})
	}
	if !mixed {
		t.Fatal("auto never split a layer between streaming and random reads")
	}
}
