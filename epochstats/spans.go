package epochstats

import (
	"cmp"
	"slices"
	"time"
)

// Spans is the union of time intervals: how long at least one of several
// concurrent operations was under way (the assembly of minibatches on
// many workers or connections, their feature reads), overlapping ones
// counted once, so that a rate over it never counts the same second
// twice. The zero value is empty; it is not safe for concurrent use.
type Spans struct {
	base time.Time    // the first interval's start: offsets keep the monotonic clock
	s    [][2]float64 // [start, end) in seconds from base; s[:merged] sorted and disjoint
	// merged is the length of the sorted, disjoint prefix.
	merged int
}

// Add adds the interval [start, end) (nothing when it is empty).
func (u *Spans) Add(start, end time.Time) {
	if !end.After(start) {
		return
	}
	if u.base.IsZero() {
		u.base = start
	}
	u.s = append(u.s, [2]float64{start.Sub(u.base).Seconds(), end.Sub(u.base).Seconds()})
	if len(u.s) >= 2*u.merged+64 {
		u.merge()
	}
}

// merge sorts the intervals and merges those that overlap or touch.
func (u *Spans) merge() {
	slices.SortFunc(u.s, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
	out := u.s[:0]
	for _, iv := range u.s {
		if n := len(out); n > 0 && iv[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], iv[1])
			continue
		}
		out = append(out, iv)
	}
	u.s, u.merged = out, len(out)
}

// Seconds returns the length of the union.
func (u *Spans) Seconds() float64 {
	u.merge()
	var t float64
	for _, iv := range u.s {
		t += iv[1] - iv[0]
	}
	return t
}
