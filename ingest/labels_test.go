package ingest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/featstore"
)

// ReadLabels refuses, naming the file and what is wrong, a label below
// -1 or above int32, a truncated file and trailing bytes (the other
// malformed inputs are TestPackFeaturesBadInputs', which share its
// reader).
func TestReadLabelsErrors(t *testing.T) {
	good := npyArr(t, []int{3}, []int64{0, -1, 7})
	for _, tc := range []struct {
		name  string
		data  []byte
		count uint32
		is    error
		want  string
	}{
		{"below -1", npyArr(t, []int{1}, []int64{-2}), 1, ErrSyntax, "node 0: label -2"},
		{"above int32", npyArr(t, []int{1}, []int64{1 << 31}), 1, ErrSyntax, "node 0: label 2147483648"},
		{"truncated", good[:len(good)-1], 3, featstore.ErrShape, "data truncated: 2 of 3 labels"},
		{"trailing", append(slices.Clone(good), 0), 3, featstore.ErrShape, "more data than the header's 3 labels"},
		{"length", good, 4, featstore.ErrShape, "has 3 labels, the graph has 4 nodes: want (4,)"},
	} {
		path := writeFile(t, t.TempDir(), "tvshow.npy", tc.data)
		_, err := ReadLabels(context.Background(), path, tc.count)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "tvshow.npy") {
			t.Errorf("%s: %v, want %v naming tvshow.npy and %q", tc.name, err, tc.is, tc.want)
		}
	}
	if got, err := ReadLabels(context.Background(), writeFile(t, t.TempDir(), "y.npy", good), 3); err != nil || !slices.Equal(got, []int32{0, -1, 7}) {
		t.Fatalf("labels %v: %v", got, err)
	}
}

// FuzzReadLabels: the label reader never panics; what it accepts has
// exactly count labels, each -1 or a class.
func FuzzReadLabels(f *testing.F) {
	f.Add(npyArr(f, []int{3}, []int64{0, -1, 7}), uint32(3))
	f.Add(npyArr(f, []int{3}, []int64{0, -1, 7}), uint32(4))
	f.Add(npyArr(f, []int{1}, []int64{-2}), uint32(1))
	f.Add([]byte("1\nnan\n3\n"), uint32(3))
	path := filepath.Join(f.TempDir(), "labels")
	f.Fuzz(func(t *testing.T, data []byte, count uint32) {
		count %= 1 << 16 // a bound on what a fuzzed header makes it allocate
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := ReadLabels(context.Background(), path, count)
		if err != nil {
			return
		}
		if len(l) != int(count) || slices.ContainsFunc(l, func(v int32) bool { return v < -1 }) {
			t.Fatalf("accepted %d labels %v for %d nodes", len(l), l, count)
		}
	})
}
