package featstore

import "errors"

// FormatVersion is the version of features.json this package writes and
// reads.
const FormatVersion = 1

// ManifestFile is the name of the manifest inside a graph directory.
const ManifestFile = "features.json"

// DefaultBlockSize is the span of each CRC-32C of a data file: large
// enough that the list stays small (13 thousand CRCs for 53 GB), small
// enough that a checked read of one block costs little.
const DefaultBlockSize = 4 << 20

// blockAlign is what a block size must be a multiple of, so that a block
// is a whole number of O_DIRECT-aligned pages.
const blockAlign = 4096

// Sentinel errors, for callers that branch on the kind of failure.
var (
	// ErrNoFeatures: the graph directory has no features.json.
	ErrNoFeatures = errors.New("featstore: no feature store in the graph directory")
	// ErrBadManifest: features.json is not a valid manifest.
	ErrBadManifest = errors.New("featstore: invalid manifest")
	// ErrCorrupt: a data file does not match its manifest (size, CRC,
	// label range); the error is a *DefectError.
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
