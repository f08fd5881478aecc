// Package featstoretest packs feature stores of random rows for the tests
// of the packages that read them (featrows, runloop, serve). It is for
// tests only.
package featstoretest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/streamsampler/streamsampler/featstore"
)

// Pack packs a feature store into the graph directory dir (which holds a
// graph): one random row of dim values of dt per node, drawn from seed,
// and, where classes > 0, a label per node in -1..classes-2 (-1: none).
func Pack(t testing.TB, dir string, dt featstore.DType, dim, classes int, seed uint64) {
	t.Helper()
	fw, err := featstore.Create(dir, featstore.Options{DType: dt, Dim: dim, Labels: classes > 0})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, uint64(dim)))
	row := make([]byte, fw.RowBytes())
	n := fw.NumNodes()
	y := make([]int32, n)
	for v := range n {
		for i := range row {
			row[i] = byte(r.Uint32())
		}
		if err := fw.Append(row); err != nil {
			t.Fatal(err)
		}
		if classes > 0 {
			y[v] = int32(r.IntN(classes)) - 1
		}
	}
	if classes > 0 {
		if err := fw.AppendLabels(y); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

// Open packs a store into dir (Pack) and opens it, to be closed when the
// test ends.
func Open(t testing.TB, dir string, dt featstore.DType, dim, classes int, seed uint64) *featstore.Store {
	t.Helper()
	Pack(t, dir, dt, dim, classes, seed)
	fs, err := featstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs
}

// HalfValue is the value of IEEE 754 binary16 h, computed from its fields:
// a reference independent of featstore.Float16ToFloat32's bit
// manipulation, for the tests of what delivers float16 rows as floats.
func HalfValue(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e, m := int(h>>10&0x1F), float64(h&0x3FF)
	switch e {
	case 0x1F:
		if m != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	case 0:
		return sign * math.Ldexp(m, -24)
	}
	return sign * math.Ldexp(1024+m, e-25)
}
