package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/featplan"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/featstore/featstoretest"
	"github.com/streamsampler/streamsampler/internal/npy"
)

// packStore packs n random rows of dim elements of dtype (every bit
// pattern, NaN and infinities included) and, with labels, random labels
// (some -1) into graph's feature store, replacing any; it returns the
// matrix's bytes and the labels.
func packStore(t *testing.T, graph string, n uint32, dtype featstore.DType, dim int, labels bool) ([]byte, []int32) {
	t.Helper()
	w, err := featstore.Create(graph, featstore.Options{DType: dtype, Dim: dim, Labels: labels, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(uint64(n), uint64(dim)))
	src := make([]byte, int64(n)*w.RowBytes())
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	for v := range int64(n) {
		if err := w.Append(src[v*w.RowBytes() : (v+1)*w.RowBytes()]); err != nil {
			t.Fatal(err)
		}
	}
	var y []int32
	if labels {
		y = make([]int32, n)
		for i := range y {
			y[i] = int32(r.IntN(10)) - 1
		}
		if err := w.AppendLabels(y); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return src, y
}

// featureState prepares a state directory from a random graph of n nodes
// (preparedStateOf) and returns it and the graph.
func featureState(t *testing.T, n uint32) (state, graph string) {
	t.Helper()
	state, graph, _ = preparedStateOf(t, n)
	return state, graph
}

// checkJSONElem checks one element of x in sample's JSON against the
// stored bytes b of dtype d: integers exactly; floats (float16 through its
// exact value) as the same float32 bits, -0 included; NaN and infinities
// as null.
func checkJSONElem(d featstore.DType, b []byte, got json.RawMessage) error {
	var want float64
	switch d {
	case featstore.Int8:
		want = float64(int8(b[0]))
	case featstore.Uint8:
		want = float64(b[0])
	case featstore.Float32:
		want = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case featstore.Float16:
		want = featstoretest.HalfValue(binary.LittleEndian.Uint16(b))
	}
	if math.IsNaN(want) || math.IsInf(want, 0) {
		if string(got) != "null" {
			return fmt.Errorf("%s for a non-finite %v, want null", got, want)
		}
		return nil
	}
	if d == featstore.Int8 || d == featstore.Uint8 {
		if string(got) != strconv.Itoa(int(want)) {
			return fmt.Errorf("%s, want %d", got, int(want))
		}
		return nil
	}
	f, err := strconv.ParseFloat(string(got), 32)
	if err != nil {
		return err
	}
	if math.Float32bits(float32(f)) != math.Float32bits(float32(want)) {
		return fmt.Errorf("%s reads as %v, want %v", got, float32(f), want)
	}
	return nil
}

// readNPZ returns the members of an .npz by array name.
func readNPZ(t *testing.T, path string) map[string][]byte {
	t.Helper()
	z, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	m := map[string][]byte{}
	for _, f := range z.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		m[strings.TrimSuffix(f.Name, ".npy")] = b
	}
	return m
}

// npyBytes is the .npy encoding of data under header h.
func npyBytes(t *testing.T, h npy.Header, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := h.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	b.Write(data)
	return b.Bytes()
}

// TestSampleFeatures: for every dtype, with and without labels, sample
// --features gives the minibatch's nodes (its last hop's src), every row
// of x equal to the source matrix's row for that node byte for byte
// (npz: the stored bytes under the dtype's descriptor; JSON: numbers that
// read back as the same value), and the seeds' labels; the blocks are
// those of sample without --features; summary's line gives rows, dtype,
// bytes and the reads (the extents of the sorted rows).
func TestSampleFeatures(t *testing.T) {
	const n = 3000
	state, graph := featureState(t, n)
	seeds := []uint32{14, 7, 21, 700, 2996}
	seedArg := "14,7,21,700,2996"
	plain, e, code := cli(t, "sample", "--state", state, "--seeds", seedArg)
	if code != 0 {
		t.Fatal(e)
	}
	py := "/usr/bin/python3"
	numpy := exec.Command(py, "-c", "import numpy").Run() == nil
	for _, tc := range []struct {
		dtype  featstore.DType
		dim    int
		labels bool
	}{
		{featstore.Float32, 12, true},
		{featstore.Float32, 1, false},
		{featstore.Float16, 9, true},
		{featstore.Float16, 64, false},
		{featstore.Int8, 5, true},
		{featstore.Int8, 300, false},
		{featstore.Uint8, 7, true},
		{featstore.Uint8, 4096, false},
	} {
		t.Run(fmt.Sprintf("%s/dim%d/labels%v", tc.dtype, tc.dim, tc.labels), func(t *testing.T) {
			src, labels := packStore(t, graph, n, tc.dtype, tc.dim, tc.labels)
			rb := tc.dim * tc.dtype.Size()
			js, e, code := cli(t, "sample", "--state", state, "--seeds", seedArg, "--features")
			if code != 0 {
				t.Fatal(e)
			}
			if !strings.HasPrefix(js, strings.TrimSuffix(plain, "}\n")+`,"n_id":`) {
				t.Fatalf("the blocks differ from sample's without --features:\n%.300s\n%.300s", js, plain)
			}
			var out struct {
				Hops []struct {
					Src []uint32 `json:"src"`
				} `json:"hops"`
				NID   []uint32            `json:"n_id"`
				DType string              `json:"dtype"`
				Dim   int                 `json:"dim"`
				X     [][]json.RawMessage `json:"x"`
				Y     *[]int32            `json:"y"`
			}
			if err := json.Unmarshal([]byte(js), &out); err != nil {
				t.Fatal(err)
			}
			nid := out.Hops[len(out.Hops)-1].Src
			if !slices.Equal(out.NID, nid) || out.DType != string(tc.dtype) || out.Dim != tc.dim || len(out.X) != len(nid) {
				t.Fatalf("n_id %d nodes (src %d), dtype %s, dim %d, %d rows", len(out.NID), len(nid), out.DType, out.Dim, len(out.X))
			}
			wantX := make([]byte, 0, len(nid)*rb)
			for i, v := range nid {
				row := src[int(v)*rb : int(v+1)*rb]
				wantX = append(wantX, row...)
				if len(out.X[i]) != tc.dim {
					t.Fatalf("row %d has %d elements, want %d", i, len(out.X[i]), tc.dim)
				}
				for j, el := range out.X[i] {
					if err := checkJSONElem(tc.dtype, row[j*tc.dtype.Size():], el); err != nil {
						t.Fatalf("x[%d][%d] (node %d): %v", i, j, v, err)
					}
				}
			}
			var wantY []int32
			for _, s := range seeds {
				if tc.labels {
					wantY = append(wantY, labels[s])
				}
			}
			if (out.Y != nil) != tc.labels || (out.Y != nil && !slices.Equal(*out.Y, wantY)) {
				t.Fatalf("y %v, want %v", out.Y, wantY)
			}

			npz := filepath.Join(t.TempDir(), "b.npz")
			if _, e, code := cli(t, "sample", "--state", state, "--seeds", seedArg, "--features", "--format", "npz", "-o", npz); code != 0 {
				t.Fatal(e)
			}
			z := readNPZ(t, npz)
			nidBytes := binary.LittleEndian.AppendUint32(nil, nid[0])
			for _, v := range nid[1:] {
				nidBytes = binary.LittleEndian.AppendUint32(nidBytes, v)
			}
			descr := map[featstore.DType]string{featstore.Float32: "<f4", featstore.Float16: "<f2", featstore.Int8: "|i1", featstore.Uint8: "|u1"}[tc.dtype]
			if !bytes.Equal(z["n_id"], npyBytes(t, npy.Header{Descr: "<u4", Shape: []int{len(nid)}}, nidBytes)) {
				t.Fatal("npz n_id differs from the last hop's src")
			}
			if !bytes.Equal(z["x"], npyBytes(t, npy.Header{Descr: descr, Shape: []int{len(nid), tc.dim}}, wantX)) {
				t.Fatal("npz x differs from the source rows of n_id")
			}
			if tc.labels {
				var yb []byte
				for _, v := range wantY {
					yb = binary.LittleEndian.AppendUint32(yb, uint32(v))
				}
				if !bytes.Equal(z["y"], npyBytes(t, npy.Header{Descr: "<i4", Shape: []int{len(wantY)}}, yb)) {
					t.Fatal("npz y differs from the seeds' labels")
				}
			} else if _, ok := z["y"]; ok {
				t.Fatal("npz has y without labels")
			}
			if numpy {
				script := `
import sys, numpy as np
z = np.load(sys.argv[1])
x = z["x"]
assert x.dtype == np.dtype(sys.argv[2]) and x.shape == (len(z["n_id"]), int(sys.argv[3])), (x.dtype, x.shape)
assert ("y" in z) == (sys.argv[4] == "true"), list(z.keys())
assert "y" not in z or (z["y"].dtype == np.int32 and len(z["y"]) == len(z["seeds"]))
print("ok")
`
				got, err := exec.Command(py, "-c", script, npz, string(tc.dtype), strconv.Itoa(tc.dim), strconv.FormatBool(tc.labels)).CombinedOutput()
				if err != nil || strings.TrimSpace(string(got)) != "ok" {
					t.Fatalf("numpy: %v\n%s", err, got)
				}
			}

			sum, e, code := cli(t, "sample", "--state", state, "--seeds", seedArg, "--features", "--format", "summary")
			if code != 0 {
				t.Fatal(e)
			}
			sorted := slices.Sorted(slices.Values(nid))
			ext, err := featplan.Extents(nil, sorted, int64(rb), featplan.DefaultExtentOptions())
			if err != nil {
				t.Fatal(err)
			}
			var read int64
			for _, x := range ext {
				read += x.Length
			}
			lab := "no labels"
			if tc.labels {
				lab = fmt.Sprintf("%d labels", len(seeds))
			}
			want := fmt.Sprintf("features: %d rows x %d %s = %d bytes, %s (read in %d requests, %d bytes)\n", len(nid), tc.dim, tc.dtype, len(wantX), lab, len(ext), read)
			if !strings.HasSuffix(sum, want) {
				t.Fatalf("summary:\n%s\nwant its last line:\n%s", sum, want)
			}
		})
	}
}

// TestSampleFeaturesErrors: a graph without a feature store, a store
// packed for another graph, a graph directory that no longer holds the
// state's graph, and a truncated feature file are clear errors (exit 1).
func TestSampleFeaturesErrors(t *testing.T) {
	const n = 300
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, graph string)
		msg   string
	}{
		{"no store", func(*testing.T, string) {}, "has no feature store; pack one with `chunkify features"},
		{"store of another graph", func(t *testing.T, graph string) {
			other, _ := testGraph(t, n, 4, 4096)
			packStore(t, other, n, featstore.Float32, 4, true)
			ents, err := os.ReadDir(other)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if e.Name() == featstore.ManifestFile || strings.HasPrefix(e.Name(), "features-") || strings.HasPrefix(e.Name(), "labels-") {
					b, err := os.ReadFile(filepath.Join(other, e.Name()))
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(graph, e.Name()), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
		}, "belongs to another graph"},
		{"graph replaced since prepare", func(t *testing.T, graph string) {
			other, _ := testGraph(t, n+5, 4, 4096)
			packStore(t, other, n+5, featstore.Int8, 3, false)
			if err := os.RemoveAll(graph); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, graph); err != nil {
				t.Fatal(err)
			}
		}, "the state was prepared from one of 300 nodes"},
		{"truncated features", func(t *testing.T, graph string) {
			packStore(t, graph, n, featstore.Float16, 8, true)
			m, err := featstore.ReadManifest(graph)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(filepath.Join(graph, m.Features.File), m.Features.Size-1); err != nil {
				t.Fatal(err)
			}
		}, "manifest says"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, graph := featureState(t, n)
			if _, e, code := cli(t, "sample", "--state", state, "--seeds", "7,14"); code != 0 {
				t.Fatal(e)
			}
			tc.spoil(t, graph)
			out, e, code := cli(t, "sample", "--state", state, "--seeds", "7,14", "--features")
			if code != 1 || !strings.Contains(e, tc.msg) || !strings.Contains(e, "sample --features") || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 1 and %q", code, out, e, tc.msg)
			}
		})
	}
}
