package featplan

import (
	"fmt"
	"slices"
)

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
	// OptimumBytes is what the optimal cache reads at page granularity:
	// the Align-sized pages holding the rows Belady's MIN reads with the
	// same cache, counted per minibatch (a page two rows of one minibatch
	// share is read once, a page two minibatches need twice). VsOptimum =
	// BytesRead/OptimumBytes; the extents' holes (ExtentOptions.HoleBudget)
	// are what lifts it above 1, a preloaded plan's one sweep what can take
	// it below.
	OptimumBytes int64   `json:"optimum_bytes"`
	VsOptimum    float64 `json:"vs_optimum"`
	// PackedRows are the rows of RowsFromDisk served from a packed copy
	// of the misses (PackTo), PackBytes the copy's bytes (written once,
	// read back once); Reads and BytesRead are then the sweep over the
	// feature file that made it. Not in Plan.Report, which counts the
	// random reads.
	PackedRows int64 `json:"packed_rows,omitempty"`
	PackBytes  int64 `json:"pack_bytes,omitempty"`
	// PackS is the time the sweep took, before the first minibatch.
	PackS float64 `json:"pack_s,omitempty"`
	// PackError says why a plan whose misses were to be packed
	// (Plan.Packed) was read at random instead (no O_DIRECT or no room
	// where the copy goes).
	PackError string `json:"pack_error,omitempty"`
}

func (r *Report) finish() {
	r.DiskRowBytes = (r.RowsFromDisk + r.PreloadRows) * r.RowBytes
	r.ReadAmplification = 0
	if r.DiskRowBytes > 0 {
		r.ReadAmplification = float64(r.BytesRead) / float64(r.DiskRowBytes)
	}
	r.VsOptimum = 0
	if r.OptimumBytes > 0 {
		r.VsOptimum = float64(r.BytesRead) / float64(r.OptimumBytes)
	}
}

// optimumBytes is Report.OptimumBytes for rows of rowBytes bytes. The rows
// MIN reads are the plan's own misses for a MIN plan, and for a preloaded
// plan (which MIN would serve with the same rows, each at its first use)
// every row's first access. Pages are marked in a bitmap and cleared after
// each minibatch.
func (p *Plan) optimumBytes(rowBytes int64) int64 {
	if p.Forgotten() {
		if rowBytes != p.optimumRowBytes {
			return 0 // unknown: the node sets are gone
		}
		return p.optimum
	}
	pages := (int64(p.NumNodes)*rowBytes + Align - 1) / Align
	mark := make([]uint64, (pages+63)/64)
	var first []uint64 // rows seen, for a preloaded plan
	if p.preload != nil {
		first = make([]uint64, (int64(p.NumNodes)+63)/64)
	}
	var touched []int64
	var n int64
	for b := range p.NumBatches() {
		bp := p.Batch(b)
		for i, v := range bp.NID {
			if first != nil {
				if first[v>>6]&(1<<(v&63)) != 0 {
					continue
				}
				first[v>>6] |= 1 << (v & 63)
			} else if _, hit := bp.Hit(i); hit {
				continue
			}
			start := int64(v) * rowBytes
			for pg := start / Align; pg <= (start+rowBytes-1)/Align; pg++ {
				if mark[pg>>6]&(1<<(pg&63)) == 0 {
					mark[pg>>6] |= 1 << (pg & 63)
					touched = append(touched, pg)
				}
			}
		}
		n += int64(len(touched))
		for _, pg := range touched {
			mark[pg>>6] = 0
		}
		touched = touched[:0]
	}
	return n * Align
}

// Report computes what executing p with rows of rowBytes bytes and extents
// shaped by o reads, without reading: the figures a Reader reports after the
// epoch.
func (p *Plan) Report(rowBytes int64, o ExtentOptions) (Report, error) {
	if p.Forgotten() {
		return Report{}, fmt.Errorf("%w: Report of a plan whose node sets are forgotten", ErrInput)
	}
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
	rep.OptimumBytes = p.optimumBytes(rowBytes)
	rep.finish()
	return rep, nil
}
