package ingest

import (
	"bufio"
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/featstore"
)

// FuzzParseCSVRow checks the node-feat.csv row parser against an oracle
// built from strings.Split and strconv.ParseFloat: the same values, bit
// for bit, or an error on the same input. Seeds are in
// testdata/fuzz/FuzzParseCSVRow.
func FuzzParseCSVRow(f *testing.F) {
	for _, s := range []string{"1,2,3", "0.5,-1e-3, 7 \r", "nan,inf,-Inf", "1,,2", "", "1e39", "0x1p-2", "a"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return // the scanner splits lines before the parser sees them
		}
		got, err := parseCSVRow(line, nil)
		var want []float32
		ok := true
		for _, field := range strings.Split(strings.TrimRight(string(line), "\r"), ",") {
			field = strings.TrimSpace(field)
			v, perr := strconv.ParseFloat(field, 32)
			if field == "" || perr != nil && !strings.Contains(perr.Error(), "out of range") {
				ok = false
				break
			}
			want = append(want, float32(v))
		}
		if ok != (err == nil) {
			t.Fatalf("%q: err = %v, oracle ok = %v", line, err, ok)
		}
		if !ok {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d values, oracle %d", line, len(got), len(want))
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
				t.Fatalf("%q: value %d = %v, oracle %v", line, i, got[i], want[i])
			}
		}
	})
}

// FuzzFeatureNPYHeader feeds arbitrary bytes to the feature input's
// header check as an .npy: it must never panic, and what it accepts must
// be a C-order 2-D array of a feature dtype with one row per node.
// Seeds are in testdata/fuzz/FuzzFeatureNPYHeader.
func FuzzFeatureNPYHeader(f *testing.F) {
	for _, seed := range [][]byte{
		npyFile("<f4", []int{7, 3}, false, nil),
		npyFile("|u1", []int{7, 1}, true, nil),
		npyFile("<f8", []int{7, 3}, false, nil),
		npyFile("<f2", []int{7}, false, nil),
		[]byte("\x93NUMPY\x02\x00\x10\x00\x00\x00{'descr': '<f4'}"),
	} {
		f.Add(seed, uint32(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, rows uint32) {
		if !bytes.HasPrefix(data, magicNPY) {
			return // not an .npy: another input path
		}
		br := bytes.NewReader(data)
		s := &stream{r: bufio.NewReaderSize(br, 4096), under: br, name: "fuzz.npy"}
		src := &featureSource{s: s, name: "fuzz.npy", rows: rows}
		if err := src.open("fuzz.npy", FeatureOptions{}); err != nil {
			return
		}
		if src.format != featNPY || src.dtype.Size() == 0 || src.dim <= 0 || src.dim > featstore.MaxDim {
			t.Fatalf("accepted %+v", src)
		}
	})
}

// BenchmarkParseCSVRow parses one 128-value row of OGB-style floats
// (papers100M's width).
func BenchmarkParseCSVRow(b *testing.B) {
	vals, _ := randomFloat32Rows(1, 1, 128)
	line := bytes.TrimSuffix(csvRows(vals, 128, false), []byte("\n"))
	dst := make([]float32, 0, 128)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		var err error
		if dst, err = parseCSVRow(line, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
