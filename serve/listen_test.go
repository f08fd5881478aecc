package serve

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestListenUnixErrorsNameTheCause: a socket path in a missing directory,
// under a file, or longer than sun_path holds fails with an error saying
// which; a path of exactly MaxUnixPath bytes works.
func TestListenUnixErrorsNameTheCause(t *testing.T) {
	dir := t.TempDir()
	if len(dir) > MaxUnixPath-20 {
		t.Skipf("temporary directory %s is too long to build the paths", dir)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(dir, strings.Repeat("x", MaxUnixPath+1-len(dir)-1))
	if len(long) != MaxUnixPath+1 {
		t.Fatalf("test path is %d bytes", len(long))
	}
	for _, tc := range []struct {
		name, path, want string
		is               error
	}{
		{"missing-dir", filepath.Join(dir, "nope", "s.sock"), "directory " + filepath.Join(dir, "nope"), fs.ErrNotExist},
		{"not-a-dir", filepath.Join(file, "s.sock"), file + " is not a directory", nil},
		{"too-long", long, "is 108 bytes, longer than the 107 a Unix socket address holds", nil},
		{"not-a-socket", file, "exists and is not a socket", nil},
	} {
		ln, err := ListenUnix(tc.path)
		if err == nil {
			ln.Close()
			t.Errorf("%s: ListenUnix(%s) succeeded", tc.name, tc.path)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
	longest := long[:MaxUnixPath]
	ln, err := ListenUnix(longest)
	if err != nil {
		t.Fatalf("a %d-byte path: %v", len(longest), err)
	}
	ln.Close()
}
