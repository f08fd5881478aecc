package serve

import (
	"bytes"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/heterosample"
)

// exampleDGL is the example's minibatch with DGL semantics and e_id: hop
// 1 has paper 3 as its dst, authors 4 and 9 its new src nodes.
func exampleDGL() *HeteroBatch {
	return &HeteroBatch{Epoch: 5, Index: 2, Semantics: epoch.DGL, Hops: 1, EdgeIDs: true, DGL: []heterosample.DGLBlock{{
		DstNID: [][]uint32{{3}, {}},
		SrcNID: [][]uint32{{3}, {4, 9}},
		Edges:  []heterosample.DGLEdges{{Src: []int32{0, 1}, Dst: []int32{0, 0}, EID: []int64{17, 18}}},
	}}}
}

// FuzzDecodeHeteroBatch: DecodeHeteroBatch never panics on any payload,
// and whatever it accepts encodes back to the very bytes (the encoding is
// one-to-one, so two payloads never decode to the same minibatch).
func FuzzDecodeHeteroBatch(f *testing.F) {
	pyg := exampleBatch()
	pyg.EdgeIDs = true
	pyg.PyG.Edges[0].EID = []int64{17, 18}
	withX := exampleDGL()
	withX.X = []*HeteroRows{{DType: DtypeF16, Dim: 1, Rows: []byte{1, 2}}, nil}
	withY := exampleDGL()
	withY.X = withX.X
	withY.Y = [][]int32{nil, {-1, 3}}
	for _, b := range []*HeteroBatch{exampleBatch(), pyg, exampleDGL(), withX, exampleSplitBatch(), withY} {
		frame, err := MarshalHeteroBatch(OpNextBatch, 1, b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame[HeaderSize:])
	}
	s := exampleSchema()
	f.Fuzz(func(t *testing.T, p []byte) {
		b, err := DecodeHeteroBatch(p, s)
		if err != nil {
			return
		}
		frame, err := MarshalHeteroBatch(OpNextBatch, 1, b)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", b, err)
		}
		if !bytes.Equal(frame[HeaderSize:], p) {
			t.Fatalf("payload %x decodes to a minibatch that encodes to %x", p, frame[HeaderSize:])
		}
	})
}

// The DGL layout round-trips, and a hop whose src does not start with
// its dst nodes is refused.
func TestHeteroDGLRoundTrip(t *testing.T) {
	frame, err := MarshalHeteroBatch(OpNextBatch, 1, exampleDGL())
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeHeteroBatch(frame[HeaderSize:], exampleSchema())
	if err != nil {
		t.Fatal(err)
	}
	again, _ := MarshalHeteroBatch(OpNextBatch, 1, b)
	if !bytes.Equal(again, frame) {
		t.Fatal("DGL round trip changed the bytes")
	}
	bad := exampleDGL()
	bad.DGL[0].SrcNID[0] = []uint32{4}
	frame, _ = MarshalHeteroBatch(OpNextBatch, 1, bad)
	if _, err := DecodeHeteroBatch(frame[HeaderSize:], exampleSchema()); err == nil {
		t.Fatal("a hop whose src does not start with its dst decoded")
	}
}
