package host

import (
	"context"

	"github.com/streamsampler/streamsampler/epoch"
)

// Backend samples a whole epoch: every layer's frontier and samples.
//
// The chunk-streaming Sampler implements it for the emulated and XRT
// devices; the gpu package implements it with one persistent kernel over
// all layers. For the same seeds, fanouts and key, every Backend returns a
// Result equal to Reference's.
type Backend interface {
	SampleEpoch(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error)
	Close() error
}
