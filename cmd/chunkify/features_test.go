package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/npy"
)

// emailGraph builds the bundled email-Eu-core graph (1005 nodes).
func emailGraph(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "g")
	if _, _, err := run(t, "build", "../../testdata/email-Eu-core.txt.gz", "-o", out, "--chunk-size", "16KiB", "-q"); err != nil {
		t.Fatal(err)
	}
	return out
}

// uint8NPY writes an (n, dim) uint8 .npy whose element i is byte(i*7)
// and returns its path and data.
func uint8NPY(t *testing.T, n, dim int) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	npy.Header{Descr: "|u1", Shape: []int{n, dim}}.WriteTo(&b)
	data := make([]byte, n*dim)
	for i := range data {
		data[i] = byte(i * 7)
	}
	b.Write(data)
	p := filepath.Join(t.TempDir(), "x.npy")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, data
}

func TestFeaturesPackAndVerify(t *testing.T) {
	g := emailGraph(t)
	x, data := uint8NPY(t, 1005, 4)
	var labels []byte
	for i := range 1005 {
		if i%5 == 0 {
			labels = append(labels, "nan\n"...)
		} else {
			labels = fmt.Appendf(labels, "%d\n", i%42)
		}
	}
	y := filepath.Join(t.TempDir(), "node-label.csv")
	os.WriteFile(y, labels, 0o644)
	stdout, stderr, err := run(t, "features", x, "-o", g, "--labels", y, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var sum ingest.FeatureSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}
	if sum.NumNodes != 1005 || sum.Dim != 4 || sum.DType != featstore.Uint8 || sum.Format != "npy" || sum.Labeled != 804 || sum.NumClasses != 42 {
		t.Fatalf("summary %+v", sum)
	}
	if !strings.Contains(stderr, "chunkify: packed "+x+" into "+g+": 1005 rows × 4 uint8") || !strings.Contains(stderr, "804 labeled, 42 classes") {
		t.Fatalf("summary line: %q", stderr)
	}
	s, err := featstore.Open(g)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	l := make([]int32, 1)
	if err := s.ReadRows([]uint32{1004}, got); err != nil || !bytes.Equal(got, data[4016:]) {
		t.Fatalf("row 1004: %v %v", got, err)
	}
	if err := s.ReadLabels([]uint32{1003}, l); err != nil || l[0] != 1003%42 {
		t.Fatalf("label 1003: %v %v", l, err)
	}
	s.Close()
	stdout, _, err = run(t, "verify", g)
	if err != nil || !strings.Contains(stdout, "features ok: 1005 × 4 uint8, labels ok: 804 labeled, 42 classes") {
		t.Fatalf("verify: %q, %v", stdout, err)
	}

	// A second pack needs --force, and replaces the store.
	if _, _, code := cli(t, "features", x, "-o", g, "-q"); code != 1 {
		t.Fatalf("pack over a store: exit %d, want 1", code)
	}
	_, stderr, err = run(t, "features", x, "-o", g, "-q", "--force")
	if err != nil || stderr != "" {
		t.Fatalf("--force -q: %q, %v", stderr, err)
	}
	stdout, _, err = run(t, "verify", g)
	if err != nil || !strings.Contains(stdout, "features ok") || strings.Contains(stdout, "labels ok") {
		t.Fatalf("verify after --force without labels: %q, %v", stdout, err)
	}

	// A flipped bit in the features: verify names the file and the row.
	m, _ := featstore.ReadManifest(g)
	p := filepath.Join(g, m.Features.File)
	b, _ := os.ReadFile(p)
	b[100] ^= 1
	os.WriteFile(p, b, 0o644)
	_, _, err = run(t, "verify", g)
	if err == nil || !strings.Contains(err.Error(), "feature store") || !strings.Contains(err.Error(), m.Features.File+": row 25 (bytes 100..103)") {
		t.Fatalf("verify of a flipped bit: %v", err)
	}
}

func TestFeaturesVerifyWithout(t *testing.T) {
	g := emailGraph(t)
	stdout, _, err := run(t, "verify", g)
	if err != nil || !strings.Contains(stdout, "no feature store") {
		t.Fatalf("verify: %q, %v", stdout, err)
	}
}

func TestFeaturesRaw(t *testing.T) {
	g := emailGraph(t)
	data := make([]byte, 1005*3*2)
	for i := 0; i < len(data); i += 2 {
		binary.LittleEndian.PutUint16(data[i:], uint16(i*31))
	}
	p := filepath.Join(t.TempDir(), "x.f16")
	os.WriteFile(p, data, 0o644)
	if _, _, err := run(t, "features", p, "-o", g, "--dim", "3", "--dtype", "float16", "-q"); err != nil {
		t.Fatal(err)
	}
	m, _ := featstore.ReadManifest(g)
	b, _ := os.ReadFile(filepath.Join(g, m.Features.File))
	if !bytes.Equal(b, data) || m.Features.DType != featstore.Float16 {
		t.Fatal("raw rows differ")
	}
	// The wrong dim: the size check names the file and the sizes.
	_, _, err := run(t, "features", p, "-o", g, "--dim", "4", "--dtype", "float16", "--force", "-q")
	if err == nil || !strings.Contains(err.Error(), p+": 6030 bytes, want num_nodes × dim × 2 bytes (float16) = 1005 × 4 × 2 = 8040") {
		t.Fatalf("wrong --dim: %v", err)
	}
}

func TestFeaturesUsage(t *testing.T) {
	g := emailGraph(t)
	x, _ := uint8NPY(t, 1005, 2)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"features", x}, "-o GRAPHDIR is required"},
		{[]string{"features", "-o", g}, "accepts 1 arg"},
		{[]string{"features", x, "-o", g, "--dim", "3"}, "need both --dim and --dtype"},
		{[]string{"features", x, "-o", g, "--dtype", "float32"}, "need both --dim and --dtype"},
		{[]string{"features", x, "-o", g, "--dim", "3", "--dtype", "float64"}, `--dtype "float64": want float32, float16, int8 or uint8`},
		{[]string{"features", x, "-o", g, "--dim", "-3", "--dtype", "int8"}, "--dim -3"},
	} {
		_, stderr, code := cli(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	// A graph directory that is none, and a shape that does not fit: exit 1.
	x2, _ := uint8NPY(t, 1000, 2)
	for _, args := range [][]string{{"features", x, "-o", t.TempDir()}, {"features", x2, "-o", g}} {
		if _, stderr, code := cli(t, args...); code != 1 {
			t.Errorf("%v: exit %d (%s), want 1", args, code, stderr)
		}
	}
	if _, stderr, _ := cli(t, "features", x2, "-o", g); !strings.Contains(stderr, "has 1000 rows, the graph has 1005 nodes: want (1005, dim)") {
		t.Errorf("shape error: %q", stderr)
	}
	if _, err := featstore.ReadManifest(g); err == nil {
		t.Error("a failed pack left a store")
	}
}
