package ingest

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

func TestReadFormats(t *testing.T) {
	want := []uint32{0, 1, 2, 3, 10, 0, 967, 7}
	text := "0 1\n2 3\n10 0\n967 7\n"
	src := []int64{0, 2, 10, 967}
	dst := []int64{1, 3, 0, 7}
	w64 := []uint64{0, 1, 2, 3, 10, 0, 967, 7}
	cases := []struct {
		name   string
		file   string
		data   []byte
		format Format
	}{
		{"space", "a.txt", []byte(text), FormatAuto},
		{"tab", "a.txt", []byte(strings.ReplaceAll(text, " ", "\t")), FormatAuto},
		{"comma", "a.csv", []byte(strings.ReplaceAll(text, " ", ",")), FormatAuto},
		{"comma+blanks", "a.csv", []byte(strings.ReplaceAll(text, " ", " , ")), FormatAuto},
		{"crlf", "a.txt", []byte(strings.ReplaceAll(text, "\n", "\r\n")), FormatAuto},
		{"no final newline", "a.txt", []byte(strings.TrimSuffix(text, "\n")), FormatAuto},
		{"crlf no final newline", "a.txt", []byte(strings.TrimSuffix(strings.ReplaceAll(text, "\n", "\r\n"), "\r\n")), FormatAuto},
		{"comments blanks", "a.txt", []byte("# Directed graph\n% matrix market style\n\n  0   1  \n\t2\t3\t\n#x\n10 0\r\n\r\n967 7"), FormatAuto},
		{"snap header", "a.txt", []byte("# Nodes: 4 Edges: 4\r\n# FromNodeId\tToNodeId\r\n" + strings.ReplaceAll(text, "\n", "\r\n")), FormatAuto},
		{"csv header", "edges.csv", []byte("id_1,id_2\n" + strings.ReplaceAll(text, " ", ",")), FormatAuto},
		{"csv header crlf", "edges.csv", []byte("source,target\r\n" + strings.ReplaceAll(strings.ReplaceAll(text, " ", ","), "\n", "\r\n")), FormatAuto},
		{"leading zeros", "a.txt", []byte("000 01\n2 3\n10 0\n0967 7\n"), FormatAuto},
		{"gzip", "a.txt.gz", gz(t, []byte(text)), FormatAuto},
		{"gzip misnamed", "a.txt", gz(t, []byte(text)), FormatAuto},
		{"zstd", "a.csv.zst", zst(t, []byte("id_1,id_2\n"+strings.ReplaceAll(text, " ", ","))), FormatAuto},
		{"bin32 by ext", "a.bin32", bin32(want), FormatAuto},
		{"bin32 explicit", "a.dat", bin32(want), FormatBin32},
		{"bin32 zst", "a.bin32.zst", zst(t, bin32(want)), FormatAuto},
		{"bin64 by ext", "a.bin64", bin64(w64), FormatAuto},
		{"bin64 gz explicit", "a.gz", gz(t, bin64(w64)), FormatBin64},
		{"text explicit", "a.bin32", []byte(text), FormatText},
	}
	for _, dt := range []string{"<i4", "<i8", "<u4", "<u8"} {
		for _, twoByE := range []bool{true, false} {
			for _, fortran := range []bool{false, true} {
				name := "npy " + dt
				if twoByE {
					name += " (2,E)"
				} else {
					name += " (E,2)"
				}
				if fortran {
					name += " F"
				} else {
					name += " C"
				}
				cases = append(cases, struct {
					name   string
					file   string
					data   []byte
					format Format
				}{name, "edge_index.npy", npyBytes(src, dst, dt, twoByE, fortran), FormatAuto})
			}
		}
	}
	cases = append(cases,
		struct {
			name   string
			file   string
			data   []byte
			format Format
		}{"npy by magic", "edges", npyBytes(src, dst, "<i8", true, false), FormatAuto},
		struct {
			name   string
			file   string
			data   []byte
			format Format
		}{"npy gz split", "e.npy.gz", gz(t, npyBytes(src, dst, "<i8", true, false)), FormatAuto},
		struct {
			name   string
			file   string
			data   []byte
			format Format
		}{"npy zst interleaved", "e.npy.zst", zst(t, npyBytes(src, dst, "<u4", false, false)), FormatNPY},
	)
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), c.file, c.data)
			_ = dir
			got, err := readAllEdges(p, ReadOptions{Format: c.format})
			if err != nil {
				t.Fatal(err)
			}
			if !equalU32(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
}

func TestReadEmpty(t *testing.T) {
	for _, c := range []struct{ file, data string }{
		{"e.txt", ""}, {"e.txt", "# only a comment\n"}, {"e.csv", "id_1,id_2\n"}, {"e.bin32", ""},
	} {
		p := writeFile(t, t.TempDir(), c.file, []byte(c.data))
		got, err := readAllEdges(p, ReadOptions{})
		if err != nil || len(got) != 0 {
			t.Fatalf("%q: got %v, %v; want no edges", c.data, got, err)
		}
	}
	p := writeFile(t, t.TempDir(), "e.npy", npyBytes(nil, nil, "<i8", true, false))
	if got, err := readAllEdges(p, ReadOptions{}); err != nil || len(got) != 0 {
		t.Fatalf("empty npy: %v, %v", got, err)
	}
}

func TestReadErrors(t *testing.T) {
	cases := []struct {
		name, file string
		data       []byte
		numNodes   uint32
		format     Format
		want       string
		kind       error
	}{
		{"word", "g.txt", []byte("0 1\n1 xyz\n"), 0, 0, `g.txt:2: found "xyz", expected two non-negative integer node ids`, ErrSyntax},
		{"negative", "g.txt", []byte("# c\n0 1\n-5 2\n"), 0, 0, `g.txt:3: found "-5", expected two non-negative integer node ids`, ErrSyntax},
		{"one id", "g.txt", []byte("0 1\n7\n"), 0, 0, `g.txt:2: found end of line in "7", expected two non-negative integer node ids`, ErrSyntax},
		{"three ids", "g.txt", []byte("0 1 2\n"), 0, 0, `g.txt:1: found "2", expected two`, ErrSyntax},
		{"float", "g.txt", []byte("0 1.5\n"), 0, 0, `g.txt:1: found "1.5", expected two`, ErrSyntax},
		{"header not first", "g.csv", []byte("0,1\nid_1,id_2\n"), 0, 0, `g.csv:2: found "id_1", expected two`, ErrSyntax},
		{"numeric first line is data", "g.csv", []byte("0,1,\n"), 0, 0, `g.csv:1: found end of line`, ErrSyntax},
		{"lone CR", "g.txt", []byte("0 1\r2 3\n"), 0, 0, `g.txt:1: found`, ErrSyntax},
		{"range num-nodes", "g.txt", []byte("0 1\n\n3 100\n"), 100, 0, `g.txt:3: node id 100 is out of range: ids must be below --num-nodes 100`, ErrIDRange},
		{"range max", "g.txt", []byte("2147483647 0\n"), 0, 0, `g.txt:1: node id 2147483647 is out of range: ids must be below 2147483647`, ErrIDRange},
		{"huge", "g.txt", []byte("1 123456789012345678901234567890\n"), 0, 0, `g.txt:1: node id 123456789012345678901234567890 is out of range`, ErrIDRange},
		{"crlf line numbers", "g.txt", []byte("0 1\r\n1 2\r\n3 q\r\n"), 0, 0, `g.txt:3: found "q"`, ErrSyntax},
		{"gz bad line", "g.txt.gz", gz(t, []byte("0 1\n1 2\nfoo bar\n")), 0, 0, `g.txt.gz:3: found "foo"`, ErrSyntax},
		{"gz truncated", "g.txt.gz", gz(t, randomEdgeText(20000))[:2000], 0, 0, "g.txt.gz: truncated gzip stream", nil},
		{"zst truncated", "g.txt.zst", zst(t, randomEdgeText(20000))[:2000], 0, 0, "g.txt.zst: truncated zstd stream", nil},
		{"bin32 partial", "g.bin32", bin32([]uint32{1, 2, 3}), 0, 0, "g.bin32: truncated: 1 complete edges, then a partial record", ErrSyntax},
		{"bin32 range", "g.bin32", bin32([]uint32{1, 2, 3, 9}), 5, 0, "g.bin32: edge 1: node id 9 is out of range: ids must be below --num-nodes 5", ErrIDRange},
		{"bin64 range", "g.bin64", bin64([]uint64{1, 2, 1 << 40, 0}), 0, 0, "g.bin64: edge 1: node id 1099511627776 is out of range", ErrIDRange},
		{"npy negative", "g.npy", npyBytes([]int64{0, 1, 2}, []int64{1, -3, 0}, "<i8", true, false), 0, 0, "g.npy: edge 1: negative node id -3", ErrIDRange},
		{"npy i4 negative interleaved", "g.npy", npyBytes([]int64{0, -1, 3}, []int64{1, 2, 3}, "<i4", false, false), 0, 0, "g.npy: edge 1: negative node id -1", ErrIDRange},
		{"npy truncated", "g.npy", npyBytes([]int64{0, 1, 2}, []int64{1, 3, 0}, "<i8", false, false)[:128+20], 0, 0, "g.npy: truncated: the header promises 3 edges, the data holds 1", ErrSyntax},
		{"npy float", "g.npy", []byte(strings.Replace(string(npyBytes([]int64{0}, []int64{1}, "<i8", true, false)), "<i8", "<f8", 1)), 0, 0, `g.npy: npy: dtype "<f8" is not supported`, ErrFormat},
		{"npy big endian", "g.npy", []byte(strings.Replace(string(npyBytes([]int64{0}, []int64{1}, "<i8", true, false)), "<i8", ">i8", 1)), 0, 0, `dtype ">i8" is not supported`, ErrFormat},
		{"npy 1-D", "g.npy", []byte(strings.Replace(string(npyBytes([]int64{0}, []int64{1}, "<i8", true, false)), "(2, 1)", "(2,)  ", 1)), 0, 0, "npy: shape [2] is not an edge array", ErrFormat},
		{"npy 3 cols", "g.npy", []byte(strings.Replace(string(npyBytes([]int64{0}, []int64{1}, "<i8", true, false)), "(2, 1)", "(3, 3)", 1)), 0, 0, "npy: shape [3 3] is not an edge array", ErrFormat},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), c.file, c.data)
			_, err := readAllEdges(p, ReadOptions{NumNodes: c.numNodes, Format: c.format, Name: c.file})
			if err == nil {
				t.Fatalf("no error; want %q", c.want)
			}
			if !strings.HasPrefix(err.Error(), c.want) && !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q\nwant       %q", err, c.want)
			}
			if c.kind != nil && !errors.Is(err, c.kind) {
				t.Fatalf("error %q does not wrap %v", err, c.kind)
			}
		})
	}
}

func TestReadMissingFile(t *testing.T) {
	_, err := readAllEdges(filepath.Join(t.TempDir(), "nope.txt"), ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "nope.txt") {
		t.Fatalf("err = %v", err)
	}
}

// TestReadLongInput crosses many parse blocks, so that line numbers and
// order survive the parallel pipeline.
func TestReadLongInput(t *testing.T) {
	var sb strings.Builder
	var want []uint32
	n := 400000
	for i := range n {
		u, v := uint32(i*7919%1000003), uint32(i)
		want = append(want, u, v)
		sb.WriteString(itoa(u))
		if i%3 == 0 {
			sb.WriteString(",")
		} else {
			sb.WriteString("\t")
		}
		sb.WriteString(itoa(v))
		sb.WriteString("\r\n")
	}
	p := writeFile(t, t.TempDir(), "big.txt", []byte(sb.String()+"1 x\n"))
	got, err := readAllEdges(p, ReadOptions{})
	if err == nil || !strings.HasSuffix(strings.SplitN(err.Error(), ": ", 2)[0], ":"+itoa(uint32(n+1))) {
		t.Fatalf("err = %v; want a defect on line %d", err, n+1)
	}
	if !equalU32(got, want[:len(got)]) {
		t.Fatal("edges before the defect differ")
	}
	p = writeFile(t, t.TempDir(), "big.txt.gz", gz(t, []byte(sb.String())))
	got, err = readAllEdges(p, ReadOptions{})
	if err != nil || !equalU32(got, want) {
		t.Fatalf("gz: %d edges, err %v", len(got)/2, err)
	}
}

func itoa(x uint32) string {
	if x == 0 {
		return "0"
	}
	var b [10]byte
	i := len(b)
	for x > 0 {
		i--
		b[i] = byte('0' + x%10)
		x /= 10
	}
	return string(b[i:])
}

// TestReadNumpyWritten reads arrays written by NumPy itself.
func TestReadNumpyWritten(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Skip("no numpy:", err)
	}
	dir := t.TempDir()
	script := `
import numpy as np, sys
d = sys.argv[1]
ei = np.array([[0, 5, 9, 9], [1, 2, 3, 0]])
for dt in ["int32", "int64", "uint32", "uint64"]:
    a = ei.astype(dt)
    np.save(d + "/c2e_" + dt + ".npy", a)
    np.save(d + "/ce2_" + dt + ".npy", np.ascontiguousarray(a.T))
    np.save(d + "/f2e_" + dt + ".npy", np.asfortranarray(a))
    np.save(d + "/fe2_" + dt + ".npy", np.asfortranarray(a.T))
np.save(d + "/nodes.npy", np.array([4, 2, 8], dtype="int64"))
`
	if out, err := exec.Command(py, "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	want := []uint32{0, 1, 5, 2, 9, 3, 9, 0}
	m, _ := filepath.Glob(filepath.Join(dir, "*2*_*.npy"))
	if len(m) != 16 {
		t.Fatalf("%d files", len(m))
	}
	for _, p := range m {
		got, err := readAllEdges(p, ReadOptions{})
		if err != nil || !equalU32(got, want) {
			t.Errorf("%s: %v, %v", filepath.Base(p), got, err)
		}
	}
	ids, err := ReadNodeIDs(filepath.Join(dir, "nodes.npy"), 9)
	if err != nil || !equalU32(ids, []uint32{4, 2, 8}) {
		t.Fatalf("nodes.npy: %v, %v", ids, err)
	}
}

// BenchmarkParseText measures the scanner alone on one 1 MiB block
// (MB/s): lines of ids below 10^6 ("short"), and of 9-digit ids as in
// ogbn-papers100M ("9-digit"), which take parseFastWide.
// BenchmarkReadText measures the whole reader against `wc -l`.
func BenchmarkParseText(b *testing.B) {
	wide := make([]byte, 0, textBlockSize)
	for i := uint64(0); len(wide) < textBlockSize-24; i++ {
		wide = fmt.Appendf(wide, "%d\t%d\n", 100_000_000+i*7919%11_100_000, 111_000_000-i)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"short", randomEdgeText(textBlockSize / 14)}, {"9-digit", wide}} {
		b.Run(c.name, func(b *testing.B) {
			pairs := make([]uint32, len(c.data)/2+2)
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				r := parseText(c.data, pairs, chunkfmt.MaxNodes, false, true)
				if r.errMsg != "" || len(r.pairs) == 0 {
					b.Fatal(r.errMsg)
				}
			}
		})
	}
}
