package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/host"
)

// testGraph writes a random graph (skewed degrees, sorted unique
// adjacency) as a graph directory and returns it with its CSR.
func testGraph(t testing.TB, n uint32, avgDeg int, chunkSize int64) (string, *host.CSR) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(n), uint64(avgDeg)))
	c := &host.CSR{Indptr: make([]uint64, n+1)}
	for v := uint32(0); v < n; v++ {
		d := r.IntN(2*avgDeg + 1)
		if r.IntN(50) == 0 {
			d *= 6
		}
		nb := make([]uint32, d)
		for i := range nb {
			nb[i] = uint32(r.IntN(int(n)))
		}
		slices.Sort(nb)
		nb = slices.Compact(nb)
		c.Indices = append(c.Indices, nb...)
		c.Indptr[v+1] = uint64(len(c.Indices))
	}
	dir := filepath.Join(t.TempDir(), "graph")
	w, err := chunkfmt.NewWriter(dir, n, chunkSize, chunkfmt.Options{Dedup: true, SelfLoops: chunkfmt.SelfLoopsKeep})
	if err != nil {
		t.Fatal(err)
	}
	for v := uint32(0); v < n; v++ {
		nb, _ := c.Neighbors(v)
		if err := w.Append(nb); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, c
}

// writeTrain writes node ids one per line.
func writeTrain(t testing.TB, ids []uint32) string {
	t.Helper()
	var b strings.Builder
	for _, v := range ids {
		b.WriteString(itoa(v))
		b.WriteByte('\n')
	}
	p := filepath.Join(t.TempDir(), "train.txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func itoa(v uint32) string {
	var buf [10]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(buf[i:])
		}
	}
}

// cli runs the command line and returns stdout, stderr and the exit code.
func cli(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := execute(args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}
