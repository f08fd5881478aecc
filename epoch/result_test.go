package epoch_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epoch/epochtest"
)

// naiveNext is the definition: sort and dedupe frontier ∪ valid samples.
func naiveNext(frontier []uint32, samples []int32) []uint32 {
	all := slices.Clone(frontier)
	for _, s := range samples {
		if s >= 0 {
			all = append(all, uint32(s))
		}
	}
	slices.Sort(all)
	return slices.Compact(all)
}

func randomNextInput(r *rand.Rand, nFrontier, nSamples int, span uint32) ([]uint32, []int32) {
	f := make([]uint32, nFrontier)
	for i := range f {
		f[i] = r.Uint32N(span)
	}
	slices.Sort(f)
	f = slices.Compact(f)
	s := make([]int32, nSamples)
	for i := range s {
		if r.IntN(5) == 0 {
			s[i] = -1
		} else {
			s[i] = int32(r.Uint32N(span))
		}
	}
	return f, s
}

func TestNextFrontier(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	cases := []struct {
		nf, ns int
		span   uint32
	}{
		{0, 0, 10}, {5, 0, 10}, {0, 5, 10}, {3, 40, 16}, // tiny
		{100, 500, 1 << 31},      // sparse, comparison sort
		{1000, 20000, 1 << 16},   // dense: bitmap
		{1000, 20000, 1 << 31},   // sparse: radix, 4 passes
		{1000, 20000, 1 << 22},   // radix, top byte pass skipped
		{20000, 100000, 1 << 20}, // bitmap at scale
		{10, 5000, 1 << 20},      // radix
	}
	for _, c := range cases {
		f, s := randomNextInput(r, c.nf, c.ns, c.span)
		want := naiveNext(f, s)
		got := epoch.NextFrontier(f, s)
		if !slices.Equal(got, want) {
			t.Fatalf("nf=%d ns=%d span=%d: differs from the definition", c.nf, c.ns, c.span)
		}
		// Every method on its own, whatever NextFrontier would choose.
		n, mx := epoch.CountValid(s)
		if len(f) > 0 {
			mx = max(mx, f[len(f)-1])
		}
		if n > 0 {
			methods := map[string][]uint32{
				"sort":  epoch.NextSort(f, s, n),
				"radix": epoch.NextRadix(f, s, n),
			}
			if mx < 1<<24 { // a bitmap over 2^31 ids is 256 MiB
				methods["bitmap"] = epoch.NextBitmap(f, s, mx)
			}
			for name, got := range methods {
				if !slices.Equal(got, want) {
					t.Fatalf("%s nf=%d ns=%d span=%d: differs from the definition", name, c.nf, c.ns, c.span)
				}
			}
		}
	}
	// All -1 with the maximal id in the frontier.
	f := []uint32{1, 1<<31 - 1}
	if got := epoch.NextFrontier(f, []int32{-1, -1}); !slices.Equal(got, f) || &got[0] == &f[0] {
		t.Fatal("all-padding samples must give a copy of the frontier")
	}
}

func TestValidate(t *testing.T) {
	res := epochtest.NewResult(t, 4, 300, []int{3, 2})
	if err := res.Validate(); err != nil {
		t.Fatal(err)
	}
	if res.NumSampledEdges() == 0 || !slices.Equal(res.Fanouts(), []int{3, 2}) || res.NumLayers() != 2 {
		t.Fatal("helpers disagree with the result")
	}
	clone := func() *epoch.Result {
		c := &epoch.Result{Key: res.Key, Final: slices.Clone(res.Final)}
		for _, l := range res.Layers {
			c.Layers = append(c.Layers, epoch.Layer{Frontier: slices.Clone(l.Frontier), Fanout: l.Fanout, Samples: slices.Clone(l.Samples)})
		}
		return c
	}
	// A sample that is a new node, at a known row of layer 1.
	missing := uint32(res.Final[len(res.Final)-1] + 1)
	cases := map[string]struct {
		mut  func(r *epoch.Result)
		want string
	}{
		"fanout":    {func(r *epoch.Result) { r.Layers[0].Fanout = 0 }, "layer 0: fanout 0"},
		"unsorted":  {func(r *epoch.Result) { f := r.Layers[1].Frontier; f[2], f[3] = f[3], f[2] }, "layer 1 frontier: entry 3"},
		"duplicate": {func(r *epoch.Result) { f := r.Layers[0].Frontier; f[1] = f[0] }, "layer 0 frontier: entry 1"},
		"length":    {func(r *epoch.Result) { r.Layers[1].Samples = r.Layers[1].Samples[1:] }, "layer 1:"},
		"negative":  {func(r *epoch.Result) { r.Layers[0].Samples[7] = -5 }, "layer 0 row 2"},
		"final":     {func(r *epoch.Result) { r.Final = r.Final[:len(r.Final)-1] }, "frontier 2 lacks node"},
		"sampled":   {func(r *epoch.Result) { r.Layers[1].Samples[2*2+1] = int32(missing) }, "sampled by layer 1 row 2"},
		"extra":     {func(r *epoch.Result) { r.Final = append(r.Final, missing) }, "neither in frontier 1"},
	}
	for name, c := range cases {
		r := clone()
		c.mut(r)
		err := r.Validate()
		if !errors.Is(err, epoch.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want mention of %q", name, err, c.want)
		}
	}
}

func TestValidateEdgeIDs(t *testing.T) {
	fresh := func() *epoch.Result { return epochtest.WithEdgeIDs(epochtest.NewResult(t, 4, 300, []int{3, 2})) }
	res := fresh()
	if err := res.Validate(); err != nil {
		t.Fatal(err)
	}
	filled, empty := -1, -1 // a filled and an empty slot of layer 1
	for i, s := range res.Layers[1].Samples {
		if s >= 0 && filled < 0 {
			filled = i
		}
		if s == -1 && empty < 0 {
			empty = i
		}
	}
	if filled < 0 || empty < 0 {
		t.Fatal("test result lacks a filled or an empty slot in layer 1")
	}
	row := func(i int) string { return fmt.Sprintf("layer 1 row %d", i/2) }
	cases := map[string]struct {
		mut  func(r *epoch.Result)
		want string
	}{
		"short":          {func(r *epoch.Result) { r.Layers[1].EdgeIDs = r.Layers[1].EdgeIDs[1:] }, "layer 1: "},
		"missing layer":  {func(r *epoch.Result) { r.Layers[1].EdgeIDs = nil }, "layer 1 has no edge ids"},
		"extra layer":    {func(r *epoch.Result) { r.Layers[0].EdgeIDs = nil }, "layer 1 has edge ids, layer 0 has none"},
		"-1 at a sample": {func(r *epoch.Result) { r.Layers[1].EdgeIDs[filled] = -1 }, row(filled)},
		"id at -1":       {func(r *epoch.Result) { r.Layers[1].EdgeIDs[empty] = 5 }, row(empty)},
		"negative":       {func(r *epoch.Result) { r.Layers[1].EdgeIDs[filled] = -7 }, row(filled)},
	}
	for name, c := range cases {
		r := fresh()
		c.mut(r)
		err := r.Validate()
		if !errors.Is(err, epoch.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want mention of %q", name, err, c.want)
		}
	}
}

// A full layer (fanout -1) is a CSR: Validate checks its row offsets and
// that it holds no empty slot, naming the layer and the row.
func TestValidateFull(t *testing.T) {
	fresh := func() *epoch.Result {
		r := epochtest.NewResult(t, 6, 300, []int{-1, 2})
		return epochtest.WithEdgeIDs(r)
	}
	res := fresh()
	if err := res.Validate(); err != nil {
		t.Fatal(err)
	}
	ly := &res.Layers[0]
	if !ly.Full() || ly.Offsets == nil || res.Layers[1].Offsets != nil {
		t.Fatal("layer 0 should be full, layer 1 not")
	}
	for i := range ly.Frontier {
		lo, hi := ly.Span(i)
		if row := ly.Row(i); len(row) != hi-lo || int64(lo) != ly.Offsets[i] {
			t.Fatalf("row %d: span [%d, %d), %d samples", i, lo, hi, len(row))
		}
	}
	// The first row with at least two neighbors.
	long := -1
	for i := range ly.Frontier {
		if lo, hi := ly.Span(i); hi-lo >= 2 && long < 0 {
			long = i
		}
	}
	if long < 0 {
		t.Fatal("no row with two neighbors")
	}
	at := int(ly.Offsets[long]) + 1
	cases := map[string]struct {
		mut  func(r *epoch.Result)
		want string
	}{
		"no offsets":      {func(r *epoch.Result) { r.Layers[0].Offsets = nil }, "layer 0 (every neighbor): 0 row offsets"},
		"short offsets":   {func(r *epoch.Result) { r.Layers[0].Offsets = r.Layers[0].Offsets[1:] }, "row offsets for"},
		"start":           {func(r *epoch.Result) { r.Layers[0].Offsets[0] = 1 }, "start at 1"},
		"decreasing":      {func(r *epoch.Result) { r.Layers[0].Offsets[long+1] = r.Layers[0].Offsets[long] - 1 }, fmt.Sprintf("row %d", long)},
		"end":             {func(r *epoch.Result) { r.Layers[0].Samples = r.Layers[0].Samples[1:] }, "row offsets end at"},
		"empty slot":      {func(r *epoch.Result) { r.Layers[0].Samples[at] = -1 }, fmt.Sprintf("layer 0 row %d (node %d) slot 1", long, ly.Frontier[long])},
		"offsets on k":    {func(r *epoch.Result) { r.Layers[1].Offsets = []int64{0} }, "layer 1: fanout 2 with row offsets"},
		"edge id at row":  {func(r *epoch.Result) { r.Layers[0].EdgeIDs[at] = -1 }, fmt.Sprintf("layer 0 row %d", long)},
		"fanout -2":       {func(r *epoch.Result) { r.Layers[0].Fanout = -2 }, "fanout -2"},
		"sampled by full": {func(r *epoch.Result) { r.Final = r.Final[1:] }, "frontier 2 lacks node"},
	}
	for name, c := range cases {
		r := fresh()
		c.mut(r)
		err := r.Validate()
		if !errors.Is(err, epoch.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want mention of %q", name, err, c.want)
		}
		if name != "sampled by full" && name != "empty slot" && name != "edge id at row" {
			if err := r.CheckShape(); err == nil {
				t.Errorf("%s: CheckShape accepts it", name)
			}
		}
	}
}
