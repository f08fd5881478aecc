package serve

import (
	"context"
	"encoding/hex"
	"errors"
	"net"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/heteroepoch"
	"github.com/streamsampler/streamsampler/heterosample"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/ingest/ingesttest"
)

// exampleSchema is docs/PROTOCOL.md's heterogeneous example: papers and
// authors, one relation author→writes→paper.
func exampleSchema() *heteroepoch.Schema {
	return &heteroepoch.Schema{
		NodeTypes: []heteroepoch.NodeType{{Name: "paper", Count: 10}, {Name: "author", Count: 10}},
		Relations: []heteroepoch.Relation{{Src: "author", Name: "writes", Dst: "paper"}},
	}
}

// heteroExampleHex is the frame of docs/PROTOCOL.md's byte-level
// heterogeneous example (python/tests/test_hetero_wire.py pins the same).
const heteroExampleHex = "" +
	"a0000000" + "02" + "00" + "07000000" + // length, op 2, status 0, id 7
	"05000000" + "00000000" + "01" + "09" + "0200" + "0100" + // epoch 5, batch 0, 1 hop, flags pyg|hetero, T=2, R=1
	"0101" + "0100000000000000" + "03000000" + // paper n_id [3]
	"0101" + "0200000000000000" + "01000000" + "00000000" + // paper num_sampled_nodes [1, 0]
	"01000000" + // paper batch_size 1
	"0101" + "0200000000000000" + "04000000" + "09000000" + // author n_id [4, 9]
	"0101" + "0200000000000000" + "00000000" + "02000000" + // author num_sampled_nodes [0, 2]
	"00000000" + // author batch_size 0
	"0302" + "0200000000000000" + "0200000000000000" + // edge_index i64 [2, 2]
	"0000000000000000" + "0100000000000000" + "0000000000000000" + "0000000000000000" +
	"0101" + "0100000000000000" + "02000000" // num_sampled_edges [2]

func exampleBatch() *HeteroBatch {
	return &HeteroBatch{Epoch: 5, Index: 0, Semantics: epoch.PyG, Hops: 1, PyG: &heteroepoch.PyGBatch{
		Nodes: []heteroepoch.PyGNodes{
			{NID: []uint32{3}, NumSampledNodes: []int{1, 0}, BatchSize: 1},
			{NID: []uint32{4, 9}, NumSampledNodes: []int{0, 2}, BatchSize: 0},
		},
		Edges: []heteroepoch.PyGEdges{{Row: []int32{0, 1}, Col: []int32{0, 0}, NumSampledEdges: []int{2}}},
	}}
}

// The byte-level example of docs/PROTOCOL.md: a paper seed with two
// sampled authors, encoded byte for byte, and decoded back to itself.
func TestHeteroByteExample(t *testing.T) {
	got, err := MarshalHeteroBatch(OpNextBatch, 7, exampleBatch())
	if err != nil {
		t.Fatal(err)
	}
	if h := hex.EncodeToString(got); h != heteroExampleHex {
		t.Fatalf("frame\n%s\nwant\n%s", h, heteroExampleHex)
	}
	b, err := DecodeHeteroBatch(got[HeaderSize:], exampleSchema())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b, exampleBatch()) {
		t.Fatalf("decoded %+v", b)
	}
	// A homogeneous decoder refuses it (flag bit 3 is not its), and the
	// heterogeneous one refuses every truncation and a wrong schema.
	if _, _, _, err := DecodeBatch(got[HeaderSize:]); !errors.Is(err, ErrMalformed) {
		t.Fatalf("homogeneous decode: %v", err)
	}
	for n := HeaderSize; n < len(got); n++ {
		if _, err := DecodeHeteroBatch(got[HeaderSize:n], exampleSchema()); !errors.Is(err, ErrMalformed) {
			t.Fatalf("truncated at %d: %v", n, err)
		}
	}
	s := exampleSchema()
	s.NodeTypes = append(s.NodeTypes, heteroepoch.NodeType{Name: "x", Count: 1})
	if _, err := DecodeHeteroBatch(got[HeaderSize:], s); !errors.Is(err, ErrMalformed) {
		t.Fatalf("wrong schema: %v", err)
	}
	bad := append([]byte(nil), got[HeaderSize:]...)
	bad[len(bad)-4-8-2-16-8] = 2 // an edge's row (author position) beyond n_id
	if _, err := DecodeHeteroBatch(bad, exampleSchema()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("edge outside n_id: %v", err)
	}
}

// buildHeteroMini builds the bundled testdata/hetero-mini as chunkify
// build --ogb-raw --add-reverse does.
func buildHeteroMini(t *testing.T) string {
	return ingesttest.HeteroMini(t, filepath.Join("..", "testdata"))
}

// serveHetero serves dir's heterogeneous epochs (on devices devices) and
// returns every frame of epochs 0 and 1 as a client reads them, each
// minibatch decoded and checked against heterosample's own assembly of
// the same epoch (an independent sampler over the same directory).
func serveHetero(t *testing.T, dir string, devices int, sem epoch.Semantics) [][]byte {
	t.Helper()
	ctx := context.Background()
	smp, schema, err := heterosample.OpenDir(dir, heterosample.Options{Host: host.Options{Devices: devices, EdgeIDs: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer smp.Close()
	ref, _, err := heterosample.OpenDir(dir, heterosample.Options{Host: host.Options{Devices: 1, EdgeIDs: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	fanouts, err := schema.FanoutsFromMap(map[string][]int{schema.Relations[0].String(): {2, 0}}, []int{4, 3})
	if err != nil {
		t.Fatal(err)
	}
	trainType := schema.NodeTypes[0]
	var train []uint32
	for v := uint32(0); v < trainType.Count; v += 2 {
		train = append(train, v)
	}
	// Every type of hetero-mini has a feature store (features/<type>/).
	stores, err := OpenHeteroFeatures(dir, schema)
	if err != nil || len(stores) != len(schema.NodeTypes) || slices.Contains(stores, nil) {
		t.Fatalf("feature stores %v: %v", stores, err)
	}
	defer CloseStores(stores)
	cfg := HeteroConfig{Sampler: smp, Schema: schema, TrainType: trainType.Name, Train: train, Fanouts: fanouts,
		BatchSize: 16, Seed: 11, Semantics: sem, World: 1, EdgeIDs: true, Features: stores}
	h, err := NewHeteroEpochs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewHeteroServer(ctx, h, 0, []byte("tok"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	defer func() {
		ln.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	c, err := DialToken("unix", ln.Addr().String(), []byte("tok"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info, err := c.HeteroEpochInfo()
	if err != nil {
		t.Fatal(err)
	}
	if info.Protocol != Protocol || len(info.Hetero.NodeTypes) != len(schema.NodeTypes) || len(info.Hetero.Relations) != len(schema.Relations) {
		t.Fatalf("epoch_info %+v", info)
	}
	var frames [][]byte
	for e := uint32(0); e < 2; e++ {
		shard, _ := epoch.Shard(train, 0, 1, cfg.Seed, e)
		want, err := ref.SampleEpoch(ctx, []heteroepoch.Seeds{{Type: trainType.Name, Nodes: shard}}, fanouts, epoch.Key{Seed: cfg.Seed, Epoch: e})
		if err != nil {
			t.Fatal(err)
		}
		batches := epoch.Batches(shard, cfg.BatchSize, cfg.Seed, e)
		for i := 0; ; i++ {
			b, end, err := c.NextHeteroBatch(e, DefaultSemantics, &info.Hetero)
			if err != nil {
				t.Fatalf("epoch %d minibatch %d: %v", e, i, err)
			}
			if end {
				if i != len(batches) {
					t.Fatalf("epoch %d ended after %d of %d minibatches", e, i, len(batches))
				}
				break
			}
			seeds := []heteroepoch.Seeds{{Type: trainType.Name, Nodes: batches[i]}}
			w := &HeteroBatch{Epoch: e, Index: i, Semantics: sem, Hops: 2, EdgeIDs: true}
			if sem == epoch.PyG {
				w.PyG, err = want.AssemblePyG(seeds)
			} else {
				w.DGL, err = want.AssembleDGL(seeds)
			}
			if err != nil {
				t.Fatal(err)
			}
			// The rows of the reference's nodes, read from the stores.
			w.X = make([]*HeteroRows, len(stores))
			for ty, fs := range stores {
				ids := []uint32(nil)
				if w.PyG != nil {
					ids = w.PyG.Nodes[ty].NID
				} else {
					ids = w.DGL[len(w.DGL)-1].SrcNID[ty]
				}
				rows := make([]byte, int64(len(ids))*fs.RowBytes())
				if err := fs.ReadRows(ids, rows); err != nil {
					t.Fatal(err)
				}
				w.X[ty] = &HeteroRows{DType: DtypeF32, Dim: fs.Dim(), Rows: rows}
			}
			if b.X == nil || len(b.X[0].Rows) == 0 {
				t.Fatalf("epoch %d minibatch %d: no feature rows", e, i)
			}
			// Compared through the encoding, which is one-to-one but for
			// nil and empty arrays (an assembly's type without nodes has a
			// nil n_id, a decoded one an empty one).
			frame, err := MarshalHeteroBatch(OpNextBatch, 0, b)
			if err != nil {
				t.Fatal(err)
			}
			wframe, err := MarshalHeteroBatch(OpNextBatch, 0, w)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(frame, wframe) {
				t.Fatalf("epoch %d minibatch %d differs from heterosample's assembly", e, i)
			}
			frames = append(frames, frame)
		}
	}
	return frames
}

// A heterogeneous server's minibatches, through the wire and the Go
// client, equal heterosample's assembly of the same epoch (same shard,
// same seeded minibatches), for PyG and DGL semantics, and 1 and 3
// devices give the same bytes.
func TestHeteroServerEqualsAssembly(t *testing.T) {
	dir := buildHeteroMini(t)
	for _, sem := range []epoch.Semantics{epoch.PyG, epoch.DGL} {
		one := serveHetero(t, dir, 1, sem)
		three := serveHetero(t, dir, 3, sem)
		if len(one) == 0 || !reflect.DeepEqual(one, three) {
			t.Fatalf("%v: 1 device %d frames, 3 devices %d, or different bytes", sem, len(one), len(three))
		}
	}
}

// Bad configurations are refused naming what is wrong.
func TestHeteroConfigRefused(t *testing.T) {
	s := exampleSchema()
	f := [][]int{{2}}
	for _, tc := range []struct {
		name string
		cfg  HeteroConfig
		want error
	}{
		{"unknown type", HeteroConfig{TrainType: "venue", Train: []uint32{1}, Fanouts: f, BatchSize: 1}, heteroepoch.ErrInvalid},
		{"seed beyond type", HeteroConfig{TrainType: "paper", Train: []uint32{10}, Fanouts: f, BatchSize: 1}, heteroepoch.ErrInvalid},
		{"fanouts", HeteroConfig{TrainType: "paper", Train: []uint32{1}, Fanouts: [][]int{{2}, {2}}, BatchSize: 1}, heteroepoch.ErrInvalid},
		{"batch size", HeteroConfig{TrainType: "paper", Train: []uint32{1}, Fanouts: f}, ErrConfig},
	} {
		tc.cfg.Schema, tc.cfg.Sampler = s, (*heterosample.Sampler)(nil)
		if _, err := NewHeteroEpochs(tc.cfg); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// seedsOnly answers SampleEpoch with heterosample's in-memory layers
// over a graph without edges: the seeds alone (all a rank test needs).
type seedsOnly struct{ s *heteroepoch.Schema }

func (m seedsOnly) SampleEpoch(ctx context.Context, seeds []heteroepoch.Seeds, fanouts [][]int, key epoch.Key) (*heteroepoch.Result, error) {
	rels := make([]heterosample.LayerSampler, len(m.s.Relations))
	for r := range rels {
		rels[r] = heterosample.MemoryLayers{Graph: &host.CSR{Indptr: make([]uint64, m.s.NodeTypes[0].Count+1)}}
	}
	return heterosample.Sample(ctx, m.s, rels, seeds, fanouts, key)
}

// Data-parallel ranks: in every epoch the ranks' minibatches hold
// disjoint seeds, each rank as many minibatches, and together all of the
// training set but the nodes a larger shard leaves out (at most one per
// rank) — the homogeneous epochs' rule (epoch.Shard, BatchesPerRank).
func TestHeteroRanks(t *testing.T) {
	s := exampleSchema()
	s.NodeTypes[0].Count, s.NodeTypes[1].Count = 100, 100
	train := make([]uint32, 0, 50)
	for v := uint32(0); v < 100; v += 2 {
		train = append(train, v)
	}
	for e := uint32(0); e < 3; e++ {
		seen := map[uint32]int{}
		batches := -1
		for rank := 0; rank < 3; rank++ {
			h, err := NewHeteroEpochs(HeteroConfig{Sampler: seedsOnly{s}, Schema: s, TrainType: "paper", Train: train,
				Fanouts: [][]int{{2}}, BatchSize: 4, Seed: 9, Semantics: epoch.PyG, Rank: rank, World: 3})
			if err != nil {
				t.Fatal(err)
			}
			ep, err := h.Prepare(context.Background(), e)
			if err != nil {
				t.Fatal(err)
			}
			if batches >= 0 && len(ep.Batches) != batches {
				t.Fatalf("epoch %d rank %d: %d minibatches, rank 0 %d", e, rank, len(ep.Batches), batches)
			}
			batches = len(ep.Batches)
			for i := range ep.Batches {
				b, err := ep.Batch(i, DefaultSemantics)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range b.PyG.Nodes[0].NID[:b.PyG.Nodes[0].BatchSize] {
					if r, dup := seen[v]; dup {
						t.Fatalf("epoch %d: seed %d in ranks %d and %d", e, v, r, rank)
					}
					seen[v] = rank
				}
			}
		}
		if len(seen) < len(train)-3 {
			t.Fatalf("epoch %d: %d of %d training nodes served", e, len(seen), len(train))
		}
		for v := range seen {
			if v%2 != 0 {
				t.Fatalf("epoch %d: seed %d is not a training node", e, v)
			}
		}
	}
}

// Close ends the connections a heterogeneous server holds, so that Serve
// returns once its listener is closed even while a client stays connected.
func TestHeteroServerCloseEndsConnections(t *testing.T) {
	s := exampleSchema()
	s.NodeTypes[0].Count, s.NodeTypes[1].Count = 100, 100
	h, err := NewHeteroEpochs(HeteroConfig{Sampler: seedsOnly{s}, Schema: s, TrainType: "paper", Train: []uint32{1, 2, 3},
		Fanouts: [][]int{{2}}, BatchSize: 2, Seed: 1, Semantics: epoch.DGL})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewHeteroServer(context.Background(), h, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	c, err := Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info, err := c.HeteroEpochInfo()
	if err != nil || info.NumBatches != 2 || info.Hetero.TrainType != "paper" {
		t.Fatalf("epoch_info %+v: %v", info, err)
	}
	srv.Close()
	ln.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := c.HeteroEpochInfo(); err == nil {
		t.Fatal("a request answered after Close")
	}
}
