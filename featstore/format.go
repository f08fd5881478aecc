package featstore

import "errors"

// FormatVersion is the version of features.json this package writes and
// reads. Version 2 checks every row of the features (a CRC-32C per row)
// and every page of the labels (a CRC-32C per LabelCRCSpan bytes), in a
// .crc file beside each data file, and the manifest itself (its checksum
// field); version 1 had one CRC per 4 MiB block, which a read of one row
// cannot check, and no checksum of the manifest: a version 1 store is
// refused, with the command that rebuilds it.
const FormatVersion = 2

// ManifestFile is the name of the manifest inside a graph directory.
const ManifestFile = "features.json"

// The features have a CRC-32C per row: a reader checks exactly the rows
// it delivers, however it read them (a planned extent, a buffered run, a
// whole file). A CRC per page would make a planned epoch checksum every
// page it reads — 16.7 times the bytes of the rows it delivers, for
// 256-byte rows scattered over the file — and cost it more
// (BenchmarkCheckedEpoch in featrows, medians of 5: +5.6% of an O_DIRECT
// epoch and +15.5% from the page cache per page, against +1.9% and +4.5%
// per row; docs/PERFORMANCE.md). The CRCs take 4 bytes per node, held in
// memory while the store is open (as an int32 per node does).
//
// LabelCRCSpan is the span of each CRC-32C of the labels: a 4 KiB page.
// A CRC per 4-byte label would double the file and its memory, and
// labels are read a minibatch's seeds at a time, where a page each costs
// nothing.
const LabelCRCSpan = 4096

// MaxNumClasses is the largest num_classes: labels are int32 class ids,
// 0..2^31−1, so num_classes (largest label + 1) may be 2^31, which is
// why it is an int64.
const MaxNumClasses = 1 << 31

// Sentinel errors, for callers that branch on the kind of failure.
var (
	// ErrNoFeatures: the graph directory has no features.json.
	ErrNoFeatures = errors.New("featstore: no feature store in the graph directory")
	// ErrBadManifest: features.json is not a valid manifest (malformed,
	// edited — its checksum differs —, or of another format version).
	ErrBadManifest = errors.New("featstore: invalid manifest")
	// ErrCorrupt: a data file does not match its manifest (size, a row's
	// or a page's CRC-32C, a label out of range); the error is a
	// *DefectError.
	ErrCorrupt = errors.New("featstore: corrupt feature store")
	// ErrShape: rows, dimension or dtype differ from what was declared
	// or from the graph's num_nodes.
	ErrShape = errors.New("featstore: shape mismatch")
	// ErrGraphMismatch: the store was packed for another graph (its
	// fingerprint differs from the directory's manifest.json).
	ErrGraphMismatch = errors.New("featstore: feature store belongs to another graph")
	// ErrExists: a store exists and Options.Force was not given.
	ErrExists = errors.New("featstore: feature store already exists")
	// ErrClosed: the Writer was closed or aborted.
	ErrClosed = errors.New("featstore: writer closed")
)
