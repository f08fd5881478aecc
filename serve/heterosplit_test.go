package serve

import (
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
)

// heteroSplitExampleHex is the frame of docs/PROTOCOL.md's byte-level
// example of a split_batch reply with labels (python/tests/
// test_hetero_wire.py pins the same bytes): the heterogeneous example's
// minibatch as minibatch 0 of a split, paper 3 labelled 7, authors
// without labels.
const heteroSplitExampleHex = "" +
	"b0000000" + "08" + "00" + "07000000" + // length 176, op 8 split_batch, status 0, id 7
	"05000000" + "00000000" + "01" + "29" + "0200" + "0100" + // epoch 5, index 0, 1 hop, flags pyg|hetero|labels, T=2, R=1
	"0101" + "0100000000000000" + "03000000" + // paper n_id [3]
	"0101" + "0200000000000000" + "01000000" + "00000000" + // paper num_sampled_nodes [1, 0]
	"01000000" + // paper batch_size 1
	"0101" + "0200000000000000" + "04000000" + "09000000" + // author n_id [4, 9]
	"0101" + "0200000000000000" + "00000000" + "02000000" + // author num_sampled_nodes [0, 2]
	"00000000" + // author batch_size 0
	"0302" + "0200000000000000" + "0200000000000000" + // edge_index i64 [2, 2]
	"0000000000000000" + "0100000000000000" + "0000000000000000" + "0000000000000000" +
	"0101" + "0100000000000000" + "02000000" + // num_sampled_edges [2]
	"01" + "0201" + "0100000000000000" + "07000000" + // paper y: present, i32 [1] 7
	"00" // author y: none

func exampleSplitBatch() *HeteroBatch {
	b := exampleBatch()
	b.Y = [][]int32{{7}, nil}
	return b
}

// The split_batch example with labels: encoded byte for byte, decoded
// back to itself; every truncation, a label below -1 and a label count
// other than the rows are refused.
func TestHeteroSplitByteExample(t *testing.T) {
	got, err := MarshalHeteroBatch(OpSplitBatch, 7, exampleSplitBatch())
	if err != nil {
		t.Fatal(err)
	}
	if h := hex.EncodeToString(got); h != heteroSplitExampleHex {
		t.Fatalf("frame\n%s\nwant\n%s", h, heteroSplitExampleHex)
	}
	b, err := DecodeHeteroBatch(got[HeaderSize:], exampleSchema())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b, exampleSplitBatch()) {
		t.Fatalf("decoded %+v", b)
	}
	for n := HeaderSize; n < len(got); n++ {
		if _, err := DecodeHeteroBatch(got[HeaderSize:n], exampleSchema()); !errors.Is(err, ErrMalformed) {
			t.Fatalf("truncated at %d: %v", n, err)
		}
	}
	bad := append([]byte(nil), got[HeaderSize:]...)
	copy(bad[len(bad)-5:], []byte{0xfe, 0xff, 0xff, 0xff}) // paper's label -2
	if _, err := DecodeHeteroBatch(bad, exampleSchema()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("label -2: %v", err)
	}
	// Two labels for paper's one row: the encoder refuses to send it.
	two := exampleSplitBatch()
	two.Y[0] = []int32{7, 7}
	if _, err := MarshalHeteroBatch(OpSplitBatch, 7, two); err == nil {
		t.Fatal("two labels for one row encoded")
	}
}
