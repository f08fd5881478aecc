package serve

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecodeHeteroSplitRequest: the heterogeneous split request decoder
// never panics, and what it accepts encodes back to the same payload.
func FuzzDecodeHeteroSplitRequest(f *testing.F) {
	f.Add(AppendHeteroSplitRequest(nil, 64, 1, []uint32{5, 1, 9}))
	f.Add(AppendHeteroSplitRequest(nil, 1, 0, nil))
	f.Add([]byte{1, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, p []byte) {
		bs, ty, nodes, err := DecodeHeteroSplitRequest(p)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if again := AppendHeteroSplitRequest(nil, bs, ty, nodes); !bytes.Equal(again, p) {
			t.Fatalf("payload %x decodes to (%d, %d, %v), which encodes to %x", p, bs, ty, nodes, again)
		}
	})
}
