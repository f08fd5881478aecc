package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestAdvance(t *testing.T) {
	graph, _ := testGraph(t, 500, 4, 4096)
	state := filepath.Join(t.TempDir(), "s")
	if _, e, code := cli(t, "advance", "--state", state); code != 1 || e == "" {
		t.Fatalf("advance on nothing: %d %s", code, e)
	}
	train := writeTrain(t, []uint32{1, 2, 3})
	for i := 0; i < 3; i++ {
		args := []string{"prepare", "--state", state}
		if i == 0 {
			args = append(args, "--graph", graph, "--train", train, "--fanouts", "2")
		}
		if _, e, code := cli(t, args...); code != 0 {
			t.Fatal(e)
		}
	}
	for _, want := range []string{"0", "1", "2"} {
		out, e, code := cli(t, "advance", "--state", state)
		if code != 0 || strings.TrimSpace(out) != "current epoch "+want {
			t.Fatalf("advance: %d %q %s", code, out, e)
		}
	}
	if _, e, code := cli(t, "advance", "--state", state); code != 1 || !strings.Contains(e, "not prepared") {
		t.Fatalf("advance past the end: %d %s", code, e)
	}
	if _, _, code := cli(t, "advance"); code != 2 {
		t.Fatalf("missing --state: exit %d", code)
	}
}
