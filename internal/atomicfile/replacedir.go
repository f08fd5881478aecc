package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/streamsampler/streamsampler/internal/failpoint"
)

// errExchangeUnsupported is what exchange returns where the platform or
// the file system cannot swap two names atomically.
var errExchangeUnsupported = errors.New("rename exchange unsupported")

// exchange swaps the directory entries a and b (both exist) atomically:
// the platform's exchangeNames, behind its failpoint.
func exchange(a, b string) error {
	if err := failpoint.Hit(FailpointExchange + a); err != nil {
		return err
	}
	return exchangeNames(a, b)
}

// ReplaceDir moves the directory tmpDir to dst, replacing whatever dst
// holds, so that dst is never seen partial: it names either the old tree
// or the new one. tmpDir should be beside dst (made by os.MkdirTemp in
// dst's directory) and its files already fsynced; ReplaceDir fsyncs
// tmpDir itself and, after the move, the parent directories.
//
// Where dst does not exist it is a rename. Otherwise, on Linux, the two
// names are exchanged atomically (renameat2 RENAME_EXCHANGE) and the old
// tree, now at tmpDir, is removed. Where exchange is unsupported (other
// platforms, some file systems) the old tree is first renamed aside to
// tmpDir+".old", so that dst is briefly absent but never partial; if the
// second rename fails the old tree is moved back.
//
// The old tree is removed only once the swap is durable; if ReplaceDir
// fails after the swap, dst holds the new tree and the old one may remain
// at tmpDir or tmpDir+".old" for the caller to remove.
func ReplaceDir(tmpDir, dst string) error {
	if err := SyncDir(tmpDir); err != nil {
		return err
	}
	err := rename(tmpDir, dst)
	if err == nil {
		return syncParents(tmpDir, dst)
	}
	if _, serr := os.Lstat(dst); serr != nil {
		return err // not in the way: the rename failed for its own reason
	}
	switch err := exchange(tmpDir, dst); {
	case err == nil:
		if err := syncParents(tmpDir, dst); err != nil {
			return err
		}
		return os.RemoveAll(tmpDir)
	case !errors.Is(err, errExchangeUnsupported):
		return err
	}
	old := tmpDir + ".old"
	if err := rename(dst, old); err != nil {
		return err
	}
	if err := rename(tmpDir, dst); err != nil {
		if rerr := rename(old, dst); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	if err := syncParents(old, dst); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// MoveDir moves the directory tmpDir to dst, which must not exist: it is
// ReplaceDir for a caller that must not replace anything. As there,
// tmpDir's files should already be fsynced, and MoveDir fsyncs tmpDir
// and, after the rename, the parent directories. Where the rename fails
// and dst exists (it appeared since the caller checked), the error wraps
// fs.ErrExist; once the rename has succeeded, a failed directory fsync is
// returned as it is, so that it is never mistaken for "exists".
func MoveDir(tmpDir, dst string) error {
	if err := SyncDir(tmpDir); err != nil {
		return err
	}
	if err := rename(tmpDir, dst); err != nil {
		if _, serr := os.Lstat(dst); serr == nil {
			return fmt.Errorf("%w (%w)", fs.ErrExist, err)
		}
		return err
	}
	return syncParents(tmpDir, dst)
}
