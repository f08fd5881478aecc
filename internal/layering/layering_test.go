package layering

import (
	"os/exec"
	"strings"
	"testing"
)

// moduleGraph lists the module's packages (go list -deps, tests' imports
// excluded: a test may reach across layers to check them) with the
// module packages each imports.
func moduleGraph(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, Module+"/...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		p, ok := strings.CutPrefix(f[0], Module+"/")
		if !ok {
			continue // the standard library and other modules
		}
		var imports []string
		for _, q := range f[1:] {
			if q, ok := strings.CutPrefix(q, Module+"/"); ok {
				imports = append(imports, q)
			}
		}
		graph[p] = imports
	}
	return graph
}

func TestModuleFollowsDesign(t *testing.T) {
	graph := moduleGraph(t)
	if len(graph) < 20 {
		t.Fatalf("go list found %d of the module's packages", len(graph))
	}
	for _, line := range Check(graph) {
		t.Error(line)
	}
}

// TestCheckRefuses: the check fails on a deliberately wrong import (the
// GPU engine reaching into the streaming sampler; the epoch leaf reaching
// up into scheduling), on a new package without a rule, and lets internal
// leaves and the commands through.
func TestCheckRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		graph map[string][]string
		bad   int
	}{
		{"design", map[string][]string{"gpu": {"epoch", "walk", "internal/crc32c"}, "cmd/streamsampler": {"host", "gpu"}}, 0},
		{"gpu imports host", map[string][]string{"gpu": {"epoch", "host"}}, 1},
		{"epoch imports pipeline", map[string][]string{"epoch": {"rng", "pipeline"}}, 1},
		{"serve imports host and gpu", map[string][]string{"serve": {"host", "gpu", "pipeline"}}, 2},
		{"a harness is not a leaf", map[string][]string{"serve": {"internal/hostbench"}}, 1},
		{"unknown package", map[string][]string{"newpkg": {}}, 1},
	} {
		if got := Check(c.graph); len(got) != c.bad {
			t.Errorf("%s: %d findings %q, want %d", c.name, len(got), got, c.bad)
		}
	}
}
