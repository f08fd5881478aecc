package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// cli runs chunkify as main does and returns stdout, stderr and the exit
// status.
func cli(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := execute(args, &out, &errb)
	return out.String(), errb.String(), code
}

// TestUsageErrorsExit2: every error in the command line itself exits with
// status 2 and names what was wrong (the flag, the argument or the
// command); failures of the work itself exit 1.
func TestUsageErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "g.txt")
	if err := os.WriteFile(in, []byte("0 1\n1 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	graph := filepath.Join(dir, "g")
	if _, e, code := cli(t, "build", in, "-o", graph, "-q", "--chunk-size", "1KiB"); code != 0 {
		t.Fatalf("build: exit %d: %s", code, e)
	}
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"--frob"}, "unknown flag: --frob"},
		{[]string{"build", in, "-o", out, "--frob"}, "unknown flag: --frob"},
		{[]string{"build", in}, "-o DIR is required"},
		{[]string{"build", "-o", out}, "requires at least 1 arg"},
		{[]string{"build", in, "-o"}, "flag needs an argument: 'o' in -o"},
		{[]string{"build", in, "-o", out, "--chunk-size", "1000"}, "--chunk-size 1000: must be a positive multiple of 512"},
		{[]string{"build", in, "-o", out, "--chunk-size", "1MB"}, "--chunk-size 1MB: must be a positive multiple of 512 bytes; 1MB is decimal, 1000000 bytes"},
		{[]string{"build", in, "-o", out, "--chunk-size", "0"}, "--chunk-size 0"},
		{[]string{"build", in, "-o", out, "--chunk-size", "12 parsecs"}, "--chunk-size: size \"12 parsecs\": unknown unit"},
		{[]string{"build", in, "-o", out, "--format", "xml"}, `--format: unknown format "xml"`},
		{[]string{"build", in, "-o", out, "--self-loops", "maybe"}, `--self-loops "maybe"`},
		{[]string{"build", in, "-o", out, "--num-nodes", "-3"}, `invalid argument "-3" for "--num-nodes"`},
		{[]string{"build", in, "-o", out, "--num-nodes", "4294967295"}, "--num-nodes 4294967295: more than the maximum"},
		{[]string{"build", in, "-o", out, "--dedup=maybe"}, `invalid argument "maybe" for "--dedup"`},
		{[]string{"build", in, "-o", out, "--memory", "0"}, "--memory 0: want a positive size"},
		{[]string{"build", in, "-o", out, "--memory", "lots"}, `--memory: size "lots"`},
		{[]string{"build", in, "-o", out, "--memory", "-1GiB"}, `--memory: size "-1GiB"`},
		{[]string{"info"}, "info: give the graph directory, as DIR or --graph DIR"},
		{[]string{"info", graph, "--graph", dir}, "differ"},
		{[]string{"info", graph, graph}, "accepts at most 1 arg"},
		{[]string{"verify"}, "verify: give the graph directory"},
		{[]string{"verify", "--graph"}, "flag needs an argument: --graph"},
		{[]string{"generate", "erdos"}, `unknown generator "erdos"`},
		{[]string{"generate", "rmat", "-o", out}, "--scale is required"},
		{[]string{"generate", "rmat", "--scale", "0", "-o", out}, "--scale 0: want 1..30"},
		{[]string{"generate", "rmat", "--scale", "31", "-o", out}, "--scale 31: want 1..30"},
		{[]string{"generate", "rmat", "--scale", "4"}, "-o FILE is required"},
		{[]string{"generate", "rmat", "--scale", "4", "--edge-factor", "0", "-o", out}, "--edge-factor 0"},
		{[]string{"generate", "rmat", "--scale", "x", "-o", out}, `invalid argument "x" for "--scale"`},
		{[]string{"generate", "rmat", "--scale", "4", "-o", out, "--format", "npy"}, "--format npy"},
		{[]string{"generate", "rmat", "--scale", "4", "-o", out, "extra"}, `unknown command "extra"`},
	} {
		_, stderr, code := cli(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("chunkify %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a rejected command line wrote its output")
	}
	// Failures of the work, not of the command line, exit 1.
	for _, args := range [][]string{
		{"build", filepath.Join(dir, "missing.txt"), "-o", out},
		{"info", dir},
		{"verify", "--graph", filepath.Join(dir, "none")},
	} {
		if _, stderr, code := cli(t, args...); code != 1 {
			t.Errorf("chunkify %s: exit %d (%s); want 1", strings.Join(args, " "), code, stderr)
		}
	}
}

// TestGraphFlagOrArgument: info and verify take the graph directory as
// DIR or --graph DIR (as streamsampler does) with the same result.
func TestGraphFlagOrArgument(t *testing.T) {
	graph := filepath.Join(t.TempDir(), "g")
	if _, e, code := cli(t, "build", "../../testdata/email-Eu-core.txt.gz", "-o", graph, "-q", "--chunk-size", "16KiB"); code != 0 {
		t.Fatal(e)
	}
	for _, cmd := range []string{"info", "verify"} {
		a, _, ca := cli(t, cmd, graph)
		b, _, cb := cli(t, cmd, "--graph", graph)
		c, _, cc := cli(t, cmd, graph, "--graph", graph)
		if ca != 0 || cb != 0 || cc != 0 || a != b || a != c || a == "" {
			t.Errorf("%s: DIR %d %q; --graph %d %q; both %d %q", cmd, ca, a, cb, b, cc, c)
		}
	}
}

// TestDecimalChunkSizeNote: a decimal --chunk-size that is a multiple of
// 512 is accepted, with a note saying how many bytes it is.
func TestDecimalChunkSizeNote(t *testing.T) {
	dir := t.TempDir()
	graph := filepath.Join(dir, "g")
	_, stderr, code := cli(t, "build", "../../testdata/email-Eu-core.txt.gz", "-o", graph, "--chunk-size", "512kB")
	if code != 0 || !strings.Contains(stderr, "note: --chunk-size 512kB is decimal: 512000 bytes (500.0 KiB)") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = cli(t, "build", "../../testdata/email-Eu-core.txt.gz", "-o", filepath.Join(dir, "h"), "--chunk-size", "512KiB")
	if code != 0 || strings.Contains(stderr, "note:") {
		t.Fatalf("binary unit: exit %d, stderr %q", code, stderr)
	}
}

// TestEverySubcommandHasAnExample: each subcommand's help shows how to
// call it.
func TestEverySubcommandHasAnExample(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			n++
			if !strings.Contains(sub.Example, "chunkify "+sub.Name()) && !strings.Contains(sub.Example, sub.CommandPath()) {
				t.Errorf("%s: help has no example: %q", sub.CommandPath(), sub.Example)
			}
			walk(sub)
		}
	}
	walk(newRootCmd())
	if n != 10 {
		t.Fatalf("%d subcommands, want build, scan, features, info, verify, export, generate, generate rmat, generate features, generate hetero", n)
	}
}
