// The per-chunk choice between streaming a chunk and random-reading its
// targets' rows (issue 25, item 4; DESIGN §4d): for each layer, the chunk
// jobs whose targets are cheaper to sample by random reads (package
// randread: the row offsets in memory, the aligned blocks holding the
// chosen neighbors, many reads in flight) are taken out of the stream and
// sampled through a randread.Session, concurrently with the streamed ones;
// each job's rows land in its own range of the layer, so the samples are
// the same either way, bit for bit.

package host

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/hls"
	"github.com/streamsampler/streamsampler/internal/aio"
	"github.com/streamsampler/streamsampler/randread"
	"github.com/streamsampler/streamsampler/rng"
)

// RandomReads says whether a Sampler's layers may sample a chunk's
// targets by random reads instead of streaming the chunk
// (Options.RandomReads).
type RandomReads int

const (
	// RandomOff streams every chunk that holds targets: the zero value.
	RandomOff RandomReads = iota
	// RandomAuto chooses per chunk and layer by the cost model
	// (DESIGN §4d): a chunk already in memory is streamed; another is
	// random-read when its targets' estimated reads cost less than
	// reading the chunk. The row offsets (8 bytes per node) are loaded
	// the first time a layer has a chunk that may be cheaper by random
	// reads, and only within Options.RandomOffsetBudget.
	RandomAuto
	// RandomAlways random-reads every chunk's targets, chunks in memory
	// included: the pure random-read strategy, for comparisons.
	RandomAlways
)

// String returns "off", "auto" or "always".
func (m RandomReads) String() string {
	switch m {
	case RandomAuto:
		return "auto"
	case RandomAlways:
		return "always"
	}
	return "off"
}

// ParseRandomReads parses "off", "auto" or "always".
func ParseRandomReads(s string) (RandomReads, error) {
	switch s {
	case "off":
		return RandomOff, nil
	case "auto":
		return RandomAuto, nil
	case "always":
		return RandomAlways, nil
	}
	return RandomOff, fmt.Errorf("%w: random reads %q, want auto, off or always", ErrInvalid, s)
}

// DiskRates are the two rates the cost model weighs: a chunk's read
// costs its bytes over SeqBytesPerSec; a random-read chunk costs its
// reads over RandReadsPerSec (at randread's depth) plus their bytes over
// SeqBytesPerSec.
type DiskRates struct {
	SeqBytesPerSec  float64 `json:"seq_bytes_per_sec"`
	RandReadsPerSec float64 `json:"rand_reads_per_sec"`
}

// PriorDiskRates are the rates RandomAuto assumes before it has measured
// the disk (and where it never does: a graph whose layers read less than
// the probe would): this project's VM's, a virtio disk that streams at
// about 1 GB/s and serves 60 k random 4 KiB reads/s at depth 128
// (docs/PERFORMANCE.md).
var PriorDiskRates = DiskRates{SeqBytesPerSec: 1e9, RandReadsPerSec: 6e4}

const (
	// DefaultRandomOffsetBudget is the memory RandomAuto may spend on the
	// row offsets (8 bytes per node): 1 GiB, graphs of up to 134 M nodes.
	DefaultRandomOffsetBudget = 1 << 30
	// probeSeqBytes and probeRandReads size the disk probe: 2 sequential
	// reads of 32 MiB at spread offsets (of a sixteenth of a smaller
	// graph), and 2048 random 4 KiB reads at randread's depth, about
	// 70 ms on this project's VM, once per Sampler.
	probeSeqBytes  = 64 << 20
	probeRandReads = 2048
)

// RandomStats describe a Sampler's random-read side after an epoch
// (Stats.Random; nil with RandomOff).
type RandomStats struct {
	Mode string `json:"mode"`
	// Rates are those the cost model used; Measured says they came from
	// the probe (Options.DiskRates gave none).
	Rates    DiskRates `json:"rates"`
	Measured bool      `json:"measured"`
	// OffsetBytes is the row offsets' memory, 0 while not loaded.
	OffsetBytes int64 `json:"offset_bytes"`
	// Disabled says why RandomAuto streams everything ("" when it does
	// not).
	Disabled string `json:"disabled,omitempty"`
}

// randomSide is a Sampler's random-read state, kept across epochs: the
// mode, the rates, the random-read sampler once opened (the offsets
// loaded), and the per-target costs last observed.
type randomSide struct {
	dir      string
	mode     RandomReads
	buffered bool
	budget   int64
	// rates are those the model uses: given (givenSeq, givenRand), else
	// the prior, the probe's once measured, and what layers observe.
	rates               DiskRates
	givenSeq, givenRand bool
	measured            bool
	probed              bool
	// seenSeq, seenRand: a layer has observed the rate.
	seenSeq, seenRand bool
	disabled          string
	rs                *randread.Sampler
	// streamTarget and randomTarget are the seconds per target last
	// observed on each side (the kernel's; positions and gather), 0
	// until a layer has measured them.
	streamTarget, randomTarget float64
}

// newRandomSide sets up o's RandomReads for a Sampler of backend and
// options o (nil for RandomOff). The XRT backend and VerifyReads keep
// every chunk on the stream: a SmartSSD's random reads would go peer to
// peer into the device through the gather kernel, which only the
// emulated path has (randread.Options.Kernel), and a random read cannot
// check a chunk's CRC-32C as VerifyReads asks.
func newRandomSide(dir string, o Options) (*randomSide, string, error) {
	if o.RandomReads == RandomOff {
		return nil, "", nil
	}
	if o.RandomReads != RandomAuto && o.RandomReads != RandomAlways {
		return nil, "", fmt.Errorf("host: %w: random reads mode %d", ErrInvalid, o.RandomReads)
	}
	var why string
	switch {
	case o.Backend != BackendEmu:
		why = "the " + o.Backend + " backend streams every chunk (random reads into a SmartSSD need the gather kernel, emulated only)"
	case o.VerifyReads:
		why = "VerifyReads streams every chunk (a random read cannot check a chunk's CRC-32C)"
	}
	if why != "" {
		if o.RandomReads == RandomAlways {
			return nil, "", fmt.Errorf("host: %w: random reads always: %s", ErrInvalid, why)
		}
		return nil, "random reads off: " + why, nil
	}
	if o.DiskRates.SeqBytesPerSec < 0 || o.DiskRates.RandReadsPerSec < 0 || o.RandomOffsetBudget < 0 {
		return nil, "", fmt.Errorf("host: %w: disk rates %+v, offset budget %d", ErrInvalid, o.DiskRates, o.RandomOffsetBudget)
	}
	r := &randomSide{dir: dir, mode: o.RandomReads, buffered: o.Buffered, budget: o.RandomOffsetBudget, rates: o.DiskRates,
		givenSeq: o.DiskRates.SeqBytesPerSec > 0, givenRand: o.DiskRates.RandReadsPerSec > 0}
	if r.budget == 0 {
		r.budget = DefaultRandomOffsetBudget
	}
	if !r.givenSeq {
		r.rates.SeqBytesPerSec = PriorDiskRates.SeqBytesPerSec
	}
	if !r.givenRand {
		r.rates.RandReadsPerSec = PriorDiskRates.RandReadsPerSec
	}
	r.probed = r.givenSeq && r.givenRand
	return r, "", nil
}

// stats is the side's RandomStats.
func (r *randomSide) stats() *RandomStats {
	st := &RandomStats{Mode: r.mode.String(), Rates: r.rates, Measured: r.measured, Disabled: r.disabled}
	if r.rs != nil {
		st.OffsetBytes = r.rs.OffsetBytes()
	}
	return st
}

func (r *randomSide) close() error {
	if r == nil || r.rs == nil {
		return nil
	}
	err := r.rs.Close()
	r.rs = nil
	return err
}

// open loads the row offsets (randread.Open) once.
func (r *randomSide) open(ctx context.Context) error {
	if r.rs != nil {
		return nil
	}
	rs, err := randread.Open(ctx, r.dir, randread.Options{Buffered: r.buffered})
	if err != nil {
		return fmt.Errorf("random reads: %w", err)
	}
	r.rs = rs
	return nil
}

// epochSide is one epoch's use of the random-read side: the Sampler's
// state, the epoch's key and session (blocks read by one layer kept for
// the next), opened when a layer first random-reads.
type epochSide struct {
	r       *randomSide
	s       *Sampler
	key     epoch.Key
	edgeIDs bool
	sess    *randread.Session
}

func (e *epochSide) close() {
	if e != nil && e.sess != nil {
		e.sess.Close()
		e.sess = nil
	}
}

// chunkFacts are what the cost model knows of one chunk job before
// reading anything.
type chunkFacts struct {
	readBytes int64 // the chunk's read size
	resident  bool  // in the chunk cache or a lane's buffer
	targets   int
}

// costModel weighs one chunk job's two ways (DESIGN §4d).
type costModel struct {
	rates DiskRates
	// streamTarget, randomTarget: seconds per target on each side.
	streamTarget, randomTarget float64
	blockSize, maxRun          int64
}

// streamCost is the seconds streaming a chunk costs: its read (none if
// it is in memory) and the kernel's time per target.
func (m costModel) streamCost(f chunkFacts) float64 {
	c := float64(f.targets) * m.streamTarget
	if !f.resident {
		c += float64(f.readBytes) / m.rates.SeqBytesPerSec
	}
	return c
}

// randomCost is the seconds random reads of est cost for targets
// targets: the reads at the disk's random rate, their bytes at its
// sequential one, and the gather's time per target.
func (m costModel) randomCost(est readEstimate, targets int) float64 {
	return float64(est.reads)/m.rates.RandReadsPerSec + float64(est.blocks*m.blockSize)/m.rates.SeqBytesPerSec + float64(targets)*m.randomTarget
}

// readEstimate is the blocks and reads a chunk's targets would need.
type readEstimate struct{ blocks, reads int64 }

// rowEstimator estimates, target by target (sorted, so their rows come in
// file order), the distinct blocks and the reads (runs of consecutive
// blocks, up to maxRun bytes) a layer of fanout k needs: a row of d words
// spans blocks b0..b1; when every word is taken (k = -1, or d ≤ k without
// replacement) those are the row's blocks; otherwise the k positions fall
// in min(k, span) of them. Blocks shared with the previous row are
// counted once, and a row starting in the block after the previous one's
// continues its read.
type rowEstimator struct {
	k         int
	replace   bool
	bs, run   int64
	last      int64 // last block counted, -1 for none
	est       readEstimate
	runBlocks int64 // blocks in the current read
	// pos and blk are addNode's scratch.
	pos [hls.MaxFanout]int32
	blk [hls.MaxFanout]int64
}

func newRowEstimator(k int, replace bool, bs, maxRun int64) rowEstimator {
	return rowEstimator{k: k, replace: replace, bs: bs, run: max(maxRun/bs, 1), last: -1}
}

// addNode counts node v's row (degree d, first word at byte at) exactly
// as a layer of key lkey reads it: its positions drawn (rng.Positions,
// as randread draws them), their blocks in order, runs joined across
// rows and split at maxRun, as randread's reads are. It costs a draw per
// slot, where add costs a few operations per row; judge stops it early
// on a dense chunk.
func (e *rowEstimator) addNode(at int64, d int, v uint32, lkey uint64) {
	if d <= 0 {
		return
	}
	if e.k == epoch.AllNeighbors || (!e.replace && d <= e.k) {
		for b := max(at/e.bs, e.last+1); b <= (at+4*int64(d)-1)/e.bs; b++ {
			e.addBlock(b)
		}
		return
	}
	pos := e.pos[:e.k]
	rng.Positions(pos, d, v, lkey, e.replace)
	blocks := e.blk[:0]
	for _, p := range pos {
		if p >= 0 {
			blocks = append(blocks, (at+4*int64(p))/e.bs)
		}
	}
	slices.Sort(blocks)
	for _, b := range blocks {
		e.addBlock(b)
	}
}

// addBlock counts block b (at or after every block counted before).
func (e *rowEstimator) addBlock(b int64) {
	if b <= e.last {
		return
	}
	e.est.blocks++
	if e.runBlocks > 0 && b == e.last+1 && e.runBlocks < e.run {
		e.runBlocks++
	} else {
		e.est.reads++
		e.runBlocks = 1
	}
	e.last = b
}

// add counts the row of degree d whose first word is at byte at.
func (e *rowEstimator) add(at int64, d int) {
	if d <= 0 {
		return
	}
	b0, b1 := at/e.bs, (at+4*int64(d)-1)/e.bs
	span := b1 - b0 + 1
	whole := e.k == epoch.AllNeighbors || (!e.replace && d <= e.k) || span == 1
	if !whole {
		chosen := min(int64(e.k), span)
		if chosen < span {
			// Scattered: chosen separate blocks, each its own read.
			e.est.blocks += chosen
			e.est.reads += chosen
			e.last, e.runBlocks = b1, 1
			return
		}
	}
	if b0 <= e.last {
		b0 = e.last + 1
	}
	if b0 > b1 {
		return
	}
	n := b1 - b0 + 1
	e.est.blocks += n
	if b0 != e.last+1 || e.runBlocks == 0 {
		e.est.reads++
		e.runBlocks = 0
	}
	// Runs split every maxRun bytes.
	total := e.runBlocks + n
	e.est.reads += (total - 1) / e.run
	e.runBlocks = (total-1)%e.run + 1
	e.last = b1
}

// layerChoice is what split decided for one layer.
type layerChoice struct {
	stream, random []chunkJob
}

// split divides a layer's chunk jobs between the stream and random
// reads (RandomAlways: every job random; RandomAuto: the cost model's
// choice, a chunk in memory always streamed).
func (e *epochSide) split(ctx context.Context, l int, jobs []chunkJob, k int, sm stream) (layerChoice, error) {
	r := e.r
	if len(jobs) == 0 {
		return layerChoice{stream: jobs}, nil
	}
	if r.mode == RandomAlways {
		if err := r.open(ctx); err != nil {
			return layerChoice{}, err
		}
		return layerChoice{random: jobs}, nil
	}
	if r.disabled != "" {
		return layerChoice{stream: jobs}, nil
	}
	m := e.s.manifest
	facts := make([]chunkFacts, len(jobs))
	anyCold := false
	for i, j := range jobs {
		facts[i] = chunkFacts{readBytes: e.s.readSize(j.chunk), resident: sm.resident(j.chunk), targets: len(j.targets)}
		anyCold = anyCold || !facts[i].resident
	}
	if !anyCold {
		return layerChoice{stream: jobs}, nil
	}
	if !r.probed {
		// The probe runs once a layer's reads cost more, at the prior
		// rates, than the probe itself: a small graph is decided on the
		// prior (and what its layers observe), never measured at a
		// cost that could exceed its epochs'.
		var cold int64
		for _, f := range facts {
			if !f.resident {
				cold += f.readBytes
			}
		}
		if float64(cold)/r.rates.SeqBytesPerSec >= probeSeqBytes/r.rates.SeqBytesPerSec+probeRandReads/r.rates.RandReadsPerSec {
			rates, err := e.s.probeRates(ctx)
			if err != nil {
				return layerChoice{}, fmt.Errorf("random reads: measuring the disk: %w", err)
			}
			if !r.givenSeq {
				r.rates.SeqBytesPerSec = rates.SeqBytesPerSec
			}
			if !r.givenRand {
				r.rates.RandReadsPerSec = rates.RandReadsPerSec
			}
			r.probed, r.measured = true, true
		}
	}
	model := costModel{rates: r.rates, streamTarget: r.streamTarget, randomTarget: r.randomTarget,
		blockSize: randread.DefaultBlockSize, maxRun: randread.DefaultMaxRun}
	if r.rs == nil {
		// Before the offsets are loaded: each target's row as long as its
		// chunk's average. Only when some chunk may pay are they loaded.
		pays := false
		for i, j := range jobs {
			if facts[i].resident {
				continue
			}
			ci := m.Chunks[j.chunk]
			avg := int(ci.NEdges / max(uint64(ci.NNodes), 1))
			if model.randomCost(estimateUniform(k, e.key.Replace, avg, len(j.targets), model, ci.BytesUsed), len(j.targets)) < model.streamCost(facts[i]) {
				pays = true
				break
			}
		}
		if !pays {
			return layerChoice{stream: jobs}, nil
		}
		if need := 8 * (int64(m.NumNodes) + 1); need > r.budget {
			r.disabled = fmt.Sprintf("row offsets of %d bytes exceed the budget of %d (RandomOffsetBudget)", need, r.budget)
			return layerChoice{stream: jobs}, nil
		}
		if err := r.open(ctx); err != nil {
			return layerChoice{}, err
		}
	}
	verdicts := make([]verdict, len(jobs))
	for i, j := range jobs {
		if facts[i].resident {
			verdicts[i] = verdict{choice: chooseStream, stream: model.streamCost(facts[i])}
			continue
		}
		c, sc, rc := judge(model, facts[i], j, k, e.key.Replace, e.key.Layer(l), r.rs)
		verdicts[i] = verdict{c, sc, rc}
	}
	isRandom := assign(verdicts)
	var ch layerChoice
	for i, j := range jobs {
		if isRandom[i] {
			ch.random = append(ch.random, j)
		} else {
			ch.stream = append(ch.stream, j)
		}
	}
	return ch, nil
}

// estimateUniform is the read estimate for n targets of degree d each
// (a chunk's average) in a chunk of bytesUsed bytes: one row's blocks and
// reads, times n, within the chunk's blocks.
func estimateUniform(k int, replace bool, d, n int, m costModel, bytesUsed int64) readEstimate {
	e := newRowEstimator(k, replace, m.blockSize, m.maxRun)
	e.add(0, d)
	chunkBlocks := (bytesUsed + m.blockSize - 1) / m.blockSize
	return readEstimate{blocks: min(e.est.blocks*int64(n), chunkBlocks), reads: min(e.est.reads*int64(n), chunkBlocks)}
}

// rowSource gives a target's row: randread.Sampler.Row.
type rowSource interface {
	Row(chunk int, node uint32) (at int64, degree int)
}

// tieBand is how close the two estimates of a chunk must be for the
// model to call them even: within a factor of 1.25 either way, about the
// error of its rates on this project's VM (DESIGN §4d). Even chunks are
// shared between the two halves, which run at once, instead of all going
// to the side the estimate favours by a little: where the estimate is
// wrong, half the chunks are on the right side.
const tieBand = 1.25

// sampleRows is how many of a chunk's targets judge counts before it
// projects their cost over the rest.
const sampleRows = 256

// choice is the model's verdict on one chunk job.
type choice int

const (
	chooseStream choice = iota
	chooseRandomReads
	chooseEven
)

// judge weighs job j's targets by random reads against streaming its
// chunk (f): the estimate runs target by target and stops as soon as it
// passes tieBand times the stream's cost, or, on a chunk of many
// targets, once its first sampleRows project to twice that. It returns the verdict and
// the two estimates (random's partial where it stopped).
func judge(m costModel, f chunkFacts, j chunkJob, k int, replace bool, lkey uint64, rows rowSource) (choice, float64, float64) {
	sc := m.streamCost(f)
	e := newRowEstimator(k, replace, m.blockSize, m.maxRun)
	n := len(j.targets)
	for i, v := range j.targets {
		at, d := rows.Row(j.chunk, v)
		e.addNode(at, d, v, lkey)
		if i%64 != 63 {
			continue
		}
		rc := m.randomCost(e.est, i+1)
		// A dense chunk is called from its first rows: projected over
		// all its targets, their cost is twice the band past the stream.
		if rc >= tieBand*sc || i == sampleRows-1 && n >= 2*sampleRows && rc*float64(n)/sampleRows >= 2*tieBand*sc {
			return chooseStream, sc, rc
		}
	}
	rc := m.randomCost(e.est, len(j.targets))
	switch {
	case rc*tieBand <= sc:
		return chooseRandomReads, sc, rc
	case rc >= tieBand*sc:
		return chooseStream, sc, rc
	}
	return chooseEven, sc, rc
}

// verdict is judge's result for one chunk job.
type verdict struct {
	choice         choice
	stream, random float64
}

// assign sends each chunk to the side its verdict favours by more than
// tieBand, and each even one, in turn, to the half whose estimated time
// is lower once it is added (the halves run at once): it says which go
// to random reads.
func assign(vs []verdict) []bool {
	var onStream, onRandom float64
	isRandom := make([]bool, len(vs))
	for i, v := range vs {
		switch v.choice {
		case chooseRandomReads:
			isRandom[i] = true
			onRandom += v.random
		case chooseStream:
			onStream += v.stream
		}
	}
	for i, v := range vs {
		if v.choice != chooseEven {
			continue
		}
		if onRandom+v.random < onStream+v.stream {
			isRandom[i] = true
			onRandom += v.random
		} else {
			onStream += v.stream
		}
	}
	return isRandom
}

// chooseRandom says whether the model sends job j to random reads
// outright (judge's verdict; an even chunk is not).
func chooseRandom(m costModel, f chunkFacts, j chunkJob, k int, replace bool, lkey uint64, rows rowSource) bool {
	c, _, _ := judge(m, f, j, k, replace, lkey, rows)
	return c == chooseRandomReads
}

// resident says whether chunk c is in memory: in the chunk cache, or in
// one of a lane's buffers.
func (s stream) resident(c int) bool {
	if s.cache != nil && s.cache.holding(c) != nil {
		return true
	}
	for _, ln := range s.lanes {
		if ln.resident(0) == c || ln.resident(1) == c {
			return true
		}
	}
	return false
}

// runSplit runs a layer's pass over ch: the streamed jobs through the
// lanes and the random-read ones through the epoch's session, at the
// same time, each writing its jobs' ranges of the pass (place). The first
// error cancels the other half; both have ended when it returns.
func (s stream) runSplit(ctx context.Context, l, k int, ch layerChoice, pass streamPass, ls *LayerStats, hook func(int, int64)) error {
	if len(ch.random) == 0 {
		return s.run(ctx, ch.stream, pass, ls, hook)
	}
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	var rerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		if rerr = s.side.layer(lctx, l, k, ch.random, pass, ls); rerr != nil {
			cancel(rerr)
		}
	}()
	var serr error
	if len(ch.stream) > 0 {
		var sls LayerStats
		if serr = s.run(lctx, ch.stream, pass, &sls, hook); serr != nil {
			cancel(serr)
		}
		wg.Wait()
		ls.addStream(&sls)
	} else {
		wg.Wait()
	}
	if rerr != nil || serr != nil {
		return context.Cause(lctx)
	}
	return nil
}

// addStream adds the streamed half's figures (runSplit gathers them apart
// while the random half writes its own).
func (s *LayerStats) addStream(o *LayerStats) {
	s.ChunksRead += o.ChunksRead
	s.ChunksReused += o.ChunksReused
	s.Launches += o.Launches
	s.BytesRead += o.BytesRead
	s.ReadTime += o.ReadTime
	s.KernelTime += o.KernelTime
	s.SyncTime += o.SyncTime
}

// layer samples the random-read jobs of layer l: one Session.Layer over
// their targets (in job order, so sorted), whose rows are then placed in
// each job's range of the pass, and the figures in ls.
func (e *epochSide) layer(ctx context.Context, l, k int, jobs []chunkJob, pass streamPass, ls *LayerStats) error {
	if e.sess == nil {
		sess, err := e.r.rs.NewSession()
		if err != nil {
			return fmt.Errorf("random reads: %w", err)
		}
		e.sess = sess
	}
	var nodes []uint32
	for _, j := range jobs {
		nodes = append(nodes, j.targets...)
	}
	t0 := time.Now()
	ly, rls, err := e.sess.Layer(ctx, l, nodes, k, e.key, e.edgeIDs)
	if err != nil {
		return fmt.Errorf("random reads of %d chunks (%d targets): %w", len(jobs), len(nodes), err)
	}
	off := 0
	for _, j := range jobs {
		n := len(j.targets)
		if k == epoch.AllNeighbors {
			a := pass.all
			lo, hi := ly.Offsets[off], ly.Offsets[off+n]
			for i := range n {
				a.counts[j.lo+i] = ly.Offsets[off+i+1] - ly.Offsets[off+i]
			}
			a.parts[j.seq] = ly.Samples[lo:hi:hi]
			if a.eparts != nil {
				a.eparts[j.seq] = ly.EdgeIDs[lo:hi:hi]
			}
		} else {
			copy(pass.samples[j.lo*k:(j.lo+n)*k], ly.Samples[off*k:(off+n)*k])
			if pass.edgeIDs != nil {
				copy(pass.edgeIDs[j.lo*k:(j.lo+n)*k], ly.EdgeIDs[off*k:(off+n)*k])
			}
		}
		off += n
	}
	wall := time.Since(t0)
	ls.ChunksRandom += len(jobs)
	ls.RandomTargets += len(nodes)
	ls.RandomBlocks += rls.Blocks - rls.Reused
	ls.RandomReads += rls.Reads
	ls.RandomBytes += rls.BytesRead
	ls.BytesRead += rls.BytesRead
	ls.RandomTime += wall
	if len(nodes) > 0 {
		e.r.randomTarget = max(wall-rls.ReadTime, 0).Seconds() / float64(len(nodes))
	}
	e.r.observeRandom(rls)
	return nil
}

// Rates observed on a layer replace the model's (the first time; then
// move it halfway) when the layer read enough to measure them (minObservedReads random reads at depth,
// minObservedBytes streamed): a short probe misjudges a disk whose rate
// depends on what is read (a virtual disk's host cache, a drive's
// internal parallelism), and the layers read what the choice weighs.
// Rates given in Options.DiskRates are kept as given.
const (
	minObservedReads = 1024
	minObservedBytes = 32 << 20
)

// observeRandom takes the random-read rate a layer achieved.
func (r *randomSide) observeRandom(ls randread.LayerStats) {
	if !r.givenRand && ls.Reads >= minObservedReads && ls.ReadTime > 0 {
		r.rates.RandReadsPerSec = smooth(r.rates.RandReadsPerSec, float64(ls.Reads)/ls.ReadTime.Seconds(), &r.seenRand)
	}
}

// observeStream keeps the kernel's time per streamed target of a layer
// and the sequential rate its reads achieved (KernelTime and ReadTime
// are summed over the devices, which run at once).
func (r *randomSide) observeStream(ls *LayerStats, devices int) {
	devices = max(devices, 1)
	if n := ls.Targets - ls.RandomTargets; n > 0 && ls.KernelTime > 0 {
		r.streamTarget = ls.KernelTime.Seconds() / float64(devices) / float64(n)
	}
	if streamed := ls.BytesRead - ls.RandomBytes; !r.givenSeq && streamed >= minObservedBytes && ls.ReadTime > 0 {
		r.rates.SeqBytesPerSec = smooth(r.rates.SeqBytesPerSec, float64(streamed)/(ls.ReadTime.Seconds()/float64(devices)), &r.seenSeq)
	}
}

// smooth is the rate after a layer observed one: the first observation
// replaces the prior's or the probe's (a layer's reads are what the
// choice weighs; the probe's are not), later ones move it halfway (one
// layer's rate is noisy: other processes' reads, a host cache).
func smooth(old, observed float64, seen *bool) float64 {
	if !*seen {
		*seen = true
		return observed
	}
	return (old + observed) / 2
}

// probeRates measures the disk under edges.chunks: probeSeqBytes read
// sequentially in 4 pieces at spread offsets, and probeRandReads random
// blocks of randread.DefaultBlockSize at randread.DefaultDepth in flight,
// through the Sampler's file (O_DIRECT where it is: the page cache is not
// measured) — Linux AIO where the file is O_DIRECT, else a pool of pread
// goroutines.
func (s *Sampler) probeRates(ctx context.Context) (DiskRates, error) {
	size := s.manifest.FileSize()
	bs := int64(randread.DefaultBlockSize)
	if size < bs {
		return DiskRates{}, fmt.Errorf("%s: %d bytes, too small to measure", s.file.Name(), size)
	}
	// The sequential part reads as a chunk is streamed (readPieces: in
	// pieces on as many goroutines as cores, each checksummed), so the
	// rate is streaming's, CRC included.
	region := max(min(int64(probeSeqBytes), size/16/bs*bs), min(bs, size/bs*bs))
	buf := aio.Aligned(region)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 0 // mapped in before the clock starts, as the cache's entries are
	}
	t0 := time.Now()
	var seq int64
	for i := range int64(1) {
		if err := ctx.Err(); err != nil {
			return DiskRates{}, err
		}
		at := (size - region) / 2 * i / bs * bs
		if _, err := readPieces(region, func(lo, n int64) ([]byte, error) {
			b := buf[lo : lo+n]
			_, err := s.file.ReadAt(b, at+lo)
			return b, err
		}); err != nil {
			return DiskRates{}, fmt.Errorf("sequential read at %d: %w", at, err)
		}
		seq += region
	}
	seqRate := float64(seq) / max(time.Since(t0).Seconds(), 1e-6)

	r := rand.New(rand.NewPCG(uint64(size), 25))
	blocks := size / bs
	offs := make([]int64, probeRandReads)
	for i := range offs {
		offs[i] = r.Int64N(blocks) * bs
	}
	// In file order, as a layer's reads go (randread sorts its blocks).
	slices.Sort(offs)
	depth := randread.DefaultDepth
	// A first few reads untimed: the AIO context's setup and the first
	// reads' latency are not the rate at depth.
	if err := readRandom(ctx, s.file, s.direct, offs[:min(len(offs), depth)], int(bs), depth); err != nil {
		return DiskRates{}, err
	}
	t1 := time.Now()
	if err := readRandom(ctx, s.file, s.direct, offs, int(bs), depth); err != nil {
		return DiskRates{}, err
	}
	randRate := float64(len(offs)) / max(time.Since(t1).Seconds(), 1e-6)
	return DiskRates{SeqBytesPerSec: seqRate, RandReadsPerSec: randRate}, nil
}

// readRandom reads a block of bs bytes at each of offs, depth in flight:
// through Linux AIO on an O_DIRECT file, else by depth goroutines.
func readRandom(ctx context.Context, f interface {
	ReadAt([]byte, int64) (int, error)
	Fd() uintptr
}, direct bool, offs []int64, bs, depth int) error {
	if direct {
		if a, err := aio.New(depth); err == nil {
			defer a.Destroy()
			ring := aio.Aligned(int64(depth) * int64(bs))
			return a.Read(int(f.Fd()), len(offs), depth,
				func(k, slot int) (int64, []byte) { return offs[k], ring[slot*bs : (slot+1)*bs] },
				func(k, _ int, _ []byte, got int, err error) error {
					if got <= 0 && err != nil {
						return fmt.Errorf("random read at %d: %w", offs[k], err)
					}
					return ctx.Err()
				})
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, depth)
	for w := range depth {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := aio.Aligned(int64(bs))
			for k := next.Add(1) - 1; k < int64(len(offs)); k = next.Add(1) - 1 {
				if n, err := f.ReadAt(buf, offs[k]); n <= 0 && err != nil {
					errs[w] = fmt.Errorf("random read at %d: %w", offs[k], err)
					return
				}
				if ctx.Err() != nil {
					errs[w] = ctx.Err()
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
