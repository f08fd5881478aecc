package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/heteroepoch"
	"github.com/streamsampler/streamsampler/heterofmt"
	"github.com/streamsampler/streamsampler/heterosample"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/hostbench"
	"github.com/streamsampler/streamsampler/internal/procio"
)

// EpochReport is what `streamsampler bench --epoch-only` prints, and
// bench of a heterogeneous graph directory (issue 27): epochs only, no
// floors and no minibatch assembly, each measured the same way for a
// homogeneous and a heterogeneous graph so that bench/hetero_scale.sh can
// divide one by the other per sampled edge.
type EpochReport struct {
	Date  string `json:"date"`
	Host  string `json:"host"`
	CPUs  int    `json:"cpus"`
	Load  string `json:"load_avg"` // /proc/loadavg's first three fields before the first epoch
	Graph string `json:"graph"`
	// Hetero is true for a heterogeneous graph directory (hetero.json).
	Hetero     bool       `json:"hetero"`
	NumEdges   int64      `json:"num_edges"`   // stored edges, over every relation
	GraphBytes int64      `json:"graph_bytes"` // edges.chunks bytes, over every relation
	TrainType  string     `json:"train_type,omitempty"`
	Train      int        `json:"train"` // training nodes (the epoch's seeds)
	Backend    string     `json:"backend"`
	Devices    int        `json:"devices"`
	ChunkCache int64      `json:"chunk_cache_bytes"`
	Runs       int        `json:"runs"`
	Sets       []EpochSet `json:"sets"`
}

// EpochSet is one --fanouts set's epochs: every run, and their medians.
type EpochSet struct {
	Fanouts []int `json:"fanouts"`
	// RelationFanouts are the fanouts of every relation, in the schema's
	// order (heterogeneous graphs; --relation-fanouts overrides Fanouts).
	RelationFanouts map[string][]int `json:"relation_fanouts,omitempty"`
	Epochs          []EpochRun       `json:"epochs"`
	// The medians of Epochs' fields; NsPerEdge and CPUNsPerEdge are the
	// medians' ratio to SampledEdges.
	WallS        float64 `json:"wall_s"`
	CPUS         float64 `json:"cpu_s"`
	SampledEdges int64   `json:"sampled_edges"`
	NsPerEdge    float64 `json:"ns_per_edge"`
	CPUNsPerEdge float64 `json:"cpu_ns_per_edge"`
	BytesRead    int64   `json:"bytes_read"`
	IOReadBytes  int64   `json:"io_read_bytes"`
	// PeakRSS is the process's peak resident set (VmHWM) after the set's
	// epochs: the graph's buffers and cache, the result, and what the
	// garbage collector had not yet returned.
	PeakRSS int64 `json:"peak_rss_bytes"`
	// Relations are the sampled edges and bytes read of each relation
	// (the last epoch's; heterogeneous graphs only), in the schema's order.
	Relations []RelationEpoch `json:"relations,omitempty"`
}

// EpochRun is one epoch.
type EpochRun struct {
	WallS        float64 `json:"wall_s"`
	CPUS         float64 `json:"cpu_s"` // the process's user + system time over the epoch
	SampledEdges int64   `json:"sampled_edges"`
	BytesRead    int64   `json:"bytes_read"`    // edges.chunks bytes the sampler read
	IOReadBytes  int64   `json:"io_read_bytes"` // /proc/self/io read_bytes over the epoch (-1: unknown)
}

// RelationEpoch is one relation's share of an epoch.
type RelationEpoch struct {
	Relation     string `json:"relation"`
	SampledEdges int64  `json:"sampled_edges"`
	BytesRead    int64  `json:"bytes_read"`
	StoredEdges  int64  `json:"stored_edges"`
}

// epochSampler runs one epoch of whichever kind the graph is and returns
// its sampled edges, the bytes the sampler read, and per relation.
type epochSampler func(ctx context.Context, fan []int, key epoch.Key) (edges, read int64, rels []RelationEpoch, err error)

// runBenchEpochs measures epochs only (a heterogeneous graph, or
// --epoch-only), as EpochReport describes.
func runBenchEpochs(ctx context.Context, w io.Writer, o benchOptions) error {
	hostname, _ := os.Hostname()
	rep := &EpochReport{Date: time.Now().UTC().Format(time.RFC3339), Host: hostname, CPUs: runtime.NumCPU(), Graph: o.graph,
		Backend: o.backend.Backend, Devices: o.backend.Devices, Runs: o.runs}
	var sample epochSampler
	var relFan map[string][]int
	var schema *heteroepoch.Schema
	if isHetero(o.graph) {
		rep.Hetero, rep.TrainType = true, o.trainType
		if o.trainType == "" {
			return usagef("--graph %s is heterogeneous (hetero.json): --train-type names the type of the training nodes (the seeds)", o.graph)
		}
		var err error
		if relFan, err = relationFanouts(o.relFan); err != nil {
			return err
		}
		cache, err := heteroChunkCache(o.backend.ChunkCache)
		if err != nil {
			return err
		}
		rep.ChunkCache = cache
		rr, err := benchRandomReads(o.backend)
		if err != nil {
			return err
		}
		hopts := heteroOptions(o.backend)
		hopts.Host.ChunkCache, hopts.Host.RandomReads = cache, rr
		smp, sch, err := heterosample.OpenDir(o.graph, hopts)
		if err != nil {
			return err
		}
		defer smp.Close()
		schema = sch
		t := schema.TypeIndex(o.trainType)
		if t < 0 {
			names := make([]string, len(schema.NodeTypes))
			for i, nt := range schema.NodeTypes {
				names[i] = nt.Name
			}
			return usagef("--train-type %q: not a node type of %s (its types: %s)", o.trainType, o.graph, strings.Join(names, ", "))
		}
		hm, err := heterofmt.Read(o.graph)
		if err != nil {
			return err
		}
		_, dirs := heterosample.SchemaOf(o.graph, hm)
		stored := make([]int64, len(schema.Relations))
		for r := range schema.Relations {
			m, err := chunkfmt.ReadManifest(dirs[r])
			if err != nil {
				return err
			}
			stored[r] = int64(m.NumEdges)
			rep.NumEdges += int64(m.NumEdges)
			rep.GraphBytes += m.FileSize()
		}
		train := benchTrainingSet(schema.NodeTypes[t].Count, o.trainFrac, o.trainCount, o.seed)
		rep.Train = len(train)
		seeds := []heteroepoch.Seeds{{Type: o.trainType, Nodes: train}}
		sample = func(ctx context.Context, fan []int, key epoch.Key) (int64, int64, []RelationEpoch, error) {
			fanouts, err := schema.FanoutsFromMap(relFan, fan)
			if err != nil {
				return 0, 0, nil, usageError{err}
			}
			res, st, err := smp.SampleEpochStats(ctx, seeds, fanouts, key)
			if err != nil {
				return 0, 0, nil, err
			}
			rels := make([]RelationEpoch, len(schema.Relations))
			for r, rel := range schema.Relations {
				rels[r] = RelationEpoch{Relation: rel.String(), StoredEdges: stored[r]}
			}
			for l, layer := range res.Layers {
				for r, ly := range layer {
					for _, s := range ly.Samples {
						if s >= 0 {
							rels[r].SampledEdges++
						}
					}
					if ls := st.Layers[l][r]; ls != nil { // nil on the gpu backend: no host statistics
						rels[r].BytesRead += ls.BytesRead
					}
				}
			}
			return res.SampledEdges(), st.BytesRead(), rels, nil
		}
	} else {
		if o.trainType != "" || len(o.relFan) > 0 {
			return usagef("--train-type and --relation-fanouts are for a heterogeneous graph directory; %s is homogeneous", o.graph)
		}
		m, err := chunkfmt.ReadManifest(o.graph)
		if err != nil {
			return err
		}
		rep.NumEdges, rep.GraphBytes = int64(m.NumEdges), m.FileSize()
		if _, _, err := o.backend.resolveChunkCache(m, false); err != nil {
			return err
		}
		rep.ChunkCache = *o.backend.chunkCache
		be, err := openBackend(o.graph, o.backend)
		if err != nil {
			return err
		}
		defer be.Close()
		train := benchTrainingSet(m.NumNodes, o.trainFrac, o.trainCount, o.seed)
		rep.Train = len(train)
		sample = func(ctx context.Context, fan []int, key epoch.Key) (int64, int64, []RelationEpoch, error) {
			res, err := be.SampleEpoch(ctx, train, fan, key)
			if err != nil {
				return 0, 0, nil, err
			}
			var read int64
			if s, ok := be.(host.StatsReporter); ok {
				if st := s.LastStats(); st != nil {
					for _, ls := range st.Layers {
						read += ls.BytesRead
					}
				}
			}
			return res.NumSampledEdges(), read, nil, nil
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			rep.Load = strings.Join(f[:3], " ")
		}
	}
	if !o.json {
		if err := rep.writeHeader(w); err != nil {
			return err
		}
	}
	for _, s := range o.fanoutSets {
		fan, err := parseFanouts(s)
		if err != nil {
			return err
		}
		set := EpochSet{Fanouts: fan}
		if schema != nil {
			fanouts, err := schema.FanoutsFromMap(relFan, fan)
			if err != nil {
				return usageError{err}
			}
			set.RelationFanouts = make(map[string][]int, len(fanouts))
			for r, rel := range schema.Relations {
				set.RelationFanouts[rel.String()] = fanouts[r]
			}
		}
		for r := range o.runs {
			if err := ctx.Err(); err != nil {
				return err
			}
			run, rels, err := measureEpoch(ctx, sample, fan, epoch.Key{Seed: o.seed, Epoch: uint32(r)})
			if err != nil {
				return err
			}
			set.Epochs, set.Relations = append(set.Epochs, run), rels
		}
		set.PeakRSS = procPeakRSS()
		set.summarize()
		rep.Sets = append(rep.Sets, set)
		if !o.json {
			if err := set.writeText(w); err != nil {
				return err
			}
		}
	}
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return nil
}

// measureEpoch samples one epoch and measures it: wall, the process's CPU
// time, its storage reads.
func measureEpoch(ctx context.Context, sample epochSampler, fan []int, key epoch.Key) (EpochRun, []RelationEpoch, error) {
	io0, cpu0, t0 := procio.ReadBytesOr(-1), processCPU(), time.Now()
	edges, read, rels, err := sample(ctx, fan, key)
	if err != nil {
		return EpochRun{}, nil, err
	}
	run := EpochRun{WallS: time.Since(t0).Seconds(), CPUS: processCPU() - cpu0, SampledEdges: edges, BytesRead: read, IOReadBytes: -1}
	if io1 := procio.ReadBytesOr(-1); io0 >= 0 && io1 >= 0 {
		run.IOReadBytes = io1 - io0
	}
	return run, rels, nil
}

// summarize fills the set's medians.
func (s *EpochSet) summarize() {
	var walls, cpus, edges, read, ioread []float64
	for _, e := range s.Epochs {
		walls, cpus = append(walls, e.WallS), append(cpus, e.CPUS)
		edges, read, ioread = append(edges, float64(e.SampledEdges)), append(read, float64(e.BytesRead)), append(ioread, float64(e.IOReadBytes))
	}
	s.WallS, s.CPUS = hostbench.Median(walls), hostbench.Median(cpus)
	s.SampledEdges, s.BytesRead, s.IOReadBytes = int64(hostbench.Median(edges)), int64(hostbench.Median(read)), int64(hostbench.Median(ioread))
	if s.SampledEdges > 0 {
		s.NsPerEdge = s.WallS * 1e9 / float64(s.SampledEdges)
		s.CPUNsPerEdge = s.CPUS * 1e9 / float64(s.SampledEdges)
	}
}

func (r *EpochReport) writeHeader(w io.Writer) error {
	kind := "homogeneous"
	if r.Hetero {
		kind = "heterogeneous"
	}
	seeds := fmt.Sprintf("%d training nodes", r.Train)
	if r.TrainType != "" {
		seeds = fmt.Sprintf("%d training nodes of type %s", r.Train, r.TrainType)
	}
	_, err := fmt.Fprintf(w, "bench (epochs only) %s: %s graph, %d stored edges, %s of chunks; %s; backend %s, %d device(s), chunk cache %s; %d run(s); load %s\n",
		r.Graph, kind, r.NumEdges, mib(r.GraphBytes), seeds, r.Backend, r.Devices, mib(r.ChunkCache), r.Runs, r.Load)
	return err
}

func (s *EpochSet) writeText(w io.Writer) error {
	fmt.Fprintf(w, "fanouts %v: epoch %.3f s wall, %.3f CPU s (medians), %d sampled edges, %.1f ns/edge (%.1f CPU ns/edge), %s read by the sampler, %s from storage, peak RSS %s\n",
		s.Fanouts, s.WallS, s.CPUS, s.SampledEdges, s.NsPerEdge, s.CPUNsPerEdge, mib(s.BytesRead), mib(s.IOReadBytes), mib(s.PeakRSS))
	for _, r := range s.Relations {
		fmt.Fprintf(w, "  relation %s (fanouts %v, %d stored edges): %d sampled edges, %s read\n",
			r.Relation, s.RelationFanouts[r.Relation], r.StoredEdges, r.SampledEdges, mib(r.BytesRead))
	}
	return nil
}

// benchTrainingSet draws count nodes of 0..n-1 (or frac of them, at least
// one, when count is 0), sorted, from seed: the draw of hostbench's
// training set, so that an --epoch-only run seeds the epochs the full
// bench does.
func benchTrainingSet(n uint32, frac float64, count int, seed uint64) []uint32 {
	all := make([]uint32, n)
	for i := range all {
		all[i] = uint32(i)
	}
	k := max(1, int(float64(n)*frac))
	if count > 0 {
		k = min(count, int(n))
	}
	train := epoch.Shuffle(all, seed^0x7a11, 0)[:k]
	slices.Sort(train)
	return train
}

// heteroChunkCache is --chunk-cache for a heterogeneous graph: a size,
// shared out over the relations by heterosample.Open; "auto" is not
// resolved here (it sizes one graph's chunks).
func heteroChunkCache(s string) (int64, error) {
	n, err := ingest.ParseSize(s)
	if err != nil || n < 0 {
		return 0, usagef("--chunk-cache %q: a heterogeneous graph's bench takes a size such as 4GiB, or 0", s)
	}
	return n, nil
}

// benchRandomReads is --random-reads as openBackend resolves it.
func benchRandomReads(b backendFlags) (host.RandomReads, error) {
	rr := host.RandomOff
	if b.RandomReads != "" {
		var err error
		if rr, err = host.ParseRandomReads(b.RandomReads); err != nil {
			return rr, usagef("--random-reads %q: want auto, off or always", b.RandomReads)
		}
	}
	if rr == host.RandomAuto && (b.Backend != "emu" || b.VerifyReads) {
		rr = host.RandomOff
	}
	return rr, nil
}
