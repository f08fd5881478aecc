package featstore

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// newGraph writes a graph of n nodes (node u linked to u+1 and, when
// odd is set, to 0 as well, so that two graphs of one size can differ)
// into a new directory.
func newGraph(t testing.TB, n uint32, odd bool) string {
	t.Helper()
	dir := t.TempDir()
	w, err := chunkfmt.NewWriter(dir, n, 4096, chunkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for u := range n {
		var adj []uint32
		if odd {
			adj = append(adj, 0)
		}
		if u+1 < n {
			adj = append(adj, u+1)
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

// randomBytes returns n seeded random bytes.
func randomBytes(seed uint64, n int64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// randomLabels returns n labels in [-1, classes), about a third NoLabel.
func randomLabels(seed uint64, n int, classes int32) []int32 {
	r := rand.New(rand.NewPCG(seed, 2))
	l := make([]int32, n)
	for i := range l {
		if r.IntN(3) == 0 {
			l[i] = NoLabel
		} else {
			l[i] = r.Int32N(classes)
		}
	}
	return l
}

// pack writes rows (and labels, when not nil) into dir's store,
// appending in randomly sized pieces of whole rows.
func pack(t testing.TB, dir string, o Options, rows []byte, labels []int32) *Manifest {
	t.Helper()
	o.Labels = labels != nil
	w, err := Create(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	r := rand.New(rand.NewPCG(uint64(len(rows)), 3))
	rb := w.RowBytes()
	for off := int64(0); off < int64(len(rows)); {
		k := min(int64(len(rows))-off, rb*int64(1+r.IntN(300)))
		if err := w.Append(rows[off : off+k]); err != nil {
			t.Fatal(err)
		}
		off += k
	}
	for off := 0; off < len(labels); {
		k := min(len(labels)-off, 1+r.IntN(3000))
		if err := w.AppendLabels(labels[off : off+k]); err != nil {
			t.Fatal(err)
		}
		off += k
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.Manifest()
}

// dirFiles lists dir's entries, sorted.
func dirFiles(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// graphFiles are the files of a graph directory without a store.
var graphFiles = []string{"chunks.info", "edges.chunks", "manifest.json"}

// storeFiles are graphFiles plus a store of generation gen.
func storeFiles(gen string, labels bool) []string {
	f := append(slices.Clone(graphFiles), "features-"+gen+".bin", "features-"+gen+".crc", ManifestFile)
	if labels {
		f = append(f, "labels-"+gen+".bin", "labels-"+gen+".crc")
	}
	slices.Sort(f)
	return f
}
