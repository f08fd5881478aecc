package serve

import (
	"fmt"
	"os"
	"sync"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featplan"
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

// featureDTypes maps the store's dtypes to the protocol's.
var featureDTypes = map[featstore.DType]uint8{featstore.Float32: DtypeF32, featstore.Float16: DtypeF16, featstore.Int8: DtypeI8, featstore.Uint8: DtypeU8}

// featureStage reads every minibatch's feature rows under its epoch's
// plan. A plan's reads must run in its minibatch order (its cache holds
// what earlier minibatches read), while connections claim minibatches in
// order but finish assembling them in any order: each epoch has one
// featplan.Reader, and the goroutine with minibatch i waits for its turn
// (every minibatch before i read) before it reads. Minibatches are
// claimed in order, so the ones before i are all claimed and will take
// their turn (a failed assembly takes it too: skip). Two epochs can be in
// flight at once (the last minibatches of one while the next begins);
// older readers are closed.
type featureStage struct {
	fs    *featstore.Store
	dtype uint8
	// sampleFile reads sample replies' rows (outside any plan) through the
	// page cache: a repeated evaluation sample finds them there.
	sampleFile *os.File

	mu     sync.Mutex
	cond   *sync.Cond
	epochs map[uint32]*epochReads
}

// epochReads is one epoch's reader and turn.
type epochReads struct {
	plan *pipeline.FeaturePlan
	f    *os.File
	r    *featplan.Reader
	next int   // the minibatch whose turn it is
	err  error // a failed read fails every later minibatch of the epoch
}

func newFeatureStage(fs *featstore.Store) (*featureStage, error) {
	dt, ok := featureDTypes[fs.DType()]
	if !ok {
		return nil, fmt.Errorf("%w: feature dtype %q", ErrConfig, fs.DType())
	}
	f, err := os.Open(fs.FeaturesPath())
	if err != nil {
		return nil, err
	}
	st := &featureStage{fs: fs, dtype: dt, sampleFile: f, epochs: map[uint32]*epochReads{}}
	st.cond = sync.NewCond(&st.mu)
	return st, nil
}

func (st *featureStage) info() *FeatureInfo {
	return &FeatureInfo{Dim: st.fs.Dim(), DType: string(st.fs.DType()), RowBytes: st.fs.RowBytes(), Labels: st.fs.HasLabels()}
}

// readsLocked returns epoch e's reads, opening its reader on first use
// and closing those of epochs two or more before it.
func (st *featureStage) readsLocked(e uint32, plan *pipeline.FeaturePlan) (*epochReads, error) {
	if er := st.epochs[e]; er != nil {
		return er, nil
	}
	if plan == nil {
		return nil, fmt.Errorf("epoch %d has no feature plan", e)
	}
	f, _, err := featplan.OpenDirect(st.fs.FeaturesPath())
	if err != nil {
		return nil, err
	}
	r, err := featplan.NewReader(f, st.fs.FeaturesPath(), st.fs.RowBytes(), plan.Plan, featplan.DefaultExtentOptions())
	if err != nil {
		f.Close()
		return nil, err
	}
	er := &epochReads{plan: plan, f: f, r: r}
	st.epochs[e] = er
	for old, o := range st.epochs {
		if old+1 < e {
			o.f.Close()
			delete(st.epochs, old)
		}
	}
	return er, nil
}

// rowBuffer is where n bytes of rows are read to: the heap, or with a
// pool (a shared-rows connection) one of its buffers, leased.
func rowBuffer(n int64, pool *rowPool) ([]byte, *rowLease, error) {
	if pool == nil {
		return make([]byte, n), nil, nil
	}
	l, err := pool.acquire(int(n))
	if err != nil {
		return nil, nil, err
	}
	return l.bytes(int(n)), l, nil
}

// rows reads minibatch index of epoch e, whose node set is nodes, in its
// turn and returns its features (with a pool, in one of its buffers) with
// the labels of seeds. With seeds nil the rows are read for the plan's
// sake and dropped (the minibatch's reply reads its own, of other
// semantics). With nodes nil (its assembly failed) it takes the turn all
// the same, so that the minibatches after it get theirs: it reads and
// drops the rows where the plan still holds their n_id, and fails the
// epoch's later feature reads where it forgot them.
func (st *featureStage) rows(e uint32, index int, plan *pipeline.FeaturePlan, nodes, seeds []uint32, pool *rowPool) (*Features, error) {
	st.mu.Lock()
	er, err := st.readsLocked(e, plan)
	if err != nil {
		st.mu.Unlock()
		return nil, err
	}
	for er.next != index && er.err == nil {
		st.cond.Wait()
	}
	if er.err != nil {
		st.mu.Unlock()
		return nil, er.err
	}
	st.mu.Unlock()
	// Only this goroutine may read now: the turn passes when it is done.
	n := int64(plan.Plan.Batch(index).Len()) * st.fs.RowBytes()
	var x []byte
	var mem *rowLease
	var rerr error
	switch {
	case nodes != nil:
		if seeds == nil {
			pool = nil
		}
		if x, mem, rerr = rowBuffer(n, pool); rerr == nil {
			_, rerr = er.r.NextNodes(nodes, x)
		}
	case plan.Plan.Forgotten():
		// Reading its rows needs its n_id, and the plan's cache needs the
		// rows it keeps: the epoch's later rows cannot be read.
		rerr = fmt.Errorf("it failed to assemble, and the rows later minibatches take from the cache it fills are unknown without it")
	default:
		_, rerr = er.r.Next(make([]byte, n))
	}
	st.mu.Lock()
	if rerr != nil {
		er.err = fmt.Errorf("features of epoch %d minibatch %d: %w", e, index, rerr)
	}
	er.next++
	st.cond.Broadcast()
	st.mu.Unlock()
	if rerr != nil || nodes == nil || seeds == nil {
		mem.abandon()
		return nil, er.err
	}
	return st.features(x, mem, seeds)
}

// direct reads the features of blocks b outside any plan (a sample
// request: seeds of the caller's choosing).
func (st *featureStage) direct(b *epoch.Blocks, pool *rowPool) (*Features, error) {
	nodes := b.Nodes()
	x, mem, err := rowBuffer(int64(len(nodes))*st.fs.RowBytes(), pool)
	if err != nil {
		return nil, err
	}
	if _, err := featplan.ReadRows(st.sampleFile, st.fs.FeaturesPath(), st.fs.RowBytes(), nodes, x, featplan.DefaultExtentOptions()); err != nil {
		mem.abandon()
		return nil, err
	}
	return st.features(x, mem, b.Seeds)
}

// features are a reply's features: the rows x (in a shared buffer where
// leased) and the seeds' labels, where the store has labels.
func (st *featureStage) features(x []byte, lease *rowLease, seeds []uint32) (*Features, error) {
	f := &Features{X: x, Dim: st.fs.Dim(), DType: st.dtype, lease: lease}
	if st.fs.HasLabels() {
		f.Y = make([]int32, len(seeds))
		if err := st.fs.ReadLabels(seeds, f.Y); err != nil {
			lease.abandon()
			return nil, err
		}
	}
	return f, nil
}

// close closes every epoch's reader.
func (st *featureStage) close() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sampleFile.Close()
	for e, er := range st.epochs {
		er.f.Close()
		delete(st.epochs, e)
	}
}
