package gpu

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
)

// A layer with fanout -1 (every neighbor) is refused by the GPU backend
// before anything reaches the CUDA engines, whose output is rows of a
// fixed fanout: ErrFullNeighborhood (and ErrInvalid), naming the layer,
// never a panic or a silently wrong epoch. No device is needed.
func TestFullNeighborhoodRefused(t *testing.T) {
	b := &Backend{numNodes: 100}
	for _, tc := range []struct {
		fanouts []int
		layer   string
	}{
		{[]int{-1}, "layer 0 (hop 1)"},
		{[]int{10, -1}, "layer 1 (hop 2)"},
		{[]int{5, 5, -1, 3}, "layer 2 (hop 3)"},
	} {
		err := b.validate([]uint32{1, 2}, tc.fanouts)
		if !errors.Is(err, ErrFullNeighborhood) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.layer) {
			t.Fatalf("fanouts %v: %v, want ErrFullNeighborhood naming %s", tc.fanouts, err, tc.layer)
		}
		if _, err := b.SampleEpoch(context.Background(), []uint32{1}, tc.fanouts, epoch.Key{}); !errors.Is(err, ErrFullNeighborhood) {
			t.Fatalf("SampleEpoch with fanouts %v: %v", tc.fanouts, err)
		}
	}
	if err := b.validate([]uint32{1}, []int{10, 5}); err != nil {
		t.Fatal(err)
	}
}
