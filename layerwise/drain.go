package layerwise

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// DrainReport is what Drain measured.
type DrainReport struct {
	Batches  int           `json:"batches"`
	Nodes    int64         `json:"seeds"`     // seeds: every node once
	Edges    int64         `json:"edges"`     // every edge once
	Rows     int64         `json:"rows"`      // rows copied: Σ len(n_id)
	RowBytes int64         `json:"row_bytes"` // of one row
	Wall     time.Duration `json:"wall_ns"`   // from the call to the last minibatch's rows
	Stats    Stats         `json:"stats"`
}

// Drain takes every minibatch of p in order and, with copyRows, has
// workers goroutines copy their rows into buffers of their own (what a
// server's connections do for their replies), calling fn, when not nil,
// with each minibatch and its rows (nil without features or copyRows),
// from several goroutines at once; x is reused once fn returns. Without
// copyRows it returns once the rows are all read (the resident sweep
// done): the pass's reads without the per-minibatch copies, which a
// consumer holding the rows (PyG's x_all[n_id]) makes itself. The first
// error stops it.
func Drain(ctx context.Context, p *Pass, workers int, copyRows bool, fn func(b *Batch, x []byte) error) (DrainReport, error) {
	t0 := time.Now()
	workers = max(workers, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan *Batch, workers)
	var (
		mu    sync.Mutex
		first error
		rep   = DrainReport{RowBytes: p.RowBytes()}
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
			cancel()
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var x []byte
			for b := range work {
				var rows []byte
				if copyRows && p.o.Features != nil {
					n := int64(len(b.NID)) * p.rb
					if int64(cap(x)) < n {
						x = make([]byte, n)
					}
					rows = x[:n]
					if err := b.Rows(ctx, rows); err != nil {
						fail(err)
						continue
					}
				}
				if fn != nil {
					if err := fn(b, rows); err != nil {
						fail(err)
						continue
					}
				}
				mu.Lock()
				rep.Batches++
				rep.Nodes += int64(b.NumSeeds())
				rep.Edges += int64(len(b.EdgeSrc))
				if copyRows && p.o.Features != nil {
					rep.Rows += int64(len(b.NID))
				}
				mu.Unlock()
			}
		}()
	}
	for {
		b, err := p.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fail(err)
			break
		}
		work <- b
	}
	close(work)
	wg.Wait()
	if p.res != nil && first == nil {
		if err := p.res.wait(ctx, int64(p.NumNodes())); err != nil {
			fail(err)
		}
	}
	rep.Wall = time.Since(t0)
	rep.Stats = p.Stats()
	return rep, first
}
