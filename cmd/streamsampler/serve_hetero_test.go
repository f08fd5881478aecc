package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/ingest/ingesttest"
	"github.com/streamsampler/streamsampler/internal/npy"
)

// buildHeteroMini builds the bundled hetero-mini as chunkify build
// --ogb-raw --add-reverse does.
func buildHeteroMini(t *testing.T) string {
	return ingesttest.HeteroMini(t, filepath.Join("..", "..", "testdata"))
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
		{append(base, "--train", train, "--train-type", "company", "--features", "--feature-cache", "lots"), 2, `--feature-cache "lots"`},
	} {
		var stderr strings.Builder
		code := execute(tc.args, strings.NewReader(""), io.Discard, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args[6:], code, stderr.String(), tc.code, tc.want)
		}
	}
}

// serve --features over a heterogeneous directory refuses a
// labels/<type>.npy that is not one label per node of its type, naming
// the file and the type.
func TestServeHeteroBadLabels(t *testing.T) {
	dir := buildHeteroMini(t)
	train := writeTrain(t, []uint32{1, 2, 3})
	if err := os.MkdirAll(filepath.Join(dir, "labels"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "labels", "tvshow.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteArray(f, []int64{0, 1, -1}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Setenv(tokenEnv, "")
	args := []string{"serve", "--graph", dir, "--fanouts", "2,2", "--socket", filepath.Join(t.TempDir(), "s.sock"),
		"--train", train, "--train-type", "company", "--features"}
	var stderr strings.Builder
	code := execute(args, strings.NewReader(""), io.Discard, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "tvshow.npy") || !strings.Contains(stderr.String(), "want (3327,)") {
		t.Fatalf("exit %d, stderr %q; want a failure naming tvshow.npy and its 3327 nodes", code, stderr.String())
	}
}
