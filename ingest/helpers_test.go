package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gz(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func zst(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := zstd.NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func bin32(pairs []uint32) []byte {
	b := make([]byte, 4*len(pairs))
	for i, x := range pairs {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return b
}

func bin64(pairs []uint64) []byte {
	b := make([]byte, 8*len(pairs))
	for i, x := range pairs {
		binary.LittleEndian.PutUint64(b[8*i:], x)
	}
	return b
}

// npyBytes builds an .npy file holding the edges (src[i], dst[i]) with the
// given dtype ("<i4", "<i8", "<u4", "<u8"), shape (2,E) when twoByE else
// (E,2), and memory order.
func npyBytes(src, dst []int64, dtype string, twoByE, fortran bool) []byte {
	e := len(src)
	shape := fmt.Sprintf("(%d, 2)", e)
	if twoByE {
		shape = fmt.Sprintf("(2, %d)", e)
	}
	ford := "False"
	if fortran {
		ford = "True"
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", dtype, ford, shape)
	hl := len(dict) + 1
	pad := (64 - (10+hl)%64) % 64
	dict += string(bytes.Repeat([]byte{' '}, pad)) + "\n"
	var b bytes.Buffer
	b.Write(magicNPY)
	b.Write([]byte{1, 0})
	binary.Write(&b, binary.LittleEndian, uint16(len(dict)))
	b.WriteString(dict)
	// Memory order: split when ((2,E) and C) or ((E,2) and Fortran).
	split := twoByE != fortran
	var vals []int64
	if split {
		vals = append(append(vals, src...), dst...)
	} else {
		for i := range src {
			vals = append(vals, src[i], dst[i])
		}
	}
	for _, v := range vals {
		switch dtype[1:] {
		case "i4", "u4":
			binary.Write(&b, binary.LittleEndian, uint32(v))
		default:
			binary.Write(&b, binary.LittleEndian, uint64(v))
		}
	}
	return b.Bytes()
}

// readAllEdges reads every edge of one input.
func readAllEdges(path string, o ReadOptions) ([]uint32, error) {
	r, err := OpenEdges(path, o)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var all []uint32
	for {
		p, err := r.Next()
		if errors.Is(err, io.EOF) {
			return all, nil
		}
		if err != nil {
			return all, err
		}
		all = append(all, p...)
	}
}

func equalU32(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// randomEdgeText is n lines of pseudo-random "u v" that compress poorly,
// so that truncating the compressed form cuts the data, not the trailer.
func randomEdgeText(n int) []byte {
	var b []byte
	x := uint64(88172645463325252)
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b = fmt.Appendf(b, "%d %d\n", x%1000000, (x>>20)%1000000)
	}
	return b
}

// randomPairs returns m random edges (u, v) over n nodes as flat pairs,
// about one in ten a self-loop and one in eight repeated right after
// itself; skewed draws sources towards low ids (a product of two uniform
// draws), as a power-law graph's would be.
func randomPairs(rng *rand.Rand, n uint32, m int, skewed bool) []uint32 {
	pairs := make([]uint32, 0, 2*m)
	for range m {
		var u uint32
		if skewed {
			u = uint32(rng.IntN(int(n)) * rng.IntN(int(n)) / int(n))
		} else {
			u = uint32(rng.IntN(int(n)))
		}
		v := uint32(rng.IntN(int(n)))
		if rng.IntN(10) == 0 {
			v = u // self-loops
		}
		pairs = append(pairs, u, v)
		if rng.IntN(8) == 0 {
			pairs = append(pairs, u, v) // duplicates
		}
	}
	return pairs
}

// maxDegree is the longest adjacency list's length.
func maxDegree(adj [][]uint32) int {
	d := 0
	for _, a := range adj {
		d = max(d, len(a))
	}
	return d
}

// heapGrowth runs fn after a collection and returns the most the Go heap
// grew above its size before, sampled every 2 ms while fn ran: the
// memory-bound tests' measure of what a pass holds at once.
func heapGrowth(fn func() error) (int64, error) {
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	err := fn()
	close(stop)
	<-done
	return int64(peak.Load()) - int64(base.HeapAlloc), err
}

// dirNames lists the names in dir, in directory order.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
