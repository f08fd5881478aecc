package ingest

import (
	"io"
	"sync"
)

// prefetch runs a pairSource's Next in its own goroutine, a few batches
// ahead, so that reading and decoding a binary input overlaps whatever the
// consumer does with the previous batch (counting degrees, scattering).
type prefetch struct {
	full chan prefetchBatch
	free chan []uint32
	quit chan struct{}
	wg   sync.WaitGroup
	src  pairSource
	cur  []uint32
	err  error
	once sync.Once
}

type prefetchBatch struct {
	p   []uint32
	err error
}

func newPrefetch(src pairSource, depth int) *prefetch {
	f := &prefetch{full: make(chan prefetchBatch, depth), free: make(chan []uint32, depth), quit: make(chan struct{}), src: src}
	for range depth {
		f.free <- nil
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			var buf []uint32
			select {
			case buf = <-f.free:
			case <-f.quit:
				return
			}
			p, err := src.Next()
			if err == nil {
				buf = append(buf[:0], p...)
			}
			f.full <- prefetchBatch{p: buf, err: err} // never blocks: depth buffers, depth slots
			if err != nil {
				return
			}
		}
	}()
	return f
}

func (f *prefetch) Next() ([]uint32, error) {
	if f.err != nil {
		return nil, f.err
	}
	if f.cur != nil {
		f.free <- f.cur
		f.cur = nil
	}
	b := <-f.full
	if b.err != nil {
		f.err = b.err
		return nil, b.err
	}
	f.cur = b.p
	return b.p, nil
}

func (f *prefetch) Close() error {
	f.once.Do(func() {
		close(f.quit)
		f.wg.Wait()
	})
	if f.err == io.EOF || f.err == nil {
		return f.src.Close()
	}
	f.src.Close()
	return nil
}
