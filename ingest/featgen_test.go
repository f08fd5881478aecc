package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/featstore"
)

// TestWriteSyntheticFeatures: for every dtype the .npy holds the
// documented header and exactly the rows SyntheticRow gives, narrowed;
// the same options give the same bytes; labels are SyntheticLabel's and
// show in the features; bad options fail and leave no file.
func TestWriteSyntheticFeatures(t *testing.T) {
	dir := t.TempDir()
	const n, dim = 10007, 13 // blocks of 4096 rows: a partial last block
	for _, dt := range []featstore.DType{featstore.Float32, featstore.Float16, featstore.Int8, featstore.Uint8} {
		o := FeatureGenOptions{NumNodes: n, Dim: dim, DType: dt, Seed: 9, Classes: 5}
		path := filepath.Join(dir, string(dt)+".npy")
		lpath := filepath.Join(dir, string(dt)+"-labels.npy")
		if err := WriteSyntheticFeatures(context.Background(), path, lpath, o); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(f)
		h, err := readNPYHeaderAny(br, path)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(br)
		f.Close()
		if !slices.Equal(h.shape, []int64{n, dim}) || len(data) != n*dim*dt.Size() {
			t.Fatalf("%s: header %+v, %d data bytes", dt, h, len(data))
		}
		row := make([]float32, dim)
		want := make([]byte, dim*dt.Size())
		for v := uint32(0); v < n; v++ {
			SyntheticRow(9, v, 5, row)
			encodeRow(want, row, dt)
			if got := data[int(v)*len(want) : int(v+1)*len(want)]; !bytes.Equal(got, want) {
				t.Fatalf("%s: row %d differs", dt, v)
			}
		}
		again := filepath.Join(dir, "again.npy")
		if err := WriteSyntheticFeatures(context.Background(), again, "", o); err != nil {
			t.Fatal(err)
		}
		a, _ := os.ReadFile(again)
		b, _ := os.ReadFile(path)
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: two runs differ", dt)
		}
		lb, _ := os.ReadFile(lpath)
		lab := lb[len(lb)-4*n:]
		for v := uint32(0); v < n; v++ {
			if got := int32(binary.LittleEndian.Uint32(lab[4*v:])); got != SyntheticLabel(9, v, 5) || got < 0 || got >= 5 {
				t.Fatalf("label of %d: %d", v, got)
			}
		}
	}
	// The label column carries the +1: on float32 rows it is the row's
	// largest entry for most nodes.
	row := make([]float32, 64)
	hits := 0
	for v := uint32(0); v < 2000; v++ {
		SyntheticRow(3, v, 10, row)
		if slices.Index(row, slices.Max(row)) == int(SyntheticLabel(3, v, 10))%64 {
			hits++
		}
	}
	if hits < 1000 {
		t.Fatalf("the label column is the row's maximum for %d of 2000 nodes", hits)
	}
	for _, o := range []FeatureGenOptions{{NumNodes: 5, Dim: 0, DType: featstore.Float32}, {NumNodes: 5, Dim: 3, DType: "float64"}, {NumNodes: 5, Dim: 3, DType: featstore.Int8, Classes: -1}} {
		p := filepath.Join(dir, "bad.npy")
		if err := WriteSyntheticFeatures(context.Background(), p, "", o); err == nil {
			t.Fatalf("%+v accepted", o)
		}
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%+v left a file", o)
		}
	}
	if err := WriteSyntheticFeatures(context.Background(), filepath.Join(dir, "x.npy"), filepath.Join(dir, "l.npy"), FeatureGenOptions{NumNodes: 5, Dim: 3, DType: featstore.Int8}); err == nil {
		t.Fatal("labels without classes accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := filepath.Join(dir, "cancelled.npy")
	if err := WriteSyntheticFeatures(ctx, p, "", FeatureGenOptions{NumNodes: 1 << 20, Dim: 8, DType: featstore.Float32}); err == nil {
		t.Fatal("cancelled generation succeeded")
	}
	if _, err := os.Stat(p); err == nil {
		t.Fatal("a cancelled generation left its file")
	}
}
