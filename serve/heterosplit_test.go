package serve

import (
	"context"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/heteroepoch"
	"github.com/streamsampler/streamsampler/heterosample"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/npy"
)

// heteroSplitExampleHex is the frame of docs/PROTOCOL.md's byte-level
// example of a split_batch reply with labels (python/tests/
// test_hetero_wire.py pins the same bytes): the heterogeneous example's
// minibatch as minibatch 0 of a split, paper 3 labelled 7, authors
// without labels.
const heteroSplitExampleHex = "" +
	"b0000000" + "08" + "00" + "07000000" + // length 176, op 8 split_batch, status 0, id 7
	"05000000" + "00000000" + "01" + "29" + "0200" + "0100" + // epoch 5, index 0, 1 hop, flags pyg|hetero|labels, T=2, R=1
	"0101" + "0100000000000000" + "03000000" + // paper n_id [3]
	"0101" + "0200000000000000" + "01000000" + "00000000" + // paper num_sampled_nodes [1, 0]
	"01000000" + // paper batch_size 1
	"0101" + "0200000000000000" + "04000000" + "09000000" + // author n_id [4, 9]
	"0101" + "0200000000000000" + "00000000" + "02000000" + // author num_sampled_nodes [0, 2]
	"00000000" + // author batch_size 0
	"0302" + "0200000000000000" + "0200000000000000" + // edge_index i64 [2, 2]
	"0000000000000000" + "0100000000000000" + "0000000000000000" + "0000000000000000" +
	"0101" + "0100000000000000" + "02000000" + // num_sampled_edges [2]
	"01" + "0201" + "0100000000000000" + "07000000" + // paper y: present, i32 [1] 7
	"00" // author y: none

func exampleSplitBatch() *HeteroBatch {
	b := exampleBatch()
	b.Y = [][]int32{{7}, nil}
	return b
}

// The split_batch example with labels: encoded byte for byte, decoded
// back to itself; every truncation, a label below -1 and a label count
// other than the rows are refused.
func TestHeteroSplitByteExample(t *testing.T) {
	got, err := MarshalHeteroBatch(OpSplitBatch, 7, exampleSplitBatch())
	if err != nil {
		t.Fatal(err)
	}
	if h := hex.EncodeToString(got); h != heteroSplitExampleHex {
		t.Fatalf("frame\n%s\nwant\n%s", h, heteroSplitExampleHex)
	}
	b, err := DecodeHeteroBatch(got[HeaderSize:], exampleSchema())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b, exampleSplitBatch()) {
		t.Fatalf("decoded %+v", b)
	}
	for n := HeaderSize; n < len(got); n++ {
		if _, err := DecodeHeteroBatch(got[HeaderSize:n], exampleSchema()); !errors.Is(err, ErrMalformed) {
			t.Fatalf("truncated at %d: %v", n, err)
		}
	}
	bad := append([]byte(nil), got[HeaderSize:]...)
	copy(bad[len(bad)-5:], []byte{0xfe, 0xff, 0xff, 0xff}) // paper's label -2
	if _, err := DecodeHeteroBatch(bad, exampleSchema()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("label -2: %v", err)
	}
	// Two labels for paper's one row: the encoder refuses to send it.
	two := exampleSplitBatch()
	two.Y[0] = []int32{7, 7}
	if _, err := MarshalHeteroBatch(OpSplitBatch, 7, two); err == nil {
		t.Fatal("two labels for one row encoded")
	}
}

// buildLabelledMini builds testdata/hetero-mini with labels: company has
// rows and labels (in its feature store), politician rows only, tvshow
// labels only (labels/tvshow.npy, as from_pyg writes a type with y and no
// x), government neither. It returns the directory and each type's
// labels (nil: none), in hetero.json's type order.
func buildLabelledMini(t *testing.T) (string, map[string][]int32) {
	t.Helper()
	types, rels, feats, err := ingest.OGBHetero(filepath.Join("..", "testdata", "hetero-mini", "raw"))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]uint32{}
	for _, nt := range types {
		count[nt.Name] = nt.Count
	}
	tmp := t.TempDir()
	want := map[string][]int32{}
	label := func(name string, mod, none uint32) (string, []int64) {
		y := make([]int32, count[name])
		y64 := make([]int64, count[name])
		for v := range y {
			y[v] = int32(uint32(v) * 7 % mod)
			if uint32(v)%none == 0 {
				y[v] = -1
			}
			y64[v] = int64(y[v])
		}
		want[name] = y
		return filepath.Join(tmp, name+"-y.npy"), y64
	}
	writeNPY := func(path string, a []int64) {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := npy.WriteArray(f, a); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var kept []ingest.NodeFeatures
	for _, nf := range feats {
		switch nf.Type {
		case "company":
			path, y := label("company", 5, 7)
			writeNPY(path, y)
			nf.Labels = path
		case "tvshow", "government":
			continue
		}
		kept = append(kept, nf)
	}
	out := filepath.Join(tmp, "g")
	if _, err := ingest.BuildHetero(context.Background(), out, ingest.HeteroOptions{NodeTypes: types, Relations: rels,
		Features: kept, AddReverse: true, Build: ingest.BuildOptions{ChunkSize: 64 << 10}}); err != nil {
		t.Fatal(err)
	}
	_, y := label("tvshow", 3, 5)
	if err := os.MkdirAll(filepath.Join(out, HeteroLabelsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	writeNPY(filepath.Join(out, HeteroLabelsDir, "tvshow.npy"), y)
	return out, want
}

// heteroSplitServer serves dir's epochs with its labels on devices
// devices; the client is connected.
func heteroSplitServer(t *testing.T, dir string, devices int, sem epoch.Semantics, maxInflight int64) (*HeteroServer, *Client, HeteroConfig) {
	t.Helper()
	smp, schema, err := heterosample.OpenDir(dir, heterosample.Options{Host: host.Options{Devices: devices, EdgeIDs: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { smp.Close() })
	fanouts, err := schema.FanoutsFromMap(map[string][]int{schema.Relations[0].String(): {2, 0}}, []int{4, 3})
	if err != nil {
		t.Fatal(err)
	}
	stores, err := OpenHeteroFeatures(dir, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CloseStores(stores) })
	labels, err := OpenHeteroLabels(dir, schema, stores, func(path string, n uint32) ([]int32, error) {
		return ingest.ReadLabels(context.Background(), path, n)
	})
	if err != nil {
		t.Fatal(err)
	}
	edges, err := HeteroNumEdges(dir, schema)
	if err != nil {
		t.Fatal(err)
	}
	var train []uint32
	for v := uint32(0); v < schema.NodeTypes[0].Count; v += 2 {
		train = append(train, v)
	}
	cfg := HeteroConfig{Sampler: smp, Schema: schema, TrainType: schema.NodeTypes[0].Name, Train: train, Fanouts: fanouts,
		BatchSize: 16, Seed: 11, Semantics: sem, World: 1, EdgeIDs: true, Features: stores, Labels: labels, NumEdges: edges, MaxInflight: maxInflight}
	h, err := NewHeteroEpochs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, c := startHeteroServer(t, h)
	return srv, c, h.cfg
}

// startHeteroServer serves h's epochs on a socket of its own until the
// test ends (then checking that Serve returned cleanly) and returns the
// server and a client of it.
func startHeteroServer(t *testing.T, h *HeteroEpochs) (*HeteroServer, *Client) {
	t.Helper()
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
	t.Cleanup(func() {
		srv.Close()
		ln.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	c, err := Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return srv, c
}

// splitNodes are a split's nodes of a type of count nodes: every third
// node from the top down (not sorted, so that the given order shows).
func splitNodes(count uint32) []uint32 {
	var nodes []uint32
	for v := int64(count) - 1; v >= 0 && len(nodes) < 70; v -= 3 {
		nodes = append(nodes, uint32(v))
	}
	return nodes
}

// serveHeteroSplits reads two splits (one of the training type, one of
// tvshow) in epochs 0 and 1 through the wire, checks each minibatch
// against heterosample's assembly of the same seeds under the key (seed,
// current epoch) by an independent sampler, with the stores' rows and
// the expected labels, and returns the frames.
func serveHeteroSplits(t *testing.T, dir string, devices int, sem epoch.Semantics, labels map[string][]int32) [][]byte {
	t.Helper()
	ctx := context.Background()
	srv, c, cfg := heteroSplitServer(t, dir, devices, sem, 0)
	ref, schema, err := heterosample.OpenDir(dir, heterosample.Options{Host: host.Options{Devices: 1, EdgeIDs: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	info, err := c.HeteroEpochInfo()
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, false, true}; !reflect.DeepEqual(info.Hetero.Labels, want) || info.Hetero.NodeTypes[3] != "tvshow" {
		t.Fatalf("epoch_info labels %v of %v, want %v", info.Hetero.Labels, info.Hetero.NodeTypes, want)
	}
	var frames [][]byte
	for e := uint32(0); e < 2; e++ {
		for _, ty := range []int{0, 3} {
			nt := schema.NodeTypes[ty]
			nodes := splitNodes(nt.Count)
			sinfo, err := c.HeteroSplit(ty, nodes, 16)
			if err != nil {
				t.Fatal(err)
			}
			if sinfo.NumNodes != len(nodes) || sinfo.BatchSize != 16 || sinfo.NumBatches != (len(nodes)+15)/16 || sinfo.NodeType != nt.Name {
				t.Fatalf("split %+v", sinfo)
			}
			for i := 0; ; i++ {
				b, end, err := c.HeteroSplitBatch(sinfo.Split, uint32(i), DefaultSemantics, &info.Hetero)
				if err != nil {
					t.Fatalf("epoch %d split of %s minibatch %d: %v", e, nt.Name, i, err)
				}
				if end {
					if i != sinfo.NumBatches {
						t.Fatalf("split ended after %d of %d minibatches", i, sinfo.NumBatches)
					}
					break
				}
				piece := nodes[i*16 : min(i*16+16, len(nodes))]
				sorted := slices.Clone(piece)
				slices.Sort(sorted)
				res, err := ref.SampleEpoch(ctx, []heteroepoch.Seeds{{Type: nt.Name, Nodes: sorted}}, cfg.Fanouts, epoch.Key{Seed: cfg.Seed, Epoch: e})
				if err != nil {
					t.Fatal(err)
				}
				seeds := []heteroepoch.Seeds{{Type: nt.Name, Nodes: piece}}
				w := &HeteroBatch{Epoch: e, Index: i, Semantics: sem, Hops: 2, EdgeIDs: true}
				if sem == epoch.PyG {
					w.PyG, err = res.AssemblePyG(seeds)
				} else {
					w.DGL, err = res.AssembleDGL(seeds)
				}
				if err != nil {
					t.Fatal(err)
				}
				w.X, w.Y = make([]*HeteroRows, len(schema.NodeTypes)), make([][]int32, len(schema.NodeTypes))
				for ty2, fs := range cfg.Features {
					var ids []uint32
					if w.PyG != nil {
						ids = w.PyG.Nodes[ty2].NID
					} else {
						ids = w.DGL[len(w.DGL)-1].SrcNID[ty2]
					}
					if fs != nil {
						rows := make([]byte, int64(len(ids))*fs.RowBytes())
						if err := fs.ReadRows(ids, rows); err != nil {
							t.Fatal(err)
						}
						w.X[ty2] = &HeteroRows{DType: DtypeF32, Dim: fs.Dim(), Rows: rows}
					}
					if y := labels[schema.NodeTypes[ty2].Name]; y != nil {
						w.Y[ty2] = make([]int32, len(ids))
						for k, v := range ids {
							w.Y[ty2][k] = y[v]
						}
					}
				}
				if b.Y[ty] == nil || len(b.Y[ty]) < len(piece) {
					t.Fatalf("split of %s minibatch %d: no labels of the seeds", nt.Name, i)
				}
				frame, err := MarshalHeteroBatch(OpSplitBatch, 0, b)
				if err != nil {
					t.Fatal(err)
				}
				wframe, err := MarshalHeteroBatch(OpSplitBatch, 0, w)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(frame, wframe) {
					t.Fatalf("epoch %d split of %s minibatch %d differs from heterosample's assembly of its seeds", e, nt.Name, i)
				}
				// The reservation bounds the reply (rows and labels included).
				if bound := srv.epochs.replyBound(ty, int64(len(piece))); int64(len(frame)) > bound {
					t.Fatalf("epoch %d split of %s minibatch %d: %d bytes, over its bound %d", e, nt.Name, i, len(frame), bound)
				}
				frames = append(frames, frame)
			}
			// What the split holds is within what it counts.
			if sp := srv.heteroSplitOf(sinfo.Split); sp.res.Bytes()+8*int64(len(nodes)) > sp.held {
				t.Fatalf("split of %s holds %d bytes of sample and %d of nodes, over its bound %d", nt.Name, sp.res.Bytes(), 8*len(nodes), sp.held)
			}
			// The same nodes again: the same split.
			again, err := c.HeteroSplit(ty, nodes, 16)
			if err != nil || again != sinfo {
				t.Fatalf("split again %+v, first %+v: %v", again, sinfo, err)
			}
			if err := c.DropSplit(sinfo.Split); err != nil {
				t.Fatal(err)
			}
		}
		// The training stream carries the labels too, in its rows.
		b, end, err := c.NextHeteroBatch(e, DefaultSemantics, &info.Hetero)
		if err != nil || end {
			t.Fatalf("epoch %d next_batch: end %v, %v", e, end, err)
		}
		for ty, nt := range schema.NodeTypes {
			y := labels[nt.Name]
			if (y == nil) != (b.Y[ty] == nil) {
				t.Fatalf("epoch %d minibatch 0: labels of %s %v, want some: %v", e, nt.Name, b.Y[ty], y != nil)
			}
			var nodes []uint32
			if b.PyG != nil {
				nodes = b.PyG.Nodes[ty].NID
			} else {
				nodes = b.DGL[len(b.DGL)-1].SrcNID[ty]
			}
			for k, v := range nodes {
				if y != nil && b.Y[ty][k] != y[v] {
					t.Fatalf("epoch %d minibatch 0: %s node %d labelled %d, want %d", e, nt.Name, v, b.Y[ty][k], y[v])
				}
			}
		}
		if held := settledInflight(srv); held != 0 {
			t.Fatalf("epoch %d: %d bytes held with every split dropped and every reply written", e, held)
		}
		if _, err := srv.Advance(ctx, CurrentEpoch); err != nil {
			t.Fatal(err)
		}
	}
	return frames
}

// A heterogeneous split's minibatches, through the wire and the Go
// client, equal heterosample's assembly of the same seeds under the key
// (the server's seed, its current epoch), with every row's features and
// labels (a store's, an npy's), for PyG and DGL, and 1 and 3 devices give
// the same bytes.
func TestHeteroSplitEqualsAssembly(t *testing.T) {
	dir, labels := buildLabelledMini(t)
	for _, sem := range []epoch.Semantics{epoch.PyG, epoch.DGL} {
		one := serveHeteroSplits(t, dir, 1, sem, labels)
		three := serveHeteroSplits(t, dir, 3, sem, labels)
		if len(one) == 0 || !reflect.DeepEqual(one, three) {
			t.Fatalf("%v: 1 device %d frames, 3 devices %d, or different bytes", sem, len(one), len(three))
		}
	}
}

// smallHeteroServer serves exampleSchema's types of 100 nodes each over a
// graph without edges (seedsOnly), with the given budget.
func smallHeteroServer(t *testing.T, maxInflight int64) (*HeteroServer, *Client, *HeteroInfo) {
	t.Helper()
	s := exampleSchema()
	s.NodeTypes[0].Count, s.NodeTypes[1].Count = 100, 100
	h, err := NewHeteroEpochs(HeteroConfig{Sampler: seedsOnly{s}, Schema: s, TrainType: "paper", Train: []uint32{1, 2, 3},
		Fanouts: [][]int{{2}}, BatchSize: 2, Seed: 1, Semantics: epoch.PyG, MaxInflight: maxInflight})
	if err != nil {
		t.Fatal(err)
	}
	srv, c := startHeteroServer(t, h)
	info, err := c.HeteroEpochInfo()
	if err != nil {
		t.Fatal(err)
	}
	return srv, c, &info.Hetero
}

// settledInflight returns the bytes srv holds once its last reply's
// bytes are given back (the server releases them after the write the
// client has already read), waiting up to 5 s for 0.
func settledInflight(srv *HeteroServer) int64 {
	deadline := time.Now().Add(5 * time.Second)
	for {
		held, _ := srv.Inflight()
		if held == 0 || time.Now().After(deadline) {
			return held
		}
		time.Sleep(time.Millisecond)
	}
}

// wantRemote checks that err is the server's error code naming want.
func wantRemote(t *testing.T, what string, err error, code uint16, want string) {
	t.Helper()
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != code || !strings.Contains(re.Message, want) {
		t.Errorf("%s: %v, want error %d naming %q", what, err, code, want)
	}
}

// Bad split requests are refused naming the node and its type (or the
// type index, the split), and the connection stays usable.
func TestHeteroSplitRefused(t *testing.T) {
	_, c, info := smallHeteroServer(t, 0)
	for _, tc := range []struct {
		name  string
		t     int
		nodes []uint32
		bs    int
		want  string
	}{
		{"unknown type", 2, []uint32{1}, 1, "node type 2: the graph has 2 node types"},
		{"out of range", 1, []uint32{5, 100}, 1, `node 100 (position 1) of type "author" is not a node: the type has 100 nodes`},
		{"duplicate", 0, []uint32{5, 7, 5}, 1, `node 5 of type "paper" at positions 0 and 2`},
		{"batch size", 0, []uint32{5}, 0, "batch size 0"},
		{"empty", 0, nil, 4, `no nodes of type "paper"`},
	} {
		_, err := c.HeteroSplit(tc.t, tc.nodes, tc.bs)
		wantRemote(t, tc.name, err, CodeBadRequest, tc.want)
	}
	_, _, err := c.HeteroSplitBatch(3, 0, DefaultSemantics, info)
	wantRemote(t, "split_batch of an unknown split", err, CodeUnknownSplit, "unknown split 3")
	wantRemote(t, "drop of an unknown split", c.DropSplit(3), CodeUnknownSplit, "unknown split 3")
	// A truncated split request (no type) is malformed.
	f, err := c.roundTrip(OpSplit, []byte{1, 0, 0, 0, 0})
	if err == nil {
		t.Fatalf("truncated split answered %+v", f)
	}
	wantRemote(t, "truncated split", err, CodeBadRequest, "node type")
	// Still served: a split of authors, read to its end, then dropped.
	sp, err := c.HeteroSplit(1, []uint32{9, 3, 5}, 2)
	if err != nil || sp.NumBatches != 2 || sp.NodeType != "author" {
		t.Fatalf("split %+v: %v", sp, err)
	}
	b, end, err := c.HeteroSplitBatch(sp.Split, 1, DefaultSemantics, info)
	if err != nil || end || !slices.Equal(b.PyG.Nodes[1].NID, []uint32{5}) || b.PyG.Nodes[1].BatchSize != 1 || b.PyG.Nodes[0].BatchSize != 0 || b.Index != 1 {
		t.Fatalf("last minibatch %+v, end %v: %v", b, end, err)
	}
	if _, end, err := c.HeteroSplitBatch(sp.Split, 2, DefaultSemantics, info); err != nil || !end {
		t.Fatalf("past the end: end %v, %v", end, err)
	}
	if err := c.DropSplit(sp.Split); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.HeteroSplitBatch(sp.Split, 0, DefaultSemantics, info)
	wantRemote(t, "split_batch of a dropped split", err, CodeUnknownSplit, "unknown split")
}

// The budget: splits hold at most a quarter of it and number at most
// MaxSplits (error 11 past either, until one is dropped); a reply larger
// than MaxReply, or than the whole budget, is error 11 naming the
// minibatch; every byte is given back once replies are written and
// splits dropped.
func TestHeteroSplitBudget(t *testing.T) {
	srv, c, info := smallHeteroServer(t, 4<<10)
	big := make([]uint32, 100)
	for i := range big {
		big[i] = uint32(i)
	}
	if b := srv.epochs.splitBound(1, 100); b <= 1<<10 {
		t.Fatalf("a split of 100 nodes bounded by %d bytes fits a quarter of 4 KiB; the test needs it not to", b)
	}
	_, err := c.HeteroSplit(1, big, 10)
	wantRemote(t, "split past a quarter of the budget", err, CodeOverBudget, "a quarter of --max-inflight")
	if _, err := c.HeteroSplit(1, big[:2], 10); err != nil {
		t.Fatalf("a split of 2 nodes (%d bytes) refused: %v", srv.epochs.splitBound(1, 2), err)
	}
	// MaxSplits splits of one node each (the bound of each is small
	// enough on a larger budget).
	srv2, c2, _ := smallHeteroServer(t, 64<<20)
	var ids []uint32
	for v := uint32(0); v < MaxSplits; v++ {
		sp, err := c2.HeteroSplit(0, []uint32{v}, 1)
		if err != nil {
			t.Fatalf("split %d: %v", v, err)
		}
		ids = append(ids, sp.Split)
	}
	_, err = c2.HeteroSplit(0, []uint32{99}, 1)
	wantRemote(t, "split past MaxSplits", err, CodeOverBudget, "drop one")
	if err := c2.DropSplit(ids[0]); err != nil {
		t.Fatal(err)
	}
	sp, err := c2.HeteroSplit(0, []uint32{99}, 1)
	if err != nil {
		t.Fatalf("split after a drop: %v", err)
	}
	ids = append(ids[1:], sp.Split)
	held, _ := srv2.Inflight()
	if want := int64(MaxSplits) * srv2.epochs.splitBound(0, 1); held != want {
		t.Fatalf("%d splits hold %d bytes, want %d", MaxSplits, held, want)
	}
	for _, id := range ids {
		if err := c2.DropSplit(id); err != nil {
			t.Fatal(err)
		}
	}
	if held, _ := srv2.Inflight(); held != 0 {
		t.Fatalf("%d bytes held with every split dropped", held)
	}
	// A reply over MaxReply: error 11 naming the minibatch, the
	// connection stays open.
	srv.maxReply = 100
	_, _, err = c.NextHeteroBatch(CurrentEpoch, DefaultSemantics, info)
	wantRemote(t, "minibatch over MaxReply", err, CodeOverBudget, "minibatch 0 of epoch 0 is")
	sp, err = c.HeteroSplit(1, []uint32{4}, 1)
	if err != nil {
		t.Fatal(err)
	}
	two, err := c.HeteroSplit(1, big[:2], 10) // registered above
	if err != nil || c.DropSplit(two.Split) != nil {
		t.Fatalf("split of 2 nodes again %+v: %v", two, err)
	}
	_, _, err = c.HeteroSplitBatch(sp.Split, 0, DefaultSemantics, info)
	wantRemote(t, "split minibatch over MaxReply", err, CodeOverBudget, "minibatch 0 of split")
	srv.maxReply = MaxReply
	if b, end, err := c.HeteroSplitBatch(sp.Split, 0, DefaultSemantics, info); err != nil || end || b.PyG.Nodes[1].NID[0] != 4 {
		t.Fatalf("split minibatch: %+v %v %v", b, end, err)
	}
	if err := c.DropSplit(sp.Split); err != nil {
		t.Fatal(err)
	}
	if held := settledInflight(srv); held != 0 {
		t.Fatalf("%d bytes held with every reply written", held)
	}
	// A reply larger than the whole budget: a server of 64 bytes.
	srv3, c3, info3 := smallHeteroServer(t, 64)
	_, _, err = c3.NextHeteroBatch(CurrentEpoch, DefaultSemantics, info3)
	wantRemote(t, "minibatch over the budget", err, CodeOverBudget, "more than the whole in-flight budget")
	if held := settledInflight(srv3); held != 0 {
		t.Fatalf("%d bytes held after a refusal", held)
	}
}
