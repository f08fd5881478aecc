// Full layers (fanout epoch.AllNeighbors, DESIGN §3 "Full
// neighborhoods"): every neighbor of every frontier node, streamed
// through the kernel's copy-all mode and held as a CSR.

package host

import (
	"context"
	"fmt"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/hls"
)

// allRows collects a full layer while its chunks are streamed: each
// frontier node's neighbor count (counts, indexed like the frontier; a
// job owns its range) and each job's neighbors and edge ids (parts,
// eparts, by the job's place in the pass), joined in frontier order by
// layer once the pass is done. Nothing is sized by a fanout: a job's
// part grows with what its launches return, a launch's by the lane's
// result buffer, whatever the nodes' degrees.
type allRows struct {
	counts []int64
	parts  [][]int32
	eparts [][]int64
	// edgeBase as in streamPass (nil without edge ids).
	edgeBase []int64
}

// sampleAll samples layer l of an epoch with fanout epoch.AllNeighbors:
// the chunks that hold frontier nodes are streamed as for any layer, and
// each job's targets go through copy-all launches (runJobAll). It
// returns the layer, checked (every neighbor a node of the graph, every
// edge id an edge of its chunk).
func sampleAll(ctx context.Context, sm stream, ix chunkIndex, frontier []uint32, l int, ls *LayerStats, onChunk func(layer, chunk int, bytes int64), edgeBase []int64) (epoch.Layer, error) {
	jobs, err := chunkJobs(ix, frontier, ls)
	if err != nil {
		return epoch.Layer{}, fmt.Errorf("layer %d (hop %d): frontier %w", l, l+1, err)
	}
	var hook func(int, int64)
	if onChunk != nil {
		hook = func(c int, n int64) { onChunk(l, c, n) }
	}
	all := &allRows{counts: make([]int64, len(frontier)), parts: make([][]int32, len(jobs)), edgeBase: edgeBase}
	if edgeBase != nil {
		all.eparts = make([][]int64, len(jobs))
	}
	pass := streamPass{fanout: epoch.AllNeighbors, all: all}
	if err := sm.runLayer(ctx, l, epoch.AllNeighbors, jobs, pass, ls, hook); err != nil {
		return epoch.Layer{}, fmt.Errorf("layer %d: %w", l, err)
	}
	ly := all.layer(frontier)
	if err := checkFull(&ly, jobs, ix.NumNodes()); err != nil {
		return epoch.Layer{}, fmt.Errorf("layer %d (hop %d): %w", l, l+1, err)
	}
	ls.SampledSlots = int64(len(ly.Samples))
	return ly, nil
}

// layer joins the jobs' parts into one full layer over frontier: row
// offsets from the counts, the parts in job order (the frontier's).
func (a *allRows) layer(frontier []uint32) epoch.Layer {
	ly := epoch.Layer{Frontier: frontier, Fanout: epoch.AllNeighbors, Offsets: make([]int64, len(frontier)+1)}
	for i, c := range a.counts {
		ly.Offsets[i+1] = ly.Offsets[i] + c
	}
	n := ly.Offsets[len(frontier)]
	ly.Samples = join(a.parts, n)
	if a.eparts != nil {
		ly.EdgeIDs = join(a.eparts, n)
	}
	return ly
}

// join concatenates parts (n elements in all) into one slice: the one
// part itself where there is one (a graph of one chunk), so that the
// layer is not copied. Each part is let go once copied, so that the
// collector may take it back before the last is.
func join[T int32 | int64](parts [][]T, n int64) []T {
	if len(parts) == 1 && parts[0] != nil {
		return parts[0]
	}
	out := make([]T, 0, n)
	for i, p := range parts {
		out = append(out, p...)
		parts[i] = nil
	}
	return out
}

// runJobAll is runJob for a full layer: job j's targets in copy-all
// launches of at most ln.maxTargets() targets, each going on from where
// the previous one stopped (the first target it did not finish, from the
// position it reached), so a row longer than a launch's result buffer
// spans launches. Each launch's output is checked (hls.ParseAllStatus in
// the lane, and here that it moved on and resumes where its counts say)
// before it is kept; a device that makes no progress is an error, never a
// loop.
func (p streamPass) runJobAll(ctx context.Context, ln lane, j chunkJob, run func(launch) (time.Duration, time.Duration, error)) (launches int, kernel, syncT time.Duration, err error) {
	a := p.all
	mt := ln.maxTargets()
	counts := a.counts[j.lo : j.lo+len(j.targets)]
	var rows []int32
	var eids []int64
	var base, nEdges int64
	if a.edgeBase != nil {
		base, nEdges = a.edgeBase[j.chunk], a.edgeBase[j.chunk+1]-a.edgeBase[j.chunk]
	}
	out := &allOut{}
	r, skip := 0, uint32(0)
	for r < len(j.targets) {
		if err := ctx.Err(); err != nil {
			return launches, kernel, syncT, err
		}
		end := min(r+mt, len(j.targets))
		la := launch{Targets: j.targets[r:end], Fanout: epoch.AllNeighbors, All: out, Skip: skip, AllEdges: a.edgeBase != nil}
		kt, stt, err := run(la)
		kernel += kt
		syncT += stt
		launches++
		fail := func(err error) (int, time.Duration, time.Duration, error) {
			return launches, kernel, syncT, fmt.Errorf("%s: chunk %d (targets %d..%d, from position %d of node %d): %w", ln.name(), j.chunk, r, end, skip, j.targets[r], err)
		}
		if err != nil {
			return fail(err)
		}
		pr, n := out.Progress, end-r
		if err := checkProgress(pr, out.Counts, n, skip); err != nil {
			return fail(err)
		}
		for i := range min(pr.Stop+1, n) {
			counts[r+i] += int64(out.Counts[i])
		}
		rows = append(rows, out.Samples[:pr.Words]...)
		if a.edgeBase != nil {
			for i, e := range out.Edges[:pr.Words] {
				if e < 0 || int64(e) >= nEdges {
					return fail(fmt.Errorf("%w: neighbor %d (%d) of this launch: edge index %d, want 0..%d", ErrBadEdge, i, out.Samples[i], e, nEdges-1))
				}
				eids = append(eids, base+int64(e))
			}
		}
		if pr.Done(n) {
			r, skip = end, 0
		} else {
			r, skip = r+pr.Stop, pr.Resume
		}
	}
	a.parts[j.seq] = rows
	if a.eparts != nil {
		a.eparts[j.seq] = eids
	}
	return launches, kernel, syncT, nil
}

// checkProgress checks a copy-all launch's progress over n targets that
// started at position skip of the first: it must have moved on (finished
// a target or written a neighbor), and a stop inside a row must resume
// exactly after the neighbors its count says were written there.
func checkProgress(pr hls.AllProgress, counts []int32, n int, skip uint32) error {
	if pr.Done(n) {
		return nil
	}
	if pr.Stop == 0 && pr.Words == 0 {
		return fmt.Errorf("%w: copy-all launch made no progress (stopped at its first target, nothing written)", hls.ErrBadOutput)
	}
	want := uint32(counts[pr.Stop])
	if pr.Stop == 0 {
		want += skip
	}
	if pr.Resume != want {
		return fmt.Errorf("%w: copy-all launch stopped in target %d at position %d, its count says %d", hls.ErrBadOutput, pr.Stop, pr.Resume, want)
	}
	return nil
}

// checkFull checks every neighbor of a full layer against the graph's
// node count (a full layer has no empty slot: -1 is as wrong as an id at
// or past num_nodes); the error names the node, its chunk and the
// position, as checkSamples does.
func checkFull(ly *epoch.Layer, jobs []chunkJob, numNodes uint32) error {
	for i, v := range ly.Frontier {
		lo, hi := ly.Span(i)
		for p, s := range ly.Samples[lo:hi] {
			if s >= 0 && uint32(s) < numNodes {
				continue
			}
			chunk := -1
			for _, j := range jobs {
				if j.lo <= i && i < j.lo+len(j.targets) {
					chunk = j.chunk
				}
			}
			return fmt.Errorf("%w: chunk %d, node %d, position %d: neighbor %d (%#08x) is not below num_nodes %d",
				ErrBadSample, chunk, v, p, s, uint32(s), numNodes)
		}
	}
	return nil
}

// layerBytes is the memory of a layer's arrays: what LayerStats.ResultBytes
// reports.
func layerBytes(ly *epoch.Layer) int64 {
	return int64(len(ly.Frontier))*4 + int64(len(ly.Samples))*4 + int64(len(ly.EdgeIDs))*8 + int64(len(ly.Offsets))*8
}
