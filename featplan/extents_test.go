package featplan

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestExtentsHandChecked(t *testing.T) {
	o := ExtentOptions{MaxGap: 4096, MaxExtent: 16384}
	tests := []struct {
		name     string
		rows     []uint32
		rowBytes int64
		want     []Extent
	}{
		{"one small row", []uint32{3}, 512, []Extent{{0, 4096, 0, 1}}},
		{"same page", []uint32{0, 7}, 512, []Extent{{0, 4096, 0, 2}}},
		// row 8 of 512 B is page 1: touching page 0 → merged
		{"touching pages", []uint32{0, 8}, 512, []Extent{{0, 8192, 0, 2}}},
		// page 0 and page 2: hole of one page = MaxGap → merged
		{"gap at limit", []uint32{0, 16}, 512, []Extent{{0, 12288, 0, 2}}},
		// page 0 and page 3: hole of 2 pages > MaxGap → split
		{"gap too big", []uint32{0, 24}, 512, []Extent{{0, 4096, 0, 1}, {12288, 4096, 1, 2}}},
		// 5 touching pages of 4 KiB rows: max 4 pages per extent
		{"max extent", []uint32{0, 1, 2, 3, 4}, 4096, []Extent{{0, 16384, 0, 4}, {16384, 4096, 4, 5}}},
		// a row straddling pages: 3000-byte rows, row 1 is bytes 3000..6000
		{"straddling", []uint32{1}, 3000, []Extent{{0, 8192, 0, 1}}},
		// a row longer than MaxExtent is one extent of its own
		{"huge row", []uint32{0, 1}, 20000, []Extent{{0, 20480, 0, 1}, {16384, 24576, 1, 2}}},
		{"empty", nil, 512, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Extents(nil, tc.rows, tc.rowBytes, o)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("extents %v, want %v", got, tc.want)
			}
		})
	}
}

// TestExtentsProperties: on random sorted row sets, extents are aligned,
// sorted, within MaxExtent unless one row needs more, cover their rows, and
// keep apart exactly the spans whose hole exceeds MaxGap.
func TestExtentsProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 500 {
		rowBytes := int64(1 + r.IntN(9000))
		o := ExtentOptions{MaxGap: int64(r.IntN(5)) * 4096, MaxExtent: int64(1+r.IntN(8)) * 4096}
		set := map[uint32]bool{}
		for range r.IntN(200) {
			set[r.Uint32N(5000)] = true
		}
		rows := make([]uint32, 0, len(set))
		for v := range set {
			rows = append(rows, v)
		}
		slices.Sort(rows)
		ext, err := Extents(nil, rows, rowBytes, o)
		if err != nil {
			t.Fatal(err)
		}
		next := 0
		for k, e := range ext {
			if e.Offset%Align != 0 || e.Length%Align != 0 || e.Length <= 0 {
				t.Fatalf("trial %d: extent %v not aligned", trial, e)
			}
			if k > 0 && e.Offset < ext[k-1].Offset+ext[k-1].Length-Align {
				t.Fatalf("trial %d: extent %v overlaps %v by more than a page", trial, e, ext[k-1])
			}
			if e.First != next || e.Last <= e.First {
				t.Fatalf("trial %d: extent %v does not continue at row %d", trial, e, next)
			}
			next = e.Last
			span := func(i int) (int64, int64) {
				s := int64(rows[i]) * rowBytes
				return s &^ (Align - 1), (s + rowBytes + Align - 1) &^ (Align - 1)
			}
			lo, hi := span(e.First)
			if e.Length > o.MaxExtent && (e.Last-e.First != 1 || hi-lo != e.Length) {
				t.Fatalf("trial %d: extent %v longer than %d", trial, e, o.MaxExtent)
			}
			for i := e.First; i < e.Last; i++ {
				lo, hi := span(i)
				if lo < e.Offset || hi > e.Offset+e.Length {
					t.Fatalf("trial %d: row %d outside extent %v", trial, rows[i], e)
				}
				if i > e.First {
					_, phi := span(i - 1)
					if lo-phi > o.MaxGap {
						t.Fatalf("trial %d: hole %d > gap %d merged", trial, lo-phi, o.MaxGap)
					}
				}
			}
			if k > 0 {
				_, phi := span(ext[k-1].Last - 1)
				if lo-phi <= o.MaxGap && hi-ext[k-1].Offset <= o.MaxExtent {
					t.Fatalf("trial %d: extents %v and %v could have merged", trial, ext[k-1], e)
				}
			}
		}
		if next != len(rows) {
			t.Fatalf("trial %d: extents cover %d of %d rows", trial, next, len(rows))
		}
	}
}

func TestExtentsBadInput(t *testing.T) {
	tests := []struct {
		name     string
		rows     []uint32
		rowBytes int64
		o        ExtentOptions
	}{
		{"unsorted", []uint32{3, 1}, 8, DefaultExtentOptions()},
		{"duplicate", []uint32{3, 3}, 8, DefaultExtentOptions()},
		{"zero row", []uint32{1}, 0, DefaultExtentOptions()},
		{"max unaligned", []uint32{1}, 8, ExtentOptions{MaxExtent: 5000}},
		{"negative gap", []uint32{1}, 8, ExtentOptions{MaxGap: -1, MaxExtent: 4096}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Extents(nil, tc.rows, tc.rowBytes, tc.o); !errors.Is(err, ErrInput) {
				t.Fatalf("err %v, want ErrInput", err)
			}
		})
	}
}

// TestExtentsHoleBudget: with a HoleBudget the holes read through add at
// most that fraction of the rows' page bytes, and they are the shortest
// ones: no hole left unread (a split not forced by MaxExtent) is shorter
// than one read through.
func TestExtentsHoleBudget(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for trial := range 2000 {
		rowBytes := int64(1 + r.IntN(9000))
		n := 1 + r.IntN(300)
		seen := map[uint32]bool{}
		var rows []uint32
		for len(rows) < n {
			if v := r.Uint32N(uint32(20 * n)); !seen[v] {
				seen[v] = true
				rows = append(rows, v)
			}
		}
		slices.Sort(rows)
		o := ExtentOptions{MaxGap: int64(r.IntN(12)) * Align, HoleBudget: []float64{0.01, 0.1, 0.5}[r.IntN(3)], MaxExtent: 1 << 40}
		ext, err := Extents(nil, rows, rowBytes, o)
		if err != nil {
			t.Fatal(err)
		}
		// The rows' own pages, and each extent's.
		pages := map[int64]bool{}
		for _, v := range rows {
			s := int64(v) * rowBytes
			for pg := s / Align; pg <= (s+rowBytes-1)/Align; pg++ {
				pages[pg] = true
			}
		}
		var read int64
		for _, e := range ext {
			read += e.Length
		}
		own := int64(len(pages)) * Align
		if holes := read - own; float64(holes) > o.HoleBudget*float64(own) {
			t.Fatalf("trial %d: holes of %d bytes > %g × %d", trial, holes, o.HoleBudget, own)
		}
		longestRead, shortestLeft := int64(0), int64(math.MaxInt64)
		for _, e := range ext {
			for pg := e.Offset / Align; pg < (e.Offset+e.Length)/Align; {
				if pages[pg] {
					pg++
					continue
				}
				h := int64(0)
				for ; pg < (e.Offset+e.Length)/Align && !pages[pg]; pg++ {
					h += Align
				}
				longestRead = max(longestRead, h)
			}
		}
		for k := 1; k < len(ext); k++ {
			if h := ext[k].Offset - (ext[k-1].Offset + ext[k-1].Length); h <= o.MaxGap {
				shortestLeft = min(shortestLeft, h)
			}
		}
		if longestRead > shortestLeft {
			t.Fatalf("trial %d: a hole of %d bytes read through, one of %d left", trial, longestRead, shortestLeft)
		}
	}
}
