package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/internal/npy"
)

// featureGraph writes a graph of n nodes (a path) into a new directory.
func featureGraph(t testing.TB, n uint32) string {
	t.Helper()
	dir := t.TempDir()
	w, err := chunkfmt.NewWriter(dir, n, 64<<10, chunkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for u := range n {
		var adj []uint32
		if u+1 < n {
			adj = []uint32{u + 1}
		}
		if err := w.Append(adj); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// npyFile is an .npy file: header for descr and shape, then data.
func npyFile(descr string, shape []int, fortran bool, data []byte) []byte {
	var b bytes.Buffer
	npy.Header{Descr: descr, Shape: shape}.WriteTo(&b)
	out := b.Bytes()
	if fortran {
		out = bytes.Replace(out, []byte("'fortran_order': False"), []byte("'fortran_order': True "), 1)
	}
	return append(out, data...)
}

// randomFloat32Rows returns n*dim float32 values (some negative, some
// integers, some tiny) and their little-endian bytes.
func randomFloat32Rows(seed uint64, n, dim int) ([]float32, []byte) {
	r := rand.New(rand.NewPCG(seed, 4))
	v := make([]float32, n*dim)
	b := make([]byte, 0, 4*len(v))
	for i := range v {
		switch r.IntN(4) {
		case 0:
			v[i] = float32(r.IntN(5))
		case 1:
			v[i] = float32(r.NormFloat64() * 1e-30)
		default:
			v[i] = float32(r.NormFloat64())
		}
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v[i]))
	}
	return v, b
}

// csvRows formats float32 values as OGB's node-feat.csv: the shortest
// decimal that reads back as the same float32.
func csvRows(v []float32, dim int, crlf bool) []byte {
	var b []byte
	for i, x := range v {
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
		if (i+1)%dim == 0 {
			if crlf {
				b = append(b, '\r')
			}
			b = append(b, '\n')
		} else {
			b = append(b, ',')
		}
	}
	return b
}

// storeRows and storeLabels read a packed store's files back whole.
func storeRows(t *testing.T, dir string) ([]byte, *featstore.Manifest) {
	t.Helper()
	if err := featstore.Verify(dir); err != nil {
		t.Fatal(err)
	}
	m, err := featstore.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, m.Features.File))
	if err != nil {
		t.Fatal(err)
	}
	return b, m
}

func storeLabels(t *testing.T, dir string) []int32 {
	t.Helper()
	s, err := featstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids := make([]uint32, s.NumNodes())
	for i := range ids {
		ids[i] = uint32(i)
	}
	l := make([]int32, len(ids))
	if err := s.ReadLabels(ids, l); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestPackFeaturesRoundTrip(t *testing.T) {
	const n, dim = 1200, 9
	vals, f32 := randomFloat32Rows(1, n, dim)
	raw := func(size int) []byte { return randomBytes(uint64(size), n*dim*size) }
	f16, i8, u8 := raw(2), raw(1), raw(1)
	cases := []struct {
		name, file string
		data       []byte
		dt         featstore.DType
		o          FeatureOptions
		want       []byte
	}{
		{"npy float32", "x.npy", npyFile("<f4", []int{n, dim}, false, f32), featstore.Float32, FeatureOptions{}, f32},
		{"npy float16", "x.npy", npyFile("<f2", []int{n, dim}, false, f16), featstore.Float16, FeatureOptions{}, f16},
		{"npy int8", "x.npy", npyFile("|i1", []int{n, dim}, false, i8), featstore.Int8, FeatureOptions{}, i8},
		{"npy uint8", "x.npy", npyFile("|u1", []int{n, dim}, false, u8), featstore.Uint8, FeatureOptions{}, u8},
		{"npy float32 gzip", "x.npy.gz", gz(t, npyFile("<f4", []int{n, dim}, false, f32)), featstore.Float32, FeatureOptions{Dim: dim}, f32},
		{"raw float32", "x.f32", f32, featstore.Float32, FeatureOptions{Dim: dim, DType: featstore.Float32}, f32},
		{"raw float16", "x.bin", f16, featstore.Float16, FeatureOptions{Dim: dim, DType: featstore.Float16}, f16},
		{"raw int8 zstd", "x.bin.zst", zst(t, i8), featstore.Int8, FeatureOptions{Dim: dim, DType: featstore.Int8}, i8},
		{"raw uint8", "x.raw", u8, featstore.Uint8, FeatureOptions{Dim: dim, DType: featstore.Uint8}, u8},
		{"csv", "node-feat.csv", csvRows(vals, dim, false), featstore.Float32, FeatureOptions{}, f32},
		{"csv crlf gzip", "node-feat.csv.gz", gz(t, csvRows(vals, dim, true)), featstore.Float32, FeatureOptions{}, f32},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := featureGraph(t, n)
			in := writeFile(t, t.TempDir(), c.file, c.data)
			sum, err := PackFeatures(context.Background(), in, dir, c.o)
			if err != nil {
				t.Fatal(err)
			}
			got, m := storeRows(t, dir)
			if !bytes.Equal(got, c.want) {
				t.Fatal("stored rows differ from the source's bytes")
			}
			if m.Features.DType != c.dt || m.Features.Dim != dim || sum.Dim != dim || sum.DType != c.dt || sum.NumNodes != n || m.Features.Source != c.file || m.Labels != nil {
				t.Fatalf("manifest %+v, summary %+v", m.Features, sum)
			}
		})
	}
}

func TestPackLabels(t *testing.T) {
	const n = 700
	r := rand.New(rand.NewPCG(2, 2))
	want := make([]int32, n)
	var text, textF []byte
	var i32, i64, f32, f64 []byte
	for i := range want {
		want[i] = -1
		if r.IntN(3) > 0 {
			want[i] = r.Int32N(40)
		}
		v := want[i]
		if v < 0 {
			text = append(text, []string{"nan\n", "\n", "NaN\n", "-1\n"}[i%4]...)
			textF = append(textF, "nan\r\n"...)
			f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(float32(math.NaN())))
			f64 = binary.LittleEndian.AppendUint64(f64, math.Float64bits(math.NaN()))
		} else {
			text = fmt.Appendf(text, "%d\n", v)
			textF = fmt.Appendf(textF, "%d.0\r\n", v)
			f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(float32(v)))
			f64 = binary.LittleEndian.AppendUint64(f64, math.Float64bits(float64(v)))
		}
		i32 = binary.LittleEndian.AppendUint32(i32, uint32(v))
		i64 = binary.LittleEndian.AppendUint64(i64, uint64(int64(v)))
	}
	feats := npyFile("|u1", []int{n, 3}, false, make([]byte, 3*n))
	cases := []struct {
		name, file string
		data       []byte
	}{
		{"csv", "node-label.csv", text},
		{"csv floats gzip", "node-label.csv.gz", gz(t, textF)},
		{"npy int32", "y.npy", npyFile("<i4", []int{n}, false, i32)},
		{"npy int64 (n,1)", "y.npy", npyFile("<i8", []int{n, 1}, false, i64)},
		{"npy float32 nan", "y.npy", npyFile("<f4", []int{n}, false, f32)},
		{"npy float64 nan", "y.npy", npyFile("<f8", []int{n}, false, f64)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := featureGraph(t, n)
			tmp := t.TempDir()
			x := writeFile(t, tmp, "x.npy", feats)
			y := writeFile(t, tmp, c.file, c.data)
			sum, err := PackFeatures(context.Background(), x, dir, FeatureOptions{Labels: y})
			if err != nil {
				t.Fatal(err)
			}
			if got := storeLabels(t, dir); !slices.Equal(got, want) {
				t.Fatal("labels differ from the source's")
			}
			// ReadLabels reads the same input into memory, alike.
			if got, err := ReadLabels(context.Background(), y, n); err != nil || !slices.Equal(got, want) {
				t.Fatalf("ReadLabels: %v, or its labels differ from the source's", err)
			}
			if _, err := ReadLabels(context.Background(), y, n+1); !errors.Is(err, featstore.ErrShape) {
				t.Fatalf("ReadLabels for %d nodes of %d labels: %v, want ErrShape", n+1, n, err)
			}
			var labeled uint32
			var classes int64
			for _, v := range want {
				if v >= 0 {
					labeled++
					classes = max(classes, int64(v)+1)
				}
			}
			if sum.Labeled != labeled || sum.NumClasses != classes {
				t.Fatalf("summary %+v, want %d labeled, %d classes", sum, labeled, classes)
			}
		})
	}
}

// TestPackFeaturesBadInputs: every malformed input fails with an error
// naming the file and what was expected, and leaves no store.
func TestPackFeaturesBadInputs(t *testing.T) {
	const n, dim = 50, 4
	f32 := make([]byte, n*dim*4)
	okX := npyFile("<f4", []int{n, dim}, false, f32)
	cases := []struct {
		name, file string
		data       []byte
		labels     []byte // with okX as features, when not nil
		o          FeatureOptions
		sentinel   error
		want       string
	}{
		{"fortran", "x.npy", npyFile("<f4", []int{n, dim}, true, f32), nil, FeatureOptions{}, ErrFormat, "fortran_order is True"},
		{"float64", "x.npy", npyFile("<f8", []int{n, dim}, false, make([]byte, n*dim*8)), nil, FeatureOptions{}, ErrFormat, `dtype "<f8" is not supported`},
		{"big endian", "x.npy", npyFile(">f4", []int{n, dim}, false, f32), nil, FeatureOptions{}, ErrFormat, `dtype ">f4"`},
		{"1-D", "x.npy", npyFile("<f4", []int{n * dim}, false, f32), nil, FeatureOptions{}, featstore.ErrShape, "shape (200,) is not a feature matrix: want (50, dim)"},
		{"rows", "x.npy", npyFile("<f4", []int{n + 1, dim}, false, append(f32, make([]byte, 16)...)), nil, FeatureOptions{}, featstore.ErrShape, "has 51 rows, the graph has 50 nodes: want (50, dim)"},
		{"truncated", "x.npy", npyFile("<f4", []int{n, dim}, false, f32[:len(f32)-3]), nil, FeatureOptions{}, featstore.ErrShape, "data truncated: 797 bytes, the header's shape (50, 4) float32 needs 800"},
		{"trailing", "x.npy", npyFile("<f4", []int{n, dim}, false, append(f32, 0)), nil, FeatureOptions{}, featstore.ErrShape, "801 bytes of data, more than the header's shape"},
		{"npy dim flag", "x.npy", okX, nil, FeatureOptions{Dim: 5}, featstore.ErrShape, "dim 4, but --dim 5"},
		{"raw size", "x.bin", f32[:len(f32)-4], nil, FeatureOptions{Dim: dim, DType: featstore.Float32}, featstore.ErrShape, "796 bytes, want num_nodes × dim × 4 bytes (float32) = 50 × 4 × 4 = 800"},
		{"raw gzip size", "x.bin.gz", gz(t, f32[:len(f32)-4]), nil, FeatureOptions{Dim: dim, DType: featstore.Float32}, featstore.ErrShape, "796 bytes, want num_nodes × dim"},
		{"raw no dim", "x.bin", f32, nil, FeatureOptions{}, ErrFormat, "give --dim and --dtype"},
		{"csv ragged", "node-feat.csv", []byte("1,2,3,4\n1,2,3,4\n1,2,3\n"), nil, FeatureOptions{}, ErrSyntax, "node-feat.csv:3: 3 values, want 4 (as on line 1)"},
		{"csv number", "node-feat.csv", []byte("1,2,3,4\n1,x,3,4\n"), nil, FeatureOptions{}, ErrSyntax, `node-feat.csv:2: value 2 "x": not a number`},
		{"csv empty field", "node-feat.csv", []byte("1,,3,4\n"), nil, FeatureOptions{}, ErrSyntax, "node-feat.csv:1: value 2 is empty"},
		{"csv few rows", "node-feat.csv", csvRows(make([]float32, (n-1)*dim), dim, false), nil, FeatureOptions{}, featstore.ErrShape, "49 rows, the graph has 50 nodes"},
		{"csv many rows", "node-feat.csv", csvRows(make([]float32, (n+1)*dim), dim, false), nil, FeatureOptions{}, featstore.ErrShape, "node-feat.csv:51: more than 50 rows"},
		{"csv dim flag", "node-feat.csv", []byte("1,2,3,4\n"), nil, FeatureOptions{Dim: 3, DType: featstore.Float32}, featstore.ErrShape, "node-feat.csv:1: 4 values, but --dim 3"},
		{"csv dtype flag", "node-feat.csv", []byte("1,2,3,4\n"), nil, FeatureOptions{Dim: 4, DType: featstore.Int8}, ErrFormat, "csv rows are read as float32, not --dtype int8"},
		{"csv empty", "node-feat.csv", nil, nil, FeatureOptions{}, featstore.ErrShape, "empty: want 50 rows"},
		{"labels fraction", "x.npy", okX, []byte(strings.Repeat("1\n", 10) + "2.5\n"), FeatureOptions{}, ErrSyntax, `node-label.csv:11: label "2.5": want an integer`},
		{"labels word", "x.npy", okX, []byte("cat\n"), FeatureOptions{}, ErrSyntax, `node-label.csv:1: label "cat"`},
		{"labels negative", "x.npy", okX, []byte("-3\n"), FeatureOptions{}, ErrSyntax, `node-label.csv:1: label "-3"`},
		{"labels few", "x.npy", okX, []byte(strings.Repeat("1\n", n-1)), FeatureOptions{}, featstore.ErrShape, "49 labels, the graph has 50 nodes"},
		{"labels many", "x.npy", okX, []byte(strings.Repeat("1\n", n+1)), FeatureOptions{}, featstore.ErrShape, "node-label.csv:51: more than 50 labels"},
	}
	npyLabels := []struct {
		name     string
		data     []byte
		sentinel error
		want     string
	}{
		{"labels npy shape", npyFile("<i4", []int{n, 2}, false, make([]byte, n*8)), featstore.ErrShape, "shape (50, 2) is not a label vector: want (50,)"},
		{"labels npy count", npyFile("<i4", []int{n - 1}, false, make([]byte, (n-1)*4)), featstore.ErrShape, "has 49 labels, the graph has 50 nodes: want (50,)"},
		{"labels npy dtype", npyFile("|u1", []int{n}, false, make([]byte, n)), ErrFormat, `dtype "|u1" is not supported for labels`},
		{"labels npy fraction", npyFile("<f4", []int{n}, false, binary.LittleEndian.AppendUint32(make([]byte, (n-1)*4), math.Float32bits(1.5))), ErrSyntax, "node 49: label 1.5"},
		{"labels npy truncated", npyFile("<i8", []int{n}, false, make([]byte, n*8-8)), featstore.ErrShape, "data truncated: 49 of 50 labels"},
	}
	for _, c := range npyLabels {
		cases = append(cases, struct {
			name, file string
			data       []byte
			labels     []byte
			o          FeatureOptions
			sentinel   error
			want       string
		}{c.name, "x.npy", okX, c.data, FeatureOptions{}, c.sentinel, c.want})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := featureGraph(t, n)
			before := dirNames(t, dir)
			tmp := t.TempDir()
			in := writeFile(t, tmp, c.file, c.data)
			o := c.o
			if c.labels != nil {
				name := "node-label.csv"
				if bytes.HasPrefix(c.labels, magicNPY) {
					name = "y.npy"
				}
				o.Labels = writeFile(t, tmp, name, c.labels)
			}
			_, err := PackFeatures(context.Background(), in, dir, o)
			if !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant %v containing %q", err, c.sentinel, c.want)
			}
			file := in
			if c.labels != nil && !strings.HasPrefix(c.name, "npy") {
				file = o.Labels
			}
			if !strings.Contains(err.Error(), file) {
				t.Fatalf("err %q does not name %s", err, file)
			}
			if got := dirNames(t, dir); !slices.Equal(got, before) {
				t.Fatalf("files %v after the error, want %v", got, before)
			}
		})
	}
}

func TestPackFeaturesExisting(t *testing.T) {
	dir := featureGraph(t, 10)
	in := writeFile(t, t.TempDir(), "x.npy", npyFile("|u1", []int{10, 2}, false, randomBytes(3, 20)))
	if _, err := PackFeatures(context.Background(), in, dir, FeatureOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := PackFeatures(context.Background(), in, dir, FeatureOptions{}); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second pack: %v, want ErrExists", err)
	}
	next := randomBytes(4, 30)
	in2 := writeFile(t, t.TempDir(), "x.npy", npyFile("|i1", []int{10, 3}, false, next))
	if _, err := PackFeatures(context.Background(), in2, dir, FeatureOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if got, m := storeRows(t, dir); !bytes.Equal(got, next) || m.Features.DType != featstore.Int8 {
		t.Fatal("--force did not replace the store")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := PackFeatures(ctx, in, dir, FeatureOptions{Force: true}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled pack: %v", err)
	}
	if got, _ := storeRows(t, dir); !bytes.Equal(got, next) {
		t.Fatal("a cancelled replacement changed the store")
	}
}

// TestPackFeaturesMemoryBound packs a 64 MiB .npy matrix and samples the
// heap while it runs: the growth stays a small fraction of the matrix
// (the rows are streamed, never loaded whole).
func TestPackFeaturesMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 128 MiB")
	}
	const n, dim = 1 << 16, 256
	dir := featureGraph(t, n)
	f, err := os.Create(filepath.Join(t.TempDir(), "x.npy"))
	if err != nil {
		t.Fatal(err)
	}
	npy.Header{Descr: "<f4", Shape: []int{n, dim}}.WriteTo(f)
	row := randomBytes(5, dim*4*1024)
	for range n / 1024 {
		f.Write(row)
	}
	f.Close()
	row = nil
	var grow int64
	grow, err = heapGrowth(func() error {
		_, err := PackFeatures(context.Background(), f.Name(), dir, FeatureOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	const matrix = n * dim * 4
	t.Logf("%d MiB matrix: peak heap growth %.1f MiB", matrix>>20, float64(grow)/(1<<20))
	if grow > matrix/8 {
		t.Fatalf("peak heap grew by %d bytes, more than 1/8 of the %d-byte matrix", grow, matrix)
	}
	if err := featstore.Verify(dir); err != nil {
		t.Fatal(err)
	}
}

// randomBytes returns n seeded random bytes.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
