package heterosample

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/heteroepoch"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
)

// closingLayers is a relation sampler from Options.OpenRelation: the
// in-memory oracle over the relation's CSR read back from its directory
// (what a gpu.Backend holds), counting its closes.
type closingLayers struct {
	MemoryLayers
	closed *int
}

func (c closingLayers) Close() error { *c.closed++; return nil }

// Relations opened by Options.OpenRelation (how cmd/streamsampler brings
// a gpu.Backend per relation) sample the same epoch as the host.Samplers
// Open makes itself, bit for bit, and even for the gpu backend name; the
// Sampler closes each of them once; a relation that fails to open is
// named, and the ones opened before it are closed.
func TestOpenRelation(t *testing.T) {
	f := academic(50, 80, 4)
	dirs := f.write(t, 4096)
	seeds := []heteroepoch.Seeds{{Type: "paper", Nodes: pick(80, 30, 2)}}
	fanouts := [][]int{{4, 2}, {3, 1}, {2, 2}}
	key := epoch.Key{Seed: 9, Epoch: 1}

	want, err := func() (*heteroepoch.Result, error) {
		s, err := Open(f.schema, dirs, Options{Host: host.Options{EdgeIDs: true}})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		return s.SampleEpoch(context.Background(), seeds, fanouts, key)
	}()
	if err != nil {
		t.Fatal(err)
	}

	closed := 0
	var opened []int
	open := func(r int, dir string) (LayerSampler, error) {
		c, err := host.LoadCSR(dir)
		if err != nil {
			return nil, err
		}
		opened = append(opened, r)
		return closingLayers{MemoryLayers{Graph: c, Edges: true}, &closed}, nil
	}
	s, err := Open(f.schema, dirs, Options{Backend: BackendGPU, OpenRelation: open})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.SampleEpoch(context.Background(), seeds, fanouts, key)
	if err != nil {
		t.Fatal(err)
	}
	requireEqual(t, got, want)
	if s.Relation(0) != nil {
		t.Errorf("Relation(0) = %v, want nil for relations opened by OpenRelation", s.Relation(0))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if closed != len(f.schema.Relations) || len(opened) != len(f.schema.Relations) {
		t.Errorf("%d relations opened, %d closed, want %d each", len(opened), closed, len(f.schema.Relations))
	}

	closed = 0
	boom := errors.New("no device")
	_, err = Open(f.schema, dirs, Options{Backend: BackendGPU, OpenRelation: func(r int, dir string) (LayerSampler, error) {
		if r == 1 {
			return nil, boom
		}
		return open(r, dir)
	}})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "relation "+f.schema.Relations[1].String()) {
		t.Errorf("failing relation: %v, want it named and wrapping %v", err, boom)
	}
	if closed != 1 {
		t.Errorf("after relation 1 failed: %d relations closed, want relation 0's", closed)
	}
}
