package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/fullscan"
	"github.com/streamsampler/streamsampler/internal/memavail"
	"github.com/streamsampler/streamsampler/layerwise"
)

// MaxScans bounds the scans open at once over all connections: each holds
// two chunk buffers and, where its rows are resident, its feature file.
const MaxScans = 4

// MaxScansPerConn bounds one connection's open scans.
const MaxScansPerConn = 2

// scanAhead is how far past the next minibatch not yet asked for a
// scan_batch may ask: the pass is sequential, and the minibatches between
// are held until they are asked for.
const scanAhead = 64

// ScanInfo is the JSON object a scan request is answered with.
type ScanInfo struct {
	Scan       uint32 `json:"scan"`
	NumNodes   uint32 `json:"num_nodes"`
	NumEdges   uint64 `json:"num_edges"`
	BatchSize  int    `json:"batch_size"`
	NumBatches int    `json:"num_batches"`
	// Features describes the rows every minibatch carries (absent without
	// ScanRows); Resident says they are read by one sweep into memory.
	Features *FeatureInfo `json:"features,omitempty"`
	Resident bool         `json:"resident"`
}

// connScans are a connection's open scans.
type connScans struct {
	mu   sync.Mutex
	byID map[uint32]*scanState
	next uint32
}

// scanState is one open scan: its pass, and the minibatches made but not
// asked for yet.
type scanState struct {
	info   ScanInfo
	pass   *layerwise.Pass
	store  *featstore.Store // the rows' store; nil without rows
	own    bool             // store was opened for this scan
	dtype  uint8
	sem    epoch.Semantics
	labels bool

	turn     chan struct{} // held while the pass is advanced (a lock that ctx can abandon)
	produced int           // minibatches taken from the pass
	held     map[int]*layerwise.Batch

	// users counts the scan_batch requests using the scan; a scan
	// dropped (closed) while some are is finished by the last of them.
	mu     sync.Mutex
	users  int
	closed bool
	once   sync.Once
}

// openScan opens the scan r asks for on connection c.
func (c *conn) openScan(r ScanRequest) (*scanState, error) {
	s := c.s
	if s.cfg.Graph == "" {
		return nil, newRequestError(CodeBadRequest, "scan: this server was not given its graph directory")
	}
	if s.scanCount.Add(1) > MaxScans {
		s.scanCount.Add(-1)
		return nil, newRequestError(CodeOverBudget, "scan: %d scans are open on this server, at most %d: drop one (drop_scan) first", MaxScans, MaxScans)
	}
	ok := false
	defer func() {
		if !ok {
			s.scanCount.Add(-1)
		}
	}()
	c.scans.mu.Lock()
	n := len(c.scans.byID)
	c.scans.mu.Unlock()
	if n >= MaxScansPerConn {
		return nil, newRequestError(CodeOverBudget, "scan: this connection has %d scans open, at most %d: drop one (drop_scan) first", n, MaxScansPerConn)
	}
	sc := &scanState{sem: s.semantics(r.Semantics), turn: make(chan struct{}, 1), held: map[int]*layerwise.Batch{}}
	o := layerwise.Options{Scan: fullscan.Options{BatchSize: int(r.BatchSize), EdgeIDs: r.Flags&ScanEdgeIDs != 0}}
	if r.Flags&ScanRows != 0 {
		var err error
		switch {
		case r.Store == "" && s.cfg.Features != nil:
			sc.store = s.cfg.Features
		case r.Store == "":
			sc.store, err = featstore.Open(s.cfg.Graph)
			sc.own = true
		case !filepath.IsAbs(r.Store):
			return nil, newRequestError(CodeBadRequest, "scan: store %q: want an absolute path on the server's machine", r.Store)
		default:
			sc.store, err = featstore.Open(r.Store)
			sc.own = true
		}
		if err != nil {
			return nil, newRequestError(CodeBadRequest, "scan: %v", err)
		}
		dt, known := featureDTypes[sc.store.DType()]
		if !known {
			sc.closeStore()
			return nil, newRequestError(CodeBadRequest, "scan: feature dtype %q", sc.store.DType())
		}
		sc.dtype, sc.labels = dt, sc.store.HasLabels()
		o.Features = sc.store
		// Resident where the rows fit half the memory the process may
		// use now (they are read once, sequentially, and every
		// minibatch's rows copied from there); else planned windows.
		o.ResidentBytes = memavail.Available() / 2
	}
	p, err := layerwise.Open(s.cfg.Graph, o)
	if err != nil {
		sc.closeStore()
		if errors.Is(err, featstore.ErrGraphMismatch) || errors.Is(err, fullscan.ErrOptions) {
			return nil, newRequestError(CodeBadRequest, "scan: %v", err)
		}
		return nil, err
	}
	sc.pass = p
	sc.info = ScanInfo{NumNodes: p.NumNodes(), NumEdges: p.NumEdges(), BatchSize: int(r.BatchSize), NumBatches: p.NumBatches(), Resident: p.Resident()}
	if sc.store != nil {
		sc.info.Features = &FeatureInfo{Dim: sc.store.Dim(), DType: string(sc.store.DType()), RowBytes: sc.store.RowBytes(), Labels: sc.labels}
	}
	c.scans.mu.Lock()
	if c.scans.byID == nil {
		c.scans.byID = map[uint32]*scanState{}
	}
	c.scans.next++
	sc.info.Scan = c.scans.next
	c.scans.byID[sc.info.Scan] = sc
	c.scans.mu.Unlock()
	ok = true
	return sc, nil
}

// scanByID finds an open scan of the connection.
func (c *conn) scanByID(id uint32) (*scanState, error) {
	c.scans.mu.Lock()
	defer c.scans.mu.Unlock()
	sc := c.scans.byID[id]
	if sc == nil {
		return nil, newRequestError(CodeUnknownScan, "scan %d: no such scan on this connection", id)
	}
	return sc, nil
}

// dropScan forgets scan id and closes it (once the requests using it are
// done).
func (c *conn) dropScan(id uint32) error {
	c.scans.mu.Lock()
	sc := c.scans.byID[id]
	delete(c.scans.byID, id)
	c.scans.mu.Unlock()
	if sc == nil {
		return newRequestError(CodeUnknownScan, "scan %d: no such scan on this connection", id)
	}
	sc.close(c.s)
	return nil
}

// closeScans closes every scan of a connection that is going.
func (c *conn) closeScans() {
	c.scans.mu.Lock()
	all := c.scans.byID
	c.scans.byID = nil
	c.scans.mu.Unlock()
	for _, sc := range all {
		sc.close(c.s)
	}
}

// close closes the scan: now, or when the last request using it is done.
func (sc *scanState) close(s *Server) {
	sc.mu.Lock()
	sc.closed = true
	idle := sc.users == 0
	sc.mu.Unlock()
	if idle {
		sc.finish(s)
	}
}

// use registers a request using the scan; false once it is closed.
func (sc *scanState) use() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed {
		return false
	}
	sc.users++
	return true
}

// done ends a request's use of the scan, finishing a closed one.
func (sc *scanState) done(s *Server) {
	sc.mu.Lock()
	sc.users--
	last := sc.closed && sc.users == 0
	sc.mu.Unlock()
	if last {
		sc.finish(s)
	}
}

// finish closes the pass and the scan's own store, once: no request
// uses them any more.
func (sc *scanState) finish(s *Server) {
	sc.once.Do(func() {
		sc.pass.Close()
		sc.closeStore()
		s.scanCount.Add(-1)
	})
}

func (sc *scanState) closeStore() {
	if sc.own && sc.store != nil {
		sc.store.Close()
	}
}

// take returns minibatch index of the scan (end: at or past the end), taking
// the minibatches before it from the pass and holding them until they are
// asked for. Each minibatch is handed out once. The caller uses the scan
// (use, done).
func (sc *scanState) take(ctx context.Context, index uint32) (b *layerwise.Batch, end bool, err error) {
	if int64(index) >= int64(sc.info.NumBatches) {
		return nil, true, nil // past the last: a pipelining client asks beyond it
	}
	select {
	case sc.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	defer func() { <-sc.turn }()
	i := int(index)
	if hb, ok := sc.held[i]; ok {
		delete(sc.held, i)
		return hb, false, nil
	}
	if i < sc.produced {
		return nil, false, newRequestError(CodeBadRequest, "scan %d: minibatch %d was handed out already (each once)", sc.info.Scan, index)
	}
	if i >= sc.produced+scanAhead {
		return nil, false, newRequestError(CodeBadRequest, "scan %d: minibatch %d is more than %d past the next one not handed out (%d): ask in order", sc.info.Scan, index, scanAhead, sc.produced)
	}
	for sc.produced <= i {
		nb, err := sc.pass.Next(ctx)
		if err == io.EOF {
			err = fmt.Errorf("scan %d: the pass ended after %d minibatches, %d expected", sc.info.Scan, sc.produced, sc.info.NumBatches)
		}
		if err != nil {
			return nil, false, err
		}
		sc.produced++
		if nb.Index == i {
			b = nb
		} else {
			sc.held[nb.Index] = nb
		}
	}
	return b, false, nil
}

// scan answers OpScan.
func (c *conn) scan(f Frame) reply {
	r, err := DecodeScanRequest(f.Payload)
	if err != nil {
		return plain(errorFrame(f.Op, f.ID, CodeBadRequest, err.Error()))
	}
	sc, err := c.openScan(r)
	if err != nil {
		return plain(requestErrorFrame(f.Op, f.ID, err))
	}
	return plain(jsonFrame(f.Op, f.ID, sc.info))
}

// scanBatch answers OpScanBatch: the minibatch as one hop of blocks
// (dst: the seeds; src: n_id), with its rows and its seeds' labels where
// the scan carries them.
func (c *conn) scanBatch(f Frame) reply {
	id, index, err := DecodeScanBatchRequest(f.Payload)
	if err != nil {
		return plain(errorFrame(f.Op, f.ID, CodeBadRequest, err.Error()))
	}
	sc, err := c.scanByID(id)
	if err == nil && !sc.use() {
		err = newRequestError(CodeUnknownScan, "scan %d: dropped", id)
	}
	if err != nil {
		return plain(requestErrorFrame(f.Op, f.ID, err))
	}
	defer sc.done(c.s)
	b, end, err := sc.take(c.ctx, index)
	switch {
	case err != nil:
		return plain(requestErrorFrame(f.Op, f.ID, err))
	case end:
		return plain(net.Buffers{AppendFrame(nil, f.Op, StatusEnd, f.ID, AppendEpochRequest(nil, id))})
	}
	seeds := b.Seeds()
	blocks := &epoch.Blocks{Semantics: sc.sem, Seeds: seeds, Hops: []epoch.Hop{{
		Dst: seeds, Src: b.NID, EdgeSrc: b.EdgeSrc, EdgeDst: b.EdgeDst, EdgeIDs: b.EdgeIDs,
	}}}
	if sc.store == nil {
		return c.batchReply(f, blocks, int(index), nil, nil)
	}
	x, lease, err := rowBuffer(context.Background(), int64(len(b.NID))*sc.store.RowBytes(), c.rows, false)
	if err != nil {
		return plain(requestErrorFrame(f.Op, f.ID, err))
	}
	if err := b.Rows(c.ctx, x); err != nil {
		lease.abandon()
		return plain(requestErrorFrame(f.Op, f.ID, err))
	}
	feat := &Features{X: x, Dim: sc.store.Dim(), DType: sc.dtype, lease: lease}
	if sc.labels {
		feat.Y = make([]int32, len(seeds))
		if err := sc.store.ReadLabels(seeds, feat.Y); err != nil {
			lease.abandon()
			return plain(requestErrorFrame(f.Op, f.ID, err))
		}
	}
	return c.batchReply(f, blocks, int(index), feat, nil)
}

// dropScanReply answers OpDropScan.
func (c *conn) dropScanReply(f Frame) reply {
	id, err := DecodeDropScanRequest(f.Payload)
	if err != nil {
		return plain(errorFrame(f.Op, f.ID, CodeBadRequest, err.Error()))
	}
	if err := c.dropScan(id); err != nil {
		return plain(requestErrorFrame(f.Op, f.ID, err))
	}
	return plain(net.Buffers{AppendFrame(nil, f.Op, StatusOK, f.ID, nil)})
}
