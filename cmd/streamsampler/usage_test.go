package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageErrorsExit2: every error in a command line — an unknown
// command or flag, a value that does not parse or is out of range, a
// missing required flag — exits with status 2 and names the flag (or
// command) at fault, in every subcommand (docs/SAMPLER.md §5).
func TestUsageErrorsExit2(t *testing.T) {
	state, _ := preparedState(t)
	graph, _ := testGraph(t, 500, 4, 4096)
	train := writeTrain(t, []uint32{1, 2, 3, 4})
	fresh := filepath.Join(t.TempDir(), "fresh")
	g := []string{"--graph", graph, "--train", train}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	s := func(a ...string) []string { return a }
	tooMany := strings.Repeat("1,", 255) + "1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{s("frobnicate"), `unknown command "frobnicate"`},
		{s("--frob"), "unknown flag: --frob"},
		// prepare
		{s("prepare"), "--state is required"},
		{s("prepare", "--state", fresh, "--frob"), "unknown flag: --frob"},
		{s("prepare", "--state"), "flag needs an argument: --state"},
		{cat(s("prepare", "--state", fresh), g), "--fanouts is required"},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3"), s("--train", train)), "--graph is required"},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3,x"), g), `--fanouts "3,x": item 2 ("x"; layer 1, hop 2) is not a positive integer`},
		{cat(s("prepare", "--state", fresh, "--fanouts", "15,65"), g), `--fanouts "15,65": item 2 (65; layer 1, hop 2) is above the maximum fanout 64`},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3,"), g), "--fanouts"},
		{cat(s("prepare", "--state", fresh, "--fanouts", tooMany), g), "256 hops, at most 255"},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3", "--seed", "abc"), g), `invalid argument "abc" for "--seed"`},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3", "--seed", "-1"), g), `invalid argument "-1" for "--seed"`},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3", "--epoch", "x"), g), `invalid argument "x" for "--epoch"`},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3", "--compress", "lz4"), g), `--compress "lz4"`},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3", "--backend", "tpu"), g), `--backend "tpu"`},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3", "--devices", "two"), g), `invalid argument "two" for "--devices"`},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3", "--devices", "0"), g), `invalid argument "0" for "--devices" flag: want 1..64`},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3", "--devices", "100000"), g), `invalid argument "100000" for "--devices" flag: want 1..64`},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3", "--devices", "-1"), g), `invalid argument "-1" for "--devices" flag: want 1..64`},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3", "--world-size", "0"), g), `invalid argument "0" for "--world-size" flag: want 1..`},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3", "--world-size", "x"), g), `invalid argument "x" for "--world-size"`},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3", "--rank", "-1"), g), `invalid argument "-1" for "--rank" flag: want 0..`},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3", "--gpu-timeout", "soon"), g), `invalid argument "soon" for "--gpu-timeout"`},
		{cat(s("prepare", "--state", fresh, "--fanouts", "3", "extra"), g), `unknown command "extra"`},
		{s("prepare", "--state", state, "--fanouts", "4"), "--fanouts 4 conflicts with"},
		// advance, info
		{s("advance"), "--state is required"},
		{s("advance", "--state", state, "extra"), `unknown command "extra"`},
		{s("info"), "--state is required"},
		{s("info", "--state", state, "--gpu-lib", "x"), "unknown flag: --gpu-lib"},
		// sample
		{s("sample"), "exactly one of --state (a prepared epoch) and --graph (random reads)"},
		{s("sample", "--state", state), "exactly one of --seeds and --seeds-file"},
		{s("sample", "--state", state, "--seeds", "7", "--format", "xml"), `--format "xml"`},
		{s("sample", "--state", state, "--seeds", "7,,14"), `--seeds "7,,14": item 2 is empty`},
		{s("sample", "--state", state, "--seeds", "7,14,"), `--seeds "7,14,": item 3 is empty`},
		{s("sample", "--state", state, "--seeds", "7,x"), `--seeds: item 2 ("x") is not a node id`},
		{s("sample", "--state", state, "-o"), "flag needs an argument: 'o' in -o"},
		// run
		{s("run"), "--fanouts, --graph, --train are required"},
		{cat(s("run"), g), "--fanouts is required"},
		{cat(s("run", "--fanouts", "65"), g), "above the maximum fanout 64"},
		{cat(s("run", "--fanouts", "3", "--epochs", "0"), g), "--epochs 0"},
		{cat(s("run", "--fanouts", "3", "--batch-size", "x"), g), `invalid argument "x" for "--batch-size"`},
		{cat(s("run", "--fanouts", "3", "--prepare-at", "x"), g), `invalid argument "x" for "--prepare-at"`},
		{cat(s("run", "--fanouts", "3", "--backend", "tpu"), g), `--backend "tpu"`},
		{cat(s("run", "--fanouts", "3", "--devices", "0"), g), `invalid argument "0" for "--devices" flag: want 1..64`},
		{cat(s("run", "--fanouts", "3", "--devices", "100000"), g), `invalid argument "100000" for "--devices" flag: want 1..64`},
		// serve
		{s("serve"), "--fanouts, --graph are required"},
		{s("serve", "--graph", graph, "--fanouts", "3", "--tcp", "127.0.0.1:0"), `required flag "train" not set (or --train-edges for link prediction)`},
		{cat(s("serve", "--fanouts", "3", "--tcp", "127.0.0.1:0", "--train-edges", train), g), "--train and --train-edges/--train-eids"},
		{s("serve", "--graph", graph, "--fanouts", "3", "--tcp", "127.0.0.1:0", "--neg-sampling", "binary"), "--neg-sampling and --exclude need --train-edges"},
		{s("serve", "--graph", graph, "--fanouts", "3", "--tcp", "127.0.0.1:0", "--train-edges", train, "--neg-sampling", "unary"), `--neg-sampling "unary"`},
		{s("serve", "--graph", graph, "--fanouts", "3", "--tcp", "127.0.0.1:0", "--train-edges", train, "--exclude", "all"), `--exclude "all"`},
		{s("serve", "--graph", graph, "--fanouts", "3", "--tcp", "127.0.0.1:0", "--train-edges", train, "--neg-weight", "pagerank"), `--neg-weight "pagerank"`},
		{s("serve", "--graph", graph, "--fanouts", "3", "--tcp", "127.0.0.1:0", "--train-edges", train, "--reverse-eids", train), "--reverse-eids needs --exclude reverse_id"},
		{cat(s("serve", "--fanouts", "3"), g), "--socket or --tcp is required"},
		{cat(s("serve", "--fanouts", "3", "--tcp", "127.0.0.1:0", "--batch-size", "0"), g), "--batch-size 0"},
		{cat(s("serve", "--fanouts", "3", "--tcp", "127.0.0.1:0", "--prepare-at", "1.5"), g), "--prepare-at 1.5"},
		{cat(s("serve", "--fanouts", "99", "--tcp", "127.0.0.1:0"), g), "above the maximum fanout 64"},
		{cat(s("serve", "--tcp", "127.0.0.1:0"), g), "--fanouts is required"},
		{cat(s("serve", "--tcp", "127.0.0.1:0", "--fanouts", ""), g), "--fanouts: empty"},
		{cat(s("serve", "--fanouts", "3", "--tcp", "127.0.0.1:0", "--rank", "2", "--world-size", "2"), g), "rank 2 of world size 2"},
		{cat(s("serve", "--fanouts", "3", "--tcp", "127.0.0.1:0", "--max-request", "big"), g), `invalid argument "big" for "--max-request"`},
		// bench
		{s("bench"), "--graph is required"},
		{s("bench", "--graph", graph, "--runs", "0"), "--runs 0"},
		{s("bench", "--graph", graph, "--devices", "65"), `invalid argument "65" for "--devices" flag: want 1..64`},
		{s("bench", "--graph", graph, "--fanouts", "70"), "above the maximum fanout 64"},
		{s("bench", "--graph", graph, "--train-frac", "2"), "--train-frac 2"},
	} {
		_, stderr, code := cli(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("streamsampler %s:\nexit %d, stderr %q\nwant exit 2 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// TestSeedsAndTrainingIDsBeyondTheGraph: a node id beyond num_nodes, in
// --seeds or in a training file, is reported as such (the file, line,
// id and node count), not as "not a training node".
func TestSeedsAndTrainingIDsBeyondTheGraph(t *testing.T) {
	state, _ := preparedState(t) // 3000 nodes
	_, e, code := cli(t, "sample", "--state", state, "--seeds", "7,3000")
	if code != 1 || !strings.Contains(e, "--seeds: item 2 is node 3000, beyond the graph's 3000 nodes") || strings.Contains(e, "not a training node") {
		t.Errorf("sample --seeds beyond: exit %d, %s", code, e)
	}
	seedsFile := writeTrain(t, []uint32{7, 5000})
	_, e, code = cli(t, "sample", "--state", state, "--seeds-file", seedsFile)
	if code != 1 || !strings.Contains(e, seedsFile+":2: node id 5000 is out of range: ids must be below the graph's 3000 nodes") {
		t.Errorf("sample --seeds-file beyond: exit %d, %s", code, e)
	}

	graph, _ := testGraph(t, 500, 4, 4096)
	bad := writeTrain(t, []uint32{1, 2, 500, 3})
	want := bad + ":3: node id 500 is out of range: ids must be below the graph's 500 nodes"
	for _, args := range [][]string{
		{"prepare", "--state", filepath.Join(t.TempDir(), "s"), "--graph", graph, "--train", bad, "--fanouts", "3"},
		{"run", "--graph", graph, "--train", bad, "--fanouts", "3"},
		{"serve", "--graph", graph, "--train", bad, "--fanouts", "3", "--tcp", "127.0.0.1:0"},
	} {
		_, e, code := cli(t, args...)
		if code != 1 || !strings.Contains(e, want) || strings.Contains(e, "not a training node") {
			t.Errorf("%s: exit %d, %s\nwant exit 1 and %q", args[0], code, e, want)
		}
	}
}
