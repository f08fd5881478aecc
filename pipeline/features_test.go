package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epoch/epochtest"
	"github.com/streamsampler/streamsampler/featplan"
)

// TestPipelineFeatures: with Config.Features every minibatch carries its
// epoch's plan, whose node set for it is its blocks' last src; the plan
// covers the epoch's minibatches in the order they are handed out. With
// Reorder the epoch hands out the same minibatches (same seeds, same
// blocks) in another order, the same order in every run, and consecutive
// ones share at least as many nodes as in the seeded order.
func TestPipelineFeatures(t *testing.T) {
	ctx := context.Background()
	f := newFixture(9)
	run := func(fp *FeaturePlanning) [][]*Minibatch {
		var calls atomic.Int64
		cfg := Config{Sampling: epoch.Sampling{Train: f.train, Fanouts: f.fanouts, Seed: 5}, BatchSize: 7, Epochs: 2, Features: fp}
		l, err := NewPipeline(cfg, f.sampler(&calls), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var out [][]*Minibatch
		err = l.RunOrdered(ctx, 3, func(b *Minibatch) error {
			if b.Index == 0 {
				out = append(out, nil)
			}
			out[len(out)-1] = append(out[len(out)-1], b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	plain := run(nil)
	t.Logf("%d epochs of %d minibatches", len(plain), len(plain[0]))
	planned := run(&FeaturePlanning{CacheRows: 20})
	reordered := run(&FeaturePlanning{CacheRows: 20, Reorder: true})
	again := run(&FeaturePlanning{CacheRows: 20, Reorder: true})
	seedKey := func(b *Minibatch) string { return fmt.Sprint(b.Blocks.Seeds) }
	for e := range plain {
		var sets [][]uint32
		for i, b := range planned[e] {
			if b.Features == nil || b.Features.Plan.NumBatches() != len(planned[e]) || b.Features.Epoch != b.Epoch {
				t.Fatalf("epoch %d minibatch %d: plan %+v", e, i, b.Features)
			}
			last := b.Blocks.Hops[len(b.Blocks.Hops)-1].Src
			if !slices.Equal(b.Features.NodeSets[i], last) || !slices.Equal(b.Features.Plan.Batch(i).NID, last) {
				t.Fatalf("epoch %d minibatch %d: node set is not the blocks' last src", e, i)
			}
			if err := epochtest.EqualBlocks(b.Blocks, plain[e][i].Blocks); err != nil {
				t.Fatalf("epoch %d minibatch %d: planning changed the blocks: %v", e, i, err)
			}
			sets = append(sets, last)
		}
		// The plan is Belady's over these node sets.
		want, err := featplan.NewPlan(sets, planned[e][0].Features.Plan.NumNodes, 20)
		if err != nil || want.TotalMisses() != planned[e][0].Features.Plan.TotalMisses() {
			t.Fatalf("epoch %d: plan misses %d, recomputed %v (%v)", e, planned[e][0].Features.Plan.TotalMisses(), want.TotalMisses(), err)
		}
		// Reordered: a permutation of the same minibatches, reproducible.
		byKey := map[string]*Minibatch{}
		for _, b := range plain[e] {
			byKey[seedKey(b)] = b
		}
		fp := reordered[e][0].Features
		if len(reordered[e]) != len(plain[e]) || len(fp.Order) != len(plain[e]) {
			t.Fatalf("epoch %d: %d minibatches reordered, %d plain", e, len(reordered[e]), len(plain[e]))
		}
		for i, b := range reordered[e] {
			p := byKey[seedKey(b)]
			if p == nil || p != plain[e][fp.Order[i]] {
				t.Fatalf("epoch %d: reordered minibatch %d is not plain minibatch %d", e, i, fp.Order[i])
			}
			if err := epochtest.EqualBlocks(b.Blocks, p.Blocks); err != nil {
				t.Fatalf("epoch %d: reordered minibatch %d: %v", e, i, err)
			}
			delete(byKey, seedKey(b))
			if seedKey(again[e][i]) != seedKey(b) {
				t.Fatalf("epoch %d: two runs reordered differently at %d", e, i)
			}
		}
		t.Logf("epoch %d: order %v, shared %.3f -> %.3f", e, fp.Order, fp.Reorder.SharedBefore, fp.Reorder.SharedAfter)
		if fp.Reorder.SharedAfter < fp.Reorder.SharedBefore {
			t.Fatalf("epoch %d: reorder shares %v < %v", e, fp.Reorder.SharedAfter, fp.Reorder.SharedBefore)
		}
	}
	if _, err := NewPipeline(Config{Sampling: epoch.Sampling{Train: f.train, Fanouts: f.fanouts}, BatchSize: 7, Features: &FeaturePlanning{CacheRows: -1}}, f.sampler(new(atomic.Int64)), nil); !errors.Is(err, epoch.ErrConfig) {
		t.Fatalf("negative cache: %v", err)
	}
}
