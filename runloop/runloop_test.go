package runloop

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/featstore/featstoretest"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/pipeline"
	"github.com/streamsampler/streamsampler/statedir"
)

// graph writes a random graph of n nodes with a feature store of rows of
// dim float32 and labels, and returns its directory.
func graph(t *testing.T, n uint32, dim int) string {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(n), 1))
	dir := filepath.Join(t.TempDir(), "g")
	w, err := chunkfmt.NewWriter(dir, n, 4096, chunkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		nb := make([]uint32, r.IntN(8))
		for i := range nb {
			nb[i] = uint32(r.IntN(int(n)))
		}
		slices.Sort(nb)
		if err := w.Append(nb); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	featstoretest.Pack(t, dir, featstore.Float32, dim, 5, uint64(n))
	return dir
}

// options is a run of two epochs over g's even nodes, sampled by the
// emulated streaming sampler.
func options(g string, n uint32) Options {
	var train []uint32
	for v := uint32(0); v < n; v += 2 {
		train = append(train, v)
	}
	return Options{
		Config: pipeline.Config{Sampling: epoch.Sampling{Train: train, Fanouts: []int{3, 2}, Seed: 4, World: 1},
			BatchSize: 40, PrepareAt: 0.5, Epochs: 2},
		NumNodes: n,
		Open:     func() (host.Backend, error) { return host.Open(g, host.Options{Backend: "emu"}) },
		Workers:  2,
	}
}

// TestRun: every minibatch is handed out in order, each epoch is reported
// once, as it ends, with its minibatches, seeds and sampling figures (the
// second sampled in the background); with a feature store each minibatch
// carries exactly the store's rows and labels and each epoch its feature
// figures.
func TestRun(t *testing.T) {
	const n = 600
	g := graph(t, n, 5)
	fs, err := featstore.Open(g)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	for _, features := range []bool{false, true} {
		o := options(g, n)
		if features {
			o.Features = fs
			o.Config.Features = &pipeline.FeaturePlanning{CacheRows: 64, RowBytes: fs.RowBytes()}
		}
		var seen []*EpochReport
		o.OnEpoch = func(r *EpochReport) { seen = append(seen, r) }
		var batches []string
		o.OnBatch = func(b *pipeline.Minibatch, x []byte, y []int32) {
			batches = append(batches, string(b.Blocks.AppendJSON(nil)))
			if len(seen) != int(b.Epoch) {
				t.Errorf("minibatch %d of epoch %d: %d epochs reported before it", b.Index, b.Epoch, len(seen))
			}
			if !features {
				if x != nil || y != nil {
					t.Errorf("rows without features")
				}
				return
			}
			want := make([]byte, int64(len(b.Blocks.Nodes()))*fs.RowBytes())
			wy := make([]int32, len(b.Blocks.Seeds))
			if err := fs.ReadRows(b.Blocks.Nodes(), want); err != nil {
				t.Fatal(err)
			}
			if err := fs.ReadLabels(b.Blocks.Seeds, wy); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(x, want) || !slices.Equal(y, wy) {
				t.Errorf("epoch %d minibatch %d: rows or labels differ from the store's", b.Epoch, b.Index)
			}
		}
		rep, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Epochs) != 2 || len(seen) != 2 || rep.Wall <= 0 || len(batches) != 16 {
			t.Fatalf("features %v: %d epochs (%d reported), %d minibatches, wall %v", features, len(rep.Epochs), len(seen), len(batches), rep.Wall)
		}
		for e, r := range rep.Epochs {
			if r != seen[e] || int(r.Epoch) != e || r.Batches != 8 || r.Seeds != n/2 || r.Edges <= 0 || r.SampleS <= 0 || r.Stats == nil || r.BytesRead <= 0 || r.GraphBytes != r.Stats.GraphBytes || r.GraphBytes <= 0 || r.Overlapped != (e > 0) {
				t.Fatalf("epoch %d: %+v", e, r)
			}
			if f := r.Features; (f != nil) != features || f != nil && (f.Labels != int64(r.Seeds) || f.Reads.RowsNeeded <= 0) {
				t.Fatalf("epoch %d: features %+v", e, f)
			}
		}
	}
}

// TestRunState: a run with a state directory commits each epoch there
// (the last one current at the end); a
// second run that conflicts with the recorded configuration is refused
// (*statedir.ConflictError) before a sampler is opened.
func TestRunState(t *testing.T) {
	const n = 300
	g := graph(t, n, 2)
	st := statedir.State{Dir: filepath.Join(t.TempDir(), "state")}
	o := options(g, n)
	o.State = &State{Dir: st.Dir, Graph: g, Train: filepath.Join(g, "train.txt")}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	c, err := st.Open()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Committed || !c.HasCurrent || c.Current != 1 || !slices.Contains(c.Prepared, 1) || c.Config.Seed != 4 {
		t.Fatalf("state after the run: %+v", c)
	}
	o.Config.Seed = 5
	opened := false
	o.Open = func() (host.Backend, error) { opened = true; return nil, errors.New("opened") }
	var conflict *statedir.ConflictError
	if _, err := Run(context.Background(), o); !errors.As(err, &conflict) || conflict.Field != statedir.FieldSeed || opened {
		t.Fatalf("conflicting seed: %v (sampler opened: %v)", err, opened)
	}
}

// failingBackend is a sampler that fails every epoch.
type failingBackend struct{}

func (failingBackend) SampleEpoch(context.Context, []uint32, []int, epoch.Key) (*epoch.Result, error) {
	return nil, errors.New("no device")
}

func (failingBackend) Close() error { return nil }

// TestRunRefusesConfig: what is wrong with the options wraps
// epoch.ErrConfig, and a sampler's failure does not.
func TestRunRefusesConfig(t *testing.T) {
	o := options("g", 10)
	o.Open = func() (host.Backend, error) { return failingBackend{}, nil }
	for name, spoil := range map[string]func(*Options){
		"no epochs":   func(o *Options) { o.Config.Epochs = 0 },
		"no workers":  func(o *Options) { o.Workers = 0 },
		"no sampler":  func(o *Options) { o.Open = nil },
		"no store":    func(o *Options) { o.Config.Features = &pipeline.FeaturePlanning{} },
		"batch size":  func(o *Options) { o.Config.BatchSize = 0 },
		"no training": func(o *Options) { o.Config.Train = nil },
	} {
		bad := o
		spoil(&bad)
		if _, err := Run(context.Background(), bad); !errors.Is(err, epoch.ErrConfig) {
			t.Errorf("%s: %v, want epoch.ErrConfig", name, err)
		}
	}
	if _, err := Run(context.Background(), o); err == nil || errors.Is(err, epoch.ErrConfig) {
		t.Errorf("failing sampler: %v", err)
	}
}
