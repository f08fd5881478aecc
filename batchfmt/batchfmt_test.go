package batchfmt

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/featstore/featstoretest"
)

// blocks is a two-hop minibatch of seeds 4 and 2, the second hop with edge
// ids.
func blocks() *epoch.Blocks {
	return &epoch.Blocks{Epoch: 3, Seeds: []uint32{4, 2}, Hops: []epoch.Hop{
		{Dst: []uint32{4, 2}, Src: []uint32{4, 2, 7}, EdgeSrc: []int32{2, 0}, EdgeDst: []int32{0, 1}},
		{Dst: []uint32{4, 2, 7}, Src: []uint32{4, 2, 7, 9}, EdgeSrc: []int32{3}, EdgeDst: []int32{2}, EdgeIDs: []int64{11}},
	}}
}

// features are rows of two float16 for blocks' four nodes, the last
// row's second value infinite, and labels.
func features() *Features {
	f := &Features{NID: []uint32{4, 2, 7, 9}, DType: featstore.Float16, Dim: 2, Y: []int32{1, featstore.NoLabel}}
	for _, h := range []uint16{0x3C00, 0xC000, 0x0000, 0x8000, 0x3555, 0x7BFF, 0x0001, 0x7C00} {
		f.X = binary.LittleEndian.AppendUint16(f.X, h)
	}
	f.Reads.Reads, f.Reads.BytesRead = 1, 4096
	return f
}

// TestWriteJSON: the blocks are epoch.Blocks' encoding; the features
// follow the hops, float16 as the shortest float32 decimal, infinity as
// null, labels as they are.
func TestWriteJSON(t *testing.T) {
	b := blocks()
	var plain bytes.Buffer
	if err := WriteJSON(&plain, b, nil); err != nil {
		t.Fatal(err)
	}
	if want := string(b.AppendJSON(nil)) + "\n"; plain.String() != want {
		t.Fatalf("without features:\n%s\nwant\n%s", plain.String(), want)
	}
	var out bytes.Buffer
	if err := WriteJSON(&out, b, features()); err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSuffix(string(b.AppendJSON(nil)), "}") +
		`,"n_id":[4,2,7,9],"dtype":"float16","dim":2,"x":[[1,-2],[0,-0],[0.33325195,65504],[5.9604645e-08,null]],"y":[1,-1]}` + "\n"
	if out.String() != want {
		t.Fatalf("with features:\n%s\nwant\n%s", out.String(), want)
	}
	if !json.Valid(out.Bytes()) {
		t.Fatal("not valid JSON")
	}
}

// TestWriteNPZ: the members are the blocks' arrays (e_id where the hop
// has edge ids) and the features' n_id, x (the stored bytes under the
// dtype's descriptor) and y.
func TestWriteNPZ(t *testing.T) {
	var out bytes.Buffer
	f := features()
	if err := WriteNPZ(&out, blocks(), f); err != nil {
		t.Fatal(err)
	}
	z, err := zip.NewReader(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range z.File {
		names = append(names, strings.TrimSuffix(m.Name, ".npy"))
		if m.Name == "x.npy" {
			r, err := m.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r)
			if !bytes.HasSuffix(b, f.X) || !bytes.Contains(b, []byte("'descr': '<f2'")) || !bytes.Contains(b, []byte("'shape': (4, 2)")) {
				t.Fatalf("x.npy: %q", b)
			}
		}
	}
	want := []string{"epoch", "seeds", "hop1_dst", "hop1_src", "hop1_edge_src", "hop1_edge_dst",
		"hop2_dst", "hop2_src", "hop2_edge_src", "hop2_edge_dst", "hop2_e_id", "n_id", "x", "y"}
	if !slices.Equal(names, want) {
		t.Fatalf("members %v, want %v", names, want)
	}
}

// TestWriteSummary: a line per hop, and one for the features.
func TestWriteSummary(t *testing.T) {
	var out bytes.Buffer
	if err := WriteSummary(&out, blocks(), features()); err != nil {
		t.Fatal(err)
	}
	want := "epoch 3, 2 seeds\nhop 1: 2 dst <- 3 src (1 new), 2 edges\nhop 2: 3 dst <- 4 src (1 new), 1 edges\n" +
		"features: 4 rows x 2 float16 = 16 bytes, 2 labels (read in 1 requests, 4096 bytes)\n"
	if out.String() != want {
		t.Fatalf("summary:\n%s\nwant\n%s", out.String(), want)
	}
}

// TestReadFeatures: the rows of the blocks' nodes and the seeds' labels,
// as the store holds them; a graph without a store fails as
// featstore.Open does, a fingerprint of another graph with
// ErrGraphMismatch.
func TestReadFeatures(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "g")
	w, err := chunkfmt.NewWriter(dir, 10, 4096, chunkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for v := range uint32(10) {
		if err := w.Append([]uint32{(v + 1) % 10}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := chunkfmt.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFeatures(dir, m.Fingerprint(), blocks()); !errors.Is(err, featstore.ErrNoFeatures) {
		t.Fatalf("no store: %v", err)
	}
	fw, err := featstore.Create(dir, featstore.Options{DType: featstore.Uint8, Dim: 3, Labels: true})
	if err != nil {
		t.Fatal(err)
	}
	labels := make([]int32, 10)
	for v := range byte(10) {
		if err := fw.Append([]byte{v, v + 100, 255 - v}); err != nil {
			t.Fatal(err)
		}
		labels[v] = int32(v) - 1
	}
	if err := fw.AppendLabels(labels); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFeatures(dir, m.Fingerprint(), blocks())
	if err != nil {
		t.Fatal(err)
	}
	wantX := []byte{4, 104, 251, 2, 102, 253, 7, 107, 248, 9, 109, 246}
	if !slices.Equal(f.NID, []uint32{4, 2, 7, 9}) || !bytes.Equal(f.X, wantX) || !slices.Equal(f.Y, []int32{3, 1}) || f.Dim != 3 || f.DType != featstore.Uint8 {
		t.Fatalf("features %+v", f)
	}
	other := m.Fingerprint()
	other.NumEdges++
	if _, err := ReadFeatures(dir, other, blocks()); !errors.Is(err, featstore.ErrGraphMismatch) {
		t.Fatalf("another graph's fingerprint: %v", err)
	}
}

// TestFloat16ToFloat32HandChecked: values whose binary16 bits are known.
func TestFloat16ToFloat32HandChecked(t *testing.T) {
	for _, tc := range []struct {
		h    uint16
		want string // as sample's JSON prints it
	}{
		{0x3C00, "1"}, {0xC000, "-2"}, {0x0000, "0"}, {0x8000, "-0"},
		{0x3555, "0.33325195"}, {0x7BFF, "65504"}, {0x0400, "6.1035156e-05"},
		{0x0001, "5.9604645e-08"}, {0x03FF, "6.097555e-05"}, {0x2E66, "0.099975586"},
		{0x7C00, "null"}, {0xFC00, "null"}, {0x7E00, "null"},
	} {
		if got := string(appendFloat32JSON(nil, featstore.Float16ToFloat32(tc.h))); got != tc.want {
			t.Errorf("%#04x: %s, want %s", tc.h, got, tc.want)
		}
	}
	// Every finite binary16 value widens to exactly its value.
	for h := range 1 << 16 {
		v := featstoretest.HalfValue(uint16(h))
		if got := float64(featstore.Float16ToFloat32(uint16(h))); got != v && !(math.IsNaN(v) && math.IsNaN(got)) {
			t.Fatalf("%#04x: %v, want %v", h, got, v)
		}
	}
}
