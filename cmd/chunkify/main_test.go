package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// run executes the chunkify command in-process.
func run(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

func TestRootHelp(t *testing.T) {
	out, _, err := run(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"scan", "build", "features", "info", "verify", "export", "generate"} {
		if !strings.Contains(out, sub) {
			t.Errorf("help lacks %q:\n%s", sub, out)
		}
	}
	if _, _, err := run(t, "frobnicate"); err == nil {
		t.Fatal("unknown command accepted")
	}
}
