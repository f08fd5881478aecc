package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestInfo(t *testing.T) {
	state, _ := preparedState(t)
	if _, e, code := cli(t, "prepare", "--state", state); code != 0 {
		t.Fatal(e)
	}
	out, e, code := cli(t, "info", "--state", state)
	if code != 0 {
		t.Fatal(e)
	}
	for _, want := range []string{"fanouts  [5 3]", "current  epoch 0", "epoch 0 ", "(current)", "epoch 1 ", "check: ok"} {
		if !strings.Contains(out, want) {
			t.Fatalf("info lacks %q:\n%s", want, out)
		}
	}
	out, _, code = cli(t, "info", "--state", state, "--json")
	var v struct {
		Current *uint32     `json:"current"`
		Epochs  []epochInfo `json:"epochs"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Current == nil || *v.Current != 0 || len(v.Epochs) != 2 || v.Epochs[1].Bytes <= 0 {
		t.Fatalf("info --json: %s", out)
	}
	if _, e, code := cli(t, "info", "--state", t.TempDir()); code != 1 || !strings.Contains(e, "not a state directory") {
		t.Fatalf("%d %s", code, e)
	}
}
