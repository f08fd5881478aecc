package serve

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/walk"
)

func sampleBlocks() *epoch.Blocks {
	return &epoch.Blocks{
		Epoch: 3,
		Seeds: []uint32{7, 2},
		Hops: []epoch.Hop{
			{Dst: []uint32{7, 2}, Src: []uint32{7, 2, 9, 4}, EdgeSrc: []int32{2, 3, 0}, EdgeDst: []int32{0, 0, 1}},
			{Dst: []uint32{7, 2, 9, 4}, Src: []uint32{7, 2, 9, 4, 11}, EdgeSrc: []int32{4}, EdgeDst: []int32{3}},
		},
	}
}

func TestBlocksRoundTrip(t *testing.T) {
	cases := map[string]*epoch.Blocks{
		"two hops": sampleBlocks(),
		"no edges": {Epoch: 0, Seeds: []uint32{5}, Hops: []epoch.Hop{{Dst: []uint32{5}, Src: []uint32{5}, EdgeSrc: []int32{}, EdgeDst: []int32{}}}},
		"no hops":  {Epoch: 1 << 31, Seeds: []uint32{1, 2, 3}, Hops: []epoch.Hop{}},
		"empty":    {Epoch: 9, Seeds: []uint32{}, Hops: []epoch.Hop{}},
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			for _, batch := range []int{NoBatch, 0, 17} {
				wire := MarshalBlocks(OpNextBatch, 77, b, batch)
				f, _, err := ReadFrame(bytes.NewReader(wire), MaxReply, nil)
				if err != nil {
					t.Fatal(err)
				}
				if f.Op != OpNextBatch || f.Status != StatusOK || f.ID != 77 {
					t.Fatalf("header %+v", f)
				}
				got, gi, err := DecodeBlocks(f.Payload)
				if err != nil {
					t.Fatal(err)
				}
				if gi != batch {
					t.Errorf("batch index %d, want %d", gi, batch)
				}
				if !reflect.DeepEqual(got, b) {
					t.Errorf("round trip:\n got %+v\nwant %+v", got, b)
				}
			}
		})
	}
}

// TestBlocksByteLayout pins the example of docs/PROTOCOL.md byte for byte.
func TestBlocksByteLayout(t *testing.T) {
	b := &epoch.Blocks{Epoch: 2, Seeds: []uint32{5}, Hops: []epoch.Hop{
		{Dst: []uint32{5}, Src: []uint32{5, 8}, EdgeSrc: []int32{1}, EdgeDst: []int32{0}},
	}}
	got := MarshalBlocks(OpNextBatch, 1, b, 0)
	want := []byte{
		0x5a, 0, 0, 0, // length 90 = 6 + 84 payload bytes
		2, 0, // op next_batch, status ok
		1, 0, 0, 0, // id 1
		2, 0, 0, 0, // epoch 2
		0, 0, 0, 0, // batch 0
		1,                                        // one hop
		0,                                        // flags: DGL semantics, no edge ids
		1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, // seeds u32[1] = 5
		1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, // dst u32[1] = 5
		1, 1, 2, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 8, 0, 0, 0, // src u32[2] = 5 8
		2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, // edge_src i32[1] = 1
		2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // edge_dst i32[1] = 0
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("bytes\n got % x\nwant % x", got, want)
	}
	req := AppendFrame(nil, OpNextBatch, StatusOK, 1, AppendEpochRequest(nil, CurrentEpoch))
	wantReq := []byte{10, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	if !bytes.Equal(req, wantReq) {
		t.Fatalf("request\n got % x\nwant % x", req, wantReq)
	}
}

func TestRequestRoundTrip(t *testing.T) {
	for _, sem := range []epoch.Semantics{DefaultSemantics, epoch.DGL, epoch.PyG} {
		e, seeds, got, err := DecodeSampleRequest(AppendSampleRequest(nil, 4, []uint32{9, 0, 1 << 31}, sem))
		if err != nil || e != 4 || !reflect.DeepEqual(seeds, []uint32{9, 0, 1 << 31}) || got != sem {
			t.Fatalf("sample request: %d %v %v %v", e, seeds, got, err)
		}
		e, got, err = DecodeBatchRequest(AppendBatchRequest(nil, 7, sem))
		if err != nil || e != 7 || got != sem {
			t.Fatalf("next_batch request: %d %v %v", e, got, err)
		}
		id, index, got, err := DecodeSplitBatchRequest(AppendSplitBatchRequest(nil, 3, 11, sem))
		if err != nil || id != 3 || index != 11 || got != sem {
			t.Fatalf("split_batch request: %d %d %v %v", id, index, got, err)
		}
	}
	bs, nodes, err := DecodeSplitRequest(AppendSplitRequest(nil, 64, []uint32{5, 1, 9}))
	if err != nil || bs != 64 || !reflect.DeepEqual(nodes, []uint32{5, 1, 9}) {
		t.Fatalf("split request: %d %v %v", bs, nodes, err)
	}
	if _, _, err := DecodeBatchRequest([]byte{1, 0, 0, 0, 2}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("semantics 2: %v, want ErrMalformed", err)
	}
	if e, err := DecodeEpochRequest(AppendEpochRequest(nil, 12)); err != nil || e != 12 {
		t.Fatalf("epoch request: %d %v", e, err)
	}
	re := DecodeError(AppendError(nil, CodeUnknownEpoch, "unknown epoch 9"))
	if re.Code != CodeUnknownEpoch || re.Message != "unknown epoch 9" {
		t.Fatalf("error round trip: %+v", re)
	}
}

func TestDecodeErrors(t *testing.T) {
	good := AppendSampleRequest(nil, 1, []uint32{1, 2}, DefaultSemantics)
	i32 := append(binary.LittleEndian.AppendUint32(nil, 1), DtypeI32, 1)
	i32 = binary.LittleEndian.AppendUint64(i32, 0)
	twoD := append(binary.LittleEndian.AppendUint32(nil, 1), DtypeU32, 2)
	overrun := append(binary.LittleEndian.AppendUint32(nil, 1), DtypeU32, 1)
	overrun = binary.LittleEndian.AppendUint64(overrun, 1<<62)
	for name, p := range map[string][]byte{
		"empty":     {},
		"short":     good[:3],
		"truncated": good[:len(good)-1],
		"semantics": append(append([]byte{}, good...), 9),
		"two bytes": append(append([]byte{}, good...), 1, 0),
		"dtype":     i32,
		"ndim":      twoD,
		"overrun":   overrun,
	} {
		if _, _, _, err := DecodeSampleRequest(p); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
		}
	}
	if _, err := DecodeEpochRequest([]byte{1, 2, 3, 4, 5}); !errors.Is(err, ErrMalformed) {
		t.Errorf("epoch request with trailing byte: %v", err)
	}
	wire := MarshalBlocks(OpSample, 1, sampleBlocks(), NoBatch)[HeaderSize:]
	for n := 0; n < len(wire); n++ {
		if _, _, err := DecodeBlocks(wire[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("blocks truncated to %d bytes: %v", n, err)
		}
	}
}

func TestReadFrameErrors(t *testing.T) {
	frame := AppendFrame(nil, OpEpochInfo, 0, 5, []byte("abc"))
	if _, _, err := ReadFrame(bytes.NewReader(nil), 1024, nil); err != io.EOF {
		t.Errorf("empty stream: %v, want io.EOF", err)
	}
	for n := 1; n < len(frame); n++ {
		if _, _, err := ReadFrame(bytes.NewReader(frame[:n]), 1024, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("frame cut at %d: %v, want unexpected EOF", n, err)
		}
	}
	if _, _, err := ReadFrame(bytes.NewReader(frame), len(frame)-1, nil); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("over cap: %v", err)
	}
	if _, _, err := ReadFrame(bytes.NewReader([]byte{5, 0, 0, 0, 1, 0, 0, 0, 0}), 1024, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("length below header: %v", err)
	}
	huge := binary.LittleEndian.AppendUint32(nil, 0xffffffff)
	if _, _, err := ReadFrame(bytes.NewReader(huge), 1<<20, nil); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("4 GiB length: %v", err)
	}
	f, _, err := ReadFrame(bytes.NewReader(frame), len(frame), nil)
	if err != nil || string(f.Payload) != "abc" || f.ID != 5 {
		t.Errorf("exact cap: %+v %v", f, err)
	}
}

// FuzzReadFrame feeds arbitrary bytes to the frame reader and every
// payload decoder: none may panic, and whatever decodes re-encodes to the
// same bytes.
func FuzzReadFrame(f *testing.F) {
	f.Add(MarshalBlocks(OpNextBatch, 1, sampleBlocks(), 0))
	f.Add(AppendFrame(nil, OpSample, 0, 2, AppendSampleRequest(nil, 0, []uint32{1, 2, 3}, DefaultSemantics)))
	f.Add(AppendFrame(nil, OpSample, 0, 2, AppendSampleRequest(nil, 0, []uint32{1, 2, 3}, epoch.PyG)))
	f.Add(AppendFrame(nil, OpAdvance, 0, 3, AppendEpochRequest(nil, 1)))
	f.Add(AppendFrame(nil, OpEpochInfo, 0, 4, nil))
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, _, err := ReadFrame(bytes.NewReader(data), 1<<16, nil)
		if err != nil {
			return
		}
		if re := AppendFrame(nil, fr.Op, fr.Status, fr.ID, fr.Payload); !bytes.Equal(re, data[:len(re)]) {
			t.Fatalf("frame re-encodes differently")
		}
		if b, i, err := DecodeBlocks(fr.Payload); err == nil {
			if !bytes.Equal(MarshalBlocks(fr.Op, fr.ID, b, i)[HeaderSize:], fr.Payload) {
				t.Fatalf("blocks re-encode differently")
			}
		}
		if e, seeds, sem, err := DecodeSampleRequest(fr.Payload); err == nil {
			if !bytes.Equal(AppendSampleRequest(nil, e, seeds, sem), fr.Payload) {
				t.Fatalf("sample request re-encodes differently")
			}
		}
		DecodeEpochRequest(fr.Payload)
		DecodeError(fr.Payload)
	})
}

// FuzzDecodeBatch feeds arbitrary payloads to the minibatch decoder, with
// and without shared rows: none may panic, whatever decodes re-encodes to
// the same bytes, and a shared reply's rows are asked of the buffer it
// names for exactly the bytes its header says.
func FuzzDecodeBatch(f *testing.F) {
	b := sampleBlocks()
	nodes := len(b.Nodes())
	x := make([]byte, nodes*3*2)
	for i := range x {
		x[i] = byte(i)
	}
	feat := &Features{X: x, Dim: 3, DType: DtypeF16, Y: make([]int32, len(b.Seeds))}
	payload := func(f *Features) []byte {
		var buf bytes.Buffer
		bufs := EncodeBatch(OpNextBatch, 1, b, 0, f)
		bufs.WriteTo(&buf)
		return buf.Bytes()[HeaderSize:]
	}
	f.Add(payload(feat))
	shared := *feat
	shared.Shared = &SharedRows{Buffer: 3, Offset: 4096, Retire: NoBuffer}
	f.Add(payload(&shared))
	shared.Shared = &SharedRows{Buffer: 4, Offset: 8192, Retire: 3}
	shared.Y = nil
	f.Add(payload(&shared))
	// Link minibatches (a link section after the hops), with features.
	for _, link := range []*epoch.LinkFields{
		{Mode: epoch.NegBinary, Amount: 1, InputID: []int64{4}, EdgeLabelIndex: []int64{0, 1, 1, 0}, EdgeLabelF32: []float32{1, 0}},
		{Mode: epoch.NegNone, InputID: []int64{4}, EdgeLabelIndex: []int64{0, 1}, EdgeLabelI64: []int64{7}},
		{Mode: epoch.NegTriplet, Amount: 2, K: 2, InputID: []int64{4}, SrcIndex: []int64{0}, DstPosIndex: []int64{1}, DstNegIndex: []int64{1, 0}},
	} {
		var buf bytes.Buffer
		bufs := EncodeLinkBatch(OpNextBatch, 1, b, 0, feat, link)
		bufs.WriteTo(&buf)
		f.Add(buf.Bytes()[HeaderSize:])
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		reencode := func(b *epoch.Blocks, i int, f *Features, link *epoch.LinkFields) []byte {
			var buf bytes.Buffer
			bufs := EncodeLinkBatch(OpNextBatch, 1, b, i, f, link)
			bufs.WriteTo(&buf)
			return buf.Bytes()[HeaderSize:]
		}
		if b, i, f, link, err := DecodeLinkBatch(p); err == nil {
			if !bytes.Equal(reencode(b, i, f, link), p) {
				t.Fatalf("batch re-encodes differently")
			}
		}
		var asked SharedRows
		var n int
		b, i, f, link, err := decodeLinkBatch(p, func(s SharedRows, size int) ([]byte, error) {
			asked, n = s, size
			return make([]byte, size), nil
		})
		if err != nil || f == nil || f.Shared == nil {
			return
		}
		if *f.Shared != asked || len(f.X) != n || n != len(b.Nodes())*f.Dim*dtypeSize(f.DType) {
			t.Fatalf("shared rows %+v of %d bytes, asked %+v of %d", *f.Shared, len(f.X), asked, n)
		}
		if !bytes.Equal(reencode(b, i, f, link), p) {
			t.Fatalf("shared batch re-encodes differently")
		}
	})
}

// FuzzDecodeSplitRequest feeds arbitrary payloads to the split request
// decoder: none may panic, and whatever decodes re-encodes to the same
// bytes (one payload, one request).
func FuzzDecodeSplitRequest(f *testing.F) {
	f.Add(AppendSplitRequest(nil, 2, []uint32{5, 1, 9}))
	f.Add(AppendSplitRequest(nil, 0, nil))
	f.Add(AppendSplitRequest(nil, 1<<31, []uint32{1 << 31}))
	f.Fuzz(func(t *testing.T, p []byte) {
		bs, nodes, err := DecodeSplitRequest(p)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if re := AppendSplitRequest(nil, bs, nodes); !bytes.Equal(re, p) {
			t.Fatalf("split request re-encodes differently")
		}
	})
}

// FuzzDecodeSplitBatchRequest is FuzzDecodeSplitRequest for split_batch
// (and drop_split, whose payload is split_batch's first field).
func FuzzDecodeSplitBatchRequest(f *testing.F) {
	f.Add(AppendSplitBatchRequest(nil, 3, 7, DefaultSemantics))
	f.Add(AppendSplitBatchRequest(nil, 3, 7, epoch.PyG))
	f.Add(AppendSplitBatchRequest(nil, 0, 0, epoch.DGL))
	f.Add([]byte{1, 0, 0, 0, 2, 0, 0, 0, 9})
	f.Fuzz(func(t *testing.T, p []byte) {
		id, index, sem, err := DecodeSplitBatchRequest(p)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
		} else if re := AppendSplitBatchRequest(nil, id, index, sem); !bytes.Equal(re, p) {
			t.Fatalf("split_batch request re-encodes differently")
		}
	})
}

// FuzzDecodeWalksRequest feeds arbitrary payloads to the walks request
// decoder: none may panic, whatever decodes re-encodes to the same bytes,
// and checking the decoded configuration (which the server does next)
// does not panic either.
func FuzzDecodeWalksRequest(f *testing.F) {
	f.Add(AppendWalksRequest(nil, []uint32{5, 0, 799}, walk.Config{Mode: walk.DeepWalk, Length: 8, WalksPerNode: 3, Seed: 9}))
	f.Add(AppendWalksRequest(nil, []uint32{1}, walk.Config{Mode: walk.PPR, Length: 80, WalksPerNode: 1, Restart: 0.15, StopAtRestart: true}))
	f.Add(AppendWalksRequest(nil, nil, walk.Config{Mode: walk.Node2Vec, Length: 1 << 31, WalksPerNode: 1 << 20, P: 0.25, Q: 4}))
	f.Fuzz(func(t *testing.T, p []byte) {
		starts, c, err := DecodeWalksRequest(p)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if re := AppendWalksRequest(nil, starts, c); !bytes.Equal(re, p) {
			t.Fatalf("walks request re-encodes differently")
		}
		if err := c.CheckStarts(starts, 1<<20); err != nil && !errors.Is(err, walk.ErrInvalid) {
			t.Fatalf("checking the configuration: %v does not wrap walk.ErrInvalid", err)
		}
	})
}
