package pipeline

import (
	"context"
	"errors"
	"io"
	"sync"
)

// RunOrdered is Run with assembly spread over workers goroutines: one
// goroutine claims minibatches in order (advancing at each epoch's end),
// workers assemble them concurrently, and fn sees every minibatch exactly
// in Run's order, from the calling goroutine. At most 2·workers assembled
// or claimed minibatches are held at once, so the working memory beyond
// the resident epochs is bounded by that many minibatches' blocks.
// workers < 2 is Run.
func (p *Pipeline) RunOrdered(ctx context.Context, workers int, fn func(*Minibatch) error) error {
	if workers < 2 {
		return p.Run(ctx, fn)
	}
	if err := p.Start(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	window := 2 * workers
	type claimed struct {
		seq int
		c   Claim
	}
	type assembled struct {
		seq int
		b   *Minibatch
		err error
	}
	slots := make(chan struct{}, window) // a slot per minibatch between claim and fn
	claims := make(chan claimed, window)
	results := make(chan assembled, window) // never blocks a worker: at most window in flight
	var claimErr error                      // set by the claimer before it closes claims

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the claimer
		defer wg.Done()
		defer close(claims)
		for seq := 0; ; {
			if err := ctx.Err(); err != nil { // select alone may pick a free slot
				claimErr = err
				return
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				claimErr = ctx.Err()
				return
			}
			c, err := p.Claim(ctx, CurrentEpoch)
			if err == nil && c.End {
				if uint64(c.Epoch)+1 >= p.end {
					<-slots
					claimErr = io.EOF
					return
				}
				// Advance waits for this epoch's claims to be assembled:
				// the workers do that without waiting on fn.
				_, err = p.Advance(ctx, c.Epoch)
				<-slots
				if err == nil {
					continue
				}
			}
			if err != nil {
				claimErr = err
				return
			}
			claims <- claimed{seq: seq, c: c}
			seq++
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cl := range claims {
				// A claim must be assembled even after a failure
				// elsewhere: it holds its epoch current until then.
				b, err := p.Assemble(cl.c)
				results <- assembled{seq: cl.seq, b: b, err: err}
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()

	// Deliver in claim order.
	pending := map[int]assembled{}
	next := 0
	var err error
	for r := range results {
		if err != nil {
			continue // drain, so that the claimer and workers stop
		}
		pending[r.seq] = r
		for {
			a, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			<-slots
			if err = a.err; err == nil {
				err = fn(a.b)
			}
			if err != nil {
				cancel()
				break
			}
		}
	}
	if err != nil {
		return err
	}
	if errors.Is(claimErr, io.EOF) {
		return nil
	}
	return claimErr
}
