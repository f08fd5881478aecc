package host

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestLoadCSR reads back a graph packed into many chunks exactly.
func TestLoadCSR(t *testing.T) {
	g := randomCSR(4000, 5, 11)
	got, err := LoadCSR(writeGraph(t, g, 1024))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Indptr, g.Indptr) || !reflect.DeepEqual(got.Indices, g.Indices) {
		t.Fatal("CSR read back differs from the one written")
	}
}

func TestLoadCSRMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	if _, err := LoadCSR(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("got %v, want an error naming %s", err, dir)
	}
}
