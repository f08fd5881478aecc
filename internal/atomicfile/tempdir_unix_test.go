//go:build unix

package atomicfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestTempDirMode: the directory that becomes dst gets mkdir's mode under
// the umask, as `mkdir` would, not os.MkdirTemp's 0700.
func TestTempDirMode(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir, err := TempDir(filepath.Join(t.TempDir(), "graph"))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o755 {
		t.Fatalf("mode %v, want 0755 under umask 022", got)
	}
	if _, ok := parseTempName("graph", filepath.Base(dir)); !ok {
		t.Fatalf("%s does not parse as a temporary name of graph", filepath.Base(dir))
	}
}
