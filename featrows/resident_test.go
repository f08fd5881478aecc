package featrows

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// A Resident store delivers what ReadRows reads from the file (repeats
// and any order included), from many goroutines at once; a node out of
// range and a short buffer are errors.
func TestResidentEqualsReadRows(t *testing.T) {
	const n, dim = 5000, 12
	fs := store(t, n, dim, false)
	res, err := LoadResident(context.Background(), fs)
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes() != int64(n)*fs.RowBytes() {
		t.Fatalf("resident %d bytes, want %d", res.Bytes(), int64(n)*fs.RowBytes())
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 3))
			for range 50 {
				nodes := make([]uint32, 1+r.IntN(300))
				for i := range nodes {
					nodes[i] = r.Uint32N(n)
				}
				nodes = append(nodes, nodes[0]) // a repeat
				got := make([]byte, int64(len(nodes))*fs.RowBytes())
				if err := res.ReadRows(nodes, got); err != nil {
					t.Error(err)
					return
				}
				want := make([]byte, len(got))
				if err := fs.ReadRows(nodes, want); err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(got, want) {
					t.Errorf("goroutine %d: resident rows differ from the file's", g)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := res.ReadRows([]uint32{1, n}, make([]byte, 2*fs.RowBytes())); err == nil || !strings.Contains(err.Error(), "node 5000 (position 1): out of range") {
		t.Fatalf("node out of range: %v", err)
	}
	if err := res.ReadRows([]uint32{1, 2}, make([]byte, fs.RowBytes())); err == nil {
		t.Fatal("a short buffer was accepted")
	}
}

// A row changed on disk fails the load with the defect naming it; a
// cancelled context stops it.
func TestResidentLoadRefusesCorruptRows(t *testing.T) {
	const n, dim = 3000, 16
	fs := store(t, n, dim, false)
	off := 1234*fs.RowBytes() + 5
	restore := flip(t, fs.FeaturesPath(), off)
	_, err := LoadResident(context.Background(), fs)
	wantDefect(t, "LoadResident", err, fs.FeatureChecksums().File(), off)
	restore()
	if _, err := LoadResident(context.Background(), fs); err != nil {
		t.Fatalf("restored: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := LoadResident(ctx, fs); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled load: %v", err)
	}
}
