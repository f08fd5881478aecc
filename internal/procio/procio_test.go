package procio

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
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
		want     Counters
		errHas   string
	}{
		{name: "full", in: full, want: Counters{ReadBytes: 4096, WriteBytes: 8192, CancelledWriteBytes: 512, RChar: 1234, WChar: 5678}},
		{name: "spaces and unknown lines", in: "  rchar :  1\nwchar:2\nfoo\nread_bytes: 3\nwrite_bytes: 4\ncancelled_write_bytes: 0\nnew_counter: 9\n",
			want: Counters{RChar: 1, WChar: 2, ReadBytes: 3, WriteBytes: 4}},
		{name: "missing fields", in: "rchar: 1\nwchar: 2\nread_bytes: 3\n", errHas: "missing cancelled_write_bytes, write_bytes"},
		{name: "bad number", in: strings.Replace(full, "write_bytes: 8192", "write_bytes: 8x", 1), errHas: "write_bytes"},
		{name: "empty", in: "", errHas: "missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tc.in))
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want one containing %q (got %+v)", err, tc.errHas, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Reading a file through read(2) raises rchar by at least its size: the
// counters are the process's own and live.
func TestSelf(t *testing.T) {
	c0, err := Self()
	if runtime.GOOS != "linux" {
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Self on %s: %v, want ErrUnavailable", runtime.GOOS, err)
		}
		if ReadBytesOr(-1) != -1 {
			t.Fatal("ReadBytesOr(-1) is not -1 where the counters are unavailable")
		}
		return
	}
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("no task I/O accounting here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("procio.go")
	if err != nil {
		t.Fatal(err)
	}
	c1, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if c1.RChar-c0.RChar < int64(len(b)) {
		t.Fatalf("rchar grew by %d over a read of %d bytes", c1.RChar-c0.RChar, len(b))
	}
	if ReadBytesOr(-1) < c1.ReadBytes {
		t.Fatal("read_bytes went down")
	}
}
