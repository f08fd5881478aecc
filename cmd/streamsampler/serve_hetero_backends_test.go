package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/heterofmt"
	"github.com/streamsampler/streamsampler/serve"
)

// serveHeteroBatches runs serve with args over a heterogeneous graph and
// returns every minibatch of the first epochs epochs, as JSON, in order.
func serveHeteroBatches(t *testing.T, args []string, epochs int) []string {
	t.Helper()
	var got []string
	for _, b := range serveHetero(t, args, epochs) {
		js, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(js))
	}
	return got
}

// serveHetero runs serve with args over a heterogeneous graph and returns
// every minibatch of the first epochs epochs, in order.
func serveHetero(t *testing.T, args []string, epochs int) []*serve.HeteroBatch {
	t.Helper()
	dial, stop := startServe(t, args)
	defer stop()
	c := dial()
	defer c.Close()
	info, err := c.HeteroEpochInfo()
	if err != nil {
		t.Fatal(err)
	}
	var got []*serve.HeteroBatch
	for e := uint32(0); e < uint32(epochs); e++ {
		for {
			b, end, err := c.NextHeteroBatch(e, serve.DefaultSemantics, &info.Hetero)
			if err != nil {
				t.Fatalf("epoch %d: %v", e, err)
			}
			if end {
				break
			}
			got = append(got, b)
		}
	}
	return got
}

// A heterogeneous server gives the same minibatches, byte for byte, from
// one emulated device, three, and the GPU backend (a gpu.Backend per
// relation; here the GPU library's CPU stand-in, the real library where
// STREAMSAMPLER_GPU_TEST and STREAMSAMPLER_GPU_LIB name it), with both
// semantics, edge ids and feature rows (held in memory, or read from the
// stores' files with --feature-cache 0).
func TestServeHeteroBackendsAgree(t *testing.T) {
	lib := gpuLib(t)
	dir := buildHeteroMini(t)
	train := writeTrain(t, []uint32{0, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597})
	for _, sem := range []epoch.Semantics{epoch.PyG, epoch.DGL} {
		args := []string{"--graph", dir, "--train", train, "--train-type", "company", "--fanouts", "3,2",
			"--relation-fanouts", "company___likes___company=1,1", "--batch-size", "4", "--seed", "11",
			"--semantics", sem.String(), "--edge-ids", "--features", "-q"}
		one := serveHeteroBatches(t, args, 2)
		three := serveHeteroBatches(t, append(slices.Clone(args), "--devices", "3"), 2)
		gpu := serveHeteroBatches(t, append(slices.Clone(args), "--backend", "gpu", "--gpu-lib", lib), 2)
		// --feature-cache auto holds hetero-mini's stores in memory; 0
		// reads every row from its file.
		unheld := serveHeteroBatches(t, append(slices.Clone(args), "--feature-cache", "0"), 2)
		if len(one) != 8 {
			t.Fatalf("%s: %d minibatches in 2 epochs of 15 seeds by 4, want 8", sem, len(one))
		}
		if !slices.Equal(one, three) {
			t.Errorf("%s: 3 devices differ from 1", sem)
		}
		if !slices.Equal(one, unheld) {
			t.Errorf("%s: rows read from the files (--feature-cache 0) differ from rows held in memory", sem)
		}
		if !slices.Equal(one, gpu) {
			t.Errorf("%s: gpu (%s) differs from emu", sem, lib)
		}
		if strings.Contains(strings.Join(one, ""), "EIDs:[]") {
			t.Logf("%s: a relation without edges in some minibatch (fine)", sem)
		}
	}
}

// --relation-fanouts takes 0, PyG's "not sampled at that hop": the
// relation has no edges at that hop and its fanout elsewhere (DGL
// semantics, where hop 2 expands the seeds again; with PyG's, hop 2
// expands only the companies hop 1 reached, and only likes reaches one).
func TestServeHeteroZeroFanout(t *testing.T) {
	dir := buildHeteroMini(t)
	train := writeTrain(t, []uint32{0, 3, 5, 8, 13, 21, 34, 55})
	bs := serveHetero(t, []string{"--graph", dir, "--train", train, "--train-type", "company", "--fanouts", "3,2",
		"--relation-fanouts", "company___likes___company=0,2", "--batch-size", "4", "--semantics", "dgl", "-q"}, 1)
	if len(bs) != 2 {
		t.Fatalf("%d minibatches, want 2", len(bs))
	}
	info := serveHeteroInfo(t, dir)
	r := slices.IndexFunc(info.Relations, func(r [3]string) bool { return r == [3]string{"company", "likes", "company"} })
	if r < 0 {
		t.Fatalf("no relation company___likes___company in %v", info.Relations)
	}
	later := 0
	for _, b := range bs {
		if n := len(b.DGL[0].Edges[r].Src); n != 0 {
			t.Errorf("minibatch %d: %d edges of company___likes___company at hop 1, fanout 0", b.Index, n)
		}
		later += len(b.DGL[1].Edges[r].Src)
	}
	if later == 0 {
		t.Errorf("no edges of company___likes___company at hop 2 (fanout 2) in any minibatch")
	}
}

// serveHeteroInfo is the hetero object of a server over dir's epoch_info.
func serveHeteroInfo(t *testing.T, dir string) serve.HeteroInfo {
	t.Helper()
	m, err := heterofmt.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var info serve.HeteroInfo
	for _, r := range m.Relations {
		info.Relations = append(info.Relations, [3]string{r.Src, r.Rel, r.Dst})
	}
	return info
}

// serve --features over a heterogeneous graph says which node types'
// stores it holds in memory: every one of hetero-mini's with the default
// --feature-cache auto, none with 0, the smallest alone with room for it.
func TestServeHeteroFeatureCacheReport(t *testing.T) {
	dir := buildHeteroMini(t)
	train := writeTrain(t, []uint32{0, 3, 5, 8})
	m, err := heterofmt.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	var all []string // the types with a store, in the schema's order
	for _, nt := range m.NodeTypes {
		fm, err := featstore.ReadManifest(filepath.Join(dir, "features", nt.Name))
		if errors.Is(err, featstore.ErrNoFeatures) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sizes[nt.Name] = int64(fm.NumNodes) * fm.Features.RowBytes
		all = append(all, nt.Name)
	}
	if len(all) < 2 {
		t.Fatalf("hetero-mini has stores of %v: the test wants two or more", all)
	}
	smallest := all[0]
	for _, ty := range all {
		if sizes[ty] < sizes[smallest] {
			smallest = ty
		}
	}
	for _, tc := range []struct {
		cache, want string
	}{
		{"auto", "held in memory: " + strings.Join(all, ", ") + " ("},
		{"0", "held in memory: none ("},
		{strconv.FormatInt(sizes[smallest], 10), "held in memory: " + smallest + " (--feature-cache)"},
	} {
		var stderr bytes.Buffer
		dial, stop := startServeStderr(t, []string{"--graph", dir, "--train", train, "--train-type", "company", "--fanouts", "2",
			"--features", "--feature-cache", tc.cache}, &stderr)
		dial().Close()
		stop()
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("--feature-cache %s: stderr %q, want %q", tc.cache, stderr.String(), tc.want)
		}
	}
}
