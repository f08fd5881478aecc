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

// DefaultDepth is the reads a Reader keeps in flight: sixteen gave the
// most 4 KiB and 64 KiB reads per second on that disk (64 no more).
const DefaultDepth = 16

// DefaultMaxExtent bounds one request (and the executor's buffer).
const DefaultMaxExtent = 1 << 20

// ExtentOptions shapes the reads of a minibatch's disk rows.
type ExtentOptions struct {
	// MaxGap: two neighbouring rows' aligned spans separated by at most
	// this many bytes are read by one request (hole included). 0 merges only
	// spans that touch or overlap.
	MaxGap int64
	// MaxExtent bounds an extent's length, except that an extent always
	// covers at least one whole row's aligned span (a row longer than
	// MaxExtent is one extent of its own).
	MaxExtent int64
	// Depth is how many of a minibatch's extents a Reader reads at once
	// (0 or 1: one after another). It does not change the extents.
	Depth int
}

// DefaultExtentOptions are DefaultMaxGap, DefaultMaxExtent and
// DefaultDepth.
func DefaultExtentOptions() ExtentOptions {
	return ExtentOptions{MaxGap: DefaultMaxGap, MaxExtent: DefaultMaxExtent, Depth: DefaultDepth}
}

func (o ExtentOptions) check() error {
	if o.MaxGap < 0 || o.MaxExtent < Align || o.MaxExtent%Align != 0 || o.Depth < 0 {
		return fmt.Errorf("%w: extent options gap %d max %d depth %d (want gap >= 0, max a positive multiple of %d, depth >= 0)", ErrInput, o.MaxGap, o.MaxExtent, o.Depth, Align)
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
// while the hole between them is at most MaxGap and the merged extent at
// most MaxExtent. Where a split at MaxExtent falls inside a page holding the
// end of one row and the start of the next, the two extents share that page
// (it is read twice); extents never overlap otherwise.
func Extents(dst []Extent, rows []uint32, rowBytes int64, o ExtentOptions) ([]Extent, error) {
	if err := o.check(); err != nil {
		return dst, err
	}
	if rowBytes <= 0 {
		return dst, fmt.Errorf("%w: row of %d bytes", ErrInput, rowBytes)
	}
	var cur Extent
	open := false
	for i, v := range rows {
		if i > 0 && v <= rows[i-1] {
			return dst, fmt.Errorf("%w: rows not sorted and distinct at %d (node %d after %d)", ErrInput, i, v, rows[i-1])
		}
		start := int64(v) * rowBytes
		lo := start &^ (Align - 1)
		hi := (start + rowBytes + Align - 1) &^ (Align - 1)
		if open {
			end := cur.Offset + cur.Length
			if lo <= end+o.MaxGap && hi-cur.Offset <= o.MaxExtent {
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
