// Package ingesttest builds the bundled graphs the tests of several
// packages share (heterosample, serve, cmd/streamsampler), so that each
// builds them as chunkify does, the same way. It is for tests only.
package ingesttest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/streamsampler/streamsampler/ingest"
)

// HeteroMini builds testdata/hetero-mini (OGB's heterogeneous raw layout,
// under testdata, the path of the repository's testdata directory from
// the calling test) into a heterogeneous graph directory in a temporary
// directory of t, with its features, as chunkify build --ogb-raw
// --add-reverse --chunk-size 64KiB does, and returns the directory.
func HeteroMini(t testing.TB, testdata string) string {
	t.Helper()
	types, rels, feats, err := ingest.OGBHetero(filepath.Join(testdata, "hetero-mini", "raw"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "g")
	if _, err := ingest.BuildHetero(context.Background(), out, ingest.HeteroOptions{NodeTypes: types, Relations: rels,
		Features: feats, AddReverse: true, Build: ingest.BuildOptions{ChunkSize: 64 << 10}}); err != nil {
		t.Fatal(err)
	}
	return out
}
