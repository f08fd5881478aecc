package serve

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epochstats"
	"github.com/streamsampler/streamsampler/featplan"
	"github.com/streamsampler/streamsampler/featrows"
	"github.com/streamsampler/streamsampler/pipeline"
)

// EpochStats is an epoch's figures as the server delivered it: epoch_info's
// stats (the current epoch, so far) and previous_stats (the epoch before),
// and the lines the server logs (Config.Logf) for each epoch, which are
// its Lines. They are run's figures (epochstats.Report), with what only a
// server does: minibatches that fail, the other semantics, samples and
// splits.
type EpochStats struct {
	epochstats.Report
	// Complete: every minibatch of the epoch has been handed out (or has
	// failed); the figures will not change.
	Complete bool `json:"complete"`
	// Failed counts the minibatches claimed whose assembly or feature
	// reads failed (their requests got an error reply); Batches counts
	// the others.
	Failed int `json:"failed"`
	// OtherSemantics are the minibatches among Batches assembled with
	// the other semantics than the server's: the plan's rows were read
	// for them as for any (in Features.Reads) and their own read
	// directly besides (Rows, Reads, BytesRead, ReadS here; their
	// assembly is in the epoch's AssembleS, not here).
	OtherSemantics *epochstats.Direct `json:"other_semantics,omitempty"`
	// Samples are the epoch's sample replies, Splits each split's
	// minibatches served in the epoch (by split id): rows read directly.
	Samples *epochstats.Direct `json:"samples,omitempty"`
	Splits  []SplitStats       `json:"splits,omitempty"`
}

// SplitStats is a split's minibatches served in an epoch.
type SplitStats struct {
	Split uint32 `json:"split"`
	epochstats.Direct
}

// Lines renders st for a person: the epoch's lines (epochstats), its
// failures and its minibatches of the other semantics, then a line for
// its samples and for each split. The server logs the first part when the
// epoch's minibatches have all been handed out, the rest once the epoch
// is left (or the server shuts down), as evaluations come after.
func (st *EpochStats) Lines() []string { return append(st.trainingLines(), st.extraLines()...) }

func (st *EpochStats) trainingLines() []string {
	lines := st.Report.Lines()
	if st.Failed > 0 {
		lines = append(lines, fmt.Sprintf("  %d minibatches failed (assembly or feature reads: their requests were answered with an error)", st.Failed))
	}
	if o := st.OtherSemantics; o != nil {
		lines = append(lines, fmt.Sprintf("  of which %d with the other semantics, their own rows read directly besides the plan's: %d rows, %d reads of %d bytes in all; the reads alone: %.3g rows/s, %.2f GB/s delivered in %.3f s",
			o.Batches, o.Rows, o.Reads, o.BytesRead, o.RowsPerS, o.GBps, o.ReadS))
	}
	return lines
}

func (st *EpochStats) extraLines() []string {
	var lines []string
	if d := st.Samples; d != nil {
		lines = append(lines, d.Line(fmt.Sprintf("epoch %d, sample requests", st.Epoch)))
	}
	for _, sp := range st.Splits {
		lines = append(lines, sp.Line(fmt.Sprintf("epoch %d, split %d", st.Epoch, sp.Split)))
	}
	return lines
}

// timing is an operation's intervals: its assembly and its feature read
// (zero: none). The epochs' figures take their union (epochstats.Spans):
// overlapping work on many connections counts once.
type timing struct {
	asmStart, asmEnd, readStart, readEnd time.Time
}

// statsBook keeps the figures of the epochs the server delivers (one
// epochRecord each, as minibatches are claimed, assembled and read), and
// logs each epoch's lines once: the training minibatches' when the last
// one is handed out (or the epoch is left, or the server shuts down), the
// samples' and splits' once the epoch is left and nothing of it is in
// flight (or at shutdown). It keeps the current epoch's record and the
// one before (epoch_info's stats and previous_stats).
type statsBook struct {
	logf       func(format string, a ...any)
	first      uint32        // Config.FirstEpoch: epochs after it were sampled in the background
	features   *featureStage // nil without a feature store
	bytesKnown bool          // Config.SampleBytes is set
	graphBytes int64         // Config.GraphBytes

	mu      sync.Mutex
	current uint32 // the latest epoch seen current
	epochs  map[uint32]*epochRecord
	sampled map[uint32]sampling // the training epochs' sampling, by epoch
}

type sampling struct {
	d     time.Duration
	bytes int64
	// result is the epoch's Result in memory (epoch.Result.Bytes).
	result int64
}

// epochRecord is one epoch's figures as they accumulate.
type epochRecord struct {
	e          uint32
	numBatches int
	// claimed minibatches, and those done (handed out or failed).
	claimed, done, failed int
	first, last           time.Time // the first claim, the last done
	batches, seeds        int
	edges, labels         int64
	assemble, read        epochstats.Spans
	plan                  *pipeline.FeaturePlan
	rows                  *featrows.Epoch // the epoch's planned reads
	other                 *directRecord   // minibatches of the other semantics
	samples               *directRecord
	splits                map[uint32]*directRecord
	direct                int  // sample and split requests under way
	logged, final         bool // training lines logged; all logged
}

// directRecord is the figures of minibatches read outside the plan.
type directRecord struct {
	batches, seeds         int
	edges, labels          int64
	first, last            time.Time
	assemble, read         epochstats.Spans
	sample                 sampling
	rows, reads, bytesRead int64
}

func newStatsBook(logf func(string, ...any), first uint32, features *featureStage, bytesKnown bool) *statsBook {
	return &statsBook{logf: logf, first: first, features: features, bytesKnown: bytesKnown, current: first,
		epochs: map[uint32]*epochRecord{}, sampled: map[uint32]sampling{}}
}

func (b *statsBook) recordLocked(e uint32) *epochRecord {
	r := b.epochs[e]
	if r == nil {
		r = &epochRecord{e: e}
		b.epochs[e] = r
	}
	return r
}

// update calls f with epoch e's record under the book's lock, then logs
// what has become due.
func (b *statsBook) update(e uint32, f func(r *epochRecord, now time.Time)) {
	now := time.Now()
	b.mu.Lock()
	f(b.recordLocked(e), now)
	jobs := b.dueLocked(false)
	b.mu.Unlock()
	b.log(jobs)
}

// seen tells the book that epoch e is current: the epochs before it are
// left, and logged once nothing of them is in flight.
func (b *statsBook) seen(e uint32) {
	b.mu.Lock()
	if e <= b.current {
		b.mu.Unlock()
		return
	}
	b.current = e
	jobs := b.dueLocked(false)
	b.mu.Unlock()
	b.log(jobs)
}

// sampledEpoch records what sampling training epoch e took and read,
// and the memory its Result holds.
func (b *statsBook) sampledEpoch(e uint32, d time.Duration, bytes, result int64) {
	b.mu.Lock()
	b.sampled[e] = sampling{d: d, bytes: bytes, result: result}
	b.mu.Unlock()
}

// claimed records a minibatch claim (not End); rows are its epoch's
// planned reads (nil without features).
func (b *statsBook) claimed(c pipeline.Claim, rows *featrows.Epoch) {
	b.update(c.Epoch, func(r *epochRecord, now time.Time) {
		b.current = max(b.current, c.Epoch) // the claim's epoch is current
		if r.first.IsZero() {
			r.first = now
		}
		r.claimed++
		r.numBatches = c.Count
		if r.plan == nil {
			r.plan = c.Features()
		}
		if r.rows == nil {
			r.rows = rows
		}
	})
}

// batchDone records a claimed minibatch of epoch e handed out (blocks
// and its features) or failed (blocks nil), which took tm.
func (b *statsBook) batchDone(e uint32, blocks *epoch.Blocks, f *Features, tm timing) {
	b.update(e, func(r *epochRecord, now time.Time) {
		r.assemble.Add(tm.asmStart, tm.asmEnd)
		r.read.Add(tm.readStart, tm.readEnd)
		r.done++
		r.last = now
		if blocks == nil {
			r.failed++
			return
		}
		r.batches++
		r.seeds += len(blocks.Seeds)
		r.edges += int64(blocks.NumEdges())
		if f != nil {
			r.labels += int64(len(f.Y))
		}
	})
}

// otherRead records the direct read, over [start, end), of the rows of a
// minibatch of epoch e of the other semantics (blocks nil: it failed).
func (b *statsBook) otherRead(e uint32, blocks *epoch.Blocks, f *Features, rep featplan.Report, start, end time.Time) {
	b.update(e, func(r *epochRecord, now time.Time) {
		d := r.directRecord(directOther, 0)
		if d.first.IsZero() {
			d.first = start
		}
		d.read.Add(start, end)
		if blocks != nil {
			d.add(blocks, f, rep, now)
		}
	})
}

// The kinds of direct operations.
const (
	directSample = iota
	directSplit
	directOther
)

// directOp is a sample or split request under way, counted in the
// epoch current when it began.
type directOp struct {
	e     uint32
	kind  int
	split uint32
}

func (r *epochRecord) directRecord(kind int, split uint32) *directRecord {
	p := &r.samples
	switch kind {
	case directOther:
		p = &r.other
	case directSplit:
		if r.splits == nil {
			r.splits = map[uint32]*directRecord{}
		}
		d := r.splits[split]
		if d == nil {
			d = &directRecord{}
			r.splits[split] = d
		}
		return d
	}
	if *p == nil {
		*p = &directRecord{}
	}
	return *p
}

// directBegin starts a sample or split request: it counts in the
// current epoch, which is not logged as left until it is done.
func (b *statsBook) directBegin(kind int, split uint32) directOp {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	op := directOp{e: b.current, kind: kind, split: split}
	r := b.recordLocked(op.e)
	r.direct++
	if d := r.directRecord(kind, split); d.first.IsZero() {
		d.first = now
	}
	return op
}

// directSampled records a split's sampling of the epoch, for op.
func (b *statsBook) directSampled(op directOp, d time.Duration, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec := b.recordLocked(op.e).directRecord(op.kind, op.split)
	rec.sample.d += d
	rec.sample.bytes += bytes
}

// directDone ends op, which took tm: blocks (nil: it failed) with its
// features, read as rep reports.
func (b *statsBook) directDone(op directOp, blocks *epoch.Blocks, f *Features, rep featplan.Report, tm timing) {
	b.update(op.e, func(r *epochRecord, now time.Time) {
		r.direct--
		d := r.directRecord(op.kind, op.split)
		d.assemble.Add(tm.asmStart, tm.asmEnd)
		d.read.Add(tm.readStart, tm.readEnd)
		if blocks != nil {
			d.add(blocks, f, rep, now)
		}
	})
}

func (d *directRecord) add(blocks *epoch.Blocks, f *Features, rep featplan.Report, now time.Time) {
	d.last = now
	d.batches++
	d.seeds += len(blocks.Seeds)
	d.edges += int64(blocks.NumEdges())
	if f != nil {
		d.labels += int64(len(f.Y))
	}
	d.rows += rep.RowsNeeded
	d.reads += rep.Reads
	d.bytesRead += rep.BytesRead
}

// A logJob is lines of an epoch to log; their features' reads are taken
// from rows outside the book's lock (featrows waits for a read under way).
type logJob struct {
	st             EpochStats
	rows           *featrows.Epoch
	training, rest bool
}

// dueLocked marks and returns what has become due to be logged: an
// epoch's training lines once its minibatches are all done, or once it is
// left with none in flight; the rest once it is left with nothing in
// flight. With all (shutdown) every record's lines not yet logged are.
// Records two epochs old, all logged, are dropped.
func (b *statsBook) dueLocked(all bool) []logJob {
	var jobs []logJob
	es := make([]uint32, 0, len(b.epochs))
	for e := range b.epochs {
		es = append(es, e)
	}
	slices.Sort(es)
	for _, e := range es {
		r := b.epochs[e]
		left := e < b.current
		quiet := r.done == r.claimed
		var j logJob
		if !r.logged && (all || r.numBatches > 0 && r.done == r.numBatches || left && quiet) {
			r.logged, j.training = true, true
		}
		if !r.final && (all || left && quiet && r.direct == 0) {
			r.final, j.rest = true, true
		}
		if j.training || j.rest {
			j.st, j.rows = b.statsLocked(r)
			jobs = append(jobs, j)
		}
		if r.final && e+1 < b.current {
			delete(b.epochs, e)
		}
	}
	for e := range b.sampled {
		if e+1 < b.current && b.epochs[e] == nil {
			delete(b.sampled, e)
		}
	}
	return jobs
}

// log logs jobs' lines.
func (b *statsBook) log(jobs []logJob) {
	if b.logf == nil {
		return
	}
	for _, j := range jobs {
		st := finishStats(j.st, j.rows)
		var lines []string
		if j.training {
			lines = st.trainingLines()
		}
		if j.rest {
			lines = append(lines, st.extraLines()...)
		}
		for _, l := range lines {
			b.logf("%s", l)
		}
	}
}

// flush logs every line not yet logged (the server shuts down).
func (b *statsBook) flush() {
	b.mu.Lock()
	jobs := b.dueLocked(true)
	b.mu.Unlock()
	b.log(jobs)
}

// snapshot returns epoch e's figures so far (numBatches: its minibatch
// count, for an epoch nothing was claimed of yet) and the epoch before's,
// nil when it has none.
func (b *statsBook) snapshot(e uint32, numBatches int) (cur, prev *EpochStats) {
	b.mu.Lock()
	r := b.epochs[e]
	if r == nil {
		r = &epochRecord{e: e}
	}
	if r.numBatches == 0 {
		r.numBatches = numBatches
	}
	st, rows := b.statsLocked(r)
	var pst EpochStats
	var prows *featrows.Epoch
	var pr *epochRecord
	if e > 0 {
		pr = b.epochs[e-1]
	}
	if pr != nil {
		pst, prows = b.statsLocked(pr)
	}
	b.mu.Unlock()
	st = finishStats(st, rows)
	cur = &st
	if pr != nil {
		pst = finishStats(pst, prows)
		prev = &pst
	}
	return cur, prev
}

// statsLocked is r's figures, but for the plan's reads (rows, to
// be taken outside the lock: finishStats).
func (b *statsBook) statsLocked(r *epochRecord) (EpochStats, *featrows.Epoch) {
	st := EpochStats{
		Report: epochstats.Report{Epoch: r.e, NumBatches: r.numBatches, Batches: r.batches, Seeds: r.seeds, Edges: r.edges,
			AssembleS: r.assemble.Seconds(), Overlapped: r.e > b.first},
		Complete: r.numBatches > 0 && r.done == r.numBatches,
		Failed:   r.failed,
	}
	if !r.first.IsZero() && !r.last.IsZero() {
		st.WallS = r.last.Sub(r.first).Seconds()
	}
	if sm, ok := b.sampled[r.e]; ok {
		st.SampleS, st.BytesRead, st.BytesKnown, st.ResultBytes = sm.d.Seconds(), sm.bytes, b.bytesKnown, sm.result
		if b.bytesKnown {
			st.GraphBytes = b.graphBytes
		}
	}
	var rowBytes int64
	if b.features != nil {
		rowBytes = b.features.fs.RowBytes()
		f := &epochstats.Features{ReadS: r.read.Seconds(), Labels: r.labels, Reads: featplan.Report{RowBytes: rowBytes}}
		if r.plan != nil {
			f.PlanS = r.plan.Seconds
			if r.plan.Order != nil {
				rep := r.plan.Reorder
				f.Reorder = &rep
			}
		}
		st.Features = f
	}
	st.OtherSemantics = r.other.stats(rowBytes, b.bytesKnown)
	st.Samples = r.samples.stats(rowBytes, b.bytesKnown)
	ids := make([]uint32, 0, len(r.splits))
	for id := range r.splits {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if d := r.splits[id].stats(rowBytes, b.bytesKnown); d != nil {
			st.Splits = append(st.Splits, SplitStats{Split: id, Direct: *d})
		}
	}
	return st, r.rows
}

// stats is d's figures (nil: none, or no minibatch delivered).
func (d *directRecord) stats(rowBytes int64, bytesKnown bool) *epochstats.Direct {
	if d == nil || d.batches == 0 {
		return nil
	}
	out := &epochstats.Direct{Batches: d.batches, Seeds: d.seeds, Edges: d.edges, WallS: d.last.Sub(d.first).Seconds(),
		AssembleS: d.assemble.Seconds(), SampleS: d.sample.d.Seconds(), SampleBytes: d.sample.bytes, BytesKnown: bytesKnown,
		RowBytes: rowBytes, Rows: d.rows, Reads: d.reads, BytesRead: d.bytesRead, ReadS: d.read.Seconds(), Labels: d.labels}
	out.Finish()
	return out
}

// finishStats adds the plan's reads (rows: featrows waits for a read
// under way) and computes the rates.
func finishStats(st EpochStats, rows *featrows.Epoch) EpochStats {
	if st.Features != nil && rows != nil {
		st.Features.Reads = rows.Report()
		st.Features.Direct = rows.Direct()
	}
	st.Finish()
	return st
}
