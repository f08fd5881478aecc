// Package featstore is the on-disk format of a graph's node features and
// labels: a header-free row-major matrix [num_nodes, dim] of one dtype
// (features-G.bin), optional int32 labels (labels-G.bin), a CRC-32C per
// row of the features and per 4 KiB page of the labels (features-G.crc,
// labels-G.crc), and their manifest, features.json, which names the
// files, their shape, the CRC-32C of each .crc file, the fingerprint of
// the graph directory (chunkfmt) they belong to, and a checksum of its
// own.
//
// Every read is checked: Open checks the manifest's checksum and loads
// the CRCs (each .crc file checked whole); ReadRows checks every row it
// returns, ReadLabels every page it reads and every label against
// num_classes; a reader of its own (an O_DIRECT planner) checks the rows
// it delivers with FeatureChecksums. A mismatch is a *DefectError
// (ErrCorrupt) naming the file, the row or rows, and their bytes: a wrong
// row is never returned.
//
// The manifest is the store's only commit point. A Writer writes the data
// files under temporary names, renames them to new generation-numbered
// names that no manifest refers to yet, and then replaces features.json
// atomically. A crash at any moment leaves either no manifest or a whole
// one naming whole files; the previous store (if any) stays readable
// until the new manifest lands. Files no manifest names are ignored by
// readers and removed by the next Writer.
//
// Rows are fixed-size and start at offset 0, so a planner finds row u at
// RowOffset(u) = u * RowBytes and can read any run of rows with one
// aligned read. docs/FORMAT.md describes the format.
package featstore
