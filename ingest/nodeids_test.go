package ingest

import (
	"errors"
	"strings"
	"testing"
)

func npy1D(vals []int64, dtype string) []byte {
	b := npyBytes(vals, vals, dtype, false, false)
	// Rewrite as a 1-D array: same header length, first half of the data.
	s := string(b)
	hdrEnd := strings.IndexByte(s, '\n') + 1
	hdr := strings.Replace(s[:hdrEnd], "(", "(", 1)
	old := "(" + itoa(uint32(len(vals))) + ", 2)"
	nw := "(" + itoa(uint32(len(vals))) + ",)"
	nw += strings.Repeat(" ", len(old)-len(nw))
	hdr = strings.Replace(hdr, old, nw, 1)
	w := 8
	if dtype[2] == '4' {
		w = 4
	}
	data := []byte(s[hdrEnd:])
	out := make([]byte, 0, len(vals)*w)
	for i := range vals {
		out = append(out, data[2*i*w:2*i*w+w]...)
	}
	return append([]byte(hdr), out...)
}

func TestReadNodeIDs(t *testing.T) {
	want := []uint32{5, 0, 9, 5}
	cases := []struct {
		name, file string
		data       []byte
	}{
		{"lines", "train.txt", []byte("5\n0\n9\n5\n")},
		{"comments crlf", "train.txt", []byte("# train nodes\r\n5\r\n\r\n0\r\n% x\r\n9\r\n 5 \r\n")},
		{"ogb csv.gz", "train.csv.gz", gz(t, []byte("5\n0\n9\n5\n"))},
		{"csv header", "train.csv", []byte("node_id\n5\n0\n9\n5")},
		{"zst", "train.csv.zst", zst(t, []byte("5,\n0,\n9,\n5,\n"))},
		{"npy i8", "train.npy", npy1D([]int64{5, 0, 9, 5}, "<i8")},
		{"npy i4", "train.npy", npy1D([]int64{5, 0, 9, 5}, "<i4")},
		{"npy u8", "x", npy1D([]int64{5, 0, 9, 5}, "<u8")},
		{"npy u4 gz", "train.npy.gz", gz(t, npy1D([]int64{5, 0, 9, 5}, "<u4"))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), c.file, c.data)
			got, err := ReadNodeIDs(p, 10)
			if err != nil || !equalU32(got, want) {
				t.Fatalf("got %v, %v; want %v", got, err, want)
			}
		})
	}
}

func TestReadNodeIDsErrors(t *testing.T) {
	cases := []struct {
		name, file string
		data       []byte
		want       string
		kind       error
		numNodes   uint32
	}{
		{"range", "t.txt", []byte("1\n2\n10\n"), "t.txt:3: node id 10 is out of range: ids must be below the graph's 10 nodes", ErrIDRange, 0},
		{"negative", "t.txt", []byte("1\n-2\n"), `t.txt:2: found "-2", expected one non-negative integer node id`, ErrSyntax, 0},
		{"word", "t.txt", []byte("1\nabc\n"), `t.txt:2: found "abc"`, ErrSyntax, 0},
		{"two columns", "t.csv", []byte("1,2\n"), `t.csv:1: found "1,2"`, ErrSyntax, 0},
		{"huge", "t.txt", []byte("99999999999999999999999\n"), `t.txt:1: node id 18446744073709551615 is out of range`, ErrIDRange, 0},
		{"npy range", "t.npy", npy1D([]int64{1, 10}, "<i8"), "t.npy: id 10 (index 1) is out of range", ErrIDRange, 0},
		{"npy negative", "t.npy", npy1D([]int64{1, -1}, "<i4"), "t.npy: id -1 (index 1) is negative", ErrIDRange, 0},
		{"npy truncated", "t.npy", npy1D([]int64{1, 2, 3}, "<i8")[:128+12], "truncated: the header promises 3 ids, the data holds 1", ErrSyntax, 0},
		{"npy 2-D", "t.npy", npyBytes([]int64{1, 2}, []int64{1, 2}, "<i8", false, false), "npy: shape [2 2] is not a node list", ErrFormat, 0},
		{"gz truncated", "t.txt.gz", gz(t, []byte(strings.ReplaceAll(string(randomEdgeText(20000)), " ", "\n")))[:3000], "truncated gzip stream", nil, 1 << 30},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), c.file, c.data)
			n := c.numNodes
			if n == 0 {
				n = 10
			}
			_, err := ReadNodeIDs(p, n)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant %q", err, c.want)
			}
			if c.kind != nil && !errors.Is(err, c.kind) {
				t.Fatalf("err %v does not wrap %v", err, c.kind)
			}
		})
	}
}
