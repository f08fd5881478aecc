package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/streamsampler/streamsampler/internal/failpoint"
)

var errInjected = errors.New("injected failure")

// entries lists the names in dir, sorted.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// faults is a test's failpoint hook for the package's system calls: each
// function (nil: none) sees the path and may fail the call; a nil error
// lets the real call run.
type faults struct {
	fsync, rename, exchange func(path string) error
	synced                  []string // every fsync's path, in order
}

// useFaults enables a faults hook until the test ends.
func useFaults(t *testing.T) *faults {
	f := &faults{}
	t.Cleanup(failpoint.Enable(f.hook))
	return f
}

func (f *faults) hook(name string) error {
	for _, c := range []struct {
		prefix string
		fn     func(string) error
	}{{FailpointFsync, f.fsync}, {FailpointRename, f.rename}, {FailpointExchange, f.exchange}} {
		path, ok := strings.CutPrefix(name, c.prefix)
		if !ok {
			continue
		}
		if c.prefix == FailpointFsync {
			f.synced = append(f.synced, path)
		}
		if c.fn != nil {
			return c.fn(path)
		}
	}
	return nil
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		old  string // "" for no existing file
		data string
		perm fs.FileMode
	}{
		{"new 0644", "", "hello\n", 0o644},
		{"new 0600", "", "secret", 0o600},
		{"new 0640 empty", "", "", 0o640},
		{"replace 0444", "old content, longer than the new", "new", 0o444},
		{"replace 0755", "x", "#!/bin/sh\n", 0o755},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.json")
			if tc.old != "" {
				if err := os.WriteFile(path, []byte(tc.old), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFile(path, []byte(tc.data), tc.perm); err != nil {
				t.Fatal(err)
			}
			if got := mustRead(t, path); got != tc.data {
				t.Fatalf("content %q, want %q", got, tc.data)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode() != tc.perm {
				t.Fatalf("mode %v, want %v", st.Mode(), tc.perm)
			}
			if names := entries(t, dir); !slices.Equal(names, []string{"f.json"}) {
				t.Fatalf("directory holds %v, want only f.json", names)
			}
		})
	}
}

// TestWriteFileRelative checks a bare file name: the temporary goes in
// the working directory, as the destination does.
func TestWriteFileRelative(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := WriteFile("rel", []byte("r"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, filepath.Join(dir, "rel")); got != "r" {
		t.Fatalf("content %q", got)
	}
	if names := entries(t, dir); !slices.Equal(names, []string{"rel"}) {
		t.Fatalf("directory holds %v", names)
	}
}

func TestCommitVisibility(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "CURRENT")
	if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	if filepath.Dir(f.Name()) != dir {
		t.Fatalf("temporary %s not beside %s", f.Name(), path)
	}
	if _, err := f.Write([]byte("2\n")); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, path); got != "1\n" {
		t.Fatalf("before Commit the destination holds %q, want the old %q", got, "1\n")
	}
	if got := mustRead(t, f.Name()); got != "2\n" {
		t.Fatalf("temporary holds %q", got)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, path); got != "2\n" {
		t.Fatalf("after Commit the destination holds %q", got)
	}
	if err := f.Abort(); err != nil {
		t.Fatalf("Abort after Commit: %v", err)
	}
	if got := mustRead(t, path); got != "2\n" {
		t.Fatalf("Abort after Commit changed the destination to %q", got)
	}
	if err := f.Commit(); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("second Commit = %v, want fs.ErrClosed", err)
	}
	if names := entries(t, dir); !slices.Equal(names, []string{"CURRENT"}) {
		t.Fatalf("directory holds %v", names)
	}
}

func TestAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	f, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	if err := f.Abort(); err != nil {
		t.Fatal(err)
	}
	if names := entries(t, dir); len(names) != 0 {
		t.Fatalf("directory holds %v after Abort", names)
	}
	if err := f.Abort(); err != nil {
		t.Fatalf("second Abort: %v", err)
	}
	if err := f.Commit(); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("Commit after Abort = %v, want fs.ErrClosed", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("destination after Abort: %v", err)
	}
}

// TestOSFile: what is written through the temporary's *os.File (sized
// with Truncate, then WriteAt past Write's data) is what Commit installs,
// and the destination is untouched until then.
func TestOSFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	if f.OSFile().Name() != f.Name() {
		t.Fatalf("OSFile is %s, the temporary %s", f.OSFile().Name(), f.Name())
	}
	if _, err := f.Write([]byte("head")); err != nil {
		t.Fatal(err)
	}
	if err := f.OSFile().Truncate(8); err != nil {
		t.Fatal(err)
	}
	if _, err := f.OSFile().WriteAt([]byte("data"), 4); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("destination became %q before Commit", b)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "headdata" {
		t.Fatalf("committed %q, want %q", b, "headdata")
	}
	if names := entries(t, dir); !slices.Equal(names, []string{"out"}) {
		t.Fatalf("directory holds %v after Commit", names)
	}
}

// TestCommitFailures injects a failure into each step of Commit: the
// error comes back, the old content stays, no temporary is left — except
// for the directory fsync, which fails after the rename.
func TestCommitFailures(t *testing.T) {
	fl := useFaults(t)
	for _, tc := range []struct {
		step    string
		renamed bool // whether the destination holds the new content after the failure
	}{
		{"fsync file", false},
		{"rename", false},
		{"fsync dir", true},
	} {
		t.Run(tc.step, func(t *testing.T) {
			fl.fsync, fl.rename = nil, nil
			switch tc.step {
			case "fsync file", "fsync dir":
				wantDir := tc.step == "fsync dir"
				fl.fsync = func(path string) error {
					if st, err := os.Stat(path); err == nil && st.IsDir() == wantDir {
						return errInjected
					}
					return nil
				}
			case "rename":
				fl.rename = func(string) error { return errInjected }
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "manifest.json")
			if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := WriteFile(path, []byte("new"), 0o644)
			if !errors.Is(err, errInjected) {
				t.Fatalf("WriteFile = %v, want the injected error", err)
			}
			want := "old"
			if tc.renamed {
				want = "new"
			}
			if got := mustRead(t, path); got != want {
				t.Fatalf("destination holds %q, want %q", got, want)
			}
			if names := entries(t, dir); !slices.Equal(names, []string{"manifest.json"}) {
				t.Fatalf("directory holds %v, want no temporary", names)
			}
		})
	}
}

func TestCreateFailure(t *testing.T) {
	dir := t.TempDir()
	_, err := Create(filepath.Join(dir, "missing", "f"), 0o644)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Create in a missing directory = %v, want fs.ErrNotExist", err)
	}
	if os.Geteuid() == 0 {
		t.Log("running as root: a read-only directory does not stop writes; skipping that case")
		return
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(ro, "f"), []byte("x"), 0o644); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("WriteFile in a read-only directory = %v, want fs.ErrPermission", err)
	}
	if names := entries(t, ro); len(names) != 0 {
		t.Fatalf("read-only directory holds %v", names)
	}
}

func TestRename(t *testing.T) {
	syncs := &useFaults(t).synced
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "sub")
	if err := os.Mkdir(b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Rename(a, filepath.Join(b, "a")); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, filepath.Join(b, "a")); got != "a" {
		t.Fatalf("content %q", got)
	}
	// Both directories changed; both must have been synced.
	if !slices.Contains(*syncs, dir) || !slices.Contains(*syncs, b) {
		t.Fatalf("synced %v, want %s and %s", *syncs, dir, b)
	}
	if err := Rename(a, filepath.Join(dir, "c")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Rename of a missing file = %v", err)
	}
}

func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	err := SyncDir(missing)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("SyncDir(missing) = %v, want fs.ErrNotExist", err)
	}
	if !bytes.Contains([]byte(err.Error()), []byte(missing)) {
		t.Fatalf("error %q does not name the directory", err)
	}
}

// TestConcurrentReaders replaces a file over and over while readers read
// it: every read must see one whole version, never a mix or a short file.
func TestConcurrentReaders(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	const size = 64 << 10
	version := func(v int) []byte { return bytes.Repeat([]byte{byte('a' + v%26)}, size) }
	if err := WriteFile(path, version(0), 0o644); err != nil {
		t.Fatal(err)
	}
	rounds := 200
	if testing.Short() {
		rounds = 50
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				b, err := os.ReadFile(path)
				if err != nil {
					errs <- err
					return
				}
				if len(b) != size || bytes.Count(b, b[:1]) != size {
					errs <- fmt.Errorf("read a torn file: %d bytes, first %q", len(b), b[:min(len(b), 1)])
					return
				}
			}
		})
	}
	for v := 1; v <= rounds; v++ {
		if err := WriteFile(path, version(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := mustRead(t, path); got != string(version(rounds)) {
		t.Fatal("final content is not the last version")
	}
	if names := entries(t, dir); !slices.Equal(names, []string{"f"}) {
		t.Fatalf("directory holds %v", names)
	}
}

// TestWriteNew writes a new file synced; it refuses an existing one, and
// a failed fsync leaves no partial file.
func TestWriteNew(t *testing.T) {
	fl := useFaults(t)
	syncs := &fl.synced
	dir := t.TempDir()
	path := filepath.Join(dir, "a.u32")
	if err := WriteNew(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, path); got != "new" || !slices.Equal(*syncs, []string{path}) {
		t.Fatalf("content %q, synced %v", got, *syncs)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode: %v, %v", st.Mode(), err)
	}
	if err := WriteNew(path, []byte("other"), 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("WriteNew over an existing file = %v, want fs.ErrExist", err)
	}
	if got := mustRead(t, path); got != "new" {
		t.Fatalf("existing file now holds %q", got)
	}
	fl.fsync = func(string) error { return errInjected }
	if err := WriteNew(filepath.Join(dir, "b.u32"), []byte("x"), 0o644); !errors.Is(err, errInjected) {
		t.Fatalf("WriteNew with a failing fsync = %v, want the injected error", err)
	}
	if names := entries(t, dir); !slices.Equal(names, []string{"a.u32"}) {
		t.Fatalf("directory holds %v, want no partial file", names)
	}
}

// TestCreateRefusesNonRegular: a destination that is a FIFO, a device, a
// directory or a symbolic link is refused, untouched, before anything is
// written beside it (renaming over it would destroy it).
func TestCreateRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	before := entries(t, dir)
	for _, c := range []struct{ path, kind string }{
		{fifo, "a FIFO"}, {sub, "a directory"}, {link, "a symbolic link"}, {"/dev/null", "a device"},
	} {
		f, err := Create(c.path, 0o644)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), c.kind) || !strings.Contains(err.Error(), c.path) {
			if f != nil {
				f.Abort()
			}
			t.Fatalf("Create(%s) = %v, want ErrNotRegular naming %s and the path", c.path, err, c.kind)
		}
	}
	if got := entries(t, dir); !slices.Equal(got, before) {
		t.Fatalf("directory now holds %v, had %v", got, before)
	}
	if fi, err := os.Lstat("/dev/null"); err != nil || fi.Mode()&fs.ModeDevice == 0 {
		t.Fatalf("/dev/null after the refusal: %v %v", fi, err)
	}
	if mustRead(t, target) != "keep" {
		t.Fatal("the link's target changed")
	}
}

// TestCreateRemovesDeadTemporaries: a killed writer's temporary (its
// owner dead) is removed by the next Create of the same destination, a
// live writer's is kept.
func TestCreateRemovesDeadTemporaries(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("owner checks need /proc")
	}
	dir := t.TempDir()
	dst := filepath.Join(dir, "walks.npy")
	dead := filepath.Join(dir, tempPrefix("walks.npy", owner{pid: deadPID(t), start: 1, host: self().host})+"1")
	live := filepath.Join(dir, tempPrefix("walks.npy", self())+"2")
	for _, p := range []string{dead, live} {
		if err := os.WriteFile(p, make([]byte, 4096), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Create(dst, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("the dead writer's temporary is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("the live writer's temporary was removed: %v", err)
	}
	if mustRead(t, dst) != "new" {
		t.Fatal("wrong content")
	}
}
