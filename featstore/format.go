package featstore

import (
	"errors"
	"fmt"
)

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

// DType is the element type of the feature matrix.
type DType string

// The feature dtypes.
const (
	Float32 DType = "float32"
	Float16 DType = "float16"
	Int8    DType = "int8"
	Uint8   DType = "uint8"
)

// LabelDType is the only element type of labels: little-endian int32,
// NoLabel for a node without one.
const LabelDType = "int32"

// NoLabel is the label of a node that has none (OGB's NaN).
const NoLabel int32 = -1

// Size returns the bytes per element, 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case Float32:
		return 4
	case Float16:
		return 2
	case Int8, Uint8:
		return 1
	}
	return 0
}

// ParseDType parses a dtype name: float32, float16, int8 or uint8.
func ParseDType(s string) (DType, error) {
	d := DType(s)
	if d.Size() == 0 {
		return "", fmt.Errorf("%w: dtype %q: want float32, float16, int8 or uint8", ErrShape, s)
	}
	return d, nil
}

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
