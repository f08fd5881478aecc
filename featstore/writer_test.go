package featstore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/internal/failpoint"
)

func TestRoundTrip(t *testing.T) {
	for _, dt := range []DType{Float32, Float16, Int8, Uint8} {
		for _, n := range []uint32{0, 1, 1000, 5003} {
			for _, dim := range []int{1, 7, 128} {
				t.Run(fmt.Sprintf("%s/n%d/dim%d", dt, n, dim), func(t *testing.T) {
					dir := newGraph(t, n, false)
					rb := int64(dim * dt.Size())
					rows := randomBytes(uint64(n)*1000+uint64(dim), int64(n)*rb)
					labels := randomLabels(uint64(n), int(n), 11)
					m := pack(t, dir, Options{DType: dt, Dim: dim, FeatureSource: "x.npy"}, rows, labels)
					if got := dirFiles(t, dir); !slices.Equal(got, storeFiles("1", true)) {
						t.Fatalf("files %v", got)
					}
					if err := Verify(dir); err != nil {
						t.Fatal(err)
					}
					s, err := Open(dir)
					if err != nil {
						t.Fatal(err)
					}
					defer s.Close()
					if s.NumNodes() != n || s.Dim() != dim || s.DType() != dt || s.RowBytes() != rb || s.Manifest().Features.Source != "x.npy" {
						t.Fatalf("store %+v", s.Manifest())
					}
					if b, err := os.ReadFile(s.FeaturesPath()); err != nil || !bytes.Equal(b, rows) {
						t.Fatalf("feature file differs from the rows appended (%v)", err)
					}
					var want int32 = -1
					var labeled uint32
					for _, l := range labels {
						want = max(want, l)
						if l >= 0 {
							labeled++
						}
					}
					if m.Labels.NumClasses != int64(want)+1 || m.Labels.Labeled != labeled {
						t.Fatalf("labels %+v, want %d classes %d labeled", m.Labels, want+1, labeled)
					}
					if n == 0 {
						return
					}
					r := rand.New(rand.NewPCG(uint64(n), 9))
					ids := make([]uint32, 3000)
					for i := range ids {
						ids[i] = r.Uint32N(n)
					}
					ids[1] = ids[0] // a repeat
					dst := make([]byte, int64(len(ids))*rb)
					if err := s.ReadRows(ids, dst); err != nil {
						t.Fatal(err)
					}
					for i, u := range ids {
						if !bytes.Equal(dst[int64(i)*rb:int64(i+1)*rb], rows[s.RowOffset(u):s.RowOffset(u)+rb]) {
							t.Fatalf("row %d (node %d) differs", i, u)
						}
					}
					got := make([]int32, len(ids))
					if err := s.ReadLabels(ids, got); err != nil {
						t.Fatal(err)
					}
					for i, u := range ids {
						if got[i] != labels[u] {
							t.Fatalf("label of node %d: %d, want %d", u, got[i], labels[u])
						}
					}
				})
			}
		}
	}
}

func TestWriterShapeErrors(t *testing.T) {
	dir := newGraph(t, 10, false)
	o := Options{DType: Float32, Dim: 3}
	cases := []struct {
		name string
		run  func(w *Writer) error
	}{
		{"too few rows", func(w *Writer) error { w.Append(make([]byte, 9*12)); return w.Close() }},
		{"too many rows", func(w *Writer) error { return w.Append(make([]byte, 11*12)) }},
		{"partial row", func(w *Writer) error { return w.Append(make([]byte, 13)) }},
		{"too few labels", func(w *Writer) error {
			w.Append(make([]byte, 10*12))
			w.AppendLabels(make([]int32, 9))
			return w.Close()
		}},
		{"too many labels", func(w *Writer) error { return w.AppendLabels(make([]int32, 11)) }},
	}
	for _, c := range cases {
		w, err := Create(dir, Options{DType: o.DType, Dim: o.Dim, Labels: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.run(w); !errors.Is(err, ErrShape) {
			t.Errorf("%s: err = %v, want ErrShape", c.name, err)
		}
		w.Abort()
		if got := dirFiles(t, dir); !slices.Equal(got, graphFiles) {
			t.Fatalf("%s: files left %v", c.name, got)
		}
	}
	w, _ := Create(dir, Options{DType: Int8, Dim: 1, Labels: true})
	if err := w.AppendLabels([]int32{0, -2}); err == nil || !bytes.Contains([]byte(err.Error()), []byte("node 1: label -2")) {
		t.Errorf("label -2: %v", err)
	}
	w.Abort()
	for _, o := range []Options{{DType: "float64", Dim: 1}, {DType: Float32, Dim: 0}, {DType: Float32, Dim: MaxDim + 1}} {
		if _, err := Create(dir, o); err == nil {
			t.Errorf("Create(%+v) succeeded", o)
		}
	}
	if _, err := Create(t.TempDir(), o); err == nil {
		t.Error("Create in a directory without a graph succeeded")
	}
	if got := dirFiles(t, dir); !slices.Equal(got, graphFiles) {
		t.Fatalf("files left %v", got)
	}
}

// TestReplace: a second store needs Force; while it is being written the
// old one stays readable, an aborted replacement leaves it whole, and a
// committed one removes its files.
func TestReplace(t *testing.T) {
	dir := newGraph(t, 300, false)
	o := Options{DType: Uint8, Dim: 5}
	old := randomBytes(1, 1500)
	pack(t, dir, o, old, nil)
	if _, err := Create(dir, o); !errors.Is(err, ErrExists) {
		t.Fatalf("Create over a store: %v, want ErrExists", err)
	}
	o.Force = true
	readOld := func() {
		t.Helper()
		if err := Verify(dir); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		dst := make([]byte, 5)
		if err := s.ReadRows([]uint32{299}, dst); err != nil || !bytes.Equal(dst, old[299*5:]) {
			t.Fatalf("old store during replacement: %v", err)
		}
	}
	w, err := Create(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	w.Append(randomBytes(2, 1500))
	readOld()
	w.Abort()
	readOld()
	if got := dirFiles(t, dir); !slices.Equal(got, storeFiles("1", false)) {
		t.Fatalf("after abort: %v", got)
	}
	next := randomBytes(3, 300*5)
	pack(t, dir, o, next, randomLabels(4, 300, 3))
	if got := dirFiles(t, dir); !slices.Equal(got, storeFiles("2", true)) {
		t.Fatalf("after replacement: %v", got)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "features-2.bin"))
	if !bytes.Equal(b, next) {
		t.Fatal("replacement rows differ")
	}
	if err := Verify(dir); err != nil {
		t.Fatal(err)
	}
}

// TestWriterFaults fails each step of a Writer in turn: the error
// reaches the caller, and the directory holds exactly what it held
// before (no store, or the old store, intact).
func TestWriterFaults(t *testing.T) {
	boom := errors.New("injected")
	for _, withOld := range []bool{false, true} {
		for _, step := range []string{stepCreate, stepAppend, stepSync, stepRename, stepManifest} {
			dir := newGraph(t, 100, false)
			o := Options{DType: Float16, Dim: 4, Force: true}
			old := randomBytes(5, 800)
			want := graphFiles
			if withOld {
				pack(t, dir, o, old, nil)
				want = storeFiles("1", false)
			}
			restore := failpoint.Enable(func(s string) error {
				if s == step {
					return boom
				}
				return nil
			})
			err := func() error {
				o.Labels = true
				w, err := Create(dir, o)
				if err != nil {
					return err
				}
				defer w.Abort()
				if err := w.Append(randomBytes(6, 800)); err != nil {
					return err
				}
				if err := w.AppendLabels(make([]int32, 100)); err != nil {
					return err
				}
				return w.Close()
			}()
			restore()
			if !errors.Is(err, boom) {
				t.Fatalf("fault at %s: err = %v", step, err)
			}
			if got := dirFiles(t, dir); !slices.Equal(got, want) {
				t.Fatalf("fault at %s (old store %v): files %v, want %v", step, withOld, got, want)
			}
			if withOld {
				if err := Verify(dir); err != nil {
					t.Fatalf("fault at %s: old store: %v", step, err)
				}
				b, _ := os.ReadFile(filepath.Join(dir, "features-1.bin"))
				if !bytes.Equal(b, old) {
					t.Fatalf("fault at %s: old rows changed", step)
				}
			} else if _, err := Open(dir); !errors.Is(err, ErrNoFeatures) {
				t.Fatalf("fault at %s: Open = %v, want ErrNoFeatures", step, err)
			}
		}
	}
}

// TestLargestLabel: a label of 2^31−1, a valid class id, gives 2^31
// classes (num_classes overflowed int32 to −2^31 before, and the store
// written was refused by every reader after --force had replaced the
// good one). The store packs, verifies and reads back the label.
func TestLargestLabel(t *testing.T) {
	dir := newGraph(t, 10, false)
	pack(t, dir, Options{DType: Uint8, Dim: 2}, randomBytes(20, 20), randomLabels(20, 10, 3))
	labels := []int32{0, NoLabel, 1<<31 - 1, 5, 0, 0, 0, 0, 0, 7}
	m := pack(t, dir, Options{DType: Uint8, Dim: 2, Force: true}, randomBytes(21, 20), labels)
	if m.Labels.NumClasses != 1<<31 || m.Labels.Labeled != 9 {
		t.Fatalf("num_classes %d, labeled %d", m.Labels.NumClasses, m.Labels.Labeled)
	}
	if err := Verify(dir); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	y := make([]int32, 2)
	if err := s.ReadLabels([]uint32{2, 9}, y); err != nil || y[0] != 1<<31-1 || y[1] != 7 {
		t.Fatalf("labels %v, %v", y, err)
	}
}

// TestCloseValidatesFirst: a Writer whose manifest a reader would refuse
// fails Close before anything is renamed: the store it was to replace is
// whole and verifies, and nothing of the new one is left.
func TestCloseValidatesFirst(t *testing.T) {
	dir := newGraph(t, 100, false)
	old := randomBytes(22, 100*4)
	pack(t, dir, Options{DType: Float32, Dim: 1}, old, randomLabels(22, 100, 3))
	w, err := Create(dir, Options{DType: Float32, Dim: 1, Labels: true, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	w.Append(randomBytes(23, 100*4))
	w.AppendLabels(randomLabels(23, 100, 3))
	w.m.Labels.DType = "int64" // what no reader accepts, as an overflowed num_classes was
	if err := w.Close(); !errors.Is(err, ErrBadManifest) {
		t.Fatalf("Close = %v, want ErrBadManifest", err)
	}
	if got := dirFiles(t, dir); !slices.Equal(got, storeFiles("1", true)) {
		t.Fatalf("files %v", got)
	}
	if err := Verify(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "features-1.bin")); !bytes.Equal(b, old) {
		t.Fatal("the old rows changed")
	}
}
