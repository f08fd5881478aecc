package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary act as chunkify itself (for the signal
// test, which needs a real process to interrupt).
func TestMain(m *testing.M) {
	if os.Getenv("CHUNKIFY_AS_MAIN") == "1" {
		os.Args = append([]string{"chunkify"}, strings.Fields(os.Getenv("CHUNKIFY_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestInterruptRemovesTemporaries sends SIGINT, then (another build)
// SIGTERM, to a running build: each must exit non-zero and leave neither
// the output nor its temporary directory.
func TestInterruptRemovesTemporaries(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in", "g.txt")
	os.Mkdir(filepath.Dir(in), 0o755)
	if _, _, err := run(t, "generate", "rmat", "--scale", "20", "--edge-factor", "8", "-o", in, "-q"); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { interruptBuild(t, in, sig) })
	}
}

// interruptBuild starts a build of in, sends it sig once its temporary
// directory exists, and checks that it cleaned up.
func interruptBuild(t *testing.T, in string, sig syscall.Signal) {
	outDir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CHUNKIFY_AS_MAIN=1", "CHUNKIFY_ARGS=build "+in+" -o "+filepath.Join(outDir, "g")+" -q")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the build has made its temporary directory, then signal.
	deadline := time.Now().Add(20 * time.Second)
	for {
		ents, _ := os.ReadDir(outDir)
		if len(ents) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no temporary directory appeared")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	cmd.Process.Signal(sig)
	err := cmd.Wait()
	if err == nil {
		t.Skipf("the build finished before the %v landed: %s", sig, stderr.String())
	}
	if !strings.Contains(stderr.String(), "context canceled") {
		t.Fatalf("stderr %q; want a cancellation error", stderr.String())
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 0 {
		t.Fatalf("left behind after %v: %v", sig, ents)
	}
}
