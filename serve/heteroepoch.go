package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featrows"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/heteroepoch"
	"github.com/streamsampler/streamsampler/heterofmt"
)

// HeteroSampler samples a heterogeneous epoch (heterosample.Sampler).
type HeteroSampler interface {
	SampleEpoch(ctx context.Context, seeds []heteroepoch.Seeds, fanouts [][]int, key epoch.Key) (*heteroepoch.Result, error)
}

// HeteroConfig configures heterogeneous epochs: the training seeds are
// local ids of one node type, sharded, shuffled and cut into minibatches
// exactly as a homogeneous epoch's training nodes are (epoch.Shard,
// epoch.Batches, epoch.BatchesPerRank), so a rank's minibatches of one
// epoch are the same whatever serves them.
type HeteroConfig struct {
	Sampler   HeteroSampler
	Schema    *heteroepoch.Schema
	TrainType string
	Train     []uint32
	// Fanouts are per relation, in the schema's order (Schema.FanoutsFromMap).
	Fanouts     [][]int
	BatchSize   int
	Seed        uint64
	Semantics   epoch.Semantics
	Rank, World int
	// Features are the node types' feature stores, in the schema's
	// order (nil: no rows travel; a nil entry: the type has none).
	Features []*featstore.Store
	// EdgeIDs reports (in epoch_info) that the sampler's layers carry
	// edge ids; the minibatches send e_id when their sample has them.
	EdgeIDs bool
	// Labels are the node types' labels, in the schema's order (nil: no
	// labels travel; a nil entry: the type has none; OpenHeteroLabels).
	Labels []HeteroLabels
	// NumEdges are the relations' stored edge counts, in the schema's
	// order: the bound on a full hop (fanout -1) of a relation in what a
	// split holds and a reply reserves. Without them a full hop is
	// bounded by nothing, and a split with one is refused.
	NumEdges []int64
	// MaxInflight is the in-flight budget in bytes (0:
	// DefaultMaxInflight): replies being built and sent reserve from
	// it, and splits hold at most a quarter of it.
	MaxInflight int64
	// StallTimeout is how long a connection's reply may move no byte
	// while another request waits for the in-flight budget before the
	// connection is closed and its bytes given back (Config.StallTimeout's
	// rule). 0 means DefaultStallTimeout; negative, never.
	StallTimeout time.Duration
}

// HeteroInfo is epoch_info's "hetero" object: the schema, once, whose
// positions the minibatches' type and relation indices are.
type HeteroInfo struct {
	NodeTypes []string `json:"node_types"`
	// Relations are [src, rel, dst] triples, PyG's edge types.
	Relations [][3]string `json:"relations"`
	// Counts are the node types' node counts.
	Counts    []uint32 `json:"num_nodes"`
	TrainType string   `json:"train_type"`
	// Fanouts are per relation, in Relations' order.
	Fanouts [][]int `json:"fanouts"`
	// Features and Labels say, per node type, whether its minibatches
	// carry its feature rows and its labels (absent: none travel).
	Features []bool `json:"features,omitempty"`
	Labels   []bool `json:"labels,omitempty"`
}

// HeteroEpochs makes a run's heterogeneous epochs.
type HeteroEpochs struct {
	cfg   HeteroConfig
	train []uint32
	info  HeteroInfo
	L     int
	// resident are the node types' stores held in memory (HoldFeatures),
	// in the schema's order; nil entries are read from their files.
	resident []*featrows.Resident
}

// NewHeteroEpochs checks cfg: the training type is one of the schema's,
// every training id is below its type's count, the fanouts fit the
// schema; errors wrap heteroepoch.ErrInvalid and name what is wrong.
func NewHeteroEpochs(cfg HeteroConfig) (*HeteroEpochs, error) {
	s := cfg.Schema
	if s == nil || cfg.Sampler == nil {
		return nil, fmt.Errorf("%w: heterogeneous epochs without a schema or sampler", ErrConfig)
	}
	t := s.TypeIndex(cfg.TrainType)
	if t < 0 {
		names := make([]string, len(s.NodeTypes))
		for i, nt := range s.NodeTypes {
			names[i] = nt.Name
		}
		return nil, fmt.Errorf("%w: training node type %q is not one of the graph's %q", heteroepoch.ErrInvalid, cfg.TrainType, names)
	}
	for i, v := range cfg.Train {
		if v >= s.NodeTypes[t].Count {
			return nil, fmt.Errorf("%w: training node %d (entry %d) of type %q is not a node: the type has %d nodes", heteroepoch.ErrInvalid, v, i, cfg.TrainType, s.NodeTypes[t].Count)
		}
	}
	L, err := s.NumLayers(cfg.Fanouts)
	if err != nil {
		return nil, err
	}
	if cfg.BatchSize < 1 {
		return nil, fmt.Errorf("%w: batch size %d, want >= 1", ErrConfig, cfg.BatchSize)
	}
	if cfg.World == 0 {
		cfg.World = 1
	}
	if cfg.Features != nil {
		if len(cfg.Features) != len(s.NodeTypes) {
			return nil, fmt.Errorf("%w: feature stores for %d node types, the schema has %d", ErrConfig, len(cfg.Features), len(s.NodeTypes))
		}
		for t, fs := range cfg.Features {
			if fs == nil {
				continue
			}
			if fs.NumNodes() != s.NodeTypes[t].Count {
				return nil, fmt.Errorf("%w: node type %q has %d nodes, its feature store %d rows", ErrConfig, s.NodeTypes[t].Name, s.NodeTypes[t].Count, fs.NumNodes())
			}
			if _, ok := featureDTypes[fs.DType()]; !ok {
				return nil, fmt.Errorf("%w: node type %q: feature dtype %s", ErrConfig, s.NodeTypes[t].Name, fs.DType())
			}
		}
	}
	if cfg.Labels != nil && len(cfg.Labels) != len(s.NodeTypes) {
		return nil, fmt.Errorf("%w: labels for %d node types, the schema has %d", ErrConfig, len(cfg.Labels), len(s.NodeTypes))
	}
	if cfg.NumEdges != nil && len(cfg.NumEdges) != len(s.Relations) {
		return nil, fmt.Errorf("%w: edge counts of %d relations, the schema has %d", ErrConfig, len(cfg.NumEdges), len(s.Relations))
	}
	if cfg.MaxInflight < 0 {
		return nil, fmt.Errorf("%w: in-flight budget %d bytes", ErrConfig, cfg.MaxInflight)
	}
	if cfg.MaxInflight == 0 {
		cfg.MaxInflight = DefaultMaxInflight
	}
	if !cfg.Semantics.Valid() {
		return nil, fmt.Errorf("%w: semantics %d", ErrConfig, cfg.Semantics)
	}
	h := &HeteroEpochs{cfg: cfg, L: L, info: HeteroInfo{TrainType: cfg.TrainType, Fanouts: cfg.Fanouts}}
	for _, nt := range s.NodeTypes {
		h.info.NodeTypes = append(h.info.NodeTypes, nt.Name)
		h.info.Counts = append(h.info.Counts, nt.Count)
	}
	for _, r := range s.Relations {
		h.info.Relations = append(h.info.Relations, [3]string{r.Src, r.Name, r.Dst})
	}
	for _, fs := range cfg.Features {
		h.info.Features = append(h.info.Features, fs != nil)
	}
	for _, l := range cfg.Labels {
		h.info.Labels = append(h.info.Labels, l != nil)
	}
	// Distinct and sorted, as epoch.Shard makes them.
	if h.train, err = epoch.Shard(cfg.Train, 0, 1, cfg.Seed, 0); err != nil {
		return nil, fmt.Errorf("serve: heterogeneous training set: %w", err)
	}
	if len(h.train) == 0 {
		return nil, fmt.Errorf("%w: no training nodes of type %q", heteroepoch.ErrInvalid, cfg.TrainType)
	}
	if len(h.train) < cfg.World {
		return nil, fmt.Errorf("%w: %d training nodes for %d ranks", ErrConfig, len(h.train), cfg.World)
	}
	return h, nil
}

// HoldFeatures holds in memory, whole and checked against their CRC-32Cs
// as they are loaded (featrows.LoadResident), the feature stores of as
// many node types as fit in budget bytes, the smallest first (the most
// types for the memory); their minibatches' rows are then copied from
// memory, the other types' read from their files. It returns the types
// held, in the schema's order, and their bytes. Call it before the epochs
// are served: it is not safe beside Batch.
func (h *HeteroEpochs) HoldFeatures(ctx context.Context, budget int64) (types []string, bytes int64, err error) {
	fss := h.cfg.Features
	order := make([]int, 0, len(fss))
	for t, fs := range fss {
		if fs != nil {
			order = append(order, t)
		}
	}
	size := func(t int) int64 { return int64(fss[t].NumNodes()) * fss[t].RowBytes() }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(size(a), size(b)) })
	resident := make([]*featrows.Resident, len(fss))
	for _, t := range order {
		if bytes+size(t) > budget {
			break
		}
		r, err := featrows.LoadResident(ctx, fss[t])
		if err != nil {
			return nil, 0, fmt.Errorf("serve: holding the feature rows of node type %q: %w", h.cfg.Schema.NodeTypes[t].Name, err)
		}
		resident[t] = r
		bytes += r.Bytes()
	}
	for t, r := range resident {
		if r != nil {
			types = append(types, h.cfg.Schema.NodeTypes[t].Name)
		}
	}
	h.resident = resident
	return types, bytes, nil
}

// Info returns the epoch_info "hetero" object.
func (h *HeteroEpochs) Info() HeteroInfo { return h.info }

// NumBatches is the minibatches every rank serves per epoch.
func (h *HeteroEpochs) NumBatches() int {
	return epoch.BatchesPerRank(len(h.train), h.cfg.World, h.cfg.BatchSize)
}

// HeteroEpoch is one sampled epoch of a rank: its minibatches' seeds and
// the sample they are assembled from.
type HeteroEpoch struct {
	Epoch   uint32
	Batches [][]uint32
	Shard   int
	res     *heteroepoch.Result
	h       *HeteroEpochs
}

// Prepare samples epoch e of the rank: its shard of the training set,
// sampled whole (the shard is the epoch's frontier_0 of the training
// type), cut into the seeded minibatches.
func (h *HeteroEpochs) Prepare(ctx context.Context, e uint32) (*HeteroEpoch, error) {
	c := &h.cfg
	shard, err := epoch.Shard(h.train, c.Rank, c.World, c.Seed, e)
	if err != nil {
		return nil, fmt.Errorf("serve: heterogeneous epoch %d: %w", e, err)
	}
	res, err := c.Sampler.SampleEpoch(ctx, []heteroepoch.Seeds{{Type: c.TrainType, Nodes: shard}}, c.Fanouts, epoch.Key{Seed: c.Seed, Epoch: e})
	if err != nil {
		return nil, fmt.Errorf("serve: sampling heterogeneous epoch %d: %w", e, err)
	}
	batches := epoch.Batches(shard, c.BatchSize, c.Seed, e)
	batches = batches[:min(len(batches), h.NumBatches())]
	return &HeteroEpoch{Epoch: e, Batches: batches, Shard: len(shard), res: res, h: h}, nil
}

// errBatchRange is returned for a minibatch index outside the epoch.
var errBatchRange = errors.New("serve: minibatch index outside the epoch")

// Batch assembles minibatch i with the given semantics
// (DefaultSemantics: the configured one), its feature rows read.
func (ep *HeteroEpoch) Batch(i int, sem epoch.Semantics) (*HeteroBatch, error) {
	b, err := ep.batch(i, sem)
	if err != nil {
		return nil, err
	}
	if err := b.readRows(); err != nil {
		return nil, fmt.Errorf("serve: heterogeneous epoch %d minibatch %d: %w", ep.Epoch, i, err)
	}
	return b, nil
}

// batch assembles minibatch i as Batch does, its feature rows left to be
// read into its reply frame (HeteroRows.read).
func (ep *HeteroEpoch) batch(i int, sem epoch.Semantics) (*HeteroBatch, error) {
	if i < 0 || i >= len(ep.Batches) {
		return nil, fmt.Errorf("%w: %d of %d", errBatchRange, i, len(ep.Batches))
	}
	seeds := []heteroepoch.Seeds{{Type: ep.h.cfg.TrainType, Nodes: ep.Batches[i]}}
	b, err := ep.h.assemble(ep.res, seeds, sem)
	if err != nil {
		return nil, fmt.Errorf("serve: heterogeneous epoch %d minibatch %d: %w", ep.Epoch, i, err)
	}
	b.Epoch, b.Index = ep.Epoch, i
	return b, nil
}

// assemble builds the minibatch of seeds from res with the given
// semantics (DefaultSemantics: the configured one), with the feature rows
// and labels of its nodes when the epochs have them.
func (h *HeteroEpochs) assemble(res *heteroepoch.Result, seeds []heteroepoch.Seeds, sem epoch.Semantics) (*HeteroBatch, error) {
	if sem == DefaultSemantics {
		sem = h.cfg.Semantics
	}
	b := &HeteroBatch{Semantics: sem, Hops: h.L}
	var err error
	if sem == epoch.PyG {
		b.PyG, err = res.AssemblePyG(seeds)
	} else {
		b.DGL, err = res.AssembleDGL(seeds)
	}
	if err != nil {
		return nil, err
	}
	// e_id travels when the sample has it (the sampler's own option).
	if b.PyG != nil {
		for _, e := range b.PyG.Edges {
			b.EdgeIDs = b.EdgeIDs || e.EID != nil
		}
	}
	for _, bl := range b.DGL {
		for _, e := range bl.Edges {
			b.EdgeIDs = b.EdgeIDs || e.EID != nil
		}
	}
	// The nodes whose rows and labels travel: n_id (PyG), the last hop's
	// src nodes (DGL), which start with the seeds.
	ids := func(t int) []uint32 {
		if b.PyG != nil {
			return b.PyG.Nodes[t].NID
		}
		return b.DGL[len(b.DGL)-1].SrcNID[t]
	}
	if fss := h.cfg.Features; fss != nil {
		b.X = make([]*HeteroRows, len(fss))
		for t, fs := range fss {
			if fs == nil {
				continue
			}
			nodes := ids(t)
			var res *featrows.Resident
			if h.resident != nil {
				res = h.resident[t]
			}
			name := h.cfg.Schema.NodeTypes[t].Name
			// Read as the reply is laid out, straight into it.
			b.X[t] = &HeteroRows{DType: featureDTypes[fs.DType()], Dim: fs.Dim(), read: func(dst []byte) error {
				var err error
				if res != nil {
					err = res.ReadRows(nodes, dst)
				} else {
					_, err = featrows.ReadRows(fs, nodes, dst)
				}
				if err != nil {
					return fmt.Errorf("rows of node type %q: %w", name, err)
				}
				return nil
			}}
		}
	}
	if ls := h.cfg.Labels; ls != nil {
		b.Y = make([][]int32, len(ls))
		for t, l := range ls {
			if l == nil {
				continue
			}
			nodes := ids(t)
			y := make([]int32, len(nodes))
			if err := l.ReadLabels(nodes, y); err != nil {
				return nil, fmt.Errorf("labels of node type %q: %w", h.cfg.Schema.NodeTypes[t].Name, err)
			}
			b.Y[t] = y
		}
	}
	return b, nil
}

// OpenHeteroFeatures opens the feature store of every node type of the
// heterogeneous graph directory dir that has one (features/<type>/),
// each bound to its type (heterofmt.Manifest.NodeTypeFingerprint): a
// store of another graph or a rebuilt one is refused. The result is in
// the schema's order, nil for a type without a store; nil, nil when no
// type has one. The caller closes the stores (CloseStores).
func OpenHeteroFeatures(dir string, s *heteroepoch.Schema) ([]*featstore.Store, error) {
	m, err := heterofmt.Read(dir)
	if err != nil {
		return nil, err
	}
	out := make([]*featstore.Store, len(s.NodeTypes))
	found := false
	for t, nt := range s.NodeTypes {
		fdir := filepath.Join(dir, heterofmt.FeatureDir(nt.Name))
		if _, err := os.Stat(fdir); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		fp, ok := m.NodeTypeFingerprint(nt.Name)
		if !ok {
			CloseStores(out)
			return nil, fmt.Errorf("serve: node type %q is not in %s's hetero.json", nt.Name, dir)
		}
		if out[t], err = featstore.OpenFor(fdir, fp); err != nil {
			CloseStores(out)
			return nil, fmt.Errorf("serve: feature store of node type %q: %w", nt.Name, err)
		}
		found = true
	}
	if !found {
		return nil, nil
	}
	return out, nil
}

// CloseStores closes the non-nil stores.
func CloseStores(stores []*featstore.Store) {
	for _, s := range stores {
		if s != nil {
			s.Close()
		}
	}
}

// HeteroNumEdges returns the stored edge count of each relation of s
// (HeteroConfig.NumEdges) from dir's hetero.json.
func HeteroNumEdges(dir string, s *heteroepoch.Schema) ([]int64, error) {
	m, err := heterofmt.Read(dir)
	if err != nil {
		return nil, err
	}
	byKey := make(map[string]uint64, len(m.Relations))
	for _, r := range m.Relations {
		byKey[r.Key()] = r.Graph.NumEdges
	}
	out := make([]int64, len(s.Relations))
	for i, r := range s.Relations {
		n, ok := byKey[r.String()]
		if !ok {
			return nil, fmt.Errorf("serve: relation %s is not in %s's hetero.json", r, dir)
		}
		out[i] = int64(min(n, 1<<62))
	}
	return out, nil
}
