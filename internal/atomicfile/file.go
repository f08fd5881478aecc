package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/streamsampler/streamsampler/internal/failpoint"
)

// The package's failpoints (internal/failpoint): each is hit, with the
// path appended, before the system call it names, and an error there is
// that call's: the seam of the tests that fail each step.
const (
	FailpointFsync    = "atomicfile/fsync "
	FailpointRename   = "atomicfile/rename "
	FailpointExchange = "atomicfile/exchange "
)

func rename(oldpath, newpath string) error {
	if err := failpoint.Hit(FailpointRename + oldpath); err != nil {
		return err
	}
	return os.Rename(oldpath, newpath)
}

func fsync(f *os.File) error {
	if err := failpoint.Hit(FailpointFsync + f.Name()); err != nil {
		return err
	}
	return f.Sync()
}

// File is a temporary file that replaces its destination on Commit. Until
// then the destination is untouched. Write to it, then Commit; defer
// Abort to remove the temporary on every error path.
//
// A File is not safe for concurrent use.
type File struct {
	f    *os.File
	path string // destination
	done bool   // committed or aborted
}

// ErrNotRegular is returned by Create for a destination that exists and
// is not a regular file: a FIFO, a device, a socket, a directory or a
// symbolic link, which the rename would replace (destroy) rather than
// write to.
var ErrNotRegular = errors.New("not a regular file")

// Create opens a new temporary file in path's directory that Commit will
// rename to path. Its mode is perm exactly (the umask does not apply), so
// that the result does not depend on the environment of the process.
//
// A destination that exists must be a regular file (ErrNotRegular
// otherwise). The temporary's name records this process, as TempDir's
// do, and Create first removes the temporaries of path whose process has
// died (a killed writer's, which may be as large as its output): no
// later run leaves them behind.
func Create(path string, perm fs.FileMode) (*File, error) {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s): writing the result would replace it; give the path of a regular file", path, ErrNotRegular, kindOf(fi.Mode()))
	}
	if _, err := RemoveStaleTemps(path); err != nil {
		return nil, err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := createOwned(filepath.Join(dir, tempPrefix(base, self())))
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm.Perm()); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &File{f: f, path: path}, nil
}

// Name returns the temporary file's path.
func (f *File) Name() string { return f.f.Name() }

// OSFile returns the temporary file itself, for a writer that must size
// it or memory-map it (a walk's .npy is written through a mapping of its
// data, which Write cannot do). The caller may Truncate, Fallocate, Seek
// and map it, and must unmap before Commit; Commit and Abort still close
// and rename or remove it.
func (f *File) OSFile() *os.File { return f.f }

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) { return f.f.Write(p) }

// Commit fsyncs and closes the temporary file, renames it over the
// destination and fsyncs the destination's directory. If anything before
// the rename fails, the temporary is removed and the destination is
// untouched. If only the directory fsync fails, the error is SyncDir's:
// the destination already holds the new content, which may not survive a
// crash.
// Commit after Commit or Abort returns an error wrapping fs.ErrClosed.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("commit %s: %w", f.path, fs.ErrClosed)
	}
	f.done = true
	tmp := f.f.Name()
	err := fsync(f.f)
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = rename(tmp, f.path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(f.path))
}

// Rename renames oldpath to newpath, as os.Rename does, and then fsyncs
// the directories involved so that the rename survives a crash. It is the
// last step of File.Commit, for callers that write and fsync the
// temporary themselves.
func Rename(oldpath, newpath string) error {
	if err := rename(oldpath, newpath); err != nil {
		return err
	}
	return syncParents(oldpath, newpath)
}

// syncParents fsyncs newpath's directory and, when it is another one,
// oldpath's: a rename between directories changes both.
func syncParents(oldpath, newpath string) error {
	od, nd := filepath.Dir(oldpath), filepath.Dir(newpath)
	if err := SyncDir(nd); err != nil {
		return err
	}
	if filepath.Clean(od) != filepath.Clean(nd) {
		return SyncDir(od)
	}
	return nil
}

// Abort closes and removes the temporary file, leaving the destination
// untouched. After Commit or a previous Abort it does nothing and returns
// nil, so "defer f.Abort()" is safe.
func (f *File) Abort() error {
	if f.done {
		return nil
	}
	f.done = true
	f.f.Close() // the file is being discarded: only the removal matters
	return os.Remove(f.f.Name())
}

// WriteFile replaces path with data, atomically and durably, with mode
// perm (exactly; the umask does not apply). On error path is untouched,
// unless the final directory fsync failed (see File.Commit), and no
// temporary is left behind.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit()
}

// WriteNew creates path, which must not exist (fs.ErrExist otherwise),
// writes data to it and fsyncs it, with mode perm (the umask applies). It
// is no atomic replacement by itself: it writes the files of a directory
// that ReplaceDir or MoveDir then installs whole, whose rename makes them
// appear at once. On error the partial file is removed.
func WriteNew(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = fsync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// createOwned creates a new file named prefix + a random number.
func createOwned(prefix string) (*os.File, error) {
	for range 10000 {
		f, err := os.OpenFile(prefix+strconv.FormatUint(uint64(rand.Uint32()), 10), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil || !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("atomicfile: no free temporary name %s*", prefix)
}

// kindOf names a non-regular file's type for an error.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}
