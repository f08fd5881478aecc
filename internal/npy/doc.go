// Package npy writes NumPy's .npy array format (version 1.0) and .npz
// archives of them, which numpy.load opens without any other dependency.
//
// Only what a writer of little-endian numeric arrays needs is here: a
// header (dtype descriptor, shape, C order) padded so that the data starts
// on a 64-byte boundary, as NumPy itself writes it, then the raw
// little-endian data. An int32 matrix too large to hold is written
// through a memory mapping of its file instead (MappedInt32: walk's
// output). Readers of .npy live with their callers (ingest reads node-id
// lists).
package npy
