package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/randread"
	"github.com/streamsampler/streamsampler/serve"
)

// lazyFresh is serve's FreshSampler: the random-read sampler of the
// served graph, opened on the first sample_fresh request (its row offsets,
// 8 bytes per node, are loaded only by a server that is asked for one).
type lazyFresh struct {
	graph string
	once  sync.Once
	s     *randread.Sampler
	err   error
}

// SampleFresh samples seeds by random reads (serve.FreshSampler); errors
// about the request wrap serve.ErrFreshInvalid.
func (l *lazyFresh) SampleFresh(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key, edgeIDs bool, sem epoch.Semantics) (*epoch.Blocks, error) {
	l.once.Do(func() {
		// Not the request's context: a client that disconnects while the
		// offsets load must not leave the server without them.
		l.s, l.err = randread.Open(context.Background(), l.graph, randread.Options{})
	})
	if l.err != nil {
		return nil, fmt.Errorf("opening the random-read sampler: %w", l.err)
	}
	b, _, err := l.s.Blocks(ctx, randread.Request{Seeds: seeds, Fanouts: fanouts, Key: key, EdgeIDs: edgeIDs}, sem)
	if errors.Is(err, randread.ErrInvalid) {
		err = fmt.Errorf("%w: %w", serve.ErrFreshInvalid, err)
	}
	return b, err
}

// Close closes the sampler if it was opened.
func (l *lazyFresh) Close() error {
	l.once.Do(func() { l.err = randread.ErrClosed })
	if l.s != nil {
		return l.s.Close()
	}
	return nil
}
