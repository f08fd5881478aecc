package ingest

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
	"github.com/streamsampler/streamsampler/internal/failpoint"
	"github.com/streamsampler/streamsampler/internal/procio"
	"github.com/streamsampler/streamsampler/internal/progress"
)

// BuildOptions configures Build. The zero value builds with the chunkfmt
// default chunk size, no dedup and self-loops kept; the chunkify CLI's
// defaults (dedup on) are set by the CLI.
type BuildOptions struct {
	// Format of every input; FormatAuto detects each one.
	Format Format
	// NumNodes is the number of nodes; 0 means the largest id + 1.
	NumNodes uint32
	// Symmetrize stores each edge (u, v) as u→v and v→u.
	Symmetrize bool
	// Reverse stores v→u: adjacency lists hold in-neighbors, which is what
	// DGL samples by default.
	Reverse bool
	// Dedup removes repeated neighbors from each adjacency list.
	Dedup bool
	// SelfLoops is "keep" (or "") or "drop".
	SelfLoops string
	// ChunkSize in bytes, a multiple of chunkfmt.SectorSize; 0 means
	// chunkfmt.DefaultChunkSize.
	ChunkSize int64
	// Force replaces an existing output, but only once the new graph is
	// complete.
	Force bool
	// Memory is the build's memory budget in bytes (chunkify --memory).
	// Build refuses a graph whose least working memory — the per-node
	// arrays, the chunk being written, the buffers and the smallest
	// partition of the edges, see buildMemory — exceeds it, before
	// allocating: a --num-nodes at once, a largest id as pass 1 finds it.
	// What the budget leaves above that holds the edges of one partition;
	// the others wait in spill files. 0 means memavail.Available() when the
	// build starts (no check, and one partition, where that is unknown).
	Memory int64
	// Progress, when non-nil, receives progress lines (use it for a
	// terminal only; see progress.Enabled).
	Progress io.Writer
	// CreatedBy is recorded in the manifest.
	CreatedBy string
	// Columns, when not nil, bounds each column of the edges on its own
	// (a relation of a heterogeneous graph, whose columns are ids of two
	// node types); every id must also be below NumNodes, which must be
	// given.
	Columns *ColumnBounds

	// gens are inputs generated in memory (BuildHetero's typed R-MAT),
	// read after the named inputs: generated in pass 1 and spooled for
	// pass 2, as a compressed input is.
	gens []generated
}

// Budget is the memory budget a build with these options checks against:
// Memory, else memavail.Available(); 0 means unchecked.
func (o BuildOptions) Budget() int64 { return memoryBudget(o) }

// Summary describes a finished build.
type Summary struct {
	Dir               string           `json:"dir"`
	Inputs            []string         `json:"inputs"`
	NumNodes          uint32           `json:"num_nodes"`
	NumEdges          uint64           `json:"num_edges"`   // stored adjacency entries
	InputEdges        uint64           `json:"input_edges"` // edges read from the inputs
	DuplicatesDropped uint64           `json:"duplicates_dropped"`
	SelfLoopsDropped  uint64           `json:"self_loops_dropped"`
	NumChunks         int              `json:"num_chunks"`
	ChunkSize         int64            `json:"chunk_size"`
	MaxDegree         uint32           `json:"max_degree"`
	InputBytes        int64            `json:"input_bytes"`
	Seconds           float64          `json:"seconds"`
	MemoryBudget      int64            `json:"memory_budget"`           // bytes; 0: unchecked
	StaleRemoved      []string         `json:"stale_removed,omitempty"` // temporary directories of dead earlier builds, removed
	PassSeconds       [3]float64       `json:"pass_seconds"`            // read+count, place or partition, sort+write
	Partitions        int              `json:"partitions"`              // node ranges built one at a time in memory; 1: no spill files
	SpilledBytes      int64            `json:"spilled_bytes"`           // written to the spill files of partitions 2 and later
	ProcReadBytes     int64            `json:"proc_read_bytes"`         // the process's storage reads so far (/proc/self/io read_bytes; -1: unknown)
	ProcWriteBytes    int64            `json:"proc_write_bytes"`        // the process's storage writes so far (/proc/self/io write_bytes; -1: unknown)
	Options           chunkfmt.Options `json:"options"`
}

// Steps of a build, in order: each is a failpoint (internal/failpoint),
// the seam of the cancellation and kill tests.
const (
	stepTempDir   = "ingest/temp-dir"  // the temporary directory exists (empty)
	stepInputs    = "ingest/inputs"    // standard input spooled into it
	stepPass1     = "ingest/pass-1"    // reading edges, counting degrees
	stepPass2     = "ingest/pass-2"    // placing the first partition's edges, spilling the others'
	stepPass3     = "ingest/pass-3"    // sorting and writing chunks
	stepChunk     = "ingest/chunk"     // pass 3 has appended its first window of nodes
	stepWritten   = "ingest/written"   // chunks, index and manifest complete in the temporary directory
	stepInstalled = "ingest/installed" // the graph is in place, Build about to return
)

// stepLoad is reached as pass 3 starts reading a spill file back; only an
// external build (more than one partition) reaches it, so it is not in
// buildSteps.
const stepLoad = "ingest/load"

// buildSteps lists the steps in the order a build reaches them.
var buildSteps = []string{stepTempDir, stepInputs, stepPass1, stepPass2, stepPass3, stepChunk, stepWritten, stepInstalled}

// reached marks a step. A build has no failure to inject between its
// steps, only cancellations and kills (which the hook performs itself),
// so the hook's error is not used.
func reached(step string) { _ = failpoint.Hit(step) }

// buildBatch is how many edges pass 2 moves per read.
const buildBatch = 1 << 16

// Build reads the edge lists in inputs ("-" is standard input) and writes
// the chunked CSR graph directory out. It works out of core, within
// o.Memory: O(num_nodes) plus the edges of one partition of the nodes in
// memory; the other partitions' edges wait in spill files, written and
// read sequentially, inside a temporary sibling of out, which is removed
// on every failure and on cancellation of ctx. out appears only complete: a new directory
// is renamed into place (with Force, swapped with the old one) after the
// graph's manifest is written.
func Build(ctx context.Context, inputs []string, out string, o BuildOptions) (sum *Summary, err error) {
	t0 := time.Now()
	if len(inputs) == 0 && len(o.gens) == 0 {
		return nil, errors.New("build: no input files")
	}
	if o.Columns != nil && (o.NumNodes == 0 || max(o.Columns.Src, o.Columns.Dst) > o.NumNodes) {
		return nil, fmt.Errorf("build: column bounds %d and %d need --num-nodes of at least both", o.Columns.Src, o.Columns.Dst)
	}
	if o.ChunkSize == 0 {
		o.ChunkSize = chunkfmt.DefaultChunkSize
	}
	if o.ChunkSize < 0 || o.ChunkSize%chunkfmt.SectorSize != 0 {
		return nil, fmt.Errorf("build: chunk size %d: must be a positive multiple of %d bytes", o.ChunkSize, chunkfmt.SectorSize)
	}
	switch o.SelfLoops {
	case "":
		o.SelfLoops = chunkfmt.SelfLoopsKeep
	case chunkfmt.SelfLoopsKeep, chunkfmt.SelfLoopsDrop:
	default:
		return nil, fmt.Errorf("build: self-loops %q: want keep or drop", o.SelfLoops)
	}
	if o.NumNodes > chunkfmt.MaxNodes {
		return nil, fmt.Errorf("build: --num-nodes %d: more than the maximum %d nodes", o.NumNodes, chunkfmt.MaxNodes)
	}
	if o.Memory < 0 {
		return nil, fmt.Errorf("build: --memory %d: want a positive number of bytes", o.Memory)
	}
	mem := newMemoryCheck(o)
	if o.NumNodes > 0 {
		// Before anything is allocated or written: a --num-nodes the
		// machine cannot hold must fail now, not after swapping for
		// minutes and being killed.
		what := fmt.Sprintf("--num-nodes %d", o.NumNodes)
		if err := mem.check(uint64(o.NumNodes), 0, 0, what, "give a smaller --num-nodes"); err != nil {
			return nil, err
		}
	}
	out = filepath.Clean(out)
	if err := checkOutput(out, o.Force); err != nil {
		return nil, err
	}
	var total int64
	for _, in := range inputs {
		if in == "-" {
			continue
		}
		st, err := os.Stat(in)
		if err != nil {
			return nil, fmt.Errorf("build: input %w", err)
		}
		if st.IsDir() {
			return nil, fmt.Errorf("build: input %s is a directory", in)
		}
		total += st.Size()
	}
	for _, g := range o.gens {
		total += 8 * g.edges
	}
	parent := filepath.Dir(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	// Earlier builds of out that were killed (SIGKILL, the OOM killer, a
	// crash) could not remove their temporary directories: remove those
	// whose process is gone, never one of a build still running.
	stale, err := atomicfile.RemoveStaleTemps(out)
	if err != nil {
		return nil, fmt.Errorf("build: removing temporary directories of earlier builds of %s: %w", out, err)
	}
	tmp, err := atomicfile.TempDir(out)
	if err != nil {
		return nil, fmt.Errorf("build: creating a temporary directory next to the output: %w", err)
	}
	names := inputs
	for _, g := range o.gens {
		names = append(names[:len(names):len(names)], g.name)
	}
	b := &builder{ctx: ctx, o: o, mem: mem, tmp: tmp, sum: &Summary{Dir: out, Inputs: names, ChunkSize: o.ChunkSize, MemoryBudget: mem.budget, StaleRemoved: stale}}
	installed := false
	defer func() {
		b.release()
		// On every way out but success, a panic included, the temporary
		// directory goes; a SIGKILL leaves it to the next build.
		if !installed {
			os.RemoveAll(tmp)
			sum = nil
		}
	}()
	reached(stepTempDir)
	if err := b.openInputs(inputs); err != nil {
		return nil, err
	}
	reached(stepInputs)
	total += b.stdinBytes
	// Inputs larger than the budget cannot stay cached until pass 2
	// reads them again; their pages would only fill the page cache (or
	// a memory cgroup's limit, where every further read then pays for
	// reclaim): hand them back as they are read.
	b.dropInput = mem.budget > 0 && total > mem.budget
	steps := []string{stepPass1, stepPass2, stepPass3}
	for pass, run := range []func() error{func() error { return b.readEdges(total) }, b.placeEdges, b.sortAndWrite} {
		reached(steps[pass])
		tp := time.Now()
		if err := run(); err != nil {
			return nil, err
		}
		b.sum.PassSeconds[pass] = time.Since(tp).Seconds()
	}
	reached(stepWritten)
	if err := b.release(); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	if err := install(tmp, out); err != nil {
		return nil, err
	}
	installed = true
	reached(stepInstalled)
	b.sum.Seconds = time.Since(t0).Seconds()
	b.sum.InputBytes = total
	b.sum.ProcReadBytes, b.sum.ProcWriteBytes = procIO()
	return b.sum, nil
}

// graphFiles are the names a chunkify output directory may hold; with
// Force, only a directory holding nothing else is replaced, so that a
// mistyped -o cannot delete unrelated data.
var graphFiles = map[string]bool{chunkfmt.ChunksFile: true, chunkfmt.IndexFile: true, chunkfmt.ManifestFile: true, ".manifest.json.tmp": true}

func checkOutput(out string, force bool) error {
	return checkReplaceable(out, force, graphFiles, "chunkify does not write")
}

// checkReplaceable refuses an existing output directory out unless force
// is set and it holds only names in known (what the build writes there),
// naming the first stranger and why (its build "does not write" it).
func checkReplaceable(out string, force bool, known map[string]bool, notWritten string) error {
	st, err := os.Lstat(out)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("build: output %w", err)
	}
	if !force {
		return fmt.Errorf("build: %s: %w (use --force to replace it)", out, ErrExists)
	}
	if !st.IsDir() {
		return fmt.Errorf("build: %s exists and is not a directory; not replacing it", out)
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		return fmt.Errorf("build: output %w", err)
	}
	for _, e := range ents {
		if !known[e.Name()] {
			return fmt.Errorf("build: refusing to replace %s: it holds %q, which %s", out, e.Name(), notWritten)
		}
	}
	return nil
}

// install moves the finished graph in tmp to out durably: a rename when
// out does not exist; otherwise an atomic exchange (Linux), or rename-aside
// where that is unsupported; the old graph is removed once the swap is
// durable.
func install(tmp, out string) error {
	if err := atomicfile.ReplaceDir(tmp, out); err != nil {
		return fmt.Errorf("build: moving the finished graph into place: %w", err)
	}
	return nil
}

// input is one edge list as Build sees it.
type input struct {
	path    string // file to open (a spooled copy for stdin)
	name    string // as the user named it
	spooled bool   // its edges were spooled in pass 1 (text or compressed)
	edges   uint64 // edges read in pass 1
	format  Format // as pass 1 read it
	gen     *generated
}

type builder struct {
	ctx        context.Context
	o          BuildOptions
	mem        memoryCheck
	tmp        string
	sum        *Summary
	inputs     []input
	stdinBytes int64
	dropInput  bool // inputs larger than the budget: their page cache is handed back as they are read

	deg      []uint32 // pass 1: degree of every node
	maxNodes uint64   // pass 1: the most nodes the memory budget holds
	numNodes uint32
	maxDeg   uint32   // pass 1: the largest degree before dedup
	pos      []uint64 // pass 2 and 3: CSR offsets, numNodes+1
	entries  uint64   // adjacency entries before dedup
	spool    *os.File
	spoolW   *bufio.Writer
	writer   *chunkfmt.Writer

	parts    []partition  // node ranges placed in memory one at a time
	spillBuf int          // write buffer of each spill file
	spills   []*spillFile // per partition; nil for the first
	part     *partMemory  // the partition in memory: its entries, from pos[lo]

	// Pass 3's state across partitions.
	longest    *chunkfmt.NodeTooLargeError
	firstChunk bool
}

// release closes and removes the temporary files; safe to call twice.
func (b *builder) release() error {
	var first error
	if b.writer != nil {
		b.writer.Abort() // no-op after a successful Close
		b.writer = nil
	}
	if b.part != nil {
		b.part.free()
		b.part = nil
	}
	for k, s := range b.spills {
		if s != nil {
			s.remove()
			b.spills[k] = nil
		}
	}
	if b.spool != nil {
		b.spool.Close()
		os.Remove(b.spool.Name())
		b.spool = nil
	}
	for _, in := range b.inputs {
		if in.name == "-" {
			os.Remove(in.path)
		}
	}
	return first
}

func (b *builder) openInputs(names []string) error {
	for _, n := range names {
		in := input{path: n, name: n}
		if n == "-" {
			// Standard input cannot be read twice (and an npy split
			// layout reads two places at once): copy it first.
			f, err := os.Create(filepath.Join(b.tmp, "stdin"))
			if err != nil {
				return fmt.Errorf("build: spooling standard input: %w", err)
			}
			nb, err := io.Copy(f, &ctxReader{b.ctx, os.Stdin})
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("build: spooling standard input: %w", err)
			}
			b.stdinBytes += nb
			in.path, in.name = f.Name(), "-"
		}
		b.inputs = append(b.inputs, in)
	}
	for i := range b.o.gens {
		g := &b.o.gens[i]
		b.inputs = append(b.inputs, input{path: g.name, name: g.name, gen: g})
	}
	return nil
}

// openInput opens in for a pass: a generated input anew (its edges
// counted on bar, as a file's bytes are), a file through OpenEdges.
func (b *builder) openInput(in *input, o ReadOptions) (*EdgeReader, error) {
	if in.gen != nil {
		return &EdgeReader{src: &countedSource{in.gen.open(), o.Progress}, format: FormatBin32}, nil
	}
	return OpenEdges(in.path, o)
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func (b *builder) readOpts(bar *progress.Bar, name string) ReadOptions {
	n := name
	if n == "-" {
		n = "stdin"
	}
	o := ReadOptions{Format: b.o.Format, NumNodes: b.o.NumNodes, Progress: bar, Name: n, DropBehind: b.dropInput}
	if b.o.Columns != nil {
		// Each column has its own bound, checked in pass 1 with a message
		// that names its node type; the reader's one bound would name
		// neither.
		o.NumNodes = 0
	}
	return o
}

// needsSpool: text is parsed once and compressed input decompressed once;
// plain binary is cheaper to read again than to copy.
func needsSpool(path string, f Format) bool {
	if f == FormatText {
		return true
	}
	fh, err := os.Open(path)
	if err != nil {
		return true
	}
	defer fh.Close()
	var head [4]byte
	n, _ := io.ReadFull(fh, head[:])
	return sniffCompression(head[:n]) != compNone
}

// readEdges (pass 1) reads every input once: it validates ids, counts
// degrees, and spools text or compressed inputs' edges as uint32 pairs.
func (b *builder) readEdges(total int64) error {
	bar := b.newBar(total, "pass 1/3: reading edges")
	defer bar.Done()
	if b.o.NumNodes > 0 {
		b.deg = make([]uint32, b.o.NumNodes)
	}
	b.maxNodes = b.mem.maxNodes()
	var maxID int64 = -1
	for i := range b.inputs {
		in := &b.inputs[i]
		r, err := b.openInput(in, b.readOpts(bar, in.name))
		if err != nil {
			return err
		}
		in.format = r.Format()
		// A generated input is spooled like a compressed one: pass 2
		// reads its pairs back (8 bytes an edge, sequentially) rather
		// than generating them again, which costs more CPU than the
		// disk's sequential rate costs time.
		in.spooled = in.gen != nil || needsSpool(in.path, r.Format())
		if in.spooled && b.spool == nil {
			f, err := os.Create(filepath.Join(b.tmp, "edges.spool"))
			if err != nil {
				r.Close()
				return fmt.Errorf("build: %w", err)
			}
			b.spool, b.spoolW = f, bufio.NewWriterSize(&sequentialFile{f: f}, readBufSize)
		}
		err = b.count(r, in, bar, &maxID)
		r.Close()
		if err != nil {
			return err
		}
	}
	if b.spoolW != nil {
		if err := b.spoolW.Flush(); err != nil {
			return fmt.Errorf("build: writing the edge spool: %w", err)
		}
	}
	switch {
	case b.o.NumNodes > 0:
		b.numNodes = b.o.NumNodes
	case maxID < 0:
		return errors.New("build: the input has no edges; give --num-nodes to build a graph of isolated nodes")
	default:
		b.numNodes = uint32(maxID + 1)
	}
	b.deg = b.deg[:b.numNodes]
	// Degrees become offsets; the degree array is dropped before the
	// offsets are filled further (peak 12 bytes per node).
	b.pos = make([]uint64, uint64(b.numNodes)+1)
	var sum uint64
	var maxDeg uint32
	var maxNode uint32
	for i, d := range b.deg {
		b.pos[i] = sum
		sum += uint64(d)
		if d > maxDeg {
			maxDeg, maxNode = d, uint32(i)
		}
	}
	b.pos[b.numNodes] = sum
	b.deg = nil
	b.entries = sum
	b.maxDeg = maxDeg
	// Now that the entries and degrees are known, the rest of the build's
	// memory is too (the chunk being written, the sorting scratch).
	what := fmt.Sprintf("%d nodes, %d adjacency entries, largest degree %d", b.numNodes, sum, maxDeg)
	if err := b.mem.check(uint64(b.numNodes), sum, maxDeg, what, "give a smaller --chunk-size"); err != nil {
		return err
	}
	if !b.o.Dedup && b.o.SelfLoops != chunkfmt.SelfLoopsDrop {
		// Nothing will shorten the lists: a node too large for a chunk
		// is known now, before passes 2 and 3.
		if err := b.checkFits(maxNode, int(maxDeg)); err != nil {
			return err
		}
	}
	b.parts, b.spillBuf = planPartitions(b.pos, maxDeg, b.mem.edgeMemory(uint64(b.numNodes), sum, maxDeg))
	b.sum.Partitions = len(b.parts)
	return nil
}

// checkFits fails when node, the one with the longest adjacency (degree
// entries), does not fit in an empty chunk of the build's chunk size. The
// error gives the smallest chunk size that holds it, which, as no node has
// more, builds the graph.
func (b *builder) checkFits(node uint32, degree int) error {
	need := chunkfmt.MinChunkSizeFor(degree)
	if need <= b.o.ChunkSize {
		return nil
	}
	return chunkTooSmall(&chunkfmt.NodeTooLargeError{Node: node, Degree: degree, ChunkSize: b.o.ChunkSize, MinChunkSize: need})
}

// chunkTooSmall wraps e, which must describe the node with the longest
// adjacency in the graph, with the --chunk-size to rebuild with.
func chunkTooSmall(e *chunkfmt.NodeTooLargeError) error {
	if e.MinChunkSize > chunkfmt.MaxChunkSize {
		return fmt.Errorf("build: %w", e)
	}
	return fmt.Errorf("build: %w (the longest adjacency of the graph, with the chunk header and %d-byte alignment): rebuild with --chunk-size %d (%s) or larger",
		e, chunkfmt.SectorSize, e.MinChunkSize, progress.Bytes(e.MinChunkSize))
}

func (b *builder) count(r *EdgeReader, in *input, bar *progress.Bar, maxID *int64) error {
	rev, sym := b.o.Reverse, b.o.Symmetrize
	var buf []byte
	for {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		p, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if c := b.o.Columns; c != nil {
			if err := c.check(p, in); err != nil {
				return err
			}
		}
		var m uint32
		for _, x := range p {
			m = max(m, x)
		}
		if len(p) > 0 && int64(m) > *maxID {
			*maxID = int64(m)
			if int(m) >= len(b.deg) {
				// Unknown node count: grow as ids appear, checking that
				// the graph this id implies fits the memory budget, and
				// never doubling past what the budget holds.
				if uint64(m)+1 > b.maxNodes {
					what := fmt.Sprintf("%s: node id %d", b.readOpts(nil, in.name).Name, m)
					if err := b.mem.check(uint64(m)+1, 0, 0, what, "node ids must be numbered from 0 without large gaps (renumber them)"); err != nil {
						return err
					}
				}
				nd := make([]uint32, max(int(m)+1, min(2*len(b.deg), int(b.maxNodes))))
				copy(nd, b.deg)
				b.deg = nd
			}
		}
		deg := b.deg
		before := b.entries
		switch {
		case sym:
			for k := 0; k+1 < len(p); k += 2 {
				deg[p[k]]++
				deg[p[k+1]]++
			}
			b.entries += uint64(len(p))
		case rev:
			for k := 0; k+1 < len(p); k += 2 {
				deg[p[k+1]]++
			}
			b.entries += uint64(len(p) / 2)
		default:
			for k := 0; k+1 < len(p); k += 2 {
				deg[p[k]]++
			}
			b.entries += uint64(len(p) / 2)
		}
		if b.entries>>32 != before>>32 {
			// Past 2^32 entries a uint32 degree could wrap; check.
			if err := b.checkDegrees(); err != nil {
				return err
			}
		}
		in.edges += uint64(len(p) / 2)
		bar.AddItems(int64(len(p) / 2))
		if in.spooled {
			buf = slices.Grow(buf[:0], 4*len(p))[:4*len(p)]
			for k, x := range p {
				binary.LittleEndian.PutUint32(buf[4*k:], x)
			}
			if _, err := b.spoolW.Write(buf); err != nil {
				return fmt.Errorf("build: writing the edge spool: %w", err)
			}
		}
	}
}

// checkDegrees fails when a node has more entries than any chunk holds;
// it runs each time the entry count crosses a multiple of 2^32, often
// enough that no uint32 degree can have wrapped unseen.
func (b *builder) checkDegrees() error {
	limit := uint32(chunkfmt.MaxChunkSize/4 - 4)
	for i, d := range b.deg {
		if d > limit {
			return fmt.Errorf("build: node %d has more than %d neighbors: too many for any chunk (max %d bytes)", i, limit, int64(chunkfmt.MaxChunkSize))
		}
	}
	return nil
}

func (b *builder) newBar(total int64, label string) *progress.Bar {
	bar := progress.New(b.o.Progress, total, label, b.o.Progress != nil)
	bar.SetUnit("edges")
	return bar
}

// placeEdges (pass 2) reads the edges again. With one partition it
// scatters every edge into its source's range of the CSR, in memory; with
// more, it places the first partition's edges so and appends every other
// partition's to that partition's spill file.
func (b *builder) placeEdges() error {
	var inEdges int64
	for _, in := range b.inputs {
		inEdges += int64(in.edges)
	}
	label := "pass 2/3: placing edges"
	if len(b.parts) > 1 {
		label = fmt.Sprintf("pass 2/3: placing edges, spilling %d partitions", len(b.parts)-1)
	}
	bar := b.newBar(inEdges*8, label)
	defer bar.Done()
	b.part = allocPart(maxEntries(b.pos, b.parts))
	var rt *router
	if len(b.parts) > 1 {
		b.spills = make([]*spillFile, len(b.parts))
		for k := 1; k < len(b.parts); k++ {
			s, err := createSpill(b.tmp, k, b.spillBuf)
			if err != nil {
				return err
			}
			b.spills[k] = s
		}
		rt = newRouter(b.parts, b.spills)
	}
	first := b.parts[0]
	csr := b.part.words[:b.pos[first.hi]-b.pos[first.lo]]
	var spoolR *bufio.Reader
	if b.spool != nil {
		if _, err := b.spool.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("build: %w", err)
		}
		spoolR = bufio.NewReaderSize(&sequentialFile{f: b.spool}, readBufSize)
	}
	pairs := make([]uint32, 2*buildBatch)
	raw := make([]byte, 8*buildBatch)
	sc := b.newScatterer(csr, first, rt != nil)
	defer sc.stop()
	for _, in := range b.inputs {
		var r *EdgeReader
		if !in.spooled {
			o := b.readOpts(nil, in.name)
			o.NumNodes = b.numNodes // ids were checked in pass 1; this guards against a changed file
			var err error
			if r, err = b.openInput(&in, o); err != nil {
				return err
			}
		}
		left := in.edges
		for {
			if err := b.ctx.Err(); err != nil {
				if r != nil {
					r.Close()
				}
				return err
			}
			var p []uint32
			if r == nil {
				n := min(left, buildBatch)
				if n == 0 {
					break
				}
				if _, err := io.ReadFull(spoolR, raw[:8*n]); err != nil {
					return fmt.Errorf("build: reading the edge spool: %w", err)
				}
				for k := range 2 * int(n) {
					pairs[k] = binary.LittleEndian.Uint32(raw[4*k:])
				}
				p = pairs[:2*n]
				left -= n
			} else {
				var err error
				p, err = r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					r.Close()
					return err
				}
				if uint64(len(p)/2) > left {
					r.Close()
					return fmt.Errorf("build: %s changed while it was being read (more edges on the second pass)", in.name)
				}
				left -= uint64(len(p) / 2)
			}
			n := len(p) / 2
			if rt != nil {
				var err error
				if p, err = rt.route(p, b.o.Symmetrize, b.o.Reverse); err != nil {
					if r != nil {
						r.Close()
					}
					return err
				}
			}
			if err := sc.add(p); err != nil {
				if r != nil {
					r.Close()
				}
				return fmt.Errorf("build: %s: %w", in.name, err)
			}
			bar.Add(int64(n) * 8)
			bar.AddItems(int64(n))
		}
		if r != nil {
			r.Close()
		}
		if left != 0 {
			return fmt.Errorf("build: %s changed while it was being read (%d fewer edges on the second pass)", in.name, left)
		}
	}
	if err := sc.stop(); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	for _, s := range b.spills {
		if s != nil {
			if err := s.finish(); err != nil {
				return err
			}
			b.sum.SpilledBytes += s.written
		}
	}
	if err := b.placed(first, 0); err != nil {
		return err
	}
	// Done with the spool: free its disk space now.
	if b.spool != nil {
		b.spool.Close()
		os.Remove(b.spool.Name())
		b.spool = nil
	}
	return nil
}

// placed turns the cursors of partition pt, which placing advanced to the
// end of each node's range, back into start offsets (start: its first
// node's, saved before placing), and checks that the partition received
// the entries pass 1 counted for it.
func (b *builder) placed(pt partition, start uint64) error {
	pos := b.pos
	if pt.hi == pt.lo {
		return nil
	}
	// Node hi-1's cursor must have reached node hi's start, which no
	// placing of this partition moves.
	if pos[pt.hi-1] != pos[pt.hi] {
		return errors.New("build: the inputs changed between the two passes (degree counts disagree)")
	}
	for i := pt.hi - 1; i > pt.lo; i-- {
		pos[i] = pos[i-1]
	}
	pos[pt.lo] = start
	return nil
}

// loadPartition (pass 3) reads partition k's spill file in order and
// places its entries in memory, then removes the file.
func (b *builder) loadPartition(k int) error {
	reached(stepLoad)
	pt := b.parts[k]
	s := b.spills[k]
	start := b.pos[pt.lo]
	csr := b.part.words[:b.pos[pt.hi]-start]
	b.part.populate(uint64(len(csr))) // pass 3 of the partition before dropped its pages
	rd, err := newSpillReader(s, make([]byte, spillReadBuf), make([]uint32, spillReadBuf/4))
	if err != nil {
		return err
	}
	sc := b.newScatterer(csr, pt, true)
	defer sc.stop()
	for {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		p, err := rd.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := sc.add(p); err != nil {
			return fmt.Errorf("build: %s: %w", s.f.Name(), err)
		}
	}
	if err := sc.stop(); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	s.remove()
	b.spills[k] = nil
	return b.placed(pt, start)
}

func wordsOf(b []byte) []uint32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}

var errChanged = errors.New("the input changed between the two passes (a node has more edges than counted)")

// scatterer places edges into the CSR with one worker per range of
// source nodes (ranges of equal entry counts). The producer splits each
// batch by range, branch-free, into one (source, value) list per worker,
// so that every worker reads only its own entries (rather than every
// batch, skipping half on an unpredictable branch) and writes only its
// own nodes' cursors and CSR region: the workers never share a cache line
// of pos or csr, and each one's random writes fall in a smaller region.
type scatterer struct {
	b        *builder
	csr      []uint32 // the partition's entries
	base     uint64   // the CSR offset of csr[0]
	oriented bool     // batches hold stored (source, value) entries, not input edges
	bnd      []uint32 // bnd[k] is the first node of worker k+1
	chans    []chan *scatterBatch
	free     chan *scatterBatch
	wg       sync.WaitGroup
	errs     []error // per worker; read after wg.Wait
	failed   atomic.Bool
	done     bool
}

type scatterBatch struct {
	parts [][]uint32 // per worker: (source, value) words
	left  atomic.Int32
}

// newScatterer places the entries of partition pt, whose memory is csr,
// with pt's start offsets in b.pos; oriented says that the batches hold
// stored entries (the router's or a spill file's), not input edges.
func (b *builder) newScatterer(csr []uint32, pt partition, oriented bool) *scatterer {
	w := max(1, runtime.GOMAXPROCS(0))
	base := b.pos[pt.lo]
	entries := uint64(len(csr))
	if entries < 1<<16 || pt.hi-pt.lo < uint32(w) {
		w = 1
	}
	s := &scatterer{b: b, csr: csr, base: base, oriented: oriented, chans: make([]chan *scatterBatch, w), free: make(chan *scatterBatch, w+2), errs: make([]error, w)}
	for range cap(s.free) {
		bt := &scatterBatch{parts: make([][]uint32, w)}
		for k := range bt.parts {
			// Room for an even share and some; split grows a part that
			// needs more.
			bt.parts[k] = make([]uint32, 0, 2*buildBatch/w*9/8+64)
		}
		s.free <- bt
	}
	lo := pt.lo
	for k := range w {
		hi := pt.hi
		if k < w-1 {
			// First node whose start offset reaches (k+1)/w of the entries.
			target := base + entries*uint64(k+1)/uint64(w)
			hi = pt.lo + uint32(sortSearch(int(pt.hi-pt.lo), func(i int) bool { return b.pos[pt.lo+uint32(i)] >= target }))
			hi = max(hi, lo)
			s.bnd = append(s.bnd, hi)
		}
		s.chans[k] = make(chan *scatterBatch, cap(s.free))
		s.wg.Add(1)
		go s.work(k)
		lo = hi
	}
	return s
}

func sortSearch(n int, f func(int) bool) int {
	i, j := 0, n
	for i < j {
		h := int(uint(i+j) >> 1)
		if !f(h) {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

// add splits a batch by worker (stored source, value) and hands each
// worker its part. p may hold more edges than buildBatch; it is split.
func (s *scatterer) add(p []uint32) error {
	for len(p) > 2*buildBatch {
		if err := s.add(p[:2*buildBatch]); err != nil {
			return err
		}
		p = p[2*buildBatch:]
	}
	if s.failed.Load() {
		return errChanged
	}
	bt := <-s.free
	s.split(bt, p)
	bt.left.Store(int32(len(s.chans)))
	for _, c := range s.chans {
		c <- bt
	}
	return nil
}

// split writes the stored entries of the edges in p into bt.parts by the
// worker owning their source. The worker index is computed without a
// branch (a comparison per boundary, summed as 0/1).
func (s *scatterer) split(bt *scatterBatch, p []uint32) {
	parts := bt.parts
	var fill [64]int
	var cnt []int
	if len(parts) <= len(fill) {
		cnt = fill[:len(parts)]
	} else {
		cnt = make([]int, len(parts))
	}
	for k := range parts {
		parts[k] = parts[k][:cap(parts[k])]
	}
	bnd := s.bnd
	owner := func(u uint32) int {
		w := 0
		for _, b := range bnd {
			w += oneIf(u >= b)
		}
		return w
	}
	put := func(u, v uint32) {
		w := owner(u)
		d, c := parts[w], cnt[w]
		if c+2 > len(d) {
			d = slices.Grow(d[:c], max(c, 64))
			d = d[:cap(d)]
			parts[w] = d
		}
		d[c] = u
		d[c+1] = v
		cnt[w] = c + 2
	}
	switch {
	case s.oriented:
		for k := 0; k+1 < len(p); k += 2 {
			put(p[k], p[k+1])
		}
	case s.b.o.Symmetrize:
		for k := 0; k+1 < len(p); k += 2 {
			u, v := p[k], p[k+1]
			put(u, v)
			put(v, u)
		}
	case s.b.o.Reverse:
		for k := 0; k+1 < len(p); k += 2 {
			put(p[k+1], p[k])
		}
	default:
		for k := 0; k+1 < len(p); k += 2 {
			put(p[k], p[k+1])
		}
	}
	for k := range parts {
		parts[k] = parts[k][:cnt[k]]
	}
}

// oneIf returns 1 if cond holds, else 0.
func oneIf(cond bool) int {
	if cond {
		return 1
	}
	return 0
}

// stop waits for the workers and returns the first error; idempotent.
func (s *scatterer) stop() error {
	if !s.done {
		s.done = true
		for _, c := range s.chans {
			close(c)
		}
		s.wg.Wait()
	}
	for _, e := range s.errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func (s *scatterer) work(k int) {
	defer s.wg.Done()
	for bt := range s.chans[k] {
		if s.errs[k] == nil {
			if s.errs[k] = s.b.placePairs(s.csr, s.base, bt.parts[k]); s.errs[k] != nil {
				s.failed.Store(true)
			}
		}
		if bt.left.Add(-1) == 0 {
			s.free <- bt
		}
	}
}

// placePairs places (source, value) words at their sources' cursors,
// advancing them; csr holds the entries from CSR offset base on. The
// check catches an input that changed between the passes before it could
// write outside the partition.
func (b *builder) placePairs(csr []uint32, base uint64, p []uint32) error {
	pos := b.pos
	limit := uint64(len(csr))
	for k := 0; k+1 < len(p); k += 2 {
		u := p[k]
		c := pos[u] - base
		if c >= limit {
			return errChanged
		}
		csr[c] = p[k+1]
		pos[u] = c + base + 1
	}
	return nil
}

// window is a run of nodes whose adjacency pass 3 sorts as one job.
type window struct {
	lo, hi uint32
	done   chan struct{}
	// Filled by the worker: each node's length after dedup and the
	// self-loop rule (its list compacted in place), and what was dropped.
	lens          []uint32
	dups, selfLps uint64
}

// sortAndWrite (pass 3) takes the partitions in node order, each in
// memory (the first is there from pass 2; every other is read from its
// spill file), sorts each node's adjacency (workers, a window of nodes at
// a time), then removes duplicates and self-loops as asked and appends
// the nodes, in order, to the chunk writer.
func (b *builder) sortAndWrite() error {
	bar := b.newBar(int64(b.entries)*4, "pass 3/3: sorting, writing chunks")
	defer bar.Done()
	opts := chunkfmt.Options{Symmetrize: b.o.Symmetrize, Reverse: b.o.Reverse, Dedup: b.o.Dedup, SelfLoops: b.o.SelfLoops}
	w, err := chunkfmt.NewWriter(b.tmp, b.numNodes, b.o.ChunkSize, opts)
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	if b.o.CreatedBy != "" {
		w.CreatedBy = b.o.CreatedBy
	}
	b.writer = w
	w.SizeHint(b.entries) // an upper bound: dedup and self-loops only shrink it
	b.firstChunk = true
	for k, pt := range b.parts {
		if k > 0 {
			if err := b.loadPartition(k); err != nil {
				return err
			}
		}
		if err := b.writePartition(pt, bar); err != nil {
			return err
		}
	}
	if b.longest != nil {
		b.longest.MinChunkSize = chunkfmt.MinChunkSizeFor(b.longest.Degree)
		return chunkTooSmall(b.longest)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	m := w.Manifest()
	b.writer = nil
	b.sum.NumNodes = m.NumNodes
	b.sum.NumEdges = m.NumEdges
	b.sum.NumChunks = len(m.Chunks)
	b.sum.MaxDegree = m.MaxDegree
	b.sum.Options = m.Options
	for _, in := range b.inputs {
		b.sum.InputEdges += in.edges
	}
	return nil
}

// writePartition sorts, filters and appends the nodes of partition pt,
// placed in b.part.
func (b *builder) writePartition(pt partition, bar *progress.Bar) error {
	w := b.writer
	pos := b.pos
	base := pos[pt.lo]
	csr := b.part.words
	var dropped uint64 // b.part's words before this were handed back
	workers := max(1, runtime.GOMAXPROCS(0))
	ahead := 2*workers + 2
	dedup, drop := b.o.Dedup, b.o.SelfLoops == chunkfmt.SelfLoopsDrop
	windows := make(chan *window, ahead)
	jobs := make(chan *window, ahead)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		// The workers write into the partition's memory: they must be
		// finished before the next partition is loaded into it or it is
		// freed.
		close(quit)
		wg.Wait()
	}()
	wg.Add(1 + workers)
	// Dispatcher: cut the node range into windows of about 1 Mi entries.
	go func() {
		defer wg.Done()
		defer close(windows)
		defer close(jobs)
		const target = 1 << 20
		for lo := pt.lo; lo < pt.hi; {
			hi := lo
			for hi < pt.hi && (hi == lo || pos[hi+1]-pos[lo] <= target) && hi-lo < 1<<16 {
				hi++
			}
			win := &window{lo: lo, hi: hi, done: make(chan struct{})}
			select {
			case windows <- win:
			case <-quit:
				return
			}
			jobs <- win
			lo = hi
		}
	}()
	for range workers {
		go func() {
			defer wg.Done()
			var tmp []uint32
			for win := range jobs {
				win.lens = make([]uint32, win.hi-win.lo)
				for u := win.lo; u < win.hi; u++ {
					adj := csr[pos[u]-base : pos[u+1]-base]
					if len(adj) > 1 {
						tmp = sortAdj(adj, tmp)
					}
					if dedup || drop {
						k := 0
						for _, x := range adj {
							if drop && x == u {
								win.selfLps++
								continue
							}
							if dedup && k > 0 && x == adj[k-1] {
								win.dups++
								continue
							}
							adj[k] = x
							k++
						}
						adj = adj[:k]
					}
					win.lens[u-win.lo] = uint32(len(adj))
				}
				close(win.done)
			}
		}()
	}
	// longest is set once a node did not fit in a chunk: from then on the
	// windows are only sorted and deduplicated, to find the node with the
	// longest list, whose size is the one to suggest (the first node too
	// large is seldom the largest).
	longest := b.longest
	defer func() { b.longest = longest }()
	for win := range windows {
		select {
		case <-win.done:
		case <-b.ctx.Done():
			return b.ctx.Err()
		}
		if err := b.ctx.Err(); err != nil {
			return err
		}
		b.sum.DuplicatesDropped += win.dups
		b.sum.SelfLoopsDropped += win.selfLps
		for u := win.lo; u < win.hi; u++ {
			n := win.lens[u-win.lo]
			if longest != nil {
				if int(n) > longest.Degree {
					longest.Node, longest.Degree = u, int(n)
				}
				continue
			}
			s := pos[u] - base
			if err := w.Append(csr[s : s+uint64(n)]); err != nil {
				var tl *chunkfmt.NodeTooLargeError
				if !errors.As(err, &tl) {
					return fmt.Errorf("build: %w", err)
				}
				longest = &chunkfmt.NodeTooLargeError{Node: tl.Node, Degree: tl.Degree, ChunkSize: tl.ChunkSize}
			}
		}
		dropped = b.part.drop(dropped, pos[win.hi]-base)
		bar.Add(int64(pos[win.hi]-pos[win.lo]) * 4)
		bar.AddItems(int64(pos[win.hi] - pos[win.lo]))
		if b.firstChunk {
			b.firstChunk = false
			reached(stepChunk)
		}
	}
	return nil
}

// procIO is the process's storage reads and writes so far
// (internal/procio), -1 each where the system keeps no such counters.
func procIO() (read, write int64) {
	c, err := procio.Self()
	if err != nil {
		return -1, -1
	}
	return c.ReadBytes, c.WriteBytes
}
