package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/walk"
)

// readWalksNPY reads an int32 2-D .npy as walk writes it, checking its
// header: descr '<i4', C order, shape (rows, cols).
func readWalksNPY(t *testing.T, path string) (walks []int32, rows, cols int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 10 || string(b[:8]) != "\x93NUMPY\x01\x00" {
		t.Fatalf("%s: not a .npy 1.0 file", path)
	}
	hlen := int(binary.LittleEndian.Uint16(b[8:10]))
	head, data := string(b[10:10+hlen]), b[10+hlen:]
	if (10+hlen)%64 != 0 {
		t.Fatalf("header of %d bytes is not 64-byte aligned", 10+hlen)
	}
	if !strings.Contains(head, "'descr': '<i4'") || !strings.Contains(head, "'fortran_order': False") {
		t.Fatalf("header %q: want int32, C order", head)
	}
	if _, err := fmt.Sscanf(head[strings.Index(head, "'shape': ("):], "'shape': (%d, %d)", &rows, &cols); err != nil {
		t.Fatalf("header %q: shape: %v", head, err)
	}
	if len(data) != 4*rows*cols {
		t.Fatalf("%d data bytes, want %d×%d int32", len(data), rows, cols)
	}
	walks = make([]int32, rows*cols)
	for i := range walks {
		walks[i] = int32(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return walks, rows, cols
}

// TestWalkCommand: on the bundled email-Eu-core graph, every mode writes
// exactly walk.Reference' walks as a [W, L+1] int32 .npy whose
// consecutive pairs are edges (or PPR's jump back to the start), from
// --all or a --start file, and the --json summary counts them.
func TestWalkCommand(t *testing.T) {
	graph := emailGraph(t)
	g, err := host.LoadCSR(graph)
	if err != nil {
		t.Fatal(err)
	}
	n := int(g.NumNodes())
	all := make([]uint32, n)
	for v := range all {
		all[v] = uint32(v)
	}
	picked := []uint32{5, 0, 1004, 5, 77}
	startFile := writeTrain(t, picked)
	for _, tc := range []struct {
		name   string
		args   []string
		starts []uint32
		cfg    walk.Config
	}{
		{"deepwalk all", []string{"--all"}, all, walk.Config{}},
		{"deepwalk start", []string{"--start", startFile, "--mode", "deepwalk"}, picked, walk.Config{}},
		{"ppr", []string{"--all", "--mode", "ppr", "--restart", "0.3"}, all, walk.Config{Mode: walk.PPR, Restart: 0.3}},
		{"ppr default restart", []string{"--start", startFile, "--mode", "ppr"}, picked, walk.Config{Mode: walk.PPR, Restart: 0.15}},
		{"ppr stop", []string{"--all", "--mode", "ppr", "--stop-at-restart"}, all, walk.Config{Mode: walk.PPR, Restart: 0.15, StopAtRestart: true}},
		{"node2vec", []string{"--all", "--mode", "node2vec", "--p", "0.5", "--q", "2"}, all, walk.Config{Mode: walk.Node2Vec, P: 0.5, Q: 2}},
		// The default streams the chunks through --backend; these walk in
		// memory, or over three emulated devices.
		{"node2vec in memory", []string{"--all", "--mode", "node2vec", "--p", "0.5", "--q", "2", "--in-memory"}, all, walk.Config{Mode: walk.Node2Vec, P: 0.5, Q: 2}},
		{"ppr three devices", []string{"--start", startFile, "--mode", "ppr", "--devices", "3"}, picked, walk.Config{Mode: walk.PPR, Restart: 0.15}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "walks.npy")
			args := append([]string{"walk", "--graph", graph, "--walks-per-node", "3", "--length", "6", "--seed", "9", "-o", out, "--json", "-q"}, tc.args...)
			stdout, stderr, code := cli(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			walks, rows, cols := readWalksNPY(t, out)
			c := tc.cfg
			c.WalksPerNode, c.Length, c.Seed = 3, 6, 9
			if rows != 3*len(tc.starts) || cols != 7 {
				t.Fatalf("shape [%d, %d], want [%d, 7]", rows, cols, 3*len(tc.starts))
			}
			want, err := walk.Reference(g, tc.starts, c)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(walks, want) {
				t.Fatal("walks differ from walk.Reference's")
			}
			var steps int64
			for w := range rows {
				row := walks[w*cols : (w+1)*cols]
				if row[0] != int32(tc.starts[w%len(tc.starts)]) {
					t.Fatalf("walk %d starts at %d, want %d", w, row[0], tc.starts[w%len(tc.starts)])
				}
				for s := 1; s < cols; s++ {
					if row[s] < 0 {
						if slices.ContainsFunc(row[s:], func(v int32) bool { return v >= 0 }) {
							t.Fatalf("walk %d goes on after -1: %v", w, row)
						}
						break
					}
					steps++
					nb, _ := g.Neighbors(uint32(row[s-1]))
					if !walk.IsNeighbor(nb, uint32(row[s])) && !(c.Mode == walk.PPR && row[s] == row[0]) {
						t.Fatalf("walk %d step %d: %d → %d is not an edge", w, s, row[s-1], row[s])
					}
				}
			}
			var sum walkSummary
			if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
				t.Fatalf("--json: %v: %q", err, stdout)
			}
			if sum.Walks != rows || sum.Starts != len(tc.starts) || sum.Length != 6 || sum.Steps != steps || sum.Mode != c.Mode.String() || sum.Output != out || sum.Seconds <= 0 || sum.WalksPerS <= 0 {
				t.Fatalf("summary %+v; want %d walks, %d steps", sum, rows, steps)
			}
			// The streaming walker's passes: a step is at least one (deepwalk
			// and PPR exactly one), each over at least one chunk, read or
			// found in the chunk cache (which holds this small graph whole).
			switch {
			case slices.Contains(tc.args, "--in-memory"):
				if sum.Passes != 0 || sum.ChunkBytes != 0 || sum.Engine != walk.EngineMemory {
					t.Fatalf("in memory, but summary %+v has passes or another engine", sum)
				}
			case sum.Engine != "emu":
				t.Fatalf("summary %+v: engine %q, want emu", sum, sum.Engine)
			case sum.Passes < 6 || c.Mode != walk.Node2Vec && sum.Passes != 6 || sum.ChunksRead+sum.ChunksReused < sum.Passes || sum.ChunksRead < 1 || sum.ChunkBytes <= 0 || sum.PassSeconds <= 0:
				t.Fatalf("summary %+v: want 6 steps' passes (exactly 6 outside node2vec), each reading chunks", sum)
			}
			if stderr != "" {
				t.Fatalf("-q, but stderr has %q", stderr)
			}
		})
	}
}

// TestWalkCommandHuman: without --json, one line on stdout.
func TestWalkCommandHuman(t *testing.T) {
	graph := emailGraph(t)
	out := filepath.Join(t.TempDir(), "w.npy")
	stdout, stderr, code := cli(t, "walk", "--graph", graph, "--all", "--length", "2", "-o", out)
	if code != 0 || !strings.HasPrefix(stdout, "deepwalk: 1005 walks of 2 steps from 1005 starts") || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestWalkCommandErrors: a bad command line exits 2 naming the flag; a
// start beyond the graph exits 1 naming the file; neither leaves a file.
func TestWalkCommandErrors(t *testing.T) {
	graph := emailGraph(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "walks.npy")
	starts := writeTrain(t, []uint32{1, 2})
	beyond := writeTrain(t, []uint32{1, 1005})
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"walk", "--graph", graph, "-o", out}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--all"}, 2, "--length"},
		{[]string{"--all", "--length", "0"}, 2, "--length 0"},
		{[]string{"--all", "--length", "x"}, 2, `invalid argument "x" for "--length"`},
		{[]string{"--length", "3"}, 2, "exactly one of --start and --all"},
		{[]string{"--length", "3", "--all", "--start", starts}, 2, "exactly one of --start and --all"},
		{[]string{"--all", "--length", "3", "--walks-per-node", "0"}, 2, "--walks-per-node 0"},
		{[]string{"--all", "--length", "3", "--walks-per-node", "4294967295"}, 2, "--walks-per-node 4294967295"},
		{[]string{"--all", "--length", "3", "--mode", "uniform"}, 2, `--mode "uniform"`},
		{[]string{"--all", "--length", "3", "--mode", "ppr", "--restart", "1"}, 2, "--restart 1"},
		{[]string{"--all", "--length", "3", "--mode", "ppr", "--restart", "-0.5"}, 2, "--restart -0.5"},
		{[]string{"--all", "--length", "3", "--restart", "0.2"}, 2, "--restart applies to --mode ppr only"},
		{[]string{"--all", "--length", "3", "--stop-at-restart"}, 2, "--stop-at-restart applies to --mode ppr only"},
		{[]string{"--all", "--length", "3", "--mode", "ppr", "--p", "2"}, 2, "--p applies to --mode node2vec only"},
		{[]string{"--all", "--length", "3", "--mode", "node2vec", "--p", "0"}, 2, "--p 0"},
		{[]string{"--all", "--length", "3", "--mode", "node2vec", "--q", "-1"}, 2, "--q -1"},
		{[]string{"--all", "--length", "3", "--mode", "node2vec", "--q", "NaN"}, 2, "--q NaN"},
		{[]string{"--all", "--length", "3", "--seed", "-1"}, 2, `invalid argument "-1" for "--seed"`},
		{[]string{"--all", "--length", "3", "--edge-ids"}, 2, "--edge-ids: walks carry no edge ids"},
		{[]string{"--start", empty, "--length", "3"}, 2, "no start nodes"},
		{[]string{"--start", beyond, "--length", "3"}, 1, beyond},
		{[]string{"--start", filepath.Join(dir, "missing.txt"), "--length", "3"}, 1, "missing.txt"},
	} {
		_, stderr, code := cli(t, append(slices.Clone(base), tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want exit %d naming %q", tc.args, code, stderr, tc.code, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%v: a failed walk left %s", tc.args, out)
		}
	}
	if _, stderr, code := cli(t, "walk", "--all", "--length", "3", "-o", out); code != 2 || !strings.Contains(stderr, "--graph") {
		t.Errorf("no --graph: exit %d, %q", code, stderr)
	}
	if _, stderr, code := cli(t, "walk", "--graph", graph, "--all", "--length", "3"); code != 2 || !strings.Contains(stderr, "--output") {
		t.Errorf("no -o: exit %d, %q", code, stderr)
	}
	if _, stderr, code := cli(t, "walk", "--graph", filepath.Join(dir, "nograph"), "--all", "--length", "3", "-o", out); code != 1 || !strings.Contains(stderr, "nograph") {
		t.Errorf("missing graph: exit %d, %q", code, stderr)
	}
}

// halfWalker writes half its output, then fails as a lost device would.
type halfWalker struct{}

func (halfWalker) WalksInto(_ context.Context, _ []uint32, _ walk.Config, out []int32) (*walk.Stats, error) {
	for i := range out[:len(out)/2] {
		out[i] = 7
	}
	return nil, errors.New("device lost")
}

// TestWalkCommandKeepsOldFileOnFailure: the output is replaced only by a
// complete file: a walker that fails after writing part of the mapped
// output, or a walk cancelled midway, leave the previous file as it was
// and no temporary beside it.
func TestWalkCommandKeepsOldFileOnFailure(t *testing.T) {
	graph := emailGraph(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "walks.npy")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := host.LoadCSR(graph)
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		walk walk.Walker
		want string
	}{
		{"failure", context.Background(), halfWalker{}, "device lost"},
		{"cancelled stream", cancelled, nil, "context canceled"},
		{"cancelled in memory", cancelled, walk.InMemory{Graph: g}, "context canceled"},
	} {
		cmd := walkCmd(tc.walk)
		var stdout, stderr bytes.Buffer
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		cmd.SetArgs([]string{"--graph", graph, "--all", "--length", "3", "-o", out})
		if err := cmd.ExecuteContext(tc.ctx); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
		if b, _ := os.ReadFile(out); !bytes.Equal(b, []byte("old")) {
			t.Fatalf("%s: the old file became %q", tc.name, b)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Fatalf("%s: %d entries in the output's directory, want walks.npy alone", tc.name, len(ents))
		}
	}
}
