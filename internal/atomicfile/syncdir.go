package atomicfile

import "os"

// SyncDir fsyncs the directory dir, making the creations, renames and
// removals of entries in it durable. Every error is returned, EINVAL
// included: a file system that cannot sync a directory cannot promise that
// a rename survives a crash, and callers here promise exactly that.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = fsync(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
