package heterosample

import (
	"testing"

	"github.com/streamsampler/streamsampler/heteroepoch"
	"github.com/streamsampler/streamsampler/hls"
)

// heteroepoch checks fanouts against its own MaxFanout, since it imports
// no device: it must be the kernels' limit.
func TestMaxFanoutIsTheKernels(t *testing.T) {
	if heteroepoch.MaxFanout != hls.MaxFanout {
		t.Fatalf("heteroepoch.MaxFanout %d, hls.MaxFanout %d", heteroepoch.MaxFanout, hls.MaxFanout)
	}
}
