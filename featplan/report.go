package featplan

import "slices"

// Report is what an epoch's feature reads cost under a plan. Rows are counted
// per access (a row two minibatches need counts twice in RowsNeeded).
type Report struct {
	Batches   int   `json:"batches"`
	RowBytes  int64 `json:"row_bytes"`
	CacheRows int   `json:"cache_rows"`
	// RowsNeeded = RowsFromCache + RowsFromDisk: the rows of every n_id.
	RowsNeeded    int64 `json:"rows_needed"`
	RowsFromCache int64 `json:"rows_from_cache"`
	RowsFromDisk  int64 `json:"rows_from_disk"`
	// Reads is the number of requests (extents), BytesRead their bytes
	// (aligned, holes included).
	Reads     int64 `json:"reads"`
	BytesRead int64 `json:"bytes_read"`
	// DiskRowBytes = RowsFromDisk*RowBytes; ReadAmplification =
	// BytesRead/DiskRowBytes (0 when nothing is read).
	DiskRowBytes      int64   `json:"disk_row_bytes"`
	ReadAmplification float64 `json:"read_amplification"`
	// PreloadRows are the rows a preloaded plan reads before the first
	// minibatch (NewPreloadedPlan); every access is then a cache hit.
	PreloadRows int64 `json:"preload_rows"`
	// DistinctRows are the rows the epoch needs at least once, and
	// CompulsoryBytes = DistinctRows*RowBytes: what any plan starting with an
	// empty cache must read.
	DistinctRows    int64 `json:"distinct_rows"`
	CompulsoryBytes int64 `json:"compulsory_bytes"`
}

func (r *Report) finish() {
	r.DiskRowBytes = (r.RowsFromDisk + r.PreloadRows) * r.RowBytes
	r.ReadAmplification = 0
	if r.DiskRowBytes > 0 {
		r.ReadAmplification = float64(r.BytesRead) / float64(r.DiskRowBytes)
	}
}

// Report computes what executing p with rows of rowBytes bytes and extents
// shaped by o reads, without reading: the figures a Reader reports after the
// epoch.
func (p *Plan) Report(rowBytes int64, o ExtentOptions) (Report, error) {
	rep := Report{Batches: p.NumBatches(), RowBytes: rowBytes, CacheRows: p.CacheRows,
		DistinctRows: p.Distinct, CompulsoryBytes: p.Distinct * rowBytes}
	var rows []uint32
	var ext []Extent
	if len(p.preload) > 0 {
		var err error
		if ext, err = Extents(ext[:0], p.preload, rowBytes, o); err != nil {
			return rep, err
		}
		for _, e := range ext {
			rep.BytesRead += e.Length
		}
		rep.Reads += int64(len(ext))
		rep.PreloadRows = int64(len(p.preload))
	}
	for b := range p.NumBatches() {
		bp := p.Batch(b)
		rows = rows[:0]
		for i, v := range bp.NID {
			if _, hit := bp.Hit(i); !hit {
				rows = append(rows, v)
			}
		}
		slices.Sort(rows)
		var err error
		ext, err = Extents(ext[:0], rows, rowBytes, o)
		if err != nil {
			return rep, err
		}
		for _, e := range ext {
			rep.BytesRead += e.Length
		}
		rep.Reads += int64(len(ext))
		rep.RowsNeeded += int64(bp.Len())
		rep.RowsFromDisk += int64(len(rows))
	}
	rep.RowsFromCache = rep.RowsNeeded - rep.RowsFromDisk
	rep.finish()
	return rep, nil
}
