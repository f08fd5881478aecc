package serve

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/pipeline"
)

// eidSampler is host.ReferenceEdgeIDs behind EpochSampler.
type eidSampler struct{ g *host.CSR }

func (s eidSampler) SampleEpoch(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
	return host.ReferenceEdgeIDs(s.g, seeds, fanouts, key)
}

// linkEdges draws m stored edges of g (with their ids and their
// reverses', g being undirected) and k pairs that are not looked up.
func linkEdges(g *host.CSR, m, k int, seed uint64) *epoch.EdgeSet {
	r := rand.New(rand.NewPCG(seed, 2))
	n := uint32(len(g.Indptr) - 1)
	es := &epoch.EdgeSet{}
	for range m {
		e := r.IntN(len(g.Indices))
		v := uint32(0)
		for g.Indptr[v+1] <= uint64(e) {
			v++
		}
		u := g.Indices[e]
		rev := int64(epoch.NoEdge)
		if p, ok := slices.BinarySearch(g.Indices[g.Indptr[u]:g.Indptr[u+1]], v); ok {
			rev = int64(g.Indptr[u]) + int64(p)
		}
		es.Src, es.Dst = append(es.Src, u), append(es.Dst, v)
		es.EIDs, es.RevEIDs = append(es.EIDs, int64(e)), append(es.RevEIDs, rev)
	}
	for range k {
		es.Src, es.Dst = append(es.Src, r.Uint32N(n)), append(es.Dst, r.Uint32N(n))
		es.EIDs, es.RevEIDs = append(es.EIDs, epoch.NoEdge), append(es.RevEIDs, epoch.NoEdge)
	}
	return es
}

// TestLinkServe: a server in link mode (binary negatives, reverse_id
// exclusion, features) hands out every minibatch of an epoch with its
// link fields, in both semantics, each equal to the link assembly of the
// reference epoch sampled over the union of the minibatches' seeds; the
// rows are the store's; epoch_info says link; triplet mode too.
func TestLinkServe(t *testing.T) {
	g := randomCSR(1500, 8, 4)
	fs := featureGraph(t, g, 3, featstore.Float32)
	for _, tc := range []struct {
		neg    epoch.NegMode
		amount float64
		excl   epoch.ExcludeMode
		labels bool
	}{
		{epoch.NegBinary, 1, epoch.ExcludeReverse, true},
		{epoch.NegTriplet, 2, epoch.ExcludeSelf, false},
		{epoch.NegNone, 0, epoch.ExcludeNone, false},
	} {
		t.Run(tc.neg.String(), func(t *testing.T) {
			es := linkEdges(g, 400, 40, 9)
			if tc.labels {
				es.LabelsI64 = make([]int64, es.Len())
				for i := range es.LabelsI64 {
					es.LabelsI64[i] = int64(i % 3)
				}
			}
			link := &epoch.Link{Edges: es, Neg: tc.neg, Amount: tc.amount, NumNodes: 1500, Exclude: tc.excl}
			cfg := Config{
				Config: pipeline.Config{Sampling: epoch.Sampling{Fanouts: []int{4, 3}, Seed: 3},
					BatchSize: 64, Epochs: 2, Link: link, Features: &pipeline.FeaturePlanning{CacheRows: 300, RowBytes: fs.RowBytes()}},
				Sampler: eidSampler{g}, NumNodes: 1500, EdgeIDs: true, Features: fs,
			}
			s := newTestServer(t, cfg)
			cl := dial(t, serveUnix(t, s))
			info, err := cl.EpochInfo()
			if err != nil {
				t.Fatal(err)
			}
			if info.Link == nil || info.Link.Mode != tc.neg.String() || info.Link.NumTrainEdges != 440 || info.Link.Exclude != tc.excl.String() || info.NumBatches != 7 {
				t.Fatalf("epoch_info %+v, link %+v", info.Info, info.Link)
			}
			m, seeds := cfg.Config.LinkMinibatches(info.Epoch)
			ref, err := host.ReferenceEdgeIDs(g, seeds, cfg.Fanouts, cfg.Key(info.Epoch))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; ; i++ {
				sem := []epoch.Semantics{epoch.PyG, epoch.DGL}[i%2]
				b, err := cl.NextBatchAs(info.Epoch, sem)
				if err != nil {
					t.Fatal(err)
				}
				if b.End {
					if i != len(m) {
						t.Fatalf("%d minibatches, want %d", i, len(m))
					}
					break
				}
				want, err := epoch.NewAssembler(ref, nil).AssembleLink(m[i], sem)
				if err != nil {
					t.Fatal(err)
				}
				if !sameBlocks(b.Blocks, want) {
					t.Fatalf("minibatch %d (%v) differs from the reference link assembly", i, sem)
				}
				if b.Link == nil || !equalLink(b.Link, &m[i].Fields) {
					t.Fatalf("minibatch %d: link fields %+v, want %+v", i, b.Link, m[i].Fields)
				}
				checkFeatures(t, fs, b.Blocks, b.Features)
			}
		})
	}
}

func equalLink(a, b *epoch.LinkFields) bool {
	return a.Mode == b.Mode && a.Amount == b.Amount && a.K == b.K && slices.Equal(a.InputID, b.InputID) &&
		slices.Equal(a.EdgeLabelIndex, b.EdgeLabelIndex) && slices.Equal(a.EdgeLabelF32, b.EdgeLabelF32) &&
		slices.Equal(a.EdgeLabelI64, b.EdgeLabelI64) && slices.Equal(a.SrcIndex, b.SrcIndex) &&
		slices.Equal(a.DstPosIndex, b.DstPosIndex) && slices.Equal(a.DstNegIndex, b.DstNegIndex)
}

// The byte-level example of docs/PROTOCOL.md, "Link minibatches" (and
// python/tests/test_protocol.py): a binary link minibatch of one hop,
// positive 3 → 5 (training edge 7) and negative 5 → 9, whose only sampled
// edge is 9 → 5.
func TestLinkByteExample(t *testing.T) {
	b := &epoch.Blocks{Epoch: 1, Seeds: []uint32{3, 5, 9}, Hops: []epoch.Hop{{
		Dst: []uint32{3, 5, 9}, Src: []uint32{3, 5, 9}, EdgeSrc: []int32{2}, EdgeDst: []int32{1},
	}}}
	link := &epoch.LinkFields{Mode: epoch.NegBinary, Amount: 1, InputID: []int64{7},
		EdgeLabelIndex: []int64{0, 1, 1, 2}, EdgeLabelF32: []float32{1, 0}}
	var got bytes.Buffer
	for _, p := range EncodeLinkBatch(OpNextBatch, 1, b, 0, nil, link) {
		got.Write(p)
	}
	want := strings.Join([]string{
		"d1000000", "0200", "01000000", // length 209, next_batch ok, id 1
		"01000000", "00000000", "01", "04", // epoch 1, minibatch 0, 1 hop, flags: link
		"010103000000000000000300000005000000" + "09000000", // seeds u32 [3]: 3 5 9
		"010103000000000000000300000005000000" + "09000000", // hop 1 dst
		"010103000000000000000300000005000000" + "09000000", // hop 1 src
		"02010100000000000000" + "02000000",                 // edge_src i32 [1]: 2
		"02010100000000000000" + "01000000",                 // edge_dst i32 [1]: 1
		"01", "01000000", "000000000000f03f",                // mode binary, P 1, amount 1.0
		"03010100000000000000" + "0700000000000000", // input_id i64 [1]: 7
		"030202000000000000000200000000000000" + "0000000000000000" + "0100000000000000" + "0100000000000000" + "0200000000000000", // edge_label_index i64 [2, 2]
		"05010200000000000000" + "0000803f" + "00000000", // edge_label f32 [2]: 1 0
	}, "")
	if h := hex.EncodeToString(got.Bytes()); h != want {
		t.Fatalf("bytes\n%s\nwant\n%s", h, want)
	}
	db, i, _, dl, err := DecodeLinkBatch(got.Bytes()[HeaderSize:])
	if err != nil || i != 0 || !sameBlocks(db, b) || dl == nil || !equalLink(dl, link) {
		t.Fatalf("decoded %v %v %+v: %v", db, i, dl, err)
	}
	// A node client's decoder skips the link fields.
	if nb, _, _, err := DecodeBatch(got.Bytes()[HeaderSize:]); err != nil || !sameBlocks(nb, b) {
		t.Fatalf("DecodeBatch of a link minibatch: %v", err)
	}
	// Corrupt link sections are refused, never panic.
	p := got.Bytes()[HeaderSize:]
	for cut := 1; cut < len(p); cut++ {
		if _, _, _, _, err := DecodeLinkBatch(p[:cut]); err == nil {
			t.Fatalf("a payload cut at %d decoded", cut)
		}
	}
	bad := slices.Clone(p)
	bad[len(bad)-8-10-4*8+7] = 9 // edge_label_index's first local id: 9, past the 3 nodes
	if _, _, _, _, err := DecodeLinkBatch(bad); err == nil || !strings.Contains(err.Error(), "local id") {
		t.Fatalf("a local id past n_id: %v", err)
	}
}

// TestLinkSplit: link_split registers evaluation edges (on a node server
// as well); its minibatches, in order through split_batch, are the edges
// cut unshuffled with negatives under (seed, epoch 0), each assembled from
// the split's own sample under the current epoch's key; the same request
// gets the same split; bad requests are refused.
func TestLinkSplit(t *testing.T) {
	g := randomCSR(1200, 6, 5)
	cfg := Config{
		Config:  pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(1200, 3), Fanouts: []int{3, 2}, Seed: 8}, BatchSize: 50, Epochs: 2},
		Sampler: &refSampler{g: g}, NumNodes: 1200,
	}
	s := newTestServer(t, cfg)
	cl := dial(t, serveUnix(t, s))
	es := linkEdges(g, 90, 30, 11)
	req := &LinkSplitRequest{BatchSize: 25, Neg: epoch.NegBinary, Amount: 2, Seed: 77,
		Edges: epoch.EdgeSet{Src: es.Src, Dst: es.Dst, LabelsF32: make([]float32, es.Len())}}
	info, err := cl.LinkSplit(req)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumEdges != 120 || info.NumBatches != 5 || info.BatchSize != 25 {
		t.Fatalf("link split info %+v", info)
	}
	if again, err := cl.LinkSplit(req); err != nil || again.Split != info.Split {
		t.Fatalf("the same link split again: %+v, %v", again, err)
	}
	link := &epoch.Link{Edges: &req.Edges, Neg: req.Neg, Amount: req.Amount, NumNodes: 1200}
	var lbs []*epoch.LinkBatch
	for lo := 0; lo < 120; lo += 25 {
		var ids []uint32
		for i := lo; i < min(lo+25, 120); i++ {
			ids = append(ids, uint32(i))
		}
		lbs = append(lbs, link.Batch(ids, 77, 0))
	}
	ei, err := cl.EpochInfo()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := host.Reference(g, epoch.LinkSeeds(lbs), cfg.Fanouts, cfg.Key(ei.Epoch))
	if err != nil {
		t.Fatal(err)
	}
	for i := uint32(0); ; i++ {
		b, err := cl.SplitBatch(info.Split, i, epoch.PyG)
		if err != nil {
			t.Fatal(err)
		}
		if b.End {
			if i != 5 {
				t.Fatalf("%d minibatches, want 5", i)
			}
			break
		}
		want, err := epoch.NewAssembler(ref, nil).AssembleLink(lbs[i], epoch.PyG)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBlocks(b.Blocks, want) || b.Link == nil || !equalLink(b.Link, &lbs[i].Fields) {
			t.Fatalf("link split minibatch %d differs", i)
		}
		// Labels all 0, binary: shifted to 1 (PyG), negatives 0.
		if b.Link.EdgeLabelF32[0] != 1 || b.Link.EdgeLabelF32[len(b.Link.EdgeLabelF32)-1] != 0 {
			t.Fatalf("labels %v", b.Link.EdgeLabelF32)
		}
	}
	if err := cl.DropSplit(info.Split); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []*LinkSplitRequest{
		{BatchSize: 10, Neg: epoch.NegTriplet, Amount: 1.5, Edges: epoch.EdgeSet{Src: []uint32{1}, Dst: []uint32{2}}},
		{BatchSize: 10, Neg: epoch.NegNone, Edges: epoch.EdgeSet{Src: []uint32{1}, Dst: []uint32{1200}}},
		{BatchSize: 0, Neg: epoch.NegNone, Edges: epoch.EdgeSet{Src: []uint32{1}, Dst: []uint32{2}}},
	} {
		if _, err := cl.LinkSplit(bad); err == nil || !strings.Contains(err.Error(), "server error 1") {
			t.Fatalf("bad link split %+v: %v", bad, err)
		}
	}
	// Payloads that do not parse.
	p := AppendLinkSplitRequest(nil, req)
	for cut := 0; cut < len(p); cut++ {
		if _, err := DecodeLinkSplitRequest(p[:cut]); err == nil {
			t.Fatalf("a link_split payload cut at %d decoded", cut)
		}
	}
}

// FuzzDecodeLinkSplitRequest feeds arbitrary payloads to the link_split
// decoder (bytes from any client): none may panic, every error wraps
// ErrMalformed, and whatever decodes re-encodes to the same bytes.
func FuzzDecodeLinkSplitRequest(f *testing.F) {
	for _, r := range []*LinkSplitRequest{
		{BatchSize: 2, Neg: epoch.NegBinary, Amount: 1, Seed: 5, Edges: epoch.EdgeSet{Src: []uint32{1}, Dst: []uint32{2}, LabelsI64: []int64{0}}},
		{BatchSize: 64, Neg: epoch.NegTriplet, Amount: 3, Edges: epoch.EdgeSet{Src: []uint32{1, 4}, Dst: []uint32{2, 0}}},
		{BatchSize: 1, Neg: epoch.NegNone, Edges: epoch.EdgeSet{Src: []uint32{9}, Dst: []uint32{9}, LabelsF32: []float32{0.5}}},
	} {
		f.Add(AppendLinkSplitRequest(nil, r))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := DecodeLinkSplitRequest(p)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if re := AppendLinkSplitRequest(nil, r); !bytes.Equal(re, p) {
			t.Fatalf("link_split request re-encodes differently")
		}
	})
}
