package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/ingest"
)

// buildHeteroMini builds the bundled hetero-mini as chunkify build
// --ogb-raw --add-reverse does.
func buildHeteroMini(t *testing.T) string {
	t.Helper()
	types, rels, feats, err := ingest.OGBHetero(filepath.Join("..", "..", "testdata", "hetero-mini", "raw"))
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

// serve over a heterogeneous directory refuses bad flags before it
// listens, naming the type, relation key or seed at fault.
func TestServeHeteroUsage(t *testing.T) {
	dir := buildHeteroMini(t)
	train := writeTrain(t, []uint32{1, 2, 3})
	beyond := writeTrain(t, []uint32{1, 6495})
	sock := filepath.Join(t.TempDir(), "s.sock")
	t.Setenv(tokenEnv, "")
	base := []string{"serve", "--graph", dir, "--fanouts", "2,2", "--socket", sock}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{append(base, "--train", train), 2, "--train-type"},
		{append(base, "--train", train, "--train-type", "venue"), 2, `"venue": not a node type`},
		{append(base, "--train-type", "company"), 2, `"train" not set`},
		{append(base, "--train", train, "--train-type", "company", "--relation-fanouts", "a___b___c=1,1"), 2, `"a___b___c", which is not a relation`},
		{append(base, "--train", train, "--train-type", "company", "--relation-fanouts", "company___likes___company"), 2, "want src___rel___dst=FANOUTS"},
		{append(base, "--train", train, "--train-type", "company", "--relation-fanouts", "company___likes___company=1"), 2, "every relation needs one per hop"},
		{append(base, "--train", beyond, "--train-type", "company"), 2, "6495"},
		{append(base, "--train", train, "--train-type", "company", "--replace"), 2, "--replace"},
	} {
		var stderr strings.Builder
		code := execute(tc.args, strings.NewReader(""), io.Discard, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args[6:], code, stderr.String(), tc.code, tc.want)
		}
	}
}
