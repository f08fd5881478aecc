package featstore

import "errors"

// FormatVersion is the version of features.json this package writes and
// reads. Version 2 checks every page of the data files (a CRC-32C per
// PageSize bytes, in a .crc file beside each) and the manifest itself
// (its checksum field); version 1 had one CRC per 4 MiB block, which a
// read of one row cannot check, and no checksum of the manifest: a
// version 1 store is refused, with the command that rebuilds it.
const FormatVersion = 2

// ManifestFile is the name of the manifest inside a graph directory.
const ManifestFile = "features.json"

// PageSize is the span of each CRC-32C of a data file: the 4096-byte
// page that featplan's O_DIRECT extents are aligned to, so a planned read
// checks exactly the pages it read, and a read of one row checks one page
// or two (4 KiB at 20 GB/s: about 0.2 µs). The checksums take a 1024th of
// the file (52 MB for 53 GB of rows), loaded when the store is opened.
const PageSize = 4096

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
	// ErrCorrupt: a data file does not match its manifest (size, a page's
	// CRC-32C, a label out of range); the error is a *DefectError.
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
