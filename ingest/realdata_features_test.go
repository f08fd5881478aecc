package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/internal/npy"
)

// coraDir holds Cora in OGB's raw layout, converted from the bundled
// Planetoid pickles by scripts/planetoid_to_ogb.py (testdata/planetoid/README.md).
const coraDir = "../testdata/planetoid"

// coraOracle reads cora.node-feat.csv.gz and cora.node-label.csv with the
// standard library only (compress/gzip, strings.Split, strconv): a
// second parser to check PackFeatures against.
func coraOracle(t *testing.T) (rows [][]float32, labels []int32) {
	t.Helper()
	f, err := os.Open(filepath.Join(coraDir, "cora.node-feat.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var row []float32
		for _, s := range strings.Split(sc.Text(), ",") {
			v, err := strconv.ParseFloat(s, 32)
			if err != nil {
				t.Fatal(err)
			}
			row = append(row, float32(v))
		}
		rows = append(rows, row)
	}
	b, err := os.ReadFile(filepath.Join(coraDir, "cora.node-label.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range strings.Fields(string(b)) {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		labels = append(labels, int32(v))
	}
	return rows, labels
}

// TestCoraFeatures builds Cora's graph, packs its real features and
// labels from OGB's csv layout and, as a second input, from a float32
// .npy and uint8 raw rows of the same values; every row and label read
// back equals the source, and the dataset's known figures hold.
func TestCoraFeatures(t *testing.T) {
	rows, labels := coraOracle(t)
	const n, dim = 2708, 1433
	if len(rows) != n || len(labels) != n {
		t.Fatalf("oracle: %d rows, %d labels", len(rows), len(labels))
	}
	nnz, classes := 0, make([]int, 7)
	var f32, u8 []byte
	for u, r := range rows {
		if len(r) != dim {
			t.Fatalf("row %d: %d values", u, len(r))
		}
		for _, v := range r {
			if v != 0 {
				nnz++
			}
			f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(v))
			u8 = append(u8, byte(v))
		}
		classes[labels[u]]++
	}
	// Cora's published figures: 49216 non-zero bag-of-words entries, and
	// the class sizes PyG's Planetoid("Cora") gives.
	if want := []int{351, 217, 418, 818, 426, 298, 180}; nnz != 49216 || !slices.Equal(classes, want) {
		t.Fatalf("%d non-zeros, classes %v: not Cora", nnz, classes)
	}
	graph := filepath.Join(t.TempDir(), "cora")
	if _, err := Build(context.Background(), []string{filepath.Join(coraDir, "cora.edges.txt.gz")}, graph, BuildOptions{ChunkSize: 64 << 10, NumNodes: n, Dedup: true}); err != nil {
		t.Fatal(err)
	}
	var x bytes.Buffer
	npy.Header{Descr: "<f4", Shape: []int{n, dim}}.WriteTo(&x)
	x.Write(f32)
	tmp := t.TempDir()
	inputs := []struct {
		name string
		path string
		o    FeatureOptions
		want []byte
	}{
		{"csv", filepath.Join(coraDir, "cora.node-feat.csv.gz"), FeatureOptions{}, f32},
		{"npy", writeFile(t, tmp, "x.npy", x.Bytes()), FeatureOptions{}, f32},
		{"raw uint8", writeFile(t, tmp, "x.u8", u8), FeatureOptions{Dim: dim, DType: featstore.Uint8}, u8},
	}
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = uint32(n - 1 - i) // backwards: ReadRows must restore the order
	}
	for _, in := range inputs {
		in.o.Labels = filepath.Join(coraDir, "cora.node-label.csv")
		in.o.Force = true
		sum, err := PackFeatures(context.Background(), in.path, graph, in.o)
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		if sum.NumClasses != 7 || sum.Labeled != n || sum.Dim != dim {
			t.Fatalf("%s: summary %+v", in.name, sum)
		}
		if err := featstore.Verify(graph); err != nil {
			t.Fatal(err)
		}
		s, err := featstore.Open(graph)
		if err != nil {
			t.Fatal(err)
		}
		rb := int(s.RowBytes())
		got := make([]byte, n*rb)
		if err := s.ReadRows(ids, got); err != nil {
			t.Fatal(err)
		}
		for i, u := range ids {
			if !bytes.Equal(got[i*rb:(i+1)*rb], in.want[int(u)*rb:int(u+1)*rb]) {
				t.Fatalf("%s: node %d's row differs from the source", in.name, u)
			}
		}
		l := make([]int32, n)
		if err := s.ReadLabels(ids, l); err != nil {
			t.Fatal(err)
		}
		for i, u := range ids {
			if l[i] != labels[u] {
				t.Fatalf("%s: node %d: label %d, want %d", in.name, u, l[i], labels[u])
			}
		}
		s.Close()
	}
}
