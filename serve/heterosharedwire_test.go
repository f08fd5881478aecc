package serve

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"testing"
)

// heteroSharedExampleHex is the frame of docs/PROTOCOL.md's byte-level
// example of a heterogeneous minibatch with shared rows
// (python/tests/test_hetero_wire.py pins the same): the first example
// with paper's rows, f32 [1, 2], at byte 4096 of buffer 0, and author
// without a store.
const heteroSharedExampleHex = "" +
	"c4000000" + "02" + "00" + "07000000" + // length 196, op 2, status 0, id 7
	"05000000" + "00000000" + "01" + "59" + "0200" + "0100" + // epoch 5, batch 0, 1 hop, flags pyg|hetero|x|shared, T=2, R=1
	heteroExampleStructure +
	"00000000" + "ffffffff" + // shared rows in buffer 0, retire none
	"01" + "0502" + "0100000000000000" + "0200000000000000" + "0010000000000000" + // paper x: present, f32 [1, 2], offset 4096
	"00" // author x: no store

// heteroExampleStructure is the example's PyG section (paper's n_id to
// num_sampled_edges).
const heteroExampleStructure = "" +
	"0101" + "0100000000000000" + "03000000" +
	"0101" + "0200000000000000" + "01000000" + "00000000" +
	"01000000" +
	"0101" + "0200000000000000" + "04000000" + "09000000" +
	"0101" + "0200000000000000" + "00000000" + "02000000" +
	"00000000" +
	"0302" + "0200000000000000" + "0200000000000000" +
	"0000000000000000" + "0100000000000000" + "0000000000000000" + "0000000000000000" +
	"0101" + "0100000000000000" + "02000000"

// exampleSharedBuffer is buffer 0 of the example: its lease word set,
// paper's row [0.5, -1] at byte 4096.
func exampleSharedBuffer() []byte {
	buf := make([]byte, 8192)
	binary.LittleEndian.PutUint64(buf, 1) // the lease word, held
	binary.LittleEndian.PutUint32(buf[4096:], math.Float32bits(0.5))
	binary.LittleEndian.PutUint32(buf[4100:], math.Float32bits(-1))
	return buf
}

func exampleSharedBatch() *HeteroBatch {
	b := exampleBatch()
	b.X = []*HeteroRows{{DType: DtypeF32, Dim: 2, Rows: exampleSharedBuffer()[4096:4104]}, nil}
	b.Shared = &HeteroShared{Buffer: 0, Retire: NoBuffer, Offsets: []uint64{4096, 0}}
	return b
}

// The byte-level example of shared rows: encoded byte for byte, its size
// what wireSize says, decoded (given its buffer) back to itself; refused
// without a way to read buffers, truncated, with rows past the buffer's
// end or over its lease word, and with a buffer the same reply retires.
func TestHeteroSharedByteExample(t *testing.T) {
	if h := heteroExampleStructure; "a0000000"+"02"+"00"+"07000000"+"05000000"+"00000000"+"01"+"09"+"0200"+"0100"+h != heteroExampleHex {
		t.Fatal("heteroExampleStructure is not the first example's")
	}
	got, err := MarshalHeteroBatch(OpNextBatch, 7, exampleSharedBatch())
	if err != nil {
		t.Fatal(err)
	}
	if h := hex.EncodeToString(got); h != heteroSharedExampleHex {
		t.Fatalf("frame\n%s\nwant\n%s", h, heteroSharedExampleHex)
	}
	if n := exampleSharedBatch().wireSize(); n != len(got) {
		t.Fatalf("wireSize %d for %d bytes", n, len(got))
	}
	var asked []uint32
	rows := func(buf, retire uint32) ([]byte, error) {
		asked = append(asked, buf, retire)
		if buf != 0 {
			return nil, errors.New("unknown buffer")
		}
		return exampleSharedBuffer(), nil
	}
	b, err := DecodeHeteroBatchShared(got[HeaderSize:], exampleSchema(), rows)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b, exampleSharedBatch()) || !reflect.DeepEqual(asked, []uint32{0, NoBuffer}) {
		t.Fatalf("decoded %+v (buffers asked %v)", b, asked)
	}
	if _, err := DecodeHeteroBatch(got[HeaderSize:], exampleSchema()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("shared rows without a way to read them: %v", err)
	}
	for n := HeaderSize; n < len(got); n++ {
		if _, err := DecodeHeteroBatchShared(got[HeaderSize:n], exampleSchema(), rows); !errors.Is(err, ErrMalformed) {
			t.Fatalf("truncated at %d: %v", n, err)
		}
	}
	for _, c := range []struct {
		what string
		edit func(p []byte)
	}{
		{"rows past the buffer's end", func(p []byte) { binary.LittleEndian.PutUint64(p[len(p)-9:], 8192-4) }},
		{"rows over the lease word", func(p []byte) { binary.LittleEndian.PutUint64(p[len(p)-9:], 4) }},
		{"an unknown buffer", func(p []byte) { binary.LittleEndian.PutUint32(p[len(p)-36:], 3) }},
		{"the buffer retired by its own reply", func(p []byte) { binary.LittleEndian.PutUint32(p[len(p)-32:], 0) }},
		{"the shared flag without rows", func(p []byte) { p[9] &^= batchHeteroX }},
	} {
		bad := append([]byte(nil), got[HeaderSize:]...)
		c.edit(bad)
		if _, err := DecodeHeteroBatchShared(bad, exampleSchema(), rows); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", c.what, err)
		}
	}
}

// FuzzDecodeHeteroBatchShared: DecodeHeteroBatchShared, given the
// example's buffer 0, never panics on any payload, and whatever it
// accepts encodes back to the very bytes.
func FuzzDecodeHeteroBatchShared(f *testing.F) {
	dgl := exampleDGL()
	dgl.X = []*HeteroRows{{DType: DtypeF16, Dim: 2, Rows: exampleSharedBuffer()[4096:4100]}, {DType: DtypeU8, Dim: 3, Rows: exampleSharedBuffer()[4160:4166]}}
	dgl.Y = [][]int32{{1}, nil}
	dgl.Shared = &HeteroShared{Buffer: 0, Retire: 7, Offsets: []uint64{4096, 4160}}
	for _, b := range []*HeteroBatch{exampleSharedBatch(), dgl} {
		frame, err := MarshalHeteroBatch(OpNextBatch, 1, b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame[HeaderSize:])
	}
	s := exampleSchema()
	buf := exampleSharedBuffer()
	rows := func(b, retire uint32) ([]byte, error) {
		if b != 0 {
			return nil, errors.New("unknown buffer")
		}
		return buf, nil
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		b, err := DecodeHeteroBatchShared(p, s, rows)
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
