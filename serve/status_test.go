package serve

import (
	"net"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/pipeline"
)

// TestRequestStatusRefused: a request whose status byte is not 0 (only
// replies carry a status) is refused as a bad request with its op and id,
// its payload skipped, and the connection stays usable; as the first
// request on a server that requires a token, even a hello with the right
// token, it is refused unauthorized and the connection closed.
func TestRequestStatusRefused(t *testing.T) {
	g := randomCSR(100, 4, 5)
	cfg := Config{Sampler: &refSampler{g: g}, Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(100, 1), Fanouts: []int{2}}, BatchSize: 8}, MaxRequest: 1024}
	s := newTestServer(t, cfg)
	nc := rawConn(t, serveUnix(t, s))
	for i, tc := range []struct {
		op, status uint8
		payload    []byte
	}{
		{OpEpochInfo, StatusError, nil},
		{OpNextBatch, StatusEnd, AppendEpochRequest(nil, CurrentEpoch)},
		{OpSample, 0xff, AppendSampleRequest(nil, CurrentEpoch, []uint32{1, 2}, DefaultSemantics)},
		{OpHello, 7, []byte("token")},
	} {
		id := uint32(100 + i)
		nc.Write(AppendFrame(nil, tc.op, tc.status, id, tc.payload))
		f, _, err := ReadFrame(nc, MaxReply, nil)
		if err != nil {
			t.Fatal(err)
		}
		if e := DecodeError(f.Payload); f.Status != StatusError || e.Code != CodeBadRequest || f.ID != id || f.Op != tc.op {
			t.Fatalf("op %d with status %d: reply %+v %v, want bad request with its op and id", tc.op, tc.status, f, e)
		}
	}
	nc.Write(AppendFrame(nil, OpEpochInfo, StatusOK, 9, nil))
	if f, _, err := ReadFrame(nc, MaxReply, nil); err != nil || f.Status != StatusOK || f.ID != 9 {
		t.Fatalf("connection unusable after refused statuses: %+v %v", f, err)
	}

	cfg.Token = []byte("s3cret")
	ts := newTestServer(t, cfg)
	path := serveUnix(t, ts)
	refusedAndClosed(t, "unix", path, AppendFrame(nil, OpHello, StatusError, 42, []byte("s3cret")))
	ok, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	ok.Write(AppendFrame(nil, OpHello, StatusOK, 1, []byte("s3cret")))
	if f, _, err := ReadFrame(ok, MaxReply, nil); err != nil || f.Status != StatusOK {
		t.Fatalf("hello with status 0: %+v %v", f, err)
	}
}
