package featplan

import "fmt"

// Align is the alignment of every extent's offset and length: the page and
// logical block size O_DIRECT needs on the file systems this runs on.
const Align = 4096

// DefaultMaxGap is the largest hole (bytes between two rows' aligned spans)
// read through rather than split into two requests: about what one more
// request costs in bytes of a longer one, at DefaultDepth. On the
// development VM's virtio disk (`go test -run '^$' -bench ReadSize
// ./featplan`, 2026-11-23, two runs) random 4 KiB O_DIRECT reads took
// 27–44 µs each sixteen in flight (59–210 µs one at a time), while 1 MiB
// reads streamed at 1.0–1.3 GB/s at either depth: a request costs what
// 30–55 KiB more of one read does (60–250 KiB at depth 1, the previous
// default's basis). 32 KiB is the low end, in whole pages.
const DefaultMaxGap = 32 << 10

// DefaultDepth is the reads a Reader keeps in flight. Through Linux AIO
// (aio.go) the executor reads what fio does at the same depth, and fio's
// best random 4 KiB rate on the development VM's disk is at 64 (43–45 k
// reads/s at 16, 57–68 k at 64, 64 k at 128; `go test -run '^$' -bench
// ReadDepth ./featplan` runs both, 2026-11-27). The pread goroutines
// before it kept about two reads in flight on two cores, whatever the
// depth, and sixteen was as good as any.
const DefaultDepth = 64

// DefaultMaxExtent bounds one request (and the executor's buffer).
const DefaultMaxExtent = 1 << 20

// DefaultHoleBudget keeps the holes read through to a tenth of the pages
// the rows need, so that a plan's bytes stay within 1.1× of the optimum
// (Report.VsOptimum): the requests it saves are worth less than the bytes
// it would add past that on a disk that streams at 1 GB/s.
const DefaultHoleBudget = 0.1

// ExtentOptions shapes the reads of a minibatch's disk rows.
type ExtentOptions struct {
	// MaxGap: two neighbouring rows' aligned spans separated by at most
	// this many bytes are read by one request (hole included). 0 merges only
	// spans that touch or overlap.
	MaxGap int64
	// HoleBudget bounds the holes read through (gaps of at most MaxGap
	// merged into an extent) to this fraction of the bytes of the pages
	// holding the rows themselves: the smallest holes are filled first
	// (among equal ones, the first), until the next would exceed the
	// budget. 0 sets no bound (MaxGap alone decides).
	HoleBudget float64
	// MaxExtent bounds an extent's length, except that an extent always
	// covers at least one whole row's aligned span (a row longer than
	// MaxExtent is one extent of its own).
	MaxExtent int64
	// Depth is how many of a minibatch's extents a Reader reads at once
	// (0 or 1: one after another). It does not change the extents.
	Depth int
	// Check, when not nil, checks every row read from the file before it
	// is placed (in a minibatch or in the cache): it gets the row's offset
	// (v·rowBytes) and its bytes, on the read's goroutine, concurrently
	// with itself. An error fails the read, named by file and minibatch,
	// and the row is not placed. featrows passes the feature store's
	// per-row CRCs (featstore.Checksums.Check): the rows read from disk
	// are checked once each, rows taken from the cache were when they
	// were read. It does not change the extents.
	Check func(off int64, b []byte) error
}

// DefaultExtentOptions are DefaultMaxGap, DefaultHoleBudget,
// DefaultMaxExtent and DefaultDepth.
func DefaultExtentOptions() ExtentOptions {
	return ExtentOptions{MaxGap: DefaultMaxGap, HoleBudget: DefaultHoleBudget, MaxExtent: DefaultMaxExtent, Depth: DefaultDepth}
}

func (o ExtentOptions) check() error {
	if o.MaxGap < 0 || o.MaxExtent < Align || o.MaxExtent%Align != 0 || o.Depth < 0 || !(o.HoleBudget >= 0) {
		return fmt.Errorf("%w: extent options gap %d hole budget %g max %d depth %d (want gap >= 0, budget >= 0, max a positive multiple of %d, depth >= 0)", ErrInput, o.MaxGap, o.HoleBudget, o.MaxExtent, o.Depth, Align)
	}
	return nil
}

// Extent is one read: Length bytes at Offset (both multiples of Align),
// covering the rows rows[First:Last] of the sorted row list it was built
// from.
type Extent struct {
	Offset, Length int64
	First, Last    int
}

// Extents groups rows (node ids, sorted ascending, distinct) of rowBytes
// bytes each into aligned reads sorted by offset, appending to dst. Each
// row's bytes [v*rowBytes, (v+1)*rowBytes) lie inside its extent; a row's
// span is widened to Align boundaries, and neighbouring spans are merged
// while the hole between them is at most MaxGap, within the HoleBudget, and
// the merged extent at most MaxExtent. Where a split at MaxExtent falls
// inside a page holding the end of one row and the start of the next, the
// two extents share that page (it is read twice); extents never overlap
// otherwise.
func Extents(dst []Extent, rows []uint32, rowBytes int64, o ExtentOptions) ([]Extent, error) {
	if err := o.check(); err != nil {
		return dst, err
	}
	if rowBytes <= 0 {
		return dst, fmt.Errorf("%w: row of %d bytes", ErrInput, rowBytes)
	}
	for i := 1; i < len(rows); i++ {
		if rows[i] <= rows[i-1] {
			return dst, fmt.Errorf("%w: rows not sorted and distinct at %d (node %d after %d)", ErrInput, i, rows[i], rows[i-1])
		}
	}
	fill := holesFilled(rows, rowBytes, o)
	var cur Extent
	open := false
	for i, v := range rows {
		start := int64(v) * rowBytes
		lo := start &^ (Align - 1)
		hi := (start + rowBytes + Align - 1) &^ (Align - 1)
		if open {
			end := cur.Offset + cur.Length
			if (lo <= end || fill.take(lo-end)) && hi-cur.Offset <= o.MaxExtent {
				if hi > end {
					cur.Length = hi - cur.Offset
				}
				cur.Last = i + 1
				continue
			}
			dst = append(dst, cur)
		}
		cur = Extent{Offset: lo, Length: hi - lo, First: i, Last: i + 1}
		open = true
	}
	if open {
		dst = append(dst, cur)
	}
	return dst, nil
}

// holeFill decides which holes between rows' spans are read through: every
// hole shorter than below, and the first atBelow holes of exactly below
// bytes. It is consulted in row order, once per hole.
type holeFill struct {
	maxGap, below int64
	atBelow       int64
}

func (f *holeFill) take(hole int64) bool {
	switch {
	case hole > f.maxGap:
		return false
	case hole < f.below:
		return true
	case hole == f.below && f.atBelow > 0:
		f.atBelow--
		return true
	}
	return false
}

// holesFilled chooses the holes a HoleBudget allows: it counts the holes of
// each length (whole pages, at most MaxGap) between the rows' merged spans
// and the spans' bytes, then fills holes shortest first while their total
// stays within HoleBudget × the spans' bytes. Holes at a MaxExtent split are
// counted too, so the bound holds with room to spare there.
func holesFilled(rows []uint32, rowBytes int64, o ExtentOptions) holeFill {
	pages := o.MaxGap / Align
	if o.HoleBudget == 0 || pages == 0 || len(rows) < 2 {
		return holeFill{maxGap: o.MaxGap, below: o.MaxGap + 1}
	}
	var small [65]int64
	count := small[:]
	if pages+1 > int64(len(small)) {
		count = make([]int64, pages+1)
	}
	var spans, end int64
	for i, v := range rows {
		start := int64(v) * rowBytes
		lo := start &^ (Align - 1)
		hi := (start + rowBytes + Align - 1) &^ (Align - 1)
		switch {
		case i == 0 || lo > end:
			if i > 0 && lo-end <= o.MaxGap {
				count[(lo-end)/Align]++
			}
			spans += hi - lo
		case hi > end:
			spans += hi - end
		default:
			continue
		}
		end = hi
	}
	budget := int64(o.HoleBudget * float64(spans))
	for p := int64(1); p <= pages; p++ {
		hole := p * Align
		if count[p]*hole > budget {
			return holeFill{maxGap: o.MaxGap, below: hole, atBelow: budget / hole}
		}
		budget -= count[p] * hole
	}
	return holeFill{maxGap: o.MaxGap, below: o.MaxGap + 1}
}
