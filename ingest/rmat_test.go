package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestRMATDeterministic(t *testing.T) {
	o := RMATOptions{Scale: 10, EdgeFactor: 70, Seed: 7} // > one block
	var a, b, c bytes.Buffer
	if err := GenerateRMAT(context.Background(), &a, o, FormatBin32); err != nil {
		t.Fatal(err)
	}
	prev := runtime.GOMAXPROCS(1)
	err := GenerateRMAT(context.Background(), &b, o, FormatBin32)
	runtime.GOMAXPROCS(prev)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("output depends on the number of workers")
	}
	o.Seed = 8
	GenerateRMAT(context.Background(), &c, o, FormatBin32)
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("seed does not change the output")
	}
	if int64(a.Len()) != 8*o.NumEdges() {
		t.Fatalf("%d bytes, want %d", a.Len(), 8*o.NumEdges())
	}
}

// TestRMATGolden pins the generator: a change in its output would change
// every recorded benchmark.
func TestRMATGolden(t *testing.T) {
	var b bytes.Buffer
	if err := GenerateRMAT(context.Background(), &b, RMATOptions{Scale: 8, EdgeFactor: 4, Seed: 1}, FormatText); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b.Bytes())
	if got := fmt.Sprintf("%x", sum); got != rmatGolden {
		t.Fatalf("sha256 of scale 8, edge factor 4, seed 1: %s, want %s", got, rmatGolden)
	}
}

// TestRMATFormatsAgree reads text, bin32 and bin64 output back: same edges.
func TestRMATFormatsAgree(t *testing.T) {
	dir := t.TempDir()
	o := RMATOptions{Scale: 12, EdgeFactor: 20, Seed: 3}
	var ref []uint32
	for _, name := range []string{"g.txt", "g.bin32", "g.bin64"} {
		p := filepath.Join(dir, name)
		if err := WriteRMATFile(context.Background(), p, o, FormatAuto); err != nil {
			t.Fatal(err)
		}
		got, err := readAllEdges(p, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(got)) != 2*o.NumEdges() {
			t.Fatalf("%s: %d edges", name, len(got)/2)
		}
		for _, x := range got {
			if x >= 1<<o.Scale {
				t.Fatalf("%s: id %d ≥ 2^%d", name, x, o.Scale)
			}
		}
		if ref == nil {
			ref = got
		} else if !equalU32(got, ref) {
			t.Fatalf("%s differs from text", name)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		t.Fatalf("temporary files left: %v", ents)
	}
}

// TestRMATQuadrants checks the recursive quadrant probabilities with a
// chi-square test at every level of the unscrambled ids: the pair of bits
// (u_l, v_l) is (0,0) with probability a, (0,1) b, (1,0) c, (1,1) d.
func TestRMATQuadrants(t *testing.T) {
	o := RMATOptions{Scale: 6, EdgeFactor: 2000, Seed: 11, NoScramble: true}
	o.normalize()
	g := newRMATGen(o)
	var pairs []uint32
	for b := int64(0); b*rmatBlock < o.NumEdges(); b++ {
		pairs = append(pairs, g.block(b, make([]uint32, 2*rmatBlock))...)
	}
	p := []float64{o.A, o.B, o.C, 1 - o.A - o.B - o.C}
	n := float64(len(pairs) / 2)
	for level := range o.Scale {
		var cnt [4]float64
		for k := 0; k < len(pairs); k += 2 {
			ub := pairs[k] >> level & 1
			vb := pairs[k+1] >> level & 1
			cnt[2*ub+vb]++
		}
		chi := 0.0
		for q := range 4 {
			e := n * p[q]
			chi += (cnt[q] - e) * (cnt[q] - e) / e
		}
		// 3 degrees of freedom: P(chi2 > 16.27) = 0.001.
		if chi > 16.27 {
			t.Errorf("level %d: counts %v, chi2 = %.1f (p < 0.001)", level, cnt, chi)
		}
	}
}

func TestRMATScrambleIsBijection(t *testing.T) {
	for _, s := range []int{1, 2, 5, 13} {
		o := RMATOptions{Scale: s, EdgeFactor: 1, Seed: uint64(s)}
		o.normalize()
		g := newRMATGen(o)
		seen := make([]bool, 1<<s)
		for x := uint64(0); x < 1<<s; x++ {
			y := g.scramble(x)
			if y >= 1<<s || seen[y] {
				t.Fatalf("scale %d: scramble(%d) = %d repeats or escapes", s, x, y)
			}
			seen[y] = true
		}
	}
}

func TestRMATErrors(t *testing.T) {
	for _, o := range []RMATOptions{{Scale: 0, EdgeFactor: 1}, {Scale: 31, EdgeFactor: 1}, {Scale: 4, EdgeFactor: 0}, {Scale: 4, EdgeFactor: 1, A: 0.9, B: 0.2}} {
		if err := GenerateRMAT(context.Background(), &bytes.Buffer{}, o, FormatText); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	if err := WriteRMATFile(ctx, filepath.Join(dir, "g.txt"), RMATOptions{Scale: 16, EdgeFactor: 4}, FormatText); err == nil {
		t.Fatal("cancelled generation succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

func BenchmarkRMAT(b *testing.B) {
	o := RMATOptions{Scale: 20, EdgeFactor: 4, Seed: 1}
	b.SetBytes(8 * o.NumEdges())
	for b.Loop() {
		if err := GenerateRMAT(context.Background(), io_Discard{}, o, FormatBin32); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(o.NumEdges())*float64(b.N)/b.Elapsed().Seconds()/1e6, "Medges/s")
}

type io_Discard struct{}

func (io_Discard) Write(p []byte) (int, error) { return len(p), nil }

const rmatGolden = "266f3105b410218cb3d9f3eac0b15db443ad4efa0a80a4031cc7c9f208797d4e"
