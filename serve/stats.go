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

// busy is the wall time during which at least one of several concurrent
// operations was under way (the assembly of minibatches on many
// connections, their feature reads): the union of their intervals, so
// that overlapping work counts once. Used under statsBook.mu.
type busy struct {
	active int
	since  time.Time
	total  time.Duration
}

func (b *busy) start(now time.Time) {
	if b.active == 0 {
		b.since = now
	}
	b.active++
}

func (b *busy) stop(now time.Time) {
	b.active--
	if b.active == 0 {
		b.total += now.Sub(b.since)
	}
}

func (b *busy) seconds(now time.Time) float64 {
	t := b.total
	if b.active > 0 {
		t += now.Sub(b.since)
	}
	return t.Seconds()
}

// statsBook keeps the figures of the epochs the server delivers (one
// epochRecord each, as minibatches are claimed, assembled and read), and
// logs each epoch's lines once: the training minibatches' when the last
// one is handed out (or the epoch is left, or the server shuts down), the
// samples' and splits' once the epoch is left and nothing of it is in
// flight (or at shutdown). It keeps the current epoch's record and the
// one before (epoch_info's stats and previous_stats).
type statsBook struct {
	logf     func(format string, a ...any)
	first    uint32        // Config.FirstEpoch: epochs after it were sampled in the background
	features *featureStage // nil without a feature store

	mu      sync.Mutex
	current uint32 // the latest epoch seen current
	epochs  map[uint32]*epochRecord
	sampled map[uint32]sampling // the training epochs' sampling, by epoch
}

type sampling struct {
	d     time.Duration
	bytes int64
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
	assemble, read        busy
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
	assemble, read         busy
	sample                 sampling
	rows, reads, bytesRead int64
}

func newStatsBook(logf func(string, ...any), first uint32, features *featureStage) *statsBook {
	return &statsBook{logf: logf, first: first, features: features, current: first,
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
	jobs := b.dueLocked(now, false)
	b.mu.Unlock()
	b.log(jobs)
}

// touch is update for what cannot make anything due (an operation
// starting).
func (b *statsBook) touch(e uint32, f func(r *epochRecord, now time.Time)) {
	now := time.Now()
	b.mu.Lock()
	f(b.recordLocked(e), now)
	b.mu.Unlock()
}

// seen tells the book that epoch e is current: the epochs before it are
// left, and logged once nothing of them is in flight.
func (b *statsBook) seen(e uint32) {
	now := time.Now()
	b.mu.Lock()
	if e <= b.current {
		b.mu.Unlock()
		return
	}
	b.current = e
	jobs := b.dueLocked(now, false)
	b.mu.Unlock()
	b.log(jobs)
}

// sampledEpoch records what sampling training epoch e took and read.
func (b *statsBook) sampledEpoch(e uint32, d time.Duration, bytes int64) {
	b.mu.Lock()
	b.sampled[e] = sampling{d: d, bytes: bytes}
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
// and its features) or failed (blocks nil). reading says its feature
// read was timed (started by the caller's update).
func (b *statsBook) batchDone(e uint32, blocks *epoch.Blocks, f *Features, reading bool) {
	b.update(e, func(r *epochRecord, now time.Time) {
		if reading {
			r.read.stop(now)
		}
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

// directBegin starts a sample or split request: its assembly is timed.
func (b *statsBook) directBegin(kind int, split uint32) directOp {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	op := directOp{e: b.current, kind: kind, split: split}
	r := b.recordLocked(op.e)
	r.direct++
	d := r.directRecord(kind, split)
	if d.first.IsZero() {
		d.first = now
	}
	d.assemble.start(now)
	return op
}

// directUpdate calls f with op's record (touch: op is still under way).
func (b *statsBook) directUpdate(op directOp, f func(d *directRecord, now time.Time)) {
	b.touch(op.e, func(r *epochRecord, now time.Time) { f(r.directRecord(op.kind, op.split), now) })
}

// directAssembled ends op's assembly and, when reading, starts timing its
// feature read.
func (b *statsBook) directAssembled(op directOp, reading bool) {
	b.directUpdate(op, func(d *directRecord, now time.Time) {
		d.assemble.stop(now)
		if reading {
			d.read.start(now)
		}
	})
}

// directDone ends op: blocks (nil: it failed) with its features, read as
// rep reports (when reading).
func (b *statsBook) directDone(op directOp, blocks *epoch.Blocks, f *Features, rep featplan.Report, reading bool) {
	b.update(op.e, func(r *epochRecord, now time.Time) {
		r.direct--
		d := r.directRecord(op.kind, op.split)
		if reading {
			d.read.stop(now)
		}
		if blocks == nil {
			return
		}
		d.add(blocks, f, rep, now)
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
func (b *statsBook) dueLocked(now time.Time, all bool) []logJob {
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
			j.st, j.rows = b.statsLocked(r, now)
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
	jobs := b.dueLocked(time.Now(), true)
	b.mu.Unlock()
	b.log(jobs)
}

// snapshot returns epoch e's figures so far (numBatches: its minibatch
// count, for an epoch nothing was claimed of yet) and the epoch before's,
// nil when it has none.
func (b *statsBook) snapshot(e uint32, numBatches int) (cur, prev *EpochStats) {
	now := time.Now()
	b.mu.Lock()
	r := b.epochs[e]
	if r == nil {
		r = &epochRecord{e: e}
	}
	if r.numBatches == 0 {
		r.numBatches = numBatches
	}
	st, rows := b.statsLocked(r, now)
	var pst EpochStats
	var prows *featrows.Epoch
	var pr *epochRecord
	if e > 0 {
		pr = b.epochs[e-1]
	}
	if pr != nil {
		pst, prows = b.statsLocked(pr, now)
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

// statsLocked is r's figures at now, but for the plan's reads (rows, to
// be taken outside the lock: finishStats).
func (b *statsBook) statsLocked(r *epochRecord, now time.Time) (EpochStats, *featrows.Epoch) {
	st := EpochStats{
		Report: epochstats.Report{Epoch: r.e, NumBatches: r.numBatches, Batches: r.batches, Seeds: r.seeds, Edges: r.edges,
			AssembleS: r.assemble.seconds(now), Overlapped: r.e > b.first},
		Complete: r.numBatches > 0 && r.done == r.numBatches,
		Failed:   r.failed,
	}
	if !r.first.IsZero() && !r.last.IsZero() {
		st.WallS = r.last.Sub(r.first).Seconds()
	}
	if sm, ok := b.sampled[r.e]; ok {
		st.SampleS, st.BytesRead = sm.d.Seconds(), sm.bytes
	}
	var rowBytes int64
	if b.features != nil {
		rowBytes = b.features.fs.RowBytes()
		f := &epochstats.Features{ReadS: r.read.seconds(now), Labels: r.labels, Reads: featplan.Report{RowBytes: rowBytes}}
		if r.plan != nil {
			f.PlanS = r.plan.Seconds
			if r.plan.Order != nil {
				rep := r.plan.Reorder
				f.Reorder = &rep
			}
		}
		st.Features = f
	}
	st.OtherSemantics = r.other.stats(rowBytes, now)
	st.Samples = r.samples.stats(rowBytes, now)
	ids := make([]uint32, 0, len(r.splits))
	for id := range r.splits {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if d := r.splits[id].stats(rowBytes, now); d != nil {
			st.Splits = append(st.Splits, SplitStats{Split: id, Direct: *d})
		}
	}
	return st, r.rows
}

// stats is d's figures (nil: none, or no minibatch delivered).
func (d *directRecord) stats(rowBytes int64, now time.Time) *epochstats.Direct {
	if d == nil || d.batches == 0 {
		return nil
	}
	out := &epochstats.Direct{Batches: d.batches, Seeds: d.seeds, Edges: d.edges, WallS: d.last.Sub(d.first).Seconds(),
		AssembleS: d.assemble.seconds(now), SampleS: d.sample.d.Seconds(), SampleBytes: d.sample.bytes,
		RowBytes: rowBytes, Rows: d.rows, Reads: d.reads, BytesRead: d.bytesRead, ReadS: d.read.seconds(now), Labels: d.labels}
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
