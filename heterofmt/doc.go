// Package heterofmt is the on-disk format of a heterogeneous graph
// directory (docs/FORMAT.md, "Heterogeneous graph directories"): typed
// nodes with per-type local ids, and one relation per canonical edge type
// (src, rel, dst), each stored as a complete chunkfmt graph directory of
// in-edges, tied together by hetero.json, which is written last and
// atomically and records each relation's chunkfmt.Fingerprint.
//
// It owns the manifest (Manifest, Parse, Read, Write), the names
// (ValidName, RelationDir), the reader that checks every relation against
// it (Open), the complete check (Verify) and the fingerprint a node type's
// feature store is bound to (Manifest.NodeTypeFingerprint). Building a
// directory is ingest's (ingest.BuildHetero).
package heterofmt
