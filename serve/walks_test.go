package serve

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/pipeline"
	"github.com/streamsampler/streamsampler/walk"
)

// failingWalker is a walker whose device fails.
type failingWalker struct{}

func (failingWalker) WalksInto(context.Context, []uint32, walk.Config, []int32) (*walk.Stats, error) {
	return nil, errors.New("device lost")
}

// TestWalks: a walks request is answered with the walker's rows exactly,
// in every mode; bad configurations, oversized requests, a server
// without a walker and a walker that fails are refused with their codes.
func TestWalks(t *testing.T) {
	g := randomCSR(800, 6, 4)
	cfg := Config{
		Config:      pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(800, 5), Fanouts: []int{3}}, BatchSize: 16},
		Sampler:     &refSampler{g: g},
		Walk:        walk.InMemory{Graph: g},
		MaxInflight: 1 << 20, MaxRequest: 1 << 16,
	}
	s := newTestServer(t, cfg)
	cl := dial(t, serveUnix(t, s))
	starts := []uint32{5, 0, 799, 5}
	for _, wc := range []walk.Config{
		{Mode: walk.DeepWalk, Length: 8, WalksPerNode: 3, Seed: 9},
		{Mode: walk.PPR, Length: 8, WalksPerNode: 2, Seed: 9, Restart: 0.3, StopAtRestart: true},
		{Mode: walk.Node2Vec, Length: 8, WalksPerNode: 2, Seed: 9, P: 0.5, Q: 2},
	} {
		got, cols, err := cl.Walks(starts, wc)
		if err != nil {
			t.Fatal(err)
		}
		want, err := walk.Reference(g, starts, wc)
		if err != nil {
			t.Fatal(err)
		}
		if cols != wc.Length+1 || !slices.Equal(got, want) {
			t.Fatalf("%v: the reply is not the walker's rows", wc.Mode)
		}
		if sa, wa, err := DecodeWalksRequest(AppendWalksRequest(nil, starts, wc)); err != nil || !slices.Equal(sa, starts) || wa != wc {
			t.Fatalf("request round trip: %v %+v %v", sa, wa, err)
		}
	}
	var re *RemoteError
	if _, _, err := cl.Walks(starts, walk.Config{Length: 0, WalksPerNode: 1}); !errors.As(err, &re) || re.Code != CodeBadRequest {
		t.Fatalf("length 0: %v", err)
	}
	if _, _, err := cl.Walks([]uint32{800}, walk.Config{Length: 3, WalksPerNode: 1}); !errors.As(err, &re) || re.Code != CodeBadRequest {
		t.Fatalf("start outside the graph: %v", err)
	}
	if _, _, err := cl.Walks(starts, walk.Config{Length: 1000, WalksPerNode: 1000}); !errors.As(err, &re) || re.Code != CodeOverBudget {
		t.Fatalf("a reply beyond the connection's share: %v", err)
	}
	bad := AppendWalksRequest(nil, starts, walk.Config{Length: 3, WalksPerNode: 1})
	bad[1] = 4
	if _, _, err := DecodeWalksRequest(bad); !errors.Is(err, ErrMalformed) {
		t.Fatalf("unknown flag: %v", err)
	}
	cfg.Walk = nil
	s2 := newTestServer(t, cfg)
	cl2 := dial(t, serveUnix(t, s2))
	if _, _, err := cl2.Walks(starts, walk.Config{Length: 3, WalksPerNode: 1}); !errors.As(err, &re) || re.Code != CodeBadRequest {
		t.Fatalf("a server without a walker: %v", err)
	}
	cfg.Walk = failingWalker{}
	s3 := newTestServer(t, cfg)
	cl3 := dial(t, serveUnix(t, s3))
	if _, _, err := cl3.Walks(starts, walk.Config{Length: 3, WalksPerNode: 1}); !errors.As(err, &re) || re.Code != CodeInternal || !strings.Contains(re.Message, "device lost") {
		t.Fatalf("a walker that fails: %v", err)
	}
}
