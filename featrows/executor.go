package featrows

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/streamsampler/streamsampler/featplan"
	"github.com/streamsampler/streamsampler/featstore"
)

// Sentinel errors, for callers that branch on why rows were not delivered.
var (
	// ErrClosed: the Executor, or the epoch's reads, were closed (an
	// epoch's reads close when the epoch two after it begins).
	ErrClosed = errors.New("featrows: closed")
	// ErrEpochFailed: an earlier minibatch of the epoch failed to read
	// (or gave up its turn), so the plan's cache, which later minibatches
	// take rows from, is not what the plan says: the epoch's later
	// minibatches cannot be delivered. The error also wraps the cause.
	ErrEpochFailed = errors.New("featrows: an earlier minibatch of the epoch failed")
	// ErrTurn: a minibatch outside the plan, or one whose turn has
	// passed (each minibatch takes its turn once).
	ErrTurn = errors.New("featrows: not this minibatch's turn")
	// ErrReplaced: the store's feature file was replaced or removed
	// (chunkify features --force) between featstore.Open and New: its
	// path names another file than the store opened, or none. Open the
	// store again.
	ErrReplaced = errors.New("featrows: the feature store was replaced since it was opened")
)

// Executor delivers the feature rows and labels of one feature store, at
// the generation the store was opened at, for its whole life: its planned
// reads go through one descriptor of the feature file, opened O_DIRECT by
// New and closed by Close, so a store replaced meanwhile (chunkify
// features --force, which removes the old generation's files) is still
// read whole — every epoch, planned or not — until the caller opens the
// new one on purpose. Every row is checked against its CRC-32C before it
// is delivered, every label against its page's and num_classes.
// Its methods are safe for concurrent use.
type Executor struct {
	fs      *featstore.Store
	opts    featplan.ExtentOptions
	path    string      // the feature file's path, in errors
	planned io.ReaderAt // the planned reads' file: O_DIRECT where it can be
	direct  bool
	file    *os.File // planned's, when New opened it

	mu     sync.Mutex
	epochs map[uint32]*Epoch
	floor  uint32 // epochs below it have had their reads closed for good
	closed bool
}

// New returns an Executor over st, which stays the caller's (Close leaves
// it open). It opens st's feature file (FeaturesPath) again, O_DIRECT,
// for its planned reads, and checks that it is the very file st opened
// (else ErrReplaced); its direct reads go through st's own file. A store
// without a path (featstore.NewStore) is read through its own reader.
// Every row is checked with st's per-row CRCs before it is delivered
// (featplan's ExtentOptions.Check).
func New(st *featstore.Store) (*Executor, error) {
	x := &Executor{fs: st, opts: featplan.DefaultExtentOptions(), epochs: map[uint32]*Epoch{},
		path: st.FeaturesPath(), planned: st.FeatureReader()}
	x.opts.Check = st.FeatureChecksums().Check
	if x.path == "" {
		x.path = st.Manifest().Features.File
		return x, nil
	}
	f, direct, err := featplan.OpenDirect(x.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %w", ErrReplaced, err)
	}
	if err != nil {
		return nil, fmt.Errorf("featrows: %w", err)
	}
	if err := sameFile(f, st.FeatureReader()); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrReplaced, x.path, err)
	}
	x.planned, x.direct, x.file = f, direct, f
	return x, nil
}

// sameFile reports whether f and r (the store's reader) are one file.
func sameFile(f *os.File, r io.ReaderAt) error {
	sf, ok := r.(interface{ Stat() (os.FileInfo, error) })
	if !ok {
		return nil // a reader of the caller's: nothing to compare
	}
	a, err := f.Stat()
	if err != nil {
		return err
	}
	b, err := sf.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(a, b) {
		return errors.New("the path now names another file than the store opened")
	}
	return nil
}

// Epoch returns the reads of epoch e under plan p, opening them on first
// use (p is used only then; nil is an error if they are not open yet).
// Opening epoch e closes the reads of every epoch before e-1: two epochs
// may be in flight at once (the last minibatches of one while the next
// begins), never three. An epoch older than those is refused (ErrClosed)
// rather than opened again, as its minibatches' turns have passed.
func (x *Executor) Epoch(e uint32, p *featplan.Plan) (*Epoch, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil, fmt.Errorf("%w: epoch %d", ErrClosed, e)
	}
	if ep := x.epochs[e]; ep != nil {
		return ep, nil
	}
	if e < x.floor {
		return nil, fmt.Errorf("%w: epoch %d: its feature reads ended when epoch %d began", ErrClosed, e, x.floor+1)
	}
	if p == nil {
		return nil, fmt.Errorf("featrows: epoch %d has no feature plan", e)
	}
	ep, err := x.openEpoch(e, p)
	if err != nil {
		return nil, err
	}
	x.epochs[e] = ep
	for old, o := range x.epochs {
		if old+1 < e {
			o.Close()
			delete(x.epochs, old)
		}
	}
	if e > 0 {
		x.floor = max(x.floor, e-1)
	}
	return ep, nil
}

// ReadDirect reads the rows of nodes (distinct ids, a minibatch of seeds
// of the caller's choosing, which no plan knows) into dst (at least
// len(nodes)·RowBytes bytes), in nodes' order, and returns what the reads
// cost. They are read as a plan reads a minibatch's disk rows — sorted,
// coalesced into aligned extents, featplan.DefaultDepth in flight
// (featplan.ReadRows) —
// but through the page cache: unlike an epoch streamed through a plan,
// one minibatch pollutes little, and a repeated sample (an evaluation
// split read every epoch) finds its rows there (BenchmarkReadRows in
// featplan: cold, no slower than O_DIRECT; warm, several times faster).
func (x *Executor) ReadDirect(nodes []uint32, dst []byte) (featplan.Report, error) {
	return readDirect(x.fs, x.path, x.opts, nodes, dst)
}

// ReadRows reads the rows of nodes from st as Executor.ReadDirect does,
// without an Executor: for a server that plans no epoch's reads (the
// heterogeneous one, a store per node type), so holds no O_DIRECT file.
// Every row is checked against its CRC-32C.
func ReadRows(st *featstore.Store, nodes []uint32, dst []byte) (featplan.Report, error) {
	o := featplan.DefaultExtentOptions()
	o.Check = st.FeatureChecksums().Check
	path := st.FeaturesPath()
	if path == "" {
		path = st.Manifest().Features.File
	}
	return readDirect(st, path, o, nodes, dst)
}

func readDirect(st *featstore.Store, path string, o featplan.ExtentOptions, nodes []uint32, dst []byte) (featplan.Report, error) {
	rep, err := featplan.ReadRows(st.FeatureReader(), path, st.RowBytes(), nodes, dst, o)
	if err != nil {
		return rep, fmt.Errorf("featrows: %d rows read directly: %w", len(nodes), err)
	}
	return rep, nil
}

// Labels returns the labels of seeds (featstore.NoLabel: none) in dst,
// grown as needed (nil: a new slice); nil, nil when the store has no
// labels.
func (x *Executor) Labels(seeds []uint32, dst []int32) ([]int32, error) {
	if !x.fs.HasLabels() {
		return nil, nil
	}
	if cap(dst) < len(seeds) || dst == nil {
		dst = make([]int32, len(seeds))
	}
	dst = dst[:len(seeds)]
	if err := x.fs.ReadLabels(seeds, dst); err != nil {
		return nil, fmt.Errorf("featrows: %s: labels of %d seeds: %w", x.fs.Manifest().Labels.File, len(seeds), err)
	}
	return dst, nil
}

// Close closes every epoch's reads (their waiting minibatches return
// ErrClosed), then the feature file New opened; later calls of Epoch
// fail. The store stays open. Closing twice is a no-op.
func (x *Executor) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	var errs []error
	for e, ep := range x.epochs {
		errs = append(errs, ep.Close())
		delete(x.epochs, e)
	}
	if x.file != nil {
		if err := x.file.Close(); err != nil {
			errs = append(errs, fmt.Errorf("featrows: %s: %w", x.path, err))
		}
	}
	return errors.Join(errs...)
}
