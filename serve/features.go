package serve

import (
	"context"
	"fmt"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featplan"
	"github.com/streamsampler/streamsampler/featrows"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/pipeline"
)

// FeatureInfo describes the features a server delivers, in epoch_info.
type FeatureInfo struct {
	Dim      int    `json:"dim"`
	DType    string `json:"dtype"`
	RowBytes int64  `json:"row_bytes"`
	Labels   bool   `json:"labels"`
}

// featureDTypes maps the store's dtypes to the protocol's array dtypes
// (the wire's codes, which only the protocol knows).
var featureDTypes = map[featstore.DType]uint8{featstore.Float32: DtypeF32, featstore.Float16: DtypeF16, featstore.Int8: DtypeI8, featstore.Uint8: DtypeU8}

// featureStage puts feature rows and labels in replies; featrows reads
// them. Connections claim minibatches in order but finish assembling them
// in any order: each minibatch's rows are read in its turn of its epoch's
// plan (featrows.Epoch), and every claimed minibatch takes its turn, a
// failed assembly too, or the ones claimed after it would wait for ever.
type featureStage struct {
	fs    *featstore.Store
	rows  *featrows.Executor
	dtype uint8
}

func newFeatureStage(fs *featstore.Store) (*featureStage, error) {
	dt, ok := featureDTypes[fs.DType()]
	if !ok {
		return nil, fmt.Errorf("%w: feature dtype %q", ErrConfig, fs.DType())
	}
	// The executor holds the store's generation open for the server's
	// life: a store replaced under it (chunkify features --force) is
	// served as it was opened, epoch after epoch, until a restart.
	rows, err := featrows.New(fs)
	if err != nil {
		return nil, fmt.Errorf("serve: features: %w", err)
	}
	return &featureStage{fs: fs, rows: rows, dtype: dt}, nil
}

func (st *featureStage) info() *FeatureInfo {
	return &FeatureInfo{Dim: st.fs.Dim(), DType: string(st.fs.DType()), RowBytes: st.fs.RowBytes(), Labels: st.fs.HasLabels()}
}

// rowBuffer is where n bytes of rows are read to: the heap, or with a
// pool (a shared-rows connection) one of its buffers, leased. With wait
// the lease may wait (until ctx ends) for a buffer the client gives back
// (rowPool.acquireWait) rather than put the rows on the heap: only a
// read in its turn may, whose buffers waited for are of minibatches
// already sent.
func rowBuffer(ctx context.Context, n int64, pool *rowPool, wait bool) ([]byte, *rowLease, error) {
	if pool == nil {
		return make([]byte, n), nil, nil
	}
	var l *rowLease
	var err error
	if wait {
		l, err = pool.acquireWait(ctx, int(n))
	} else {
		l, err = pool.acquire(int(n))
	}
	if err != nil {
		return nil, nil, err
	}
	return l.bytes(int(n)), l, nil
}

// planned reads minibatch index of epoch e, whose node set is nodes, in
// its turn and returns its features (with a pool, in one of its buffers)
// with the labels of seeds. With seeds nil the rows are read for the
// plan's sake and dropped (the minibatch's reply reads its own, of other
// semantics). With nodes nil (its assembly failed) it takes the turn all
// the same (featrows.Epoch.Skip). ctx is the server's: it ends only at
// shutdown, as a minibatch that stops waiting fails its epoch's later
// ones.
func (st *featureStage) planned(ctx context.Context, e uint32, index int, plan *pipeline.FeaturePlan, nodes, seeds []uint32, pool *rowPool) (*Features, error) {
	if plan == nil {
		return nil, fmt.Errorf("epoch %d has no feature plan", e)
	}
	ep, err := st.rows.Epoch(e, plan.Plan)
	if err != nil {
		return nil, err
	}
	switch {
	case nodes == nil:
		return nil, ep.Skip(ctx, index)
	case seeds == nil:
		return nil, ep.Read(ctx, index, nodes, nil)
	}
	// The buffer is leased in the minibatch's turn: one the client has to
	// give back is then one of an earlier minibatch, already sent.
	var mem *rowLease
	x, err := ep.ReadInto(ctx, index, nodes, func() (x []byte, err error) {
		x, mem, err = rowBuffer(ctx, int64(len(nodes))*st.fs.RowBytes(), pool, true)
		return x, err
	})
	if err != nil {
		mem.abandon()
		return nil, err
	}
	return st.features(x, mem, seeds)
}

// direct reads the features of blocks b outside any plan (a sample
// request: seeds of the caller's choosing), and returns what the reads
// cost.
func (st *featureStage) direct(b *epoch.Blocks, pool *rowPool) (*Features, featplan.Report, error) {
	nodes := b.Nodes()
	x, mem, err := rowBuffer(context.Background(), int64(len(nodes))*st.fs.RowBytes(), pool, false)
	if err != nil {
		return nil, featplan.Report{}, err
	}
	rep, err := st.rows.ReadDirect(nodes, x)
	if err != nil {
		mem.abandon()
		return nil, rep, err
	}
	f, err := st.features(x, mem, b.Seeds)
	return f, rep, err
}

// epochReads returns epoch e's planned reads under plan (opened as a
// minibatch's read would open them), for its figures; nil where they
// cannot be had (no plan, or closed: a minibatch's read says why).
func (st *featureStage) epochReads(e uint32, plan *pipeline.FeaturePlan) *featrows.Epoch {
	if plan == nil {
		return nil
	}
	ep, err := st.rows.Epoch(e, plan.Plan)
	if err != nil {
		return nil
	}
	return ep
}

// features are a reply's features: the rows x (in a shared buffer where
// leased) and the seeds' labels, where the store has labels.
func (st *featureStage) features(x []byte, lease *rowLease, seeds []uint32) (*Features, error) {
	y, err := st.rows.Labels(seeds, nil)
	if err != nil {
		lease.abandon()
		return nil, err
	}
	return &Features{X: x, Dim: st.fs.Dim(), DType: st.dtype, Y: y, lease: lease}, nil
}

// close closes every epoch's reads.
func (st *featureStage) close() { st.rows.Close() }
