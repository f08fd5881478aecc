package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestParseProcIO(t *testing.T) {
	const full = `rchar: 1234
wchar: 5678
syscr: 10
syscw: 20
read_bytes: 4096
write_bytes: 8192
cancelled_write_bytes: 512
`
	tests := []struct {
		name, in string
		want     *procIO
		errHas   string
	}{
		{name: "full", in: full, want: &procIO{ReadBytes: 4096, WriteBytes: 8192, CancelledWriteBytes: 512, RChar: 1234, WChar: 5678}},
		{name: "spaces and unknown lines", in: "  rchar :  1\nwchar:2\nfoo\nread_bytes: 3\nwrite_bytes: 4\ncancelled_write_bytes: 0\nnew_counter: 9\n",
			want: &procIO{RChar: 1, WChar: 2, ReadBytes: 3, WriteBytes: 4}},
		{name: "missing fields", in: "rchar: 1\nwchar: 2\nread_bytes: 3\n", errHas: "missing cancelled_write_bytes, write_bytes"},
		{name: "bad number", in: strings.Replace(full, "write_bytes: 8192", "write_bytes: 8x", 1), errHas: "write_bytes"},
		{name: "empty", in: "", errHas: "missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcIO(strings.NewReader(tc.in))
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want one containing %q (got %+v)", err, tc.errHas, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *got != *tc.want {
				t.Fatalf("got %+v, want %+v", *got, *tc.want)
			}
		})
	}
}

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
		NumEdges uint64  `json:"num_edges"`
		IO       *procIO `json:"io"`
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
