package epochdir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/klauspost/compress/zstd"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
	"github.com/streamsampler/streamsampler/internal/crc32c"
	"github.com/streamsampler/streamsampler/internal/failpoint"
	"github.com/streamsampler/streamsampler/internal/hostorder"
)

// FormatVersion is the version of the epoch directory layout written by
// Write; Read rejects other versions. Version 2 added the manifest's
// checksum and identity.
const FormatVersion = 2

// ManifestName is the file that describes an epoch directory. Write puts
// it in place before the directory becomes visible, so a directory under
// its final name is always complete.
const ManifestName = "manifest.json"

const formatName = "streamsampler-epoch"

// ErrCorrupt is wrapped by Read when an epoch directory is damaged: a
// missing or truncated file, a checksum mismatch, a bad Manifest, or
// arrays that break the epoch's invariants.
var ErrCorrupt = errors.New("epoch: corrupt epoch directory")

// WriteOptions controls Write.
type WriteOptions struct {
	// Compress is "" (raw arrays) or "zstd".
	Compress string
	// Overwrite replaces an existing directory; otherwise Write fails on
	// one with an error wrapping fs.ErrExist.
	Overwrite bool
	// Identity, when set, is recorded in the manifest: what the epoch was
	// sampled from besides its Key and fanouts. A state directory's
	// epochs carry it (State.Open checks it against config.json).
	Identity *Identity
}

// The steps of Write, in order: each is a failpoint (FailpointPrefix +
// step; internal/failpoint), hit before the step (and StepInstalled once
// the directory is installed), the seam of the kill and full-disk tests.
// StepWrite is followed by the file's name ("write manifest.json").
const (
	StepMkdir     = "mkdir"     // the hidden temporary directory
	StepWrite     = "write "    // one file inside it
	StepInstall   = "install"   // the rename into place: the commit point
	StepInstalled = "installed" // after it; a failure here is rolled back
)

// FailpointPrefix begins the names of Write's failpoints.
const FailpointPrefix = "epochdir/"

func step(name string) error { return failpoint.Hit(FailpointPrefix + name) }

// Identity is what an epoch was sampled from beyond its Key and fanouts:
// the graph, the training set and this rank's place among the ranks. With
// it a manifest says on its own which run it belongs to.
type Identity struct {
	Graph     chunkfmt.Fingerprint `json:"graph_fingerprint"`
	Train     TrainSet             `json:"train_set"`
	Rank      int                  `json:"rank"`
	WorldSize int                  `json:"world_size"`
}

// TrainSet identifies a set of training nodes without storing it: the
// number of distinct ids and a CRC-32C over them, sorted, as little-endian
// words. A training file edited between two prepares changes it.
type TrainSet struct {
	Count  int    `json:"count"`
	CRC32C uint32 `json:"crc32c"`
}

// TrainSetOf returns the TrainSet of ids (any order; duplicates count
// once, as they do for Shard).
func TrainSetOf(ids []uint32) TrainSet {
	s := slices.Compact(slices.Sorted(slices.Values(ids)))
	return TrainSet{Count: len(s), CRC32C: crc32c.Checksum(leBytes(hostorder.Bytes(s)))}
}

// manifest is manifest.json. Checksum is a CRC-32C over the manifest's
// canonical encoding with Checksum zero (metaChecksum), so that an edited
// field is caught even where the arrays still match.
// Manifest is an epoch directory's manifest.json: what Read checks the
// arrays against, and what a state directory checks against its
// configuration.
type Manifest struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	Seed    uint64 `json:"seed"`
	Epoch   uint32 `json:"epoch"`
	Replace bool   `json:"replace"`
	Fanouts []int  `json:"fanouts"`
	// EdgeIDs says the epoch has edge ids: after the other arrays, one
	// edges-<l> array (int64) per layer. Omitted when false, so epochs
	// without edge ids keep the manifest (and checksum) they always had.
	EdgeIDs  bool        `json:"edge_ids,omitempty"`
	Identity *Identity   `json:"identity,omitempty"`
	Arrays   []arrayInfo `json:"arrays"`
	Checksum uint32      `json:"checksum"`
}

// checksum returns the manifest's metaChecksum.
func (m Manifest) checksum() uint32 {
	m.Checksum = 0
	return crc32c.OfJSON(m)
}

// arrayInfo describes one array file; CRC32C is over the raw
// little-endian bytes, before compression.
type arrayInfo struct {
	Name        string `json:"name"`
	File        string `json:"file"`
	DType       string `json:"dtype"`
	Length      int64  `json:"length"`
	Compression string `json:"compression"`
	CRC32C      uint32 `json:"crc32c"`
}

// leBytes returns the little-endian encoding of 32-bit words held in b
// (native order): b itself on little-endian hosts.
func leBytes(b []byte) []byte {
	if hostorder.LittleEndian {
		return b
	}
	out := make([]byte, len(b))
	for i := 0; i+4 <= len(b); i += 4 {
		out[i], out[i+1], out[i+2], out[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	return out
}

// swapInPlace turns little-endian words into native ones.
func swapInPlace(b []byte) {
	if hostorder.LittleEndian {
		return
	}
	for i := 0; i+4 <= len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
}

// leBytes64 is leBytes for 64-bit words.
func leBytes64(b []byte) []byte {
	if hostorder.LittleEndian {
		return b
	}
	out := make([]byte, len(b))
	for i := 0; i+8 <= len(b); i += 8 {
		for j := range 8 {
			out[i+j] = b[i+7-j]
		}
	}
	return out
}

// swapInPlace64 is swapInPlace for 64-bit words.
func swapInPlace64(b []byte) {
	if hostorder.LittleEndian {
		return
	}
	for i := 0; i+8 <= len(b); i += 8 {
		for j := range 4 {
			b[i+j], b[i+7-j] = b[i+7-j], b[i+j]
		}
	}
}

// int64Bytes views a as its bytes in native order.
func int64Bytes(a []int64) []byte {
	if len(a) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), len(a)*8)
}

// arrayNames lists the arrays of an epoch of the given fanouts in
// manifest order; with edge ids, edges-<l> of every layer follow the
// others (so the positions of the frontier and sample arrays do not depend
// on them), and then offsets-<l> (int64, len(frontier-<l>)+1: the rows of
// a CSR) of each full layer (fanout epoch.AllNeighbors), whose
// samples-<l> holds every neighbor of each frontier node, row after row.
func arrayNames(fanouts []int, edgeIDs bool) (names, dtypes []string) {
	L := len(fanouts)
	for l := 0; l < L; l++ {
		names = append(names, fmt.Sprintf("frontier-%d", l), fmt.Sprintf("samples-%d", l))
		dtypes = append(dtypes, "uint32", "int32")
	}
	names = append(names, fmt.Sprintf("frontier-%d", L))
	dtypes = append(dtypes, "uint32")
	if edgeIDs {
		for l := 0; l < L; l++ {
			names = append(names, fmt.Sprintf("edges-%d", l))
			dtypes = append(dtypes, "int64")
		}
	}
	for _, l := range fullLayers(fanouts) {
		names = append(names, fmt.Sprintf("offsets-%d", l))
		dtypes = append(dtypes, "int64")
	}
	return names, dtypes
}

// fullLayers lists the layers whose fanout is epoch.AllNeighbors.
func fullLayers(fanouts []int) []int {
	var out []int
	for l, k := range fanouts {
		if k == epoch.AllNeighbors {
			out = append(out, l)
		}
	}
	return out
}

// extraArray says what array i of an epoch's manifest holds when it comes
// after the frontiers and samples (i > 2L): a layer's edge ids, or a full
// layer's row offsets.
func extraArray(i int, fanouts []int, edgeIDs bool) (layer int, offsets bool) {
	j := i - 2*len(fanouts) - 1
	if edgeIDs {
		if j < len(fanouts) {
			return j, false
		}
		j -= len(fanouts)
	}
	return fullLayers(fanouts)[j], true
}

// wordsPer is the 32-bit words per element of dtype.
func wordsPer(dtype string) int64 {
	if dtype == "int64" {
		return 2
	}
	return 1
}

func fileName(name, dtype, compression string) string {
	ext := ".u32"
	switch dtype {
	case "int32":
		ext = ".i32"
	case "int64":
		ext = ".i64"
	}
	if compression == "zstd" {
		ext += ".zst"
	}
	return name + ext
}

// Write stores r as the epoch directory dir: raw little-endian arrays
// frontier-<l>.u32 and samples-<l>.i32 for each layer l, frontier-<L>.u32
// (Final), edges-<l>.i64 for each layer when r has edge ids, each with a
// .zst suffix when compressed, and manifest.json. It
// builds the directory under a hidden temporary name beside dir, syncs
// every file, renames it into place and syncs the parent, so dir is never
// seen half-written. The rename is the commit point: on any error before
// it nothing is visible, and a failure after it (syncing the parent) is
// rolled back by removing dir again, unless Overwrite replaced an older
// tree, which cannot be restored. A dir named epoch-N must hold epoch N.
func Write(dir string, r *epoch.Result, opts WriteOptions) (err error) {
	if opts.Compress != "" && opts.Compress != "zstd" {
		return fmt.Errorf("epoch: write %s: compression %q, want \"\" or \"zstd\"", dir, opts.Compress)
	}
	if err := r.CheckShape(); err != nil {
		return fmt.Errorf("epoch: write %s: %w", dir, err)
	}
	dir = filepath.Clean(dir)
	parent, base := filepath.Split(dir)
	if parent == "" {
		parent = "."
	}
	if n, ok := ParseDirName(base); ok && n != r.Key.Epoch {
		return fmt.Errorf("epoch: write %s: the result is epoch %d", dir, r.Key.Epoch)
	}
	if _, err := os.Lstat(dir); err == nil && !opts.Overwrite {
		return fmt.Errorf("epoch: write %s: %w", dir, fs.ErrExist)
	}
	if err := step(StepMkdir); err != nil {
		return fmt.Errorf("epoch: write %s: %w", dir, err)
	}
	tmp, err := atomicfile.TempDir(dir) // mkdir's mode, and its owner in the name
	if err != nil {
		return fmt.Errorf("epoch: write %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	comp := "none"
	if opts.Compress == "zstd" {
		comp = "zstd"
	}
	edgeIDs := r.HasEdgeIDs()
	m := Manifest{Format: formatName, Version: FormatVersion, Seed: r.Key.Seed, Epoch: r.Key.Epoch,
		Replace: r.Key.Replace, Fanouts: r.Fanouts(), EdgeIDs: edgeIDs, Identity: opts.Identity}
	names, dtypes := arrayNames(m.Fanouts, edgeIDs)
	L := len(r.Layers)
	for i, name := range names {
		var raw []byte
		var n int
		switch {
		case i > 2*L:
			l, offsets := extraArray(i, m.Fanouts, edgeIDs)
			e := r.Layers[l].EdgeIDs
			if offsets {
				e = r.Layers[l].Offsets
			}
			raw, n = leBytes64(int64Bytes(e)), len(e)
		case i == 2*L:
			raw, n = leBytes(hostorder.Bytes(r.Final)), len(r.Final)
		case i%2 == 0:
			f := r.Layers[i/2].Frontier
			raw, n = leBytes(hostorder.Bytes(f)), len(f)
		default:
			s := r.Layers[i/2].Samples
			raw, n = leBytes(hostorder.Bytes(s)), len(s)
		}
		file := fileName(name, dtypes[i], comp)
		if err := step(StepWrite + file); err != nil {
			return fmt.Errorf("epoch: write %s: %s: %w", dir, file, err)
		}
		if err := writeArray(filepath.Join(tmp, file), raw, comp); err != nil {
			return fmt.Errorf("epoch: write %s: %w", dir, err)
		}
		m.Arrays = append(m.Arrays, arrayInfo{Name: name, File: file, DType: dtypes[i], Length: int64(n),
			Compression: comp, CRC32C: crc32c.Checksum(raw)})
	}
	m.Checksum = m.checksum()
	js, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		return fmt.Errorf("epoch: write %s: %w", dir, err)
	}
	if err := step(StepWrite + ManifestName); err != nil {
		return fmt.Errorf("epoch: write %s: %s: %w", dir, ManifestName, err)
	}
	if err := atomicfile.WriteNew(filepath.Join(tmp, ManifestName), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("epoch: write %s: %w", dir, err)
	}
	if err := step(StepInstall); err != nil {
		return fmt.Errorf("epoch: write %s: %w", dir, err)
	}
	err = install(tmp, dir, opts.Overwrite)
	if err == nil {
		err = step(StepInstalled)
	}
	if err != nil {
		if _, serr := os.Lstat(tmp); !opts.Overwrite && errors.Is(serr, fs.ErrNotExist) {
			// The rename happened and what followed failed: take the new
			// directory away again, so that a failed Write shows nothing.
			if rerr := os.RemoveAll(dir); rerr != nil {
				err = errors.Join(err, rerr)
			} else if serr := atomicfile.SyncDir(parent); serr != nil {
				err = errors.Join(err, serr)
			}
		}
		return fmt.Errorf("epoch: write %s: %w", dir, err)
	}
	return nil
}

// install moves the finished directory tmp to dir durably. Overwriting,
// an existing dir is replaced (atomically exchanged on Linux, else moved
// aside first: dir is briefly absent, never partial). Otherwise a dir that
// appeared since Write checked is not replaced: fs.ErrExist.
func install(tmp, dir string, overwrite bool) error {
	if overwrite {
		return atomicfile.ReplaceDir(tmp, dir)
	}
	return atomicfile.MoveDir(tmp, dir)
}

// writeArray writes raw to the new file path, compressed with comp, and
// fsyncs it.
func writeArray(path string, raw []byte, comp string) (err error) {
	if comp != "zstd" {
		return atomicfile.WriteNew(path, raw, 0o644)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	// Streamed, not compressed in memory first: an array can be most of
	// the epoch's size.
	enc, err := zstd.NewWriter(f, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return err
	}
	if _, err := enc.Write(raw); err != nil {
		enc.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Sync()
}

// maxManifest bounds manifest.json: 255 layers of array entries fit in far
// less.
const maxManifest = 1 << 20

// Read loads and checks the epoch directory dir written by Write: the
// manifest's fields, every array's presence, length and CRC-32C, the
// manifest's own checksum, that a directory named epoch-N holds epoch N,
// and then the epoch invariants (Validate). Errors wrap ErrCorrupt (and
// fs.ErrNotExist for a missing file) and name the file. Read checks one
// epoch by itself; State.Open checks it against its state directory.
func Read(dir string) (*epoch.Result, error) {
	mpath := filepath.Join(dir, ManifestName)
	m, err := ReadManifest(mpath)
	if err != nil {
		return nil, err
	}
	if err := m.CheckDirName(mpath); err != nil {
		return nil, err
	}
	r := &epoch.Result{Key: epoch.Key{Seed: m.Seed, Epoch: m.Epoch, Replace: m.Replace}, Layers: make([]epoch.Layer, len(m.Fanouts))}
	L := len(m.Fanouts)
	for i, a := range m.Arrays {
		words, err := readArray(filepath.Join(dir, a.File), a)
		if err != nil {
			return nil, err
		}
		switch {
		case i > 2*L:
			if l, offsets := extraArray(i, m.Fanouts, m.EdgeIDs); offsets {
				r.Layers[l].Offsets = asInt64s(words)
			} else {
				r.Layers[l].EdgeIDs = asInt64s(words)
			}
		case i == 2*L:
			r.Final = words
		case i%2 == 0:
			r.Layers[i/2].Frontier = words
		default:
			r.Layers[i/2].Samples = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(words))), len(words))
			r.Layers[i/2].Fanout = m.Fanouts[i/2]
		}
	}
	for l := range r.Layers {
		// Layers without arrays (L = 0 aside) cannot occur: the manifest
		// check requires all of them.
		if r.Layers[l].Frontier == nil {
			r.Layers[l].Frontier = []uint32{}
		}
		if r.Layers[l].Samples == nil {
			r.Layers[l].Samples = []int32{}
		}
		if m.EdgeIDs && r.Layers[l].EdgeIDs == nil {
			r.Layers[l].EdgeIDs = []int64{}
		}
	}
	if r.Final == nil {
		r.Final = []uint32{}
	}
	// After the arrays, so that an edited array entry is reported by the
	// file it names; any other edit is caught here.
	if err := m.CheckSum(mpath); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, dir, err)
	}
	return r, nil
}

// ReadManifest reads and checks the manifest file at path (its fields and
// its own checksum; not the arrays it describes). Errors wrap ErrCorrupt.
func ReadManifest(path string) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifest+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
	}
	if len(data) > maxManifest {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrCorrupt, path, maxManifest)
	}
	return parseManifest(path, data)
}

// parseManifest decodes and checks manifest.json strictly: unknown fields,
// trailing data and any deviation from the array list Write produces are
// errors (file names are never taken from the manifest unchecked).
func parseManifest(path string, data []byte) (*Manifest, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrCorrupt, path, fmt.Sprintf(format, args...))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, bad("not a valid manifest: %v", err)
	}
	if dec.More() {
		return nil, bad("trailing data after the manifest object")
	}
	if m.Format != formatName {
		return nil, bad("format %q, want %q", m.Format, formatName)
	}
	if m.Version != FormatVersion {
		return nil, bad("version %d, this build reads version %d", m.Version, FormatVersion)
	}
	if len(m.Fanouts) > epoch.MaxLayers {
		return nil, bad("%d layers, at most %d", len(m.Fanouts), epoch.MaxLayers)
	}
	for l, k := range m.Fanouts {
		if (k < 1 || k > 1<<16) && k != epoch.AllNeighbors {
			return nil, bad("layer %d: fanout %d out of range (want 1..%d, or %d: every neighbor)", l, k, 1<<16, epoch.AllNeighbors)
		}
	}
	if id := m.Identity; id != nil && (id.WorldSize < 1 || id.Rank < 0 || id.Rank >= id.WorldSize || id.Train.Count < 0) {
		return nil, bad("identity: rank %d of world size %d, %d training nodes: out of range", id.Rank, id.WorldSize, id.Train.Count)
	}
	names, dtypes := arrayNames(m.Fanouts, m.EdgeIDs)
	if len(m.Arrays) != len(names) {
		return nil, bad("%d arrays for %d layers, want %d", len(m.Arrays), len(m.Fanouts), len(names))
	}
	for i, a := range m.Arrays {
		if a.Name != names[i] {
			return nil, bad("array %d is %q, want %q", i, a.Name, names[i])
		}
		if a.DType != dtypes[i] {
			return nil, bad("array %s: dtype %q, want %q", a.Name, a.DType, dtypes[i])
		}
		if a.Compression != "none" && a.Compression != "zstd" {
			return nil, bad("array %s: compression %q, want \"none\" or \"zstd\"", a.Name, a.Compression)
		}
		if want := fileName(a.Name, a.DType, a.Compression); a.File != want || strings.ContainsAny(a.File, `/\`) {
			return nil, bad("array %s: file %q, want %q", a.Name, a.File, want)
		}
		if a.Length < 0 || a.Length > 1<<40 {
			return nil, bad("array %s: length %d out of range", a.Name, a.Length)
		}
		L := len(m.Fanouts)
		// A full layer's samples are as many as its rows' lengths sum to:
		// its offsets' last entry, which Read checks (epoch.Validate).
		if i%2 == 1 && i < 2*L && m.Fanouts[i/2] != epoch.AllNeighbors {
			k := int64(m.Fanouts[i/2])
			if fl := m.Arrays[i-1].Length; a.Length != fl*k {
				return nil, bad("array %s: length %d, want %d (frontier %d × fanout %d)", a.Name, a.Length, fl*k, fl, k)
			}
		}
		if i > 2*L {
			l, offsets := extraArray(i, m.Fanouts, m.EdgeIDs)
			if offsets {
				if fl := m.Arrays[2*l].Length; a.Length != fl+1 {
					return nil, bad("array %s: length %d, want %d (one more than frontier %d's nodes)", a.Name, a.Length, fl+1, l)
				}
			} else if sl := m.Arrays[2*l+1].Length; a.Length != sl {
				return nil, bad("array %s: length %d, want %d (one per sample)", a.Name, a.Length, sl)
			}
		}
	}
	return &m, nil
}

// CheckSum reports a manifest whose checksum does not match its content.
func (m *Manifest) CheckSum(path string) error {
	if got := m.checksum(); got != m.Checksum {
		return fmt.Errorf("%w: %s: checksum %#08x does not match its content (%#08x): the manifest was edited or damaged",
			ErrCorrupt, path, m.Checksum, got)
	}
	return nil
}

// CheckDirName reports a manifest at .../epoch-N/manifest.json whose
// epoch is not N (an edited "epoch", a renamed directory).
func (m *Manifest) CheckDirName(path string) error {
	name := filepath.Base(filepath.Dir(path))
	if n, ok := ParseDirName(name); ok && n != m.Epoch {
		return fmt.Errorf("%w: %s: epoch %d, but the directory is %s", ErrCorrupt, path, m.Epoch, name)
	}
	return nil
}

// asInt64s views the 32-bit words of an int64 array (native order
// already) as int64s: without a copy where the buffer is 8-byte aligned,
// as Go's allocations of this size are.
func asInt64s(words []uint32) []int64 {
	n := len(words) / 2
	if n == 0 {
		return []int64{}
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(words)))%8 == 0 {
		return unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(words))), n)
	}
	out := make([]int64, n)
	copy(int64Bytes(out), hostorder.Bytes(words))
	return out
}

// readArray reads one array file into a new word-aligned buffer and checks
// its length and CRC-32C. An int64 array comes back as twice as many
// 32-bit words, in native order (asInt64s views them).
func readArray(path string, a arrayInfo) ([]uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	defer f.Close()
	per := wordsPer(a.DType)
	want := a.Length * 4 * per
	var words []uint32
	if a.Compression == "none" {
		st, err := f.Stat()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if st.Size() != want {
			return nil, fmt.Errorf("%w: %s: %d bytes, want %d (%d × %d)", ErrCorrupt, path, st.Size(), want, a.Length, 4*per)
		}
		if per == 2 {
			// Allocated as int64s, so that the view is aligned.
			words = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(make([]int64, max(a.Length, 1))))), 2*a.Length)
		} else {
			words = make([]uint32, a.Length)
		}
		if _, err := io.ReadFull(f, hostorder.Bytes(words)); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
		}
	} else {
		dec, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
		}
		defer dec.Close()
		words, err = readWords(dec, a.Length*per)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
		}
	}
	b := hostorder.Bytes(words)
	if got := crc32c.Checksum(b); got != a.CRC32C {
		return nil, fmt.Errorf("%w: %s: CRC-32C %#08x, manifest says %#08x", ErrCorrupt, path, got, a.CRC32C)
	}
	if per == 2 {
		swapInPlace64(b)
	} else {
		swapInPlace(b)
	}
	return words, nil
}

// readWords reads exactly n little-endian words from r, growing its buffer
// as data arrives so that a manifest claiming a huge length cannot make it
// allocate more than the stream holds.
func readWords(r io.Reader, n int64) ([]uint32, error) {
	words := make([]uint32, 0, min(n, 1<<20))
	for int64(len(words)) < n {
		if len(words) == cap(words) {
			words = append(words[:cap(words)], 0)[:len(words)]
		}
		free := words[len(words):min(int64(cap(words)), n)]
		got, err := io.ReadFull(r, hostorder.Bytes(free))
		if got%4 != 0 {
			return nil, fmt.Errorf("stream ends inside a word after %d bytes", int64(len(words))*4+int64(got))
		}
		words = words[:len(words)+got/4]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%d words, want %d", len(words), n)
		}
		if err != nil {
			return nil, err
		}
	}
	var one [1]byte
	if k, err := io.ReadFull(r, one[:]); k != 0 {
		return nil, fmt.Errorf("more than %d words", n)
	} else if err != io.EOF {
		return nil, err
	}
	return words, nil
}

// dirPrefix begins the name of epoch N's directory in a state directory.
const dirPrefix = "epoch-"

// DirName is the name of epoch n's directory inside a state directory.
func DirName(n uint32) string { return dirPrefix + strconv.FormatUint(uint64(n), 10) }

// ParseDirName returns N for an epoch directory named "epoch-N" (canonical
// decimal only), the name DirName gives.
func ParseDirName(name string) (uint32, bool) {
	num, ok := strings.CutPrefix(name, dirPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(num, 10, 32)
	if err != nil || strconv.FormatUint(n, 10) != num {
		return 0, false
	}
	return uint32(n), true
}
