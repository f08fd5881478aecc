package serve

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/pipeline"
)

// With full hops (fanout -1) the reply bound is taken from the graph's
// largest degree and edge count (fullBound): it is never below a real
// reply, under both semantics, with edge ids, alone and mixed with
// sampled hops; it saturates when neither is known; and the frame size
// computed before encoding (batchFrameSize) is at least the encoded one.
func TestReplyBoundFull(t *testing.T) {
	g := randomCSR(1500, 9, 7)
	var maxDeg int64
	for v := range g.NumNodes() {
		nb, _ := g.Neighbors(v)
		maxDeg = max(maxDeg, int64(len(nb)))
	}
	full := fullBound{maxDegree: maxDeg, numEdges: int64(len(g.Indices))}
	if got := (fullBound{}).edges(5); got != 1<<62 {
		t.Fatalf("unknown degrees: %d edges, want saturation", got)
	}
	if got := (fullBound{maxDegree: 10, numEdges: 25}).edges(5); got != 25 {
		t.Fatalf("5 destinations of degree 10 in a graph of 25 edges: bound %d, want 25", got)
	}
	train := trainNodes(1500, 1)
	r := rand.New(rand.NewPCG(2, 8))
	for _, fanouts := range [][]int{{-1}, {-1, 3}, {4, -1}, {-1, -1}} {
		ref, err := host.ReferenceEdgeIDs(g, train, fanouts, epoch.Key{Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 9, 200} {
			seeds := slices.Clone(ref.Frontier(0))
			r.Shuffle(len(seeds), func(i, j int) { seeds[i], seeds[j] = seeds[j], seeds[i] })
			for _, sem := range []epoch.Semantics{epoch.DGL, epoch.PyG} {
				blocks, err := epoch.NewAssembler(ref, nil).Assemble(seeds[:n], sem)
				if err != nil {
					t.Fatal(err)
				}
				size := int64(len(MarshalBlocks(OpNextBatch, 1, blocks, 0)))
				if pre := batchFrameSize(blocks, 0, 0, nil); pre < size {
					t.Fatalf("%v %v: batchFrameSize %d below the encoded %d", sem, fanouts, pre, size)
				}
				for _, nodes := range []int64{0, 1500} {
					bound, _ := minibatchBound(int64(n), fanouts, nodes, full, true)
					if bound < size {
						t.Errorf("%v fanouts %v, %d seeds, %d nodes: bound %d below the reply's %d bytes", sem, fanouts, n, nodes, bound, size)
					}
					if bound >= 1<<62 {
						t.Errorf("%v fanouts %v: bound saturated with the degrees known", sem, fanouts)
					}
				}
			}
		}
		cfg := &Config{NumNodes: 1500, MaxDegree: full.maxDegree, NumEdges: full.numEdges}
		cfg.Fanouts = fanouts
		if b := splitBound(cfg, 300); b >= 1<<62 || b <= 0 {
			t.Errorf("fanouts %v: split bound %d", fanouts, b)
		}
	}
}

// A server whose fanouts include -1 serves every minibatch, sample and
// split equal to the reference epoch's assembly (full hops: every neighbor
// of each destination), through the Go client; a minibatch whose reply
// would exceed what a client reads is refused with CodeOverBudget, the
// connection staying usable.
func TestServeFullNeighborhoods(t *testing.T) {
	g := randomCSR(500, 8, 4)
	var maxDeg int64
	for v := range g.NumNodes() {
		nb, _ := g.Neighbors(v)
		maxDeg = max(maxDeg, int64(len(nb)))
	}
	train := trainNodes(500, 3)
	fanouts := []int{-1, 3}
	cfg := Config{Sampler: &refSampler{g: g}, NumNodes: 500, MaxDegree: maxDeg, NumEdges: int64(len(g.Indices)),
		Config: pipeline.Config{Sampling: epoch.Sampling{Train: train, Fanouts: fanouts, Seed: 4}, BatchSize: 20}}
	s := newTestServer(t, cfg)
	c := dial(t, serveUnix(t, s))
	ref, err := host.Reference(g, train, fanouts, epoch.Key{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.EpochInfo()
	if err != nil || !slices.Equal(info.Fanouts, fanouts) {
		t.Fatalf("epoch_info fanouts %v (%v), want %v", info.Fanouts, err, fanouts)
	}
	want := epoch.Batches(train, 20, 4, 0)
	for i := range want {
		b, err := c.NextBatch(0)
		if err != nil {
			t.Fatal(err)
		}
		wb, err := ref.Assemble(want[b.Index], epoch.DGL)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(b.Blocks, wb) {
			t.Fatalf("minibatch %d (%d of the epoch) differs from the reference assembly", b.Index, i)
		}
	}
	seeds := train[5:17]
	got, err := c.Sample(0, seeds)
	if err != nil {
		t.Fatal(err)
	}
	if wb, _ := ref.Assemble(seeds, epoch.DGL); !reflect.DeepEqual(got, wb) {
		t.Fatal("sample differs from the reference assembly")
	}
	// The refusal: a cap below this minibatch's reply.
	defer maxBatchReply.Store(MaxReply)
	maxBatchReply.Store(200)
	var re *RemoteError
	if _, err := c.Sample(0, seeds); !errors.As(err, &re) || re.Code != CodeOverBudget || !strings.Contains(re.Message, "fewer seeds") {
		t.Fatalf("oversized reply: %v, want CodeOverBudget", err)
	}
	maxBatchReply.Store(MaxReply)
	if _, err := c.Sample(0, seeds); err != nil {
		t.Fatalf("the connection after a refused reply: %v", err)
	}
}

// Where a hop takes every neighbor, a sample's bound comes from the
// largest degree and is loose: a sample whose bound exceeds the
// connection's share is served holding the share (as a next_batch is),
// not refused; the same request of a server of sampled hops is refused.
func TestServeFullSampleOverShare(t *testing.T) {
	g := randomCSR(300, 6, 2)
	train := trainNodes(300, 2)
	for _, tc := range []struct {
		fanouts []int
		refused bool
	}{{[]int{-1}, false}, {[]int{64, 64, 64}, true}} {
		// A largest degree of 10^6 (so claimed) makes the full hop's bound
		// far larger than the 1 MiB share, as 64^3 samples a seed (the node
		// count not given) make the sampled hops'; the replies are small.
		cfg := Config{Sampler: &refSampler{g: g}, MaxDegree: 1e6, NumEdges: 1e9,
			MaxRequest: 1 << 16, MaxInflight: 2 << 20,
			Config: pipeline.Config{Sampling: epoch.Sampling{Train: train, Fanouts: tc.fanouts, Seed: 1}, BatchSize: 8}}
		s := newTestServer(t, cfg)
		c := dial(t, serveUnix(t, s))
		seeds := train[:100]
		if bound := s.replyBound(int64(len(seeds))); bound <= s.connSize {
			t.Fatalf("fanouts %v: bound %d within the share %d: the test does not exercise the refusal", tc.fanouts, bound, s.connSize)
		}
		b, err := c.Sample(0, seeds)
		var re *RemoteError
		switch {
		case tc.refused && (!errors.As(err, &re) || re.Code != CodeOverBudget):
			t.Fatalf("fanouts %v: %v, want CodeOverBudget", tc.fanouts, err)
		case !tc.refused && err != nil:
			t.Fatalf("fanouts %v: %v", tc.fanouts, err)
		case !tc.refused:
			ref, _ := host.Reference(g, train, tc.fanouts, epoch.Key{Seed: 1})
			if wb, _ := ref.Assemble(seeds, epoch.DGL); !reflect.DeepEqual(b, wb) {
				t.Fatalf("fanouts %v: sample differs from the reference", tc.fanouts)
			}
		}
	}
}
