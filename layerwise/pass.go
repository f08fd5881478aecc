package layerwise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/streamsampler/streamsampler/featplan"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/fullscan"
)

// ErrOptions is wrapped by every error about Options.
var ErrOptions = errors.New("layerwise: bad options")

// DefaultCacheBytes is Options.CacheBytes' default: a planned window's
// cache.
const DefaultCacheBytes = 256 << 20

// DefaultAhead is Options.Ahead's default.
const DefaultAhead = 4

// maxWindow bounds the minibatches of one planned window.
const maxWindow = 64

// Options say what a pass yields and how it reads the rows.
type Options struct {
	// Scan is the pass over the graph (batch size, edge ids, buffers).
	Scan fullscan.Options
	// Features is the store whose rows the minibatches carry (nil: none):
	// the graph's, or one of the same graph (its fingerprint is checked).
	// The Pass reads it and leaves it open.
	Features *featstore.Store
	// ResidentBytes: a feature file of at most this many bytes is read
	// whole into memory, sequentially (resident); a larger one through
	// planned windows. 0 or negative: always planned.
	ResidentBytes int64
	// CacheBytes is a planned window's cache: the window holds the
	// minibatches whose rows it fits (at least one). 0 means
	// DefaultCacheBytes.
	CacheBytes int64
	// Ahead is the minibatches made ahead of Next (their blocks, and in
	// planned windows their rows). 0 means DefaultAhead.
	Ahead int
}

// Batch is one minibatch of a pass: its blocks (fullscan.Batch) and,
// through Rows, its nodes' feature rows.
type Batch struct {
	*fullscan.Batch
	x []byte // the rows, read by a planned window; nil where resident
	p *Pass
}

// Rows copies the feature rows of b.NID, in order, into dst (at least
// len(NID)·RowBytes bytes), waiting where resident for the sweep to pass
// them. Safe for concurrent use with other minibatches' Rows.
func (b *Batch) Rows(ctx context.Context, dst []byte) error {
	p := b.p
	if p.o.Features == nil {
		return fmt.Errorf("layerwise: the pass has no feature store")
	}
	if n := int64(len(b.NID)) * p.rb; int64(len(dst)) < n {
		return fmt.Errorf("layerwise: %d rows need %d bytes, the buffer has %d", len(b.NID), n, len(dst))
	}
	if b.x != nil {
		copy(dst, b.x)
		return nil
	}
	if err := p.res.rows(ctx, b.NID, dst); err != nil {
		return fmt.Errorf("layerwise: minibatch %d: %w", b.Index, err)
	}
	return nil
}

// Stats are a pass's figures so far.
type Stats struct {
	Scan fullscan.Stats `json:"scan"`
	// Resident: the rows are read by one sweep over the feature file;
	// SweepBytes so far, SweepTime once it is done.
	Resident   bool          `json:"resident"`
	SweepBytes int64         `json:"sweep_bytes,omitempty"`
	SweepTime  time.Duration `json:"sweep_ns,omitempty"`
	// Planned: the windows' reads (featplan's report, summed: rows
	// needed, from the cache, from disk, reads, bytes read).
	Planned *featplan.Report `json:"planned,omitempty"`
	// ODirect: the feature file is read with O_DIRECT (planned windows;
	// a resident sweep maps it: the page cache).
	ODirect bool `json:"feature_o_direct"`
}

// item is what the producer hands Next: a minibatch, or why none.
type item struct {
	b   *Batch
	err error
}

// Pass is one pass of layer-wise inference: Open it, take its
// minibatches with Next (in order; Rows concurrently), Close it.
type Pass struct {
	o    Options
	scan *fullscan.Scan
	rb   int64
	res  *resident
	win  *windows

	out    chan item
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Next's first error, returned again

	mu    sync.Mutex // the planned windows' report, which the producer adds to
	taken int
}

// Open starts a pass over the graph directory dir: the chunks' reader,
// the resident sweep where the rows are resident, and the producer of
// minibatches. Close it.
func Open(dir string, o Options) (*Pass, error) {
	if o.CacheBytes == 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.Ahead == 0 {
		o.Ahead = DefaultAhead
	}
	if o.CacheBytes < 0 || o.Ahead < 0 {
		return nil, fmt.Errorf("%w: cache %d bytes, %d minibatches ahead (want >= 0)", ErrOptions, o.CacheBytes, o.Ahead)
	}
	scan, err := fullscan.Open(dir, o.Scan)
	if err != nil {
		return nil, err
	}
	p := &Pass{o: o, scan: scan, out: make(chan item, o.Ahead), done: make(chan struct{})}
	if st := o.Features; st != nil {
		if fp := scan.Manifest().Fingerprint(); st.Manifest().Graph != fp {
			scan.Close()
			return nil, fmt.Errorf("%w: the feature store was packed for a graph of %d nodes, %d edges (chunk CRCs %08x), the pass is over %s: %d nodes, %d edges (chunk CRCs %08x)",
				featstore.ErrGraphMismatch, st.Manifest().Graph.NumNodes, st.Manifest().Graph.NumEdges, st.Manifest().Graph.ChunkCRCs, dir, fp.NumNodes, fp.NumEdges, fp.ChunkCRCs)
		}
		p.rb = st.RowBytes()
		if size := int64(st.NumNodes()) * p.rb; o.ResidentBytes > 0 && size <= o.ResidentBytes {
			p.res, err = startResident(st)
		} else {
			p.win, err = newWindows(st, o.CacheBytes)
		}
		if err != nil {
			scan.Close()
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go p.produce(ctx)
	return p, nil
}

// NumBatches is the pass's minibatch count.
func (p *Pass) NumBatches() int { return p.scan.NumBatches() }

// NumNodes is the graph's node count.
func (p *Pass) NumNodes() uint32 { return p.scan.NumNodes() }

// NumEdges is the graph's edge count: the pass's minibatches have them all.
func (p *Pass) NumEdges() uint64 { return p.scan.NumEdges() }

// RowBytes is a feature row's size (0 without features).
func (p *Pass) RowBytes() int64 { return p.rb }

// Resident reports whether the rows are read by one sweep into memory.
func (p *Pass) Resident() bool { return p.res != nil }

// produce makes the minibatches in order: the scan's, with their rows in
// planned windows; it stops at the end, at the first error, or at Close.
func (p *Pass) produce(ctx context.Context) {
	defer close(p.done)
	send := func(it item) bool {
		select {
		case p.out <- it:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		var window []*Batch
		var rows int64
		for len(window) == 0 || p.win != nil && len(window) < maxWindow && rows < int64(p.win.cacheRows) {
			b, err := p.scan.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				send(item{err: err})
				return
			}
			window = append(window, &Batch{Batch: b, p: p})
			rows += int64(len(b.NID))
		}
		if len(window) == 0 {
			send(item{err: io.EOF})
			return
		}
		if p.win != nil {
			nids := make([][]uint32, len(window))
			dst := make([][]byte, len(window))
			for i, b := range window {
				nids[i] = b.NID
				b.x = make([]byte, int64(len(b.NID))*p.rb)
				dst[i] = b.x
			}
			p.mu.Lock()
			err := p.win.read(nids, dst)
			p.mu.Unlock()
			if err != nil {
				send(item{err: fmt.Errorf("layerwise: minibatches %d..%d: %w", window[0].Index, window[len(window)-1].Index, err)})
				return
			}
		}
		for _, b := range window {
			if !send(item{b: b}) {
				return
			}
		}
	}
}

// Next returns the pass's next minibatch, or io.EOF after the last; a
// failure ends the pass (later calls return it again).
func (p *Pass) Next(ctx context.Context) (*Batch, error) {
	if p.err != nil {
		return nil, p.err
	}
	select {
	case it := <-p.out:
		if it.err != nil {
			p.err = it.err
			return nil, it.err
		}
		p.taken++
		return it.b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Stats returns the pass's figures so far.
func (p *Pass) Stats() Stats {
	st := Stats{Scan: p.scan.Stats()}
	switch {
	case p.res != nil:
		st.Resident = true
		st.SweepBytes, st.SweepTime = p.res.stats()
		st.ODirect = p.res.direct
	case p.win != nil:
		p.mu.Lock()
		rep := p.win.rep
		p.mu.Unlock()
		st.Planned = &rep
		st.ODirect = p.win.direct
	}
	return st
}

// Close stops the pass (the producer, the chunks' reader, the sweep) and
// closes the files it opened; the store stays open. Closing twice is a
// no-op.
func (p *Pass) Close() error {
	if p.cancel == nil {
		return nil
	}
	p.cancel()
	<-p.done
	p.cancel = nil
	if p.err == nil {
		p.err = fullscan.ErrClosed
	}
	errs := []error{p.scan.Close()}
	if p.res != nil {
		errs = append(errs, p.res.close())
	}
	if p.win != nil {
		errs = append(errs, p.win.close())
	}
	return errors.Join(errs...)
}
