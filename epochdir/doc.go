// Package epochdir is the on-disk format of one epoch's sampling results
// (an epoch.Result): Write and Read, the manifest, and the names of epoch
// directories inside a state directory (DirName, ParseDirName). It knows
// nothing of state directories (package statedir) or of scheduling.
//
// # Format (version 2)
//
// Write creates a directory, typically STATE/epoch-N, holding
//
//	manifest.json         format "streamsampler-epoch", version, seed, epoch,
//	                      replace, fanouts, identity (graph fingerprint,
//	                      training set, rank, world size), per array: name,
//	                      file, dtype, length (elements), compression,
//	                      crc32c; and a checksum over all of it
//	frontier-<l>.u32      frontier_l, l = 0..L, little-endian uint32
//	samples-<l>.i32       samples_l, l = 0..L-1, little-endian int32
//
// with a ".zst" suffix on the array files when compressed with zstd. The
// CRC-32C (Castagnoli) is over the raw little-endian bytes. The directory
// is built under a hidden temporary name and renamed into place after
// every file is synced, so a directory under its final name is complete;
// that rename is the epoch's commit point. Read checks every field, length
// and checksum and the invariants.
package epochdir
