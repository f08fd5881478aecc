package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epochstats"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/pipeline"
	"github.com/streamsampler/streamsampler/runloop"
)

// writeFeatures packs random rows of dim float32 and labels (some
// missing) into graph's feature store.
func writeFeatures(t *testing.T, graph string, n uint32, dim int) {
	t.Helper()
	w, err := featstore.Create(graph, featstore.Options{DType: featstore.Float32, Dim: dim, Labels: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, uint64(dim)))
	row := make([]byte, w.RowBytes())
	for range n {
		for i := range row {
			row[i] = byte(r.Uint32())
		}
		if err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(r.IntN(8)) - 1 // -1: unlabeled
	}
	if err := w.AppendLabels(labels); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRunFeatures: run --features hands every minibatch the rows of its
// nodes (its blocks' last src, in order) and its seeds' labels, exactly
// the store's; the per-epoch figures add up (rows from the cache and from
// disk make the rows needed); a cache makes hits; --reorder match serves
// the same minibatches and reports the shared fraction; bad flags are
// usage errors.
func TestRunFeatures(t *testing.T) {
	const n = 3000
	graph, _ := testGraph(t, n, 6, 8192)
	writeFeatures(t, graph, n, 12)
	fs, err := featstore.Open(graph)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	var train []uint32
	for v := uint32(0); v < n; v += 3 {
		train = append(train, v)
	}
	tf := writeTrain(t, train)
	runWith := func(extra ...string) (recs []runloop.EpochReport, seeds map[string]bool) {
		seeds = map[string]bool{}
		var out bytes.Buffer
		cmd := newRunCmdWith(func(b *pipeline.Minibatch, x []byte, y []int32) {
			nodes := b.Blocks.Hops[len(b.Blocks.Hops)-1].Src
			want := make([]byte, int64(len(nodes))*fs.RowBytes())
			if err := fs.ReadRows(nodes, want); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(x, want) {
				t.Fatalf("epoch %d minibatch %d: feature rows differ from the store's", b.Epoch, b.Index)
			}
			wy := make([]int32, len(b.Blocks.Seeds))
			if err := fs.ReadLabels(b.Blocks.Seeds, wy); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(y, wy) {
				t.Fatalf("epoch %d minibatch %d: labels differ", b.Epoch, b.Index)
			}
			if b.Epoch == 0 {
				seeds[fmt.Sprint(b.Blocks.Seeds)] = true
			}
		})
		args := append([]string{"--graph", graph, "--train", tf, "--fanouts", "4,3", "--batch-size", "50", "--epochs", "2", "--json", "--features"}, extra...)
		cmd.SetArgs(args)
		cmd.SetOut(&out)
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var r runloop.EpochReport
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, r)
		}
		return recs, seeds
	}
	plain, plainSeeds := runWith("--feature-cache", "0")
	cached, _ := runWith("--feature-cache", "64KiB")
	// The default (auto) holds the whole small store: every row is read
	// from disk once, and every other access is a hit.
	auto, _ := runWith()
	for e := range 2 {
		if a := auto[e].Features; a == nil || a.Reads.RowsFromCache <= cached[e].Features.Reads.RowsFromCache || a.Reads.RowsNeeded != plain[e].Features.Reads.RowsNeeded {
			t.Fatalf("epoch %d: the default cache's reads %+v, a 64 KiB cache's %+v", e, auto[e].Features, cached[e].Features)
		}
	}
	reordered, reSeeds := runWith("--feature-cache", "64KiB", "--reorder", "match")
	for e := range 2 {
		p, c, r := plain[e].Features, cached[e].Features, reordered[e].Features
		if p == nil || c == nil || r == nil {
			t.Fatalf("epoch %d: no feature figures", e)
		}
		for _, f := range []*epochstats.Features{p, c, r} {
			rd := f.Reads
			if rd.RowsNeeded <= 0 || rd.RowsFromCache+rd.RowsFromDisk != rd.RowsNeeded || rd.BytesRead < rd.RowsFromDisk*rd.RowBytes || f.Labels != int64(plain[e].Seeds) {
				t.Fatalf("epoch %d: %+v", e, f)
			}
		}
		if p.Reads.RowsFromCache != 0 || c.Reads.RowsFromCache == 0 || c.Reads.RowsNeeded != p.Reads.RowsNeeded {
			t.Fatalf("epoch %d: cache hits %d without a cache, %d with (rows %d, %d)", e, p.Reads.RowsFromCache, c.Reads.RowsFromCache, p.Reads.RowsNeeded, c.Reads.RowsNeeded)
		}
		if r.Reorder == nil || r.Reorder.SharedAfter < r.Reorder.SharedBefore || c.Reorder != nil {
			t.Fatalf("epoch %d: reorder %+v / %+v", e, r.Reorder, c.Reorder)
		}
	}
	if len(plainSeeds) != 20 || len(reSeeds) != len(plainSeeds) {
		t.Fatalf("reordered epoch 0 has %d minibatches, plain %d", len(reSeeds), len(plainSeeds))
	}
	for k := range plainSeeds {
		if !reSeeds[k] {
			t.Fatalf("minibatch %s missing after reorder", k)
		}
	}
	// Both caches automatic: the chunk cache takes a quarter of the
	// memory at most, the feature cache what it leaves of the half; the
	// start says both.
	if _, e, code := cli(t, "run", "--graph", graph, "--train", tf, "--fanouts", "4", "--epochs", "1", "--features"); code != 0 ||
		!strings.Contains(e, "chunk cache ") || !strings.Contains(e, "(auto: a quarter of the") || !strings.Contains(e, "less the chunk cache's") {
		t.Fatalf("both caches auto: exit %d, %s", code, e)
	}
	for _, bad := range [][]string{{"--feature-cache", "1MiB"}, {"--features", "--reorder", "best"}, {"--features", "--feature-cache", "lots"}} {
		args := append([]string{"run", "--graph", graph, "--train", tf, "--fanouts", "4", "--epochs", "1"}, bad...)
		if _, e, code := cli(t, args...); code != 2 {
			t.Fatalf("%v: exit %d, %s", bad, code, e)
		}
	}
	plainGraph, _ := testGraph(t, 100, 3, 8192)
	if _, e, code := cli(t, "run", "--graph", plainGraph, "--train", writeTrain(t, []uint32{1, 2}), "--fanouts", "2", "--epochs", "1", "--features"); code != 1 || !strings.Contains(e, "chunkify features") {
		t.Fatalf("no feature store: exit %d, %s", code, e)
	}
}
