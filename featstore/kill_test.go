package featstore

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/streamsampler/streamsampler/internal/failpoint"
)

// TestWriterKilledAtEveryStep SIGKILLs a child process packing a store
// at each step of the Writer (through its failpoints, not timing luck).
// After every kill the directory holds no store, the old store, or the
// whole new one, each passing Verify; the next Writer removes whatever
// the killed one left and commits a store with nothing beside it.
func TestWriterKilledAtEveryStep(t *testing.T) {
	if dir := os.Getenv("FEATSTORE_KILL_DIR"); dir != "" {
		step := os.Getenv("FEATSTORE_KILL_STEP")
		failpoint.Enable(func(s string) error { // never restored: the process is killed at the step
			if s == step {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			return nil
		})
		pack(t, dir, Options{DType: Float32, Dim: 8, Force: true}, randomBytes(7, 500*32), randomLabels(7, 500, 4))
		t.Fatal("not killed")
	}
	if runtime.GOOS != "linux" {
		t.Skip("kills a child process; linux only")
	}
	old := randomBytes(8, 500*32)
	for _, withOld := range []bool{false, true} {
		for _, step := range []string{stepCreate, stepAppend, stepSync, stepRename, stepManifest, stepCleanup} {
			dir := newGraph(t, 500, true)
			if withOld {
				pack(t, dir, Options{DType: Float32, Dim: 8}, old, nil)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestWriterKilledAtEveryStep$")
			cmd.Env = append(os.Environ(), "FEATSTORE_KILL_DIR="+dir, "FEATSTORE_KILL_STEP="+step)
			msg, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("child at %s: %v\n%s", step, err, msg)
			}
			if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child at %s was not killed: %v\n%s", step, err, msg)
			}
			m, err := ReadManifest(dir)
			switch {
			case step == stepCleanup:
				if err != nil || m.Features.File != "features-2.bin" && m.Features.File != "features-1.bin" || m.Labels == nil {
					t.Fatalf("killed after the manifest: %v %+v", err, m)
				}
			case withOld:
				if err != nil || m.Features.File != "features-1.bin" {
					t.Fatalf("killed at %s: the old store is gone: %v", step, err)
				}
				b, _ := os.ReadFile(filepath.Join(dir, m.Features.File))
				if !bytes.Equal(b, old) {
					t.Fatalf("killed at %s: old rows changed", step)
				}
			case !errors.Is(err, ErrNoFeatures):
				t.Fatalf("killed at %s: ReadManifest = %v, want ErrNoFeatures", step, err)
			}
			if err == nil {
				if err := Verify(dir); err != nil {
					t.Fatalf("killed at %s: %v", step, err)
				}
			}
			next := randomBytes(9, 500*32)
			pack(t, dir, Options{DType: Float32, Dim: 8, Force: true}, next, nil)
			m, err = ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			want := storeFiles(m.Features.File[len("features-"):len(m.Features.File)-len(".bin")], false)
			if got := dirFiles(t, dir); !slices.Equal(got, want) {
				t.Fatalf("killed at %s (old %v), then packed again: files %v, want %v", step, withOld, got, want)
			}
			if err := Verify(dir); err != nil {
				t.Fatal(err)
			}
		}
	}
}
