package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/streamsampler/streamsampler/internal/procio"
)

// build --json carries the process's I/O counters beside the summary's
// fields (still at the top level); the input was read through read(2), so
// rchar, which only grows, covers at least its size.
func TestBuildJSONProcIO(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/io is Linux's")
	}
	in := "../../testdata/Wiki-Vote.txt"
	st, err := os.Stat(in)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "wiki")
	stdout, _, err := run(t, "build", in, "-o", out, "--chunk-size", "64KiB", "--json", "-q")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		NumEdges uint64           `json:"num_edges"`
		IO       *procio.Counters `json:"io"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	if got.NumEdges != 103689 {
		t.Fatalf("num_edges %d at the top level, want 103689:\n%s", got.NumEdges, stdout)
	}
	if got.IO == nil {
		t.Fatalf("no io object in --json output:\n%s", stdout)
	}
	if got.IO.RChar < st.Size() || got.IO.WChar <= 0 {
		t.Fatalf("io %+v: rchar below the input's %d bytes, or nothing written", *got.IO, st.Size())
	}
}
