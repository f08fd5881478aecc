package layerwise

import (
	"fmt"
	"io"
	"os"

	"github.com/streamsampler/streamsampler/featplan"
	"github.com/streamsampler/streamsampler/featstore"
)

// windows reads the rows of windows of minibatches, each under a plan of
// its own (featplan.NewPreloadedPlan with the cache's rows) executed by a
// featplan.Reader over the feature file.
type windows struct {
	st        *featstore.Store
	r         io.ReaderAt
	file      *os.File
	path      string
	rb        int64
	cacheRows int
	opts      featplan.ExtentOptions
	direct    bool
	rep       featplan.Report // the windows' reads, summed
}

func newWindows(st *featstore.Store, cacheBytes int64) (*windows, error) {
	r, f, path, direct, err := openFeatureFile(st)
	if err != nil {
		return nil, err
	}
	rb := st.RowBytes()
	opts := featplan.DefaultExtentOptions()
	opts.Check = st.FeatureChecksums().Check
	return &windows{st: st, r: r, file: f, path: path, rb: rb, cacheRows: int(max(1, cacheBytes/rb)), opts: opts, direct: direct}, nil
}

// read fills dst[i] with the rows of nids[i], for every minibatch of the
// window, in order.
func (w *windows) read(nids [][]uint32, dst [][]byte) error {
	var rows int
	for _, n := range nids {
		rows += len(n)
	}
	// No larger cache than the window's rows (the Reader allocates it).
	plan, err := featplan.NewPreloadedPlan(nids, w.st.NumNodes(), max(1, min(w.cacheRows, rows)))
	if err != nil {
		return fmt.Errorf("layerwise: planning %d minibatches: %w", len(nids), err)
	}
	rd, err := featplan.NewReader(w.r, w.path, w.rb, plan, w.opts)
	if err != nil {
		return fmt.Errorf("layerwise: %w", err)
	}
	defer rd.Close()
	for i := range nids {
		if _, err := rd.Next(dst[i]); err != nil {
			return fmt.Errorf("layerwise: %w", err)
		}
	}
	rep := rd.Report()
	w.rep.Batches += rep.Batches
	w.rep.RowsNeeded += rep.RowsNeeded
	w.rep.RowsFromCache += rep.RowsFromCache
	w.rep.RowsFromDisk += rep.RowsFromDisk
	w.rep.Reads += rep.Reads
	w.rep.BytesRead += rep.BytesRead
	w.rep.PreloadRows += rep.PreloadRows
	return nil
}

func (w *windows) close() error {
	if w.file != nil {
		return w.file.Close()
	}
	return nil
}
