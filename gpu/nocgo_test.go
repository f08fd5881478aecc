//go:build !cgo || !linux

package gpu_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/gpu"
)

func TestOpenWithoutCgo(t *testing.T) {
	_, err := gpu.OpenCSR("", 0, []uint64{0, 0}, nil, gpu.Options{})
	if !errors.Is(err, gpu.ErrNoCgo) || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("err = %v, want ErrNoCgo", err)
	}
}
