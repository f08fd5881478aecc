package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/pipeline"
	"github.com/streamsampler/streamsampler/randread"
)

// randreadFresh is the random-read sampler behind FreshSampler, as
// `streamsampler serve` puts it (cmd/streamsampler/serve_fresh.go).
type randreadFresh struct{ s *randread.Sampler }

func (f randreadFresh) SampleFresh(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key, edgeIDs bool, sem epoch.Semantics) (*epoch.Blocks, error) {
	b, _, err := f.s.Blocks(ctx, randread.Request{Seeds: seeds, Fanouts: fanouts, Key: key, EdgeIDs: edgeIDs}, sem)
	if errors.Is(err, randread.ErrInvalid) {
		err = fmt.Errorf("%w: %w", ErrFreshInvalid, err)
	}
	return b, err
}

// packGraph writes g as a graph directory of small chunks.
func packGraph(t *testing.T, g *host.CSR) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "g")
	w, err := chunkfmt.NewWriter(dir, g.NumNodes(), 2048, chunkfmt.Options{Dedup: true})
	if err != nil {
		t.Fatal(err)
	}
	for v := uint32(0); v < g.NumNodes(); v++ {
		nb, _ := g.Neighbors(v)
		if err := w.Append(nb); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSampleFresh: a sample_fresh request is answered with the
// random-read sampler's minibatch, which for training seeds and the
// server's own key equals what sample answers from the prepared epoch, in
// both semantics; with another key and any nodes it equals the
// reference epoch of those seeds assembled; edge ids when asked; the
// cursor does not move; bad requests get their codes.
func TestSampleFresh(t *testing.T) {
	g := randomCSR(400, 6, 9)
	rs, err := randread.Open(context.Background(), packGraph(t, g), randread.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	train := trainNodes(400, 3)
	fanouts := []int{5, 3}
	// A small budget (a connection's share is 4 MiB), so that a request
	// whose reply could outgrow it is refused.
	var maxDeg int64
	for v := range uint32(400) {
		maxDeg = max(maxDeg, int64(g.Indptr[v+1]-g.Indptr[v]))
	}
	cfg := Config{Sampler: &refSampler{g: g}, Fresh: randreadFresh{rs}, NumNodes: 400, MaxDegree: maxDeg, NumEdges: int64(len(g.Indices)), MaxRequest: 1 << 20, MaxInflight: 8 << 20,
		Config: pipeline.Config{Sampling: epoch.Sampling{Train: train, Fanouts: fanouts, Seed: 4}, BatchSize: 10, PrepareAt: 1}}
	s := newTestServer(t, cfg)
	c := dial(t, serveUnix(t, s))
	for _, sem := range []epoch.Semantics{epoch.DGL, epoch.PyG} {
		seeds := []uint32{33, 0, 399, 150}
		b, _, err := c.SampleFresh(FreshRequest{Seeds: seeds, Fanouts: fanouts, Key: epoch.Key{Seed: 4}, Semantics: sem})
		if err != nil {
			t.Fatal(err)
		}
		f, err := c.roundTrip(OpSample, AppendSampleRequest(nil, CurrentEpoch, seeds, sem))
		if err != nil {
			t.Fatal(err)
		}
		want, _, _, err := DecodeBatch(f.Payload)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(b, want) {
			t.Fatalf("%v: sample_fresh differs from sample on the prepared epoch", sem)
		}
		// Any nodes, another key, edge ids.
		seeds = []uint32{1, 2, 398, 17}
		key := epoch.Key{Seed: 8, Epoch: 5, Replace: true}
		b, _, err = c.SampleFresh(FreshRequest{Seeds: seeds, Fanouts: []int{4, 4, 2}, Key: key, EdgeIDs: true, Semantics: sem})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := host.ReferenceEdgeIDs(g, seeds, []int{4, 4, 2}, key)
		if err != nil {
			t.Fatal(err)
		}
		want, err = ref.Assemble(seeds, sem)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(b, want) || !b.HasEdgeIDs() || b.Epoch != 5 {
			t.Fatalf("%v: sample_fresh of any nodes differs from the reference", sem)
		}
	}
	// Full hops (fanout -1) alone and mixed: the reference's minibatch.
	for _, fo := range [][]int{{-1}, {-1, 3}, {4, -1}} {
		seeds := []uint32{7, 200, 3}
		key := epoch.Key{Seed: 2, Epoch: 1}
		b, _, err := c.SampleFresh(FreshRequest{Seeds: seeds, Fanouts: fo, Key: key, EdgeIDs: true, Semantics: epoch.PyG})
		if err != nil {
			t.Fatalf("fanouts %v: %v", fo, err)
		}
		ref, err := host.ReferenceEdgeIDs(g, seeds, fo, key)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Assemble(seeds, epoch.PyG)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(b, want) {
			t.Fatalf("fanouts %v: sample_fresh differs from the reference", fo)
		}
	}
	if info := s.Info(); info.Served != 0 {
		t.Fatalf("sample_fresh moved the cursor: %d served", info.Served)
	}
	wantCode := func(err error, code uint16, what string) {
		t.Helper()
		var re *RemoteError
		if !errors.As(err, &re) || re.Code != code || !bytes.Contains([]byte(re.Message), []byte(what)) {
			t.Fatalf("err %v, want code %d with %q", err, code, what)
		}
	}
	_, _, err = c.SampleFresh(FreshRequest{Seeds: []uint32{5, 400}, Fanouts: fanouts})
	wantCode(err, CodeBadRequest, "seed 400 (position 1) is not a node")
	_, _, err = c.SampleFresh(FreshRequest{Seeds: []uint32{5, 6, 5}, Fanouts: fanouts})
	wantCode(err, CodeDuplicateSeed, "seed 5 at positions 0 and 2")
	_, _, err = c.SampleFresh(FreshRequest{Seeds: []uint32{5}, Fanouts: []int{3, 0}})
	wantCode(err, CodeBadRequest, "fanout 0 of layer 1")
	_, _, err = c.SampleFresh(FreshRequest{Seeds: []uint32{5}, Fanouts: []int{-2}})
	wantCode(err, CodeBadRequest, "fanout -2 of layer 0 (hop 1), want a positive fanout or -1")
	_, _, err = c.SampleFresh(FreshRequest{Seeds: []uint32{5}, Fanouts: []int{3, 65}})
	wantCode(err, CodeBadRequest, "fanout 65 of layer 1 (hop 2), want 1..64 or -1")
	_, _, err = c.SampleFresh(FreshRequest{Seeds: []uint32{5}, Fanouts: []int{3}, Semantics: 7})
	wantCode(err, CodeBadRequest, "semantics 7")
	many := make([]uint32, 200000)
	for i := range many {
		many[i] = uint32(i)
	}
	_, _, err = c.SampleFresh(FreshRequest{Seeds: many, Fanouts: []int{64, 64, 64}})
	wantCode(err, CodeOverBudget, "send fewer seeds")
	// The connection still answers.
	if _, _, err := c.SampleFresh(FreshRequest{Seeds: []uint32{5}, Fanouts: []int{3}}); err != nil {
		t.Fatal(err)
	}

	cfg.Fresh = nil
	c2 := dial(t, serveUnix(t, newTestServer(t, cfg)))
	_, _, err = c2.SampleFresh(FreshRequest{Seeds: []uint32{5}, Fanouts: []int{3}})
	wantCode(err, CodeBadRequest, "no random-read sampler")
}

// TestFreshRequestBytes pins sample_fresh's payload (docs/PROTOCOL.md's
// example; python/tests/test_protocol.py pins the same bytes) and its
// round trip; unknown flags and truncations are malformed.
func TestFreshRequestBytes(t *testing.T) {
	r := FreshRequest{Seeds: []uint32{5, 9}, Fanouts: []int{15, 10}, Key: epoch.Key{Seed: 7, Epoch: 2, Replace: true}, EdgeIDs: true, Semantics: epoch.PyG}
	p := AppendFreshRequest(nil, r)
	want := []byte{
		7, 0, 0, 0, 0, 0, 0, 0, // seed 7
		2, 0, 0, 0, // epoch 2
		3,                                                      // flags: replace, edge ids
		2, 1, 2, 0, 0, 0, 0, 0, 0, 0, 15, 0, 0, 0, 10, 0, 0, 0, // fanouts: i32 [2]
		1, 1, 2, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 9, 0, 0, 0, // seeds: u32 [2]
		1, // semantics: pyg
	}
	if !bytes.Equal(p, want) {
		t.Fatalf("payload % x\nwant    % x", p, want)
	}
	got, err := DecodeFreshRequest(p)
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	r.Semantics = DefaultSemantics
	if got, err := DecodeFreshRequest(AppendFreshRequest(nil, r)); err != nil || got.Semantics != DefaultSemantics {
		t.Fatalf("without semantics: %+v %v", got, err)
	}
	bad := bytes.Clone(p)
	bad[12] = 4
	if _, err := DecodeFreshRequest(bad); !errors.Is(err, ErrMalformed) {
		t.Fatalf("unknown flag: %v", err)
	}
	for n := range len(p) - 1 {
		if _, err := DecodeFreshRequest(p[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
}

// FuzzDecodeFreshRequest: any payload decodes or is malformed, never
// panics, and what decodes encodes back to the same bytes.
func FuzzDecodeFreshRequest(f *testing.F) {
	f.Add(AppendFreshRequest(nil, FreshRequest{Seeds: []uint32{5, 9}, Fanouts: []int{15, 10}, Key: epoch.Key{Seed: 7}, Semantics: epoch.PyG}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := DecodeFreshRequest(p)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if q := AppendFreshRequest(nil, r); !bytes.Equal(p, q) {
			t.Fatalf("decoded %+v encodes to % x, not % x", r, q, p)
		}
	})
}

// TestSampleFreshFeatures: a server with a feature store answers
// sample_fresh with the store's rows of the minibatch's nodes and its
// seeds' labels, as it answers sample.
func TestSampleFreshFeatures(t *testing.T) {
	g := randomCSR(1000, 5, 3)
	fs := featureGraph(t, g, 8, featstore.Float32)
	rs, err := randread.Open(context.Background(), filepath.Dir(fs.FeaturesPath()), randread.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	cfg := Config{Sampler: &refSampler{g: g}, Fresh: randreadFresh{rs}, NumNodes: 1000, Features: fs,
		Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(1000, 4), Fanouts: []int{4, 2}, Seed: 2}, BatchSize: 16,
			Features: &pipeline.FeaturePlanning{CacheRows: 100}}}
	c := dial(t, serveUnix(t, newTestServer(t, cfg)))
	for _, seeds := range [][]uint32{{3, 999, 500}, {0}} {
		b, f, err := c.SampleFresh(FreshRequest{Seeds: seeds, Fanouts: []int{4, 2}, Key: epoch.Key{Seed: 6, Epoch: 1}})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := host.Reference(g, seeds, []int{4, 2}, epoch.Key{Seed: 6, Epoch: 1})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ref.Assemble(seeds, epoch.DGL)
		if !reflect.DeepEqual(b, want) {
			t.Fatalf("seeds %v: blocks differ from the reference", seeds)
		}
		checkFeatures(t, fs, b, f)
	}
}
